//! The project's one binary index format: kb-score's index and
//! kb-memgate's neighbour index are both *segments* of this layout, and
//! each describes only its own per-document sections. What lives here
//! once: the header (magic, kind, version), the section table checked at
//! open, the trailer that catches a torn file, offset tables with
//! bounds-checked reads, the term dictionary with its postings, the
//! build-facts section, the side segment's link to its main, and the
//! bytes of a segment, mapped (`fs::map`) or owned. Segments are written
//! whole by `fs::atomic` (renamed over, never edited in place), which is
//! what makes reading a mapped one sound.
//!
//! Layout (little-endian): `KBINDEX1`, the kind (8 bytes, e.g.
//! `score\0\0\0`), the kind's format version u32, the section count u32,
//! then (offset u64, length u64) per section, the sections back to back
//! in table order, and the trailer `KBIXEND1` + total length u64. The last
//! section is always the build facts as JSON (so they can be re-stamped
//! without rewriting the rest). [`Sections::open`] checks the magic, kind,
//! version, section count, trailer and that the sections tile the file;
//! each table's ends are checked by its reader ([`Sections::check_table`]),
//! so opening is constant work and a query reads only the pages it needs.
//! A file of another kind or version (an old format) is refused, never
//! read with another layout; the caller rebuilds it.
//!
//! Incremental updates: a *side segment* is an ordinary segment of the
//! documents written since its main segment was built, whose build facts
//! carry a [`SideOf`]: the main it extends and the main documents it
//! removes (deleted, or replaced by the side's newer version). A reader
//! lays it over the main; a write rewrites only the side (bounded by the
//! caller's limit, past which the main is rebuilt), so the cost of a write
//! follows the number of changes since the last rebuild, not the store's
//! size.

use serde::{Deserialize, Serialize};

/// File magic, shared by every kind.
pub const MAGIC: &[u8; 8] = b"KBINDEX1";
/// Trailer magic.
pub const END: &[u8; 8] = b"KBIXEND1";
/// Magic, kind, version, section count.
const FIXED: usize = 24;

/// Why segment bytes were rejected.
pub type Corrupt = String;

/// Bytes of a header with `count` sections.
pub fn header_len(count: usize) -> usize {
    FIXED + count * 16
}

/// Bytes of a segment: mapped from its file or held in memory.
pub use crate::fs::map::Bytes;

/// Writes a segment section by section, in table order.
pub struct Writer {
    out: Vec<u8>,
    secs: Vec<(u64, u64)>,
    count: usize,
}

impl Writer {
    /// A segment of `kind`, `version`, with `count` sections (the info
    /// section included); `capacity` is the expected size, to allocate once.
    pub fn new(kind: &[u8; 8], version: u32, count: usize, capacity: usize) -> Writer {
        let mut out = Vec::with_capacity(capacity.max(header_len(count) + 16));
        out.extend(MAGIC);
        out.extend(kind);
        out.extend(version.to_le_bytes());
        out.extend((count as u32).to_le_bytes());
        out.resize(header_len(count), 0);
        Writer { out, secs: Vec::with_capacity(count), count }
    }

    /// Appends the next section.
    pub fn section(&mut self, fill: impl FnOnce(&mut Vec<u8>)) {
        let at = self.out.len();
        fill(&mut self.out);
        self.secs.push((at as u64, (self.out.len() - at) as u64));
    }

    /// Appends an offset table (u64, n + 1 entries) and its data: two sections.
    pub fn table<'a, I: Iterator<Item = &'a [u8]>>(&mut self, items: impl Fn() -> I) {
        self.section(|o| {
            let mut n = 0u64;
            o.extend(n.to_le_bytes());
            for it in items() {
                n += it.len() as u64;
                o.extend(n.to_le_bytes());
            }
        });
        self.section(|o| items().for_each(|it| o.extend_from_slice(it)));
    }

