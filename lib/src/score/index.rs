//! The search index of one library as bytes: per-document facts the
//! formula needs (used_by, freshness instant, BM25 length), the relation
//! graph's adjacency, and an inverted index of BM25 terms plus topic and
//! keyword words. The same bytes are the persistent cache (`score::cache`)
//! and, for a library whose cache cannot be written, an in-memory index.
//!
//! Layout (little-endian): `KBSCORE1`, format version u32, section count
//! u32, then (offset u64, length u64) per section, the sections, and the
//! trailer `KBSCEND1` + total length u64. [`View::open`] checks the magic,
//! version, trailer, every section's bounds and the ends of every offset
//! table — constant work, so a query reads only the pages it needs — and
//! a truncated or torn file is rejected (and rebuilt); every later read is
//! bounds-checked and UTF-8-checked: a bad cache can never panic a query.

use serde::{Deserialize, Serialize};

pub use super::view::View;

/// File magic.
pub const MAGIC: &[u8; 8] = b"KBSCORE1";
/// Trailer magic.
pub const END: &[u8; 8] = b"KBSCEND1";
/// Bumped whenever the layout or the analysis (tokens, stems) changes.
pub const FORMAT_VERSION: u32 = 7;
/// Prefix of a topic word in the term dictionary (never a BM25 term:
/// those are letters and digits only).
pub const TOPIC_PREFIX: &str = "\u{1}t";
/// Prefix of a keyword word in the term dictionary.
pub const KEYWORD_PREFIX: &str = "\u{1}k";
/// `fresh_at` of a document with no date at all.
pub const NO_DATE: i64 = i64::MIN;

/// Section numbers, in file order.
#[derive(Clone, Copy)]
enum Sec {
    PathOff,
    Paths,
    MetaOff,
    Metas,
    Lens,
    Used,
    Fresh,
    Sizes,
    Mtimes,
    TopicN,
    AdjOff,
    Adj,
    TermOff,
    Terms,
    PostOff,
    Posts,
    WordOff,
    Words,
    /// Raw topics, for resolving `topic:` edges when a side index
    /// recomputes part of the graph (kb::score::side).
    TopicOff,
    Topics,
    /// `.relations.jsonl` as it was when the index was built, so a side
    /// index can tell which edges changed since.
    Rels,
    /// Last, so a cache can be re-stamped without rewriting the rest.
    Info,
}
const SECTIONS: usize = 22;
const HEADER: usize = 16 + SECTIONS * 16;

/// Build facts kept for validating the cache against the library.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Info {
    /// Number of documents.
    pub docs: u32,
    /// Number of dictionary terms.
    pub terms: u32,
    /// Mean BM25 document length.
    pub avg_len: f64,
    /// Directories watched for added or removed files, with their mtime (ns).
    pub dirs: Vec<(String, u64)>,
    /// `(size, mtime ns)` of `.relations.jsonl`, `.changelog` and the archive dir.
    pub stamps: Vec<(String, u64, u64)>,
    /// Sum of the BM25 lengths (the mean is this over `docs`, so a main
    /// and a side index give the same mean as one index of both).
    #[serde(default)]
    pub total_len: u64,
    /// When a main index was built (ns since the epoch): names it, so a
    /// side index applies only to the main index it was made against.
    #[serde(default)]
    pub built: u64,
    /// Whether the relations section holds a trusted `.relations.jsonl`
    /// (a side index can only diff against one).
    #[serde(default)]
    pub relations_ok: bool,
    /// Set in a side index: what it changes in its main index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
}

/// What a side index (kb::score::side) changes in its main index: the
/// main documents it removes (deleted, or replaced by a newer version in
/// the side), the watched directories that are gone, and the graph facts
/// of every document whose facts differ from the main index's.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Side {
    /// [`Info::built`] of the main index it applies to.
    pub main_built: u64,
    /// Main document ids removed, ascending.
    pub dead: Vec<u32>,
    /// Watched directories of the main index that no longer exist.
    pub gone: Vec<String>,
    /// `(merged id, used_by, neighbours as merged ids)` of every side
    /// document and of every main document whose graph facts changed.
    pub facts: Vec<(u32, u32, Vec<u32>)>,
}

