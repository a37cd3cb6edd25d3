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
pub const FORMAT_VERSION: u32 = 6;
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

/// Writes an index. `vocab[id]` is the string of term id `id`; `used` and
/// `adj` are per document (same order as `docs`, which is sorted by path);
/// `rels` is the relations file it was built from.
pub fn write(
    mut docs: Vec<DocRec>,
    vocab: &[String],
    used: &[u32],
    adj: &[Vec<u32>],
    rels: &[u8],
    mut info: Info,
) -> Vec<u8> {
    let n = docs.len();
    // Postings per term id, docs ascending because docs are visited in
    // order; each forward list is freed as it is moved over.
    let mut posts: Vec<Vec<(u32, u32)>> = vec![Vec::new(); vocab.len()];
    for (d, doc) in docs.iter_mut().enumerate() {
        for (t, tf) in std::mem::take(&mut doc.terms) {
            if let Some(p) = posts.get_mut(t as usize) {
                p.push((d as u32, tf));
            }
        }
    }
    let mut order: Vec<u32> = (0..vocab.len() as u32).filter(|&t| !posts[t as usize].is_empty()).collect();
    order.sort_unstable_by(|a, b| vocab[*a as usize].cmp(&vocab[*b as usize]));
    let total_len: u64 = docs.iter().map(|d| u64::from(d.len)).sum();
    info.docs = n as u32;
    info.terms = order.len() as u32;
    info.avg_len = if n == 0 { 0.0 } else { total_len as f64 / n as f64 };
    info.total_len = total_len;

    let mut secs: Vec<Vec<u8>> = vec![Vec::new(); SECTIONS];
    secs[Sec::Info as usize] = serde_json::to_vec(&info).unwrap_or_default();
    let (po, pb) = blob(docs.iter().map(|d| d.path.as_bytes()));
    secs[Sec::PathOff as usize] = po;
    secs[Sec::Paths as usize] = pb;
    let (mo, mb) = blob(docs.iter().map(|d| d.meta.as_slice()));
    secs[Sec::MetaOff as usize] = mo;
    secs[Sec::Metas as usize] = mb;
    secs[Sec::Lens as usize] = docs.iter().flat_map(|d| d.len.to_le_bytes()).collect();
    secs[Sec::Used as usize] = (0..n).flat_map(|i| used.get(i).copied().unwrap_or(0).to_le_bytes()).collect();
    secs[Sec::Fresh as usize] = docs.iter().flat_map(|d| d.fresh_at.to_le_bytes()).collect();
    secs[Sec::Sizes as usize] = docs.iter().flat_map(|d| d.size.to_le_bytes()).collect();
    secs[Sec::Mtimes as usize] = docs.iter().flat_map(|d| d.mtime_ns.to_le_bytes()).collect();
    secs[Sec::TopicN as usize] = docs.iter().flat_map(|d| d.topic_n.to_le_bytes()).collect();
    let mut adj_off = Vec::with_capacity((n + 1) * 8);
    let mut adj_bytes = Vec::new();
    let mut count = 0u64;
    adj_off.extend(count.to_le_bytes());
    for i in 0..n {
        for &j in adj.get(i).map(Vec::as_slice).unwrap_or(&[]) {
            adj_bytes.extend(j.to_le_bytes());
            count += 1;
        }
        adj_off.extend(count.to_le_bytes());
    }
    secs[Sec::AdjOff as usize] = adj_off;
    secs[Sec::Adj as usize] = adj_bytes;
    let (to, tb) = blob(order.iter().map(|&t| vocab[t as usize].as_bytes()));
    secs[Sec::TermOff as usize] = to;
    secs[Sec::Terms as usize] = tb;
    let mut post_off = Vec::with_capacity((order.len() + 1) * 8);
    let mut post_bytes = Vec::new();
    let mut count = 0u64;
    post_off.extend(count.to_le_bytes());
    for &t in &order {
        for &(d, tf) in &posts[t as usize] {
            post_bytes.extend(d.to_le_bytes());
            post_bytes.extend(tf.to_le_bytes());
            count += 1;
        }
        post_off.extend(count.to_le_bytes());
    }
    secs[Sec::PostOff as usize] = post_off;
    secs[Sec::Posts as usize] = post_bytes;
    let (wo, wb) = blob(docs.iter().map(|d| d.words.as_bytes()));
    secs[Sec::WordOff as usize] = wo;
    secs[Sec::Words as usize] = wb;
    let (tpo, tpb) = blob(docs.iter().map(|d| d.topic.as_bytes()));
    secs[Sec::TopicOff as usize] = tpo;
    secs[Sec::Topics as usize] = tpb;
    secs[Sec::Rels as usize] = rels.to_vec();

    let mut out = Vec::with_capacity(HEADER + secs.iter().map(Vec::len).sum::<usize>() + 16);
    out.extend(MAGIC);
    out.extend(FORMAT_VERSION.to_le_bytes());
    out.extend((SECTIONS as u32).to_le_bytes());
    let mut off = HEADER as u64;
    for s in &secs {
        out.extend(off.to_le_bytes());
        out.extend((s.len() as u64).to_le_bytes());
        off += s.len() as u64;
    }
    for s in secs {
        // Moved and freed one by one: the file is not held twice.
        out.extend(s);
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

/// Offsets table (u64, n+1 entries) and the concatenated bytes.
fn blob<'a>(items: impl Iterator<Item = &'a [u8]>) -> (Vec<u8>, Vec<u8>) {
    let mut off = Vec::new();
    let mut bytes = Vec::new();
    off.extend(0u64.to_le_bytes());
    for it in items {
        bytes.extend(it);
        off.extend((bytes.len() as u64).to_le_bytes());
    }
    (off, bytes)
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