    /// Appends a term dictionary and its postings: four sections (term
    /// offsets, terms, postings offsets, postings of `(doc u32, tf u32)`).
    /// `fwd` holds each document's `(term id, tf)` list, `key(id)` a term
    /// id's bytes; terms no document has are left out and the rest are
    /// sorted by their bytes. Postings are placed by a counting sort over
    /// the forward lists (documents in order, so each term's postings come
    /// out ascending), without a list per term. Returns the number of terms.
    pub fn postings<'k>(&mut self, fwd: &Forward, vocab: usize, key: impl Fn(u32) -> &'k [u8]) -> usize {
        let mut df = vec![0u64; vocab];
        for &(t, _) in &fwd.items {
            if let Some(c) = df.get_mut(t as usize) {
                *c += 1;
            }
        }
        let mut order: Vec<u32> = (0..vocab as u32).filter(|&t| df[t as usize] > 0).collect();
        order.sort_unstable_by(|a, b| key(*a).cmp(key(*b)));
        let total: u64 = order.iter().map(|&t| df[t as usize]).sum();
        self.table(|| order.iter().map(|&x| key(x)));
        // Where each term's postings start, in dictionary order.
        let mut start = vec![0u64; vocab];
        self.section(|o| {
            let mut c = 0u64;
            o.extend(c.to_le_bytes());
            for &x in &order {
                start[x as usize] = c;
                c += df[x as usize];
                o.extend(c.to_le_bytes());
            }
        });
        drop(df);
        self.section(|o| {
            let base = o.len();
            o.resize(base + total as usize * 8, 0);
            for d in 0..fwd.docs() {
                for &(x, tf) in fwd.doc(d) {
                    let Some(c) = start.get_mut(x as usize) else { continue };
                    let at = base + *c as usize * 8;
                    o[at..at + 4].copy_from_slice(&(d as u32).to_le_bytes());
                    o[at + 4..at + 8].copy_from_slice(&tf.to_le_bytes());
                    *c += 1;
                }
            }
        });
        order.len()
    }

    /// Appends the info section (last) and the trailer.
    pub fn finish(mut self, info: &[u8]) -> Vec<u8> {
        self.section(|o| o.extend_from_slice(info));
        debug_assert_eq!(self.secs.len(), self.count, "a segment writes every section it declares");
        for (i, (off, len)) in self.secs.iter().enumerate().take(self.count) {
            let at = FIXED + i * 16;
            self.out[at..at + 8].copy_from_slice(&off.to_le_bytes());
            self.out[at + 8..at + 16].copy_from_slice(&len.to_le_bytes());
        }
        let mut out = self.out;
        out.extend(END);
        let total = out.len() as u64 + 8;
        out.extend(total.to_le_bytes());
        out
    }
}

/// Bytes a term dictionary with `terms` terms, `key_bytes` bytes of keys
/// and `postings` postings takes (for [`Writer::new`]'s capacity).
pub fn postings_size(terms: usize, key_bytes: usize, postings: usize) -> usize {
    2 * (terms + 1) * 8 + key_bytes + postings * 8
}

/// Forward lists `(term id, tf)` of every document in one flat vector
/// (document `i`'s are `items[off[i]..off[i + 1]]`): at 100,000 documents
/// a vector per document cost its header and growth slack every time.
#[derive(Debug, Clone)]
pub struct Forward {
    off: Vec<usize>,
    items: Vec<(u32, u32)>,
}

impl Default for Forward {
    fn default() -> Forward {
        Forward { off: vec![0], items: Vec::new() }
    }
}

impl Forward {
    /// Appends the next document's list.
    pub fn push_doc(&mut self, terms: impl IntoIterator<Item = (u32, u32)>) {
        self.items.extend(terms);
        self.off.push(self.items.len());
    }

    /// Number of documents.
    pub fn docs(&self) -> usize {
        self.off.len() - 1
    }

    /// Number of `(term, tf)` items over all documents.
    pub fn items(&self) -> usize {
        self.items.len()
    }

    /// Document `i`'s list (empty past the end).
    pub fn doc(&self, i: usize) -> &[(u32, u32)] {
        match (self.off.get(i), self.off.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.items[a..b],
            _ => &[],
        }
    }

    /// Inverts postings back into forward lists: `postings(t)` gives
    /// `(doc, term id, tf)` for each of `terms` terms; `docs` documents.
    /// Two passes (count, then place), so the lists are exact-sized.
    pub fn invert<I: Iterator<Item = (u32, u32, u32)>>(
        docs: usize,
        terms: usize,
        postings: impl Fn(usize) -> I,
    ) -> Forward {
        let mut off = vec![0usize; docs + 1];
        for t in 0..terms {
            for (d, _, _) in postings(t) {
                if let Some(c) = off.get_mut(d as usize + 1) {
                    *c += 1;
                }
            }
        }
        for i in 0..docs {
            off[i + 1] += off[i];
        }
        let mut items = vec![(0u32, 0u32); off[docs]];
        let mut cur = off.clone();
        for t in 0..terms {
            for (d, id, tf) in postings(t) {
                if let Some(c) = cur.get_mut(d as usize) {
                    items[*c] = (id, tf);
                    *c += 1;
                }
            }
        }
        Forward { off, items }
    }
}