/// What a hit shows about a document, kept as JSON per document so a
/// query parses only the documents it returns.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Meta {
    /// reference, experience, ... (kb::library::entry::Category).
    pub category: String,
    /// Topic.
    pub topic: String,
    /// Title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Frontmatter type or experience type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub doc_type: Option<String>,
    /// Keywords.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Notebooks of `sources.notebook`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notebooks: Vec<String>,
    /// quality_status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality_status: Option<String>,
    /// Where the freshness date came from: `last_verified_at`, `changelog`
    /// (its newest write line), `git` (its newest commit) or `none`.
    pub fresh_from: String,
}

/// One document ready to be written into an index.
#[derive(Debug, Clone, Default)]
pub struct DocRec {
    /// Library-relative path.
    pub path: String,
    /// Serialized [`Meta`].
    pub meta: Vec<u8>,
    /// Term ids (into the builder's vocabulary) with term frequencies.
    pub terms: Vec<(u32, u32)>,
    /// BM25 length (number of BM25 terms).
    pub len: u32,
    /// Freshness instant, epoch seconds, or [`NO_DATE`].
    pub fresh_at: i64,
    /// File size at indexing time.
    pub size: u64,
    /// File mtime (ns) at indexing time.
    pub mtime_ns: u64,
    /// Number of topic words.
    pub topic_n: u32,
    /// Folded topic words and keywords, as [`Words::encode`] writes them.
    pub words: String,
    /// The topic as written (kb::library::entry::Entry::topic).
    pub topic: String,
}

/// The folded words of a document's topic and of each keyword, kept so a
/// query can check seed 000's topic and keyword tiers without parsing the
/// document's metadata or normalising its text again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Words<'a> {
    /// Topic words in order.
    pub topic: Vec<&'a str>,
    /// Each keyword's words in order.
    pub keywords: Vec<Vec<&'a str>>,
}

/// Separates the topic and each keyword in the encoded form (words never
/// hold it, nor a space: they are letters, digits, `_` and `'`).
const KW_SEP: char = '\u{1f}';

impl Words<'_> {
    /// `topic words␟kw1 words␟kw2 words`.
    pub fn encode(topic: &[String], keywords: &[Vec<String>]) -> String {
        let mut s = topic.join(" ");
        for k in keywords {
            s.push(KW_SEP);
            s.push_str(&k.join(" "));
        }
        s
    }

    /// Reads what [`Words::encode`] wrote.
    pub fn decode(s: &str) -> Words<'_> {
        let mut parts = s.split(KW_SEP);
        let topic = parts.next().unwrap_or("").split(' ').filter(|w| !w.is_empty()).collect();
        let keywords = parts.map(|k| k.split(' ').filter(|w| !w.is_empty()).collect()).collect();
        Words { topic, keywords }
    }
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

/// Writes an index. `vocab[id]` is the string of term id `id`; `used` and
/// `adj` are per document (same order as `docs`, which is sorted by path);
/// `rels` is the relations file it was built from.
pub fn write(
    mut docs: Vec<DocRec>,
    vocab: &[String],
    used: &[u32],
    adj: &[Vec<u32>],
    rels: &[u8],
    info: Info,
) -> Vec<u8> {
    let mut fwd = Forward::default();
    for d in &mut docs {
        fwd.push_doc(std::mem::take(&mut d.terms));
    }
    write_flat(docs, fwd, vocab, used, adj, rels, info)
}

/// Appends one section to `out`, recording where it went.
fn section(out: &mut Vec<u8>, secs: &mut [(u64, u64); SECTIONS], s: Sec, fill: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    fill(out);
    secs[s as usize] = (at as u64, (out.len() - at) as u64);
}

/// Appends an offsets section (u64, n+1 entries) and its data section.
fn blob<'a, I: Iterator<Item = &'a [u8]>>(
    out: &mut Vec<u8>,
    secs: &mut [(u64, u64); SECTIONS],
    (off, data): (Sec, Sec),
    items: impl Fn() -> I,
) {
    section(out, secs, off, |o| {
        let mut n = 0u64;
        o.extend(n.to_le_bytes());
        for it in items() {
            n += it.len() as u64;
            o.extend(n.to_le_bytes());
        }
    });
    section(out, secs, data, |o| items().for_each(|it| o.extend_from_slice(it)));
}