/// A segment's validated section table.
#[derive(Debug, Clone)]
pub struct Sections<'a> {
    b: &'a [u8],
    secs: Vec<(usize, usize)>,
}

impl<'a> Sections<'a> {
    /// Checks the header, trailer and section table of a segment of
    /// `kind` at `version` with `count` sections.
    pub fn open(b: &'a [u8], kind: &[u8; 8], version: u32, count: usize) -> Result<Sections<'a>, Corrupt> {
        let name = String::from_utf8_lossy(kind).trim_end_matches('\0').to_string();
        if b.len() < FIXED + 16 || &b[..8] != MAGIC {
            return Err(format!("not a kb-tools index (bad magic or too short; a {name} index is rebuilt)"));
        }
        if &b[8..16] != kind {
            return Err(format!("not a {name} index"));
        }
        let ver = read_u32(b, 16).ok_or("short header")?;
        if ver != version {
            return Err(format!("{name} index format {ver}, expected {version}"));
        }
        if read_u32(b, 20) != Some(count as u32) || b.len() < header_len(count) + 16 {
            return Err(format!("{name} index has the wrong section count"));
        }
        let tail = &b[b.len() - 16..];
        let total = read_u64(tail, 8).ok_or("short trailer")?;
        if &tail[..8] != END || total != b.len() as u64 {
            return Err("index is truncated (trailer missing or length differs)".into());
        }
        let body_end = b.len() - 16;
        let mut expect = header_len(count);
        let mut secs = Vec::with_capacity(count);
        for i in 0..count {
            let at = FIXED + i * 16;
            let off = read_u64(b, at).ok_or("short header")? as usize;
            let len = read_u64(b, at + 8).ok_or("short header")? as usize;
            if off != expect || off.checked_add(len).is_none_or(|e| e > body_end) {
                return Err(format!("section {i} out of bounds"));
            }
            secs.push((off, len));
            expect = off + len;
        }
        if expect != body_end {
            return Err("sections do not fill the file".into());
        }
        Ok(Sections { b, secs })
    }

    /// Section `i` (empty past the table).
    pub fn get(&self, i: usize) -> &'a [u8] {
        self.secs.get(i).map_or(&[], |&(o, l)| &self.b[o..o + l])
    }

    /// The info section (the last).
    pub fn info(&self) -> &'a [u8] {
        self.get(self.secs.len().saturating_sub(1))
    }

    /// The same segment with `info` as its info section, the rest
    /// verbatim (the info section is last, so only it and the trailer change).
    pub fn with_info(&self, info: &[u8]) -> Vec<u8> {
        let last = self.secs.len().saturating_sub(1);
        let io = self.secs.get(last).map_or(self.b.len(), |s| s.0);
        let mut out = Vec::with_capacity(io + info.len() + 16);
        out.extend_from_slice(&self.b[..io]);
        let at = FIXED + last * 16 + 8;
        out[at..at + 8].copy_from_slice(&(info.len() as u64).to_le_bytes());
        out.extend_from_slice(info);
        out.extend(END);
        let total = out.len() as u64 + 8;
        out.extend(total.to_le_bytes());
        out
    }

    /// Checks that fixed-width table `i` holds `n` entries of `width` bytes.
    pub fn check_fixed(&self, i: usize, n: usize, width: usize) -> Result<(), Corrupt> {
        if self.get(i).len() != n * width {
            return Err(format!("per-document table {i} has the wrong size"));
        }
        Ok(())
    }

    /// Checks offset table `off` (`count + 1` u64 entries) against its
    /// data section `data` of `width`-byte items: its size and its ends
    /// only, so opening never reads a whole table. Every later read is
    /// bounds-checked ([`Sections::range`]), so a flipped byte inside a
    /// table gives a wrong answer at worst, never a panic; torn writes are
    /// caught by the trailer and length.
    pub fn check_table(&self, off: usize, data: usize, count: usize, width: u64) -> Result<(), Corrupt> {
        let o = self.get(off);
        if o.len() != (count + 1) * 8 {
            return Err(format!("offset table {off} has the wrong size"));
        }
        let first = read_u64(o, 0).unwrap_or(u64::MAX);
        let last = read_u64(o, count * 8).unwrap_or(u64::MAX);
        if first != 0 || last.checked_mul(width).is_none_or(|end| end != self.get(data).len() as u64) {
            return Err(format!("offset table {off} does not match its data"));
        }
        Ok(())
    }

    /// Entry `i` of offset table `off` as `a..b`, clamped to `limit` items
    /// of the data it indexes: a flipped offset inside must not become a
    /// loop over 2^64.
    pub fn range(&self, off: usize, i: usize, limit: usize) -> (usize, usize) {
        clamped(self.get(off), i, limit)
    }

    /// Item `i` of offset table `off` over byte section `data`.
    pub fn bytes_at(&self, off: usize, data: usize, i: usize) -> &'a [u8] {
        let d = self.get(data);
        let (a, b) = self.range(off, i, d.len());
        d.get(a..b).unwrap_or(&[])
    }

    /// [`Sections::bytes_at`] as UTF-8 (empty when it is not).
    pub fn str_at(&self, off: usize, data: usize, i: usize) -> &'a str {
        std::str::from_utf8(self.bytes_at(off, data, i)).unwrap_or("")
    }

    /// u32 `i` of fixed-width section `sec`.
    pub fn u32_of(&self, sec: usize, i: usize) -> Option<u32> {
        read_u32(self.get(sec), i * 4)
    }

    /// u64 `i` of fixed-width section `sec`.
    pub fn u64_of(&self, sec: usize, i: usize) -> Option<u64> {
        read_u64(self.get(sec), i * 8)
    }
}