/// [`write`] with the forward lists apart from the documents. The file is
/// written straight into one buffer of its exact size, postings placed by
/// a counting sort over the flat lists (no list per term, no section
/// buffers, no second copy): the cold build's peak memory is the index
/// plus the forward lists.
pub fn write_flat(
    docs: Vec<DocRec>,
    fwd: Forward,
    vocab: &[String],
    used: &[u32],
    adj: &[Vec<u32>],
    rels: &[u8],
    mut info: Info,
) -> Vec<u8> {
    let n = docs.len();
    let mut df = vec![0u64; vocab.len()];
    for &(t, _) in &fwd.items {
        if let Some(c) = df.get_mut(t as usize) {
            *c += 1;
        }
    }
    let mut order: Vec<u32> = (0..vocab.len() as u32).filter(|&t| df[t as usize] > 0).collect();
    order.sort_unstable_by(|a, b| vocab[*a as usize].cmp(&vocab[*b as usize]));
    let total_len: u64 = docs.iter().map(|d| u64::from(d.len)).sum();
    info.docs = n as u32;
    info.terms = order.len() as u32;
    info.avg_len = if n == 0 { 0.0 } else { total_len as f64 / n as f64 };
    info.total_len = total_len;
    let info_json = serde_json::to_vec(&info).unwrap_or_default();
    let postings: u64 = order.iter().map(|&t| df[t as usize]).sum();
    let adj_n: usize = (0..n).map(|i| adj.get(i).map_or(0, Vec::len)).sum();
    let t = order.len();
    let sum = |f: &dyn Fn(&DocRec) -> usize| docs.iter().map(f).sum::<usize>();
    let size = HEADER
        + 5 * (n + 1) * 8
        + sum(&|d| d.path.len() + d.meta.len() + d.words.len() + d.topic.len())
        + n * (4 + 4 + 8 + 8 + 8 + 4)
        + (n + 1) * 8
        + adj_n * 4
        + 2 * (t + 1) * 8
        + order.iter().map(|&x| vocab[x as usize].len()).sum::<usize>()
        + postings as usize * 8
        + rels.len()
        + info_json.len()
        + 16;
    let mut out: Vec<u8> = Vec::with_capacity(size);
    out.extend(MAGIC);
    out.extend(FORMAT_VERSION.to_le_bytes());
    out.extend((SECTIONS as u32).to_le_bytes());
    out.resize(HEADER, 0);
    let mut secs = [(0u64, 0u64); SECTIONS];
    let o = &mut out;
    let s = &mut secs;
    blob(o, s, (Sec::PathOff, Sec::Paths), || docs.iter().map(|d| d.path.as_bytes()));
    blob(o, s, (Sec::MetaOff, Sec::Metas), || docs.iter().map(|d| d.meta.as_slice()));
    section(o, s, Sec::Lens, |o| docs.iter().for_each(|d| o.extend(d.len.to_le_bytes())));
    section(o, s, Sec::Used, |o| (0..n).for_each(|i| o.extend(used.get(i).copied().unwrap_or(0).to_le_bytes())));
    section(o, s, Sec::Fresh, |o| docs.iter().for_each(|d| o.extend(d.fresh_at.to_le_bytes())));
    section(o, s, Sec::Sizes, |o| docs.iter().for_each(|d| o.extend(d.size.to_le_bytes())));
    section(o, s, Sec::Mtimes, |o| docs.iter().for_each(|d| o.extend(d.mtime_ns.to_le_bytes())));
    section(o, s, Sec::TopicN, |o| docs.iter().for_each(|d| o.extend(d.topic_n.to_le_bytes())));
    let adj_of = |i: usize| adj.get(i).map(Vec::as_slice).unwrap_or(&[]);
    section(o, s, Sec::AdjOff, |o| {
        let mut c = 0u64;
        o.extend(c.to_le_bytes());
        for i in 0..n {
            c += adj_of(i).len() as u64;
            o.extend(c.to_le_bytes());
        }
    });
    section(o, s, Sec::Adj, |o| (0..n).for_each(|i| adj_of(i).iter().for_each(|j| o.extend(j.to_le_bytes()))));
    blob(o, s, (Sec::TermOff, Sec::Terms), || order.iter().map(|&x| vocab[x as usize].as_bytes()));
    // Where each term's postings start (in postings), in dictionary order.
    let mut start = vec![0u64; vocab.len()];
    section(o, s, Sec::PostOff, |o| {
        let mut c = 0u64;
        o.extend(c.to_le_bytes());
        for &x in &order {
            start[x as usize] = c;
            c += df[x as usize];
            o.extend(c.to_le_bytes());
        }
    });
    drop(df);
    section(o, s, Sec::Posts, |o| {
        let base = o.len();
        o.resize(base + postings as usize * 8, 0);
        // Documents in order, so each term's postings come out ascending.
        for d in 0..n {
            for &(x, tf) in fwd.doc(d) {
                let Some(c) = start.get_mut(x as usize) else { continue };
                let at = base + *c as usize * 8;
                o[at..at + 4].copy_from_slice(&(d as u32).to_le_bytes());
                o[at + 4..at + 8].copy_from_slice(&tf.to_le_bytes());
                *c += 1;
            }
        }
    });
    drop(fwd);
    blob(o, s, (Sec::WordOff, Sec::Words), || docs.iter().map(|d| d.words.as_bytes()));
    blob(o, s, (Sec::TopicOff, Sec::Topics), || docs.iter().map(|d| d.topic.as_bytes()));
    section(o, s, Sec::Rels, |o| o.extend_from_slice(rels));
    section(o, s, Sec::Info, |o| o.extend_from_slice(&info_json));
    for (i, (off, len)) in secs.iter().enumerate() {
        out[16 + i * 16..24 + i * 16].copy_from_slice(&off.to_le_bytes());
        out[24 + i * 16..32 + i * 16].copy_from_slice(&len.to_le_bytes());
    }
    out.extend(END);
    let total = out.len() as u64 + 8;
    out.extend(total.to_le_bytes());
    out
}

/// The same index with new build facts (watched stamps), without
/// rebuilding: the info section is last, so only it and the trailer change.
pub fn restamp(v: &Seg, mut info: Info) -> Vec<u8> {
    info.docs = v.info.docs;
    info.terms = v.info.terms;
    info.avg_len = v.info.avg_len;
    info.total_len = v.info.total_len;
    info.built = v.info.built;
    info.relations_ok = v.info.relations_ok;
    with_info(v, &info)
}

/// The same index bytes with `info` as their info section, verbatim.
pub fn with_info(v: &Seg, info: &Info) -> Vec<u8> {
    let (io, _) = v.secs[Sec::Info as usize];
    let json = serde_json::to_vec(info).unwrap_or_default();
    let mut out = Vec::with_capacity(io + json.len() + 16);
    out.extend_from_slice(&v.b[..io]);
    let at = 16 + Sec::Info as usize * 16 + 8;
    out[at..at + 8].copy_from_slice(&(json.len() as u64).to_le_bytes());
    out.extend(json);
    out.extend(END);
    let total = out.len() as u64 + 8;
    out.extend(total.to_le_bytes());
    out
}

/// One validated, read-only index file (a main index or a side index).
pub struct Seg<'a> {
    b: &'a [u8],
    secs: [(usize, usize); SECTIONS],
    /// Build facts.
    pub info: Info,
    n: usize,
    t: usize,
}

/// Why index bytes were rejected.
pub type Corrupt = String;