/// A term dictionary and its postings (what [`Writer::postings`] wrote),
/// read in place.
#[derive(Debug, Clone, Copy)]
pub struct Dict<'a> {
    term_off: &'a [u8],
    keys: &'a [u8],
    post_off: &'a [u8],
    posts: &'a [u8],
    t: usize,
    n: u32,
}

/// Entry `i` of offset table `o` as `a..b`, clamped to `limit` items.
fn clamped(o: &[u8], i: usize, limit: usize) -> (usize, usize) {
    let a = read_u64(o, i * 8).unwrap_or(0) as usize;
    let b = (read_u64(o, i * 8 + 8).unwrap_or(0) as usize).min(limit);
    (a.min(b), b)
}

impl<'a> Dict<'a> {
    /// The dictionary in sections `first..first + 4` of `s`, of `terms`
    /// terms over `docs` documents; checks its tables' ends.
    pub fn open(s: &Sections<'a>, first: usize, terms: usize, docs: usize) -> Result<Dict<'a>, Corrupt> {
        s.check_table(first, first + 1, terms, 1)?;
        s.check_table(first + 2, first + 3, terms, 8)?;
        Ok(Dict {
            term_off: s.get(first),
            keys: s.get(first + 1),
            post_off: s.get(first + 2),
            posts: s.get(first + 3),
            t: terms,
            n: docs as u32,
        })
    }

    /// Number of terms.
    pub fn terms(&self) -> usize {
        self.t
    }

    /// The bytes of term `t`.
    pub fn term(&self, t: usize) -> &'a [u8] {
        let (a, b) = clamped(self.term_off, t, self.keys.len());
        self.keys.get(a..b).unwrap_or(&[])
    }

    /// The id of a term (terms are sorted by their bytes).
    pub fn find(&self, term: &[u8]) -> Option<usize> {
        let t = partition_point(self.t, |i| self.term(i) < term);
        (t < self.t && self.term(t) == term).then_some(t)
    }

    /// The positions of term `t`'s postings, for [`Dict::posting_at`].
    pub fn postings_range(&self, t: usize) -> std::ops::Range<usize> {
        let (a, b) = clamped(self.post_off, t, self.posts.len() / 8);
        a..b
    }

    /// The posting `(doc, tf)` at position `k` (None past the end or
    /// naming no document).
    pub fn posting_at(&self, k: usize) -> Option<(u32, u32)> {
        let d = read_u32(self.posts, k * 8)?;
        (d < self.n).then_some(())?;
        Some((d, read_u32(self.posts, k * 8 + 4)?))
    }

    /// Postings `(doc, tf)` of term `t`, ascending by document.
    pub fn postings_of(&self, t: usize) -> impl Iterator<Item = (u32, u32)> + 'a {
        let d = *self;
        self.postings_range(t).filter_map(move |k| d.posting_at(k))
    }

    /// Number of postings (document frequency) of term `t`.
    pub fn postings_len(&self, t: usize) -> usize {
        self.postings_range(t).len()
    }
}

/// What a side segment's build facts say about its main segment: which
/// main it extends (the main's build stamp) and which main documents it
/// removes, ascending.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SideOf {
    /// The build stamp of the main segment it applies to.
    pub main_built: u64,
    /// Main document ids removed (deleted, or replaced by a newer version
    /// in the side), ascending.
    pub dead: Vec<u32>,
}