impl<'a> Seg<'a> {
    /// Checks the bytes and returns a segment, or why they cannot be trusted.
    pub fn open(b: &'a [u8]) -> Result<Seg<'a>, Corrupt> {
        if b.len() < HEADER + 16 || &b[..8] != MAGIC {
            return Err("not a kb-score index (bad magic or too short)".into());
        }
        let ver = u32::from_le_bytes(b[8..12].try_into().map_err(|_| "short header")?);
        if ver != FORMAT_VERSION {
            return Err(format!("index format {ver}, expected {FORMAT_VERSION}"));
        }
        let tail = &b[b.len() - 16..];
        let total = u64::from_le_bytes(tail[8..16].try_into().map_err(|_| "short trailer")?);
        if &tail[..8] != END || total != b.len() as u64 {
            return Err("index is truncated (trailer missing or length differs)".into());
        }
        let mut secs = [(0usize, 0usize); SECTIONS];
        let body_end = b.len() - 16;
        let mut expect = HEADER;
        for (i, s) in secs.iter_mut().enumerate() {
            let at = 16 + i * 16;
            let off = read_u64(b, at).ok_or("short header")? as usize;
            let len = read_u64(b, at + 8).ok_or("short header")? as usize;
            if off != expect || off.checked_add(len).is_none_or(|e| e > body_end) {
                return Err(format!("section {i} out of bounds"));
            }
            *s = (off, len);
            expect = off + len;
        }
        if expect != body_end {
            return Err("sections do not fill the file".into());
        }
        let (io, il) = secs[Sec::Info as usize];
        let info: Info = serde_json::from_slice(&b[io..io + il]).map_err(|e| format!("index info unreadable: {e}"))?;
        let mut v = Seg { b, secs, n: info.docs as usize, t: info.terms as usize, info };
        v.check()?;
        Ok(v)
    }

    fn check(&mut self) -> Result<(), Corrupt> {
        let n = self.n;
        let fixed =
            [(Sec::Lens, 4), (Sec::Used, 4), (Sec::Fresh, 8), (Sec::Sizes, 8), (Sec::Mtimes, 8), (Sec::TopicN, 4)];
        for (s, w) in fixed {
            if self.sec(s).len() != n * w {
                return Err(format!("per-document table {} has the wrong size", s as usize));
            }
        }
        let tables = [
            (Sec::PathOff, Sec::Paths, n, 1),
            (Sec::MetaOff, Sec::Metas, n, 1),
            (Sec::AdjOff, Sec::Adj, n, 4),
            (Sec::TermOff, Sec::Terms, self.t, 1),
            (Sec::PostOff, Sec::Posts, self.t, 8),
            (Sec::WordOff, Sec::Words, n, 1),
            (Sec::TopicOff, Sec::Topics, n, 1),
        ];
        for (off, data, count, width) in tables {
            let o = self.sec(off);
            if o.len() != (count + 1) * 8 {
                return Err(format!("offset table {} has the wrong size", off as usize));
            }
            // First and last offsets only: a query must not read the whole
            // cache. Every later read is bounds-checked, so a flipped byte
            // inside a table gives a wrong answer at worst, never a panic;
            // torn writes are caught by the trailer and length above.
            let first = read_u64(o, 0).unwrap_or(u64::MAX);
            let last = read_u64(o, count * 8).unwrap_or(u64::MAX);
            if first != 0 || last.checked_mul(width).is_none_or(|end| end != self.sec(data).len() as u64) {
                return Err(format!("offset table {} does not match its data", off as usize));
            }
        }
        Ok(())
    }

    fn sec(&self, s: Sec) -> &'a [u8] {
        let (o, l) = self.secs[s as usize];
        &self.b[o..o + l]
    }

    /// Number of documents.
    pub fn docs(&self) -> usize {
        self.n
    }

    /// Entry `i` of offset table `off` as `a..b`, clamped to `limit` items
    /// of the data it indexes: `open` checks only the tables' ends (constant
    /// work), so a flipped offset inside must not become a loop over 2^64.
    fn range(&self, off: Sec, i: usize, limit: usize) -> (usize, usize) {
        let o = self.sec(off);
        let a = read_u64(o, i * 8).unwrap_or(0) as usize;
        let b = (read_u64(o, i * 8 + 8).unwrap_or(0) as usize).min(limit);
        (a.min(b), b)
    }