impl SideOf {
    /// Whether this side extends the main built at `main_built` with
    /// `main_docs` documents (a side of another main, or naming documents
    /// the main lacks, is not laid over it).
    pub fn check(&self, main_built: u64, main_docs: usize) -> Result<(), Corrupt> {
        if self.main_built != main_built {
            return Err("side index of another main index".into());
        }
        if self.dead.windows(2).any(|w| w[0] >= w[1]) || self.dead.last().is_some_and(|&d| d as usize >= main_docs) {
            return Err("side index removes unknown documents".into());
        }
        Ok(())
    }

    /// Whether main document `i` is removed.
    pub fn is_dead(&self, i: u32) -> bool {
        self.dead.binary_search(&i).is_ok()
    }
}

/// The first of `0..n` for which `before` is false, where `before` holds
/// for a prefix: the binary search over a sorted table read in place
/// (`slice::partition_point` needs a slice, and these tables are offsets
/// into mapped bytes).
pub fn partition_point(n: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A build stamp naming a main segment: nanoseconds since the epoch when
/// it was written (0 when the clock is before the epoch).
pub fn build_stamp() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// The little-endian u64 at `at`, None past the end.
pub fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes)
}

/// The little-endian u32 at `at`, None past the end.
pub fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIND: &[u8; 8] = b"test\0\0\0\0";

    fn sample() -> Vec<u8> {
        let mut fwd = Forward::default();
        fwd.push_doc([(0, 2), (1, 1)]);
        fwd.push_doc([(1, 4)]);
        let vocab: [&[u8]; 3] = [b"b", b"a", b"unused"];
        let mut w = Writer::new(KIND, 3, 8, 0);
        w.table(|| [b"x.md".as_slice(), b"y.md"].into_iter());
        w.section(|o| o.extend([1u8, 0, 0, 0, 2, 0, 0, 0]));
        assert_eq!(w.postings(&fwd, 3, |t| vocab[t as usize]), 2);
        w.finish(b"{}")
    }

    fn open(b: &[u8]) -> Result<(Sections<'_>, Dict<'_>), Corrupt> {
        let s = Sections::open(b, KIND, 3, 8)?;
        s.check_table(0, 1, 2, 1)?;
        s.check_fixed(2, 2, 4)?;
        let d = Dict::open(&s, 3, 2, 2)?;
        Ok((s, d))
    }

    #[test]
    fn round_trip() {
        let bytes = sample();
        let (s, d) = open(&bytes).unwrap();
        assert_eq!((s.str_at(0, 1, 1), s.u32_of(2, 1), s.info()), ("y.md", Some(2), b"{}".as_slice()));
        assert_eq!((d.terms(), d.term(0), d.find(b"b"), d.find(b"unused")), (2, b"a".as_slice(), Some(1), None));
        assert_eq!(d.postings_of(0).collect::<Vec<_>>(), [(0, 1), (1, 4)]);
        assert_eq!(d.postings_of(1).collect::<Vec<_>>(), [(0, 2)]);
        let again = s.with_info(b"{\"a\":1}");
        let (s2, d2) = open(&again).unwrap();
        assert_eq!((s2.info(), d2.postings_len(0)), (b"{\"a\":1}".as_slice(), 2));
    }

    #[test]
    fn other_kinds_versions_and_torn_or_flipped_bytes_are_refused_not_panicking() {
        let bytes = sample();
        assert!(Sections::open(&bytes, b"other\0\0\0", 3, 8).unwrap_err().contains("not a other index"));
        assert!(Sections::open(&bytes, KIND, 2, 8).unwrap_err().contains("format 3, expected 2"));
        for cut in [0, 7, 20, bytes.len() / 2, bytes.len() - 1] {
            assert!(open(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0xff;
            if let Ok((s, d)) = open(&b) {
                let _ = (s.str_at(0, 1, 0), s.str_at(0, 1, 1));
                for t in 0..d.terms() {
                    let _ = (d.term(t), d.postings_of(t).count());
                }
            }
        }
    }

    #[test]
    fn a_side_names_its_main_and_known_documents() {
        let s = SideOf { main_built: 5, dead: vec![1, 3] };
        assert!(s.check(5, 4).is_ok());
        assert!(s.check(6, 4).is_err());
        assert!(s.check(5, 3).is_err());
        assert!(SideOf { main_built: 5, dead: vec![3, 1] }.check(5, 4).is_err());
        assert!(s.is_dead(3) && !s.is_dead(2));
    }
}