    fn str_at(&self, off: Sec, data: Sec, i: usize) -> &'a str {
        let (a, b) = self.range(off, i, self.sec(data).len());
        self.sec(data).get(a..b).and_then(|s| std::str::from_utf8(s).ok()).unwrap_or("")
    }

    /// The path of document `d`.
    pub fn path(&self, d: u32) -> &'a str {
        self.str_at(Sec::PathOff, Sec::Paths, d as usize)
    }

    /// The metadata of document `d` (default when unreadable).
    pub fn meta(&self, d: u32) -> Meta {
        let (a, b) = self.range(Sec::MetaOff, d as usize, self.sec(Sec::Metas).len());
        self.sec(Sec::Metas).get(a..b).and_then(|s| serde_json::from_slice(s).ok()).unwrap_or_default()
    }

    /// The raw metadata bytes of document `d`.
    pub fn meta_bytes(&self, d: u32) -> &'a [u8] {
        let (a, b) = self.range(Sec::MetaOff, d as usize, self.sec(Sec::Metas).len());
        self.sec(Sec::Metas).get(a..b).unwrap_or(&[])
    }

    /// BM25 length of document `d`.
    pub fn len(&self, d: u32) -> u32 {
        read_u32(self.sec(Sec::Lens), d as usize * 4).unwrap_or(0)
    }

    /// used_by of document `d`.
    pub fn used_by(&self, d: u32) -> u32 {
        read_u32(self.sec(Sec::Used), d as usize * 4).unwrap_or(0)
    }

    /// Freshness instant of document `d` (epoch seconds or [`NO_DATE`]).
    pub fn fresh_at(&self, d: u32) -> i64 {
        read_u64(self.sec(Sec::Fresh), d as usize * 8).map_or(NO_DATE, |x| x as i64)
    }

    /// `(size, mtime ns)` of document `d` when indexed.
    pub fn stamp(&self, d: u32) -> (u64, u64) {
        let i = d as usize * 8;
        (read_u64(self.sec(Sec::Sizes), i).unwrap_or(0), read_u64(self.sec(Sec::Mtimes), i).unwrap_or(0))
    }

    /// Number of topic words of document `d`.
    pub fn topic_n(&self, d: u32) -> u32 {
        read_u32(self.sec(Sec::TopicN), d as usize * 4).unwrap_or(0)
    }

    /// The folded topic and keyword words of document `d`.
    pub fn words(&self, d: u32) -> Words<'a> {
        Words::decode(self.str_at(Sec::WordOff, Sec::Words, d as usize))
    }

    /// The topic of document `d` as written.
    pub fn topic(&self, d: u32) -> &'a str {
        self.str_at(Sec::TopicOff, Sec::Topics, d as usize)
    }

    /// The relations file the index was built from (see [`Info::relations_ok`]).
    pub fn relations(&self) -> &'a [u8] {
        self.sec(Sec::Rels)
    }

    /// The id of the document at `path` (paths are sorted).
    pub fn find_path(&self, path: &str) -> Option<u32> {
        let i = self.path_rank(path);
        (i < self.n && self.path(i as u32) == path).then_some(i as u32)
    }

    /// How many documents sort before `path`.
    pub fn path_rank(&self, path: &str) -> usize {
        let (mut lo, mut hi) = (0usize, self.n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.path(mid as u32) < path {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The encoded words of document `d` (to carry over into a rebuild).
    pub fn words_raw(&self, d: u32) -> &'a str {
        self.str_at(Sec::WordOff, Sec::Words, d as usize)
    }

    /// Graph neighbours of document `d` (valid document ids only).
    pub fn neighbors(&self, d: u32) -> impl Iterator<Item = u32> + 'a {
        let (a, b) = self.range(Sec::AdjOff, d as usize, self.sec(Sec::Adj).len() / 4);
        let adj = self.sec(Sec::Adj);
        let n = self.n as u32;
        (a..b).filter_map(move |k| read_u32(adj, k * 4)).filter(move |&j| j < n)
    }

    /// Number of dictionary terms.
    pub fn terms(&self) -> usize {
        self.t
    }

    /// The string of dictionary term `t`.
    pub fn term(&self, t: usize) -> &'a str {
        self.str_at(Sec::TermOff, Sec::Terms, t)
    }

    /// The dictionary id of a term.
    pub fn find(&self, term: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0usize, self.t);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.term(mid).cmp(term) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Postings `(doc, tf)` of dictionary term `t`.
    pub fn postings_of(&self, t: usize) -> impl Iterator<Item = (u32, u32)> + 'a {
        let (a, b) = self.range(Sec::PostOff, t, self.sec(Sec::Posts).len() / 8);
        let p = self.sec(Sec::Posts);
        let n = self.n as u32;
        (a..b).filter_map(move |k| Some((read_u32(p, k * 8)?, read_u32(p, k * 8 + 4)?))).filter(move |&(d, _)| d < n)
    }

    /// The positions of term `t`'s postings, for [`Seg::posting_at`].
    pub fn postings_range(&self, t: usize) -> std::ops::Range<usize> {
        let (a, b) = self.range(Sec::PostOff, t, self.sec(Sec::Posts).len() / 8);
        a..b
    }

    /// The posting `(doc, tf)` at position `k` (None past the end or
    /// naming no document).
    pub fn posting_at(&self, k: usize) -> Option<(u32, u32)> {
        let p = self.sec(Sec::Posts);
        let d = read_u32(p, k * 8)?;
        (d < self.n as u32).then_some(())?;
        Some((d, read_u32(p, k * 8 + 4)?))
    }

    /// Number of postings (document frequency) of dictionary term `t`.
    pub fn postings_len(&self, t: usize) -> usize {
        let (a, b) = self.range(Sec::PostOff, t, self.sec(Sec::Posts).len() / 8);
        b - a
    }

    /// Postings of a term string (empty when absent).
    pub fn postings(&self, term: &str) -> Vec<(u32, u32)> {
        self.find(term).map(|t| self.postings_of(t).collect()).unwrap_or_default()
    }
}

fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes)
}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let vocab = vec!["b".to_string(), "a".to_string(), "unused".to_string()];
        let docs = vec![
            DocRec {
                path: "x.md".into(),
                meta: b"{\"category\":\"user\",\"topic\":\"x\",\"fresh_from\":\"none\"}".to_vec(),
                terms: vec![(0, 2), (1, 1)],
                len: 3,
                fresh_at: 5,
                size: 10,
                mtime_ns: 7,
                topic_n: 1,
                words: Words::encode(&["x".into()], &[vec!["k".into(), "w".into()]]),
                topic: "x".into(),
            },
            DocRec {
                path: "y.md".into(),
                meta: b"{}".to_vec(),
                terms: vec![(1, 4)],
                len: 4,
                fresh_at: NO_DATE,
                size: 1,
                mtime_ns: 2,
                topic_n: 0,
                words: String::new(),
                topic: String::new(),
            },
        ];
        write(docs, &vocab, &[3, 0], &[vec![1], vec![0]], b"", Info::default())
    }

    #[test]
    fn round_trip() {
        let bytes = sample();
        let v = Seg::open(&bytes).unwrap();
        assert_eq!((v.docs(), v.terms()), (2, 2));
        assert_eq!(v.term(0), "a");
        assert_eq!(v.postings("a"), [(0, 1), (1, 4)]);
        assert_eq!(v.postings("b"), [(0, 2)]);
        assert!(v.postings("unused").is_empty());
        assert_eq!((v.path(1), v.used_by(0), v.fresh_at(1), v.stamp(0)), ("y.md", 3, NO_DATE, (10, 7)));
        assert_eq!(v.neighbors(0).collect::<Vec<_>>(), [1]);
        assert_eq!(v.meta(0).topic, "x");
        assert_eq!(v.words(0), Words { topic: vec!["x"], keywords: vec![vec!["k", "w"]] });
        assert_eq!(v.words(1), Words::default());
        assert_eq!(v.info.avg_len, 3.5);
        let info = Info { dirs: vec![("a".into(), 9)], ..Info::default() };
        let again = restamp(&v, info);
        let w = Seg::open(&again).unwrap();
        assert_eq!((w.info.dirs.len(), w.info.avg_len, w.postings("a")), (1, 3.5, vec![(0, 1), (1, 4)]));
    }

    #[test]
    fn truncated_or_flipped_bytes_are_rejected_not_panicking() {
        let bytes = sample();
        for cut in [0, 7, 20, bytes.len() / 2, bytes.len() - 1] {
            assert!(Seg::open(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0xff;
            if let Ok(v) = Seg::open(&b) {
                for d in 0..v.docs() as u32 {
                    let _ = (v.meta(d), v.path(d), v.neighbors(d).count());
                }
                for t in 0..v.terms() {
                    let _ = v.postings_of(t).count();
                }
            }
        }
    }
}
