//! The search index of one library as bytes: per-document facts the
//! formula needs (used_by, freshness instant, BM25 length), the relation
//! graph's adjacency, and an inverted index of BM25 terms plus topic and
//! keyword words. The same bytes are the persistent cache (`score::cache`)
//! and, for a library whose cache cannot be written, an in-memory index.
//!
//! The file is a segment of the project's one binary index format
//! (kb::text::segment: header, section table, trailer, term dictionary
//! and postings, side segments); this module names kb-score's sections
//! and per-document fields. [`Seg::open`] checks the kind, version, the
//! section table and the ends of every offset table — constant work, so a
//! query reads only the pages it needs — and a truncated, torn or
//! old-format file is rejected (and rebuilt); every later read is
//! bounds-checked and UTF-8-checked: a bad cache can never panic a query.

use serde::{Deserialize, Serialize};

pub use super::view::View;
use crate::text::segment::{self, read_u32, read_u64, Dict, Sections, SideOf, Writer};
pub use crate::text::segment::{Corrupt, Forward};

/// The segment kind of a kb-score index.
pub const KIND: &[u8; 8] = b"score\0\0\0";
/// Bumped whenever the layout or the analysis (tokens, stems) changes
/// (7: letter/digit runs and British spellings; 8: the shared segment
/// format of kb::text::segment).
pub const FORMAT_VERSION: u32 = 8;
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
// The dictionary is the four sections kb::text::segment::Dict reads in a
// row, and the info section is the segment's last.
const _: () = assert!(
    Sec::Terms as usize == Sec::TermOff as usize + 1
        && Sec::PostOff as usize == Sec::TermOff as usize + 2
        && Sec::Posts as usize == Sec::TermOff as usize + 3
        && Sec::Info as usize == SECTIONS - 1
);

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
    /// The main index it applies to ([`Info::built`]) and the main
    /// documents it removes.
    #[serde(flatten)]
    pub of: SideOf,
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
    info: Info,
) -> Vec<u8> {
    let mut fwd = Forward::default();
    for d in &mut docs {
        fwd.push_doc(std::mem::take(&mut d.terms));
    }
    write_flat(docs, fwd, vocab, used, adj, rels, info)
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
    let mut df = vec![false; vocab.len()];
    for d in 0..n {
        fwd.doc(d).iter().for_each(|&(t, _)| df.get_mut(t as usize).into_iter().for_each(|c| *c = true));
    }
    let terms = df.iter().filter(|&&x| x).count();
    let key_bytes: usize = vocab.iter().zip(&df).filter(|(_, &x)| x).map(|(w, _)| w.len()).sum();
    drop(df);
    let total_len: u64 = docs.iter().map(|d| u64::from(d.len)).sum();
    info.docs = n as u32;
    info.terms = terms as u32;
    info.avg_len = if n == 0 { 0.0 } else { total_len as f64 / n as f64 };
    info.total_len = total_len;
    let info_json = serde_json::to_vec(&info).unwrap_or_default();
    let adj_n: usize = (0..n).map(|i| adj.get(i).map_or(0, Vec::len)).sum();
    let sum = |f: &dyn Fn(&DocRec) -> usize| docs.iter().map(f).sum::<usize>();
    let size = segment::header_len(SECTIONS)
        + 5 * (n + 1) * 8
        + sum(&|d| d.path.len() + d.meta.len() + d.words.len() + d.topic.len())
        + n * (4 + 4 + 8 + 8 + 8 + 4)
        + (n + 1) * 8
        + adj_n * 4
        + segment::postings_size(terms, key_bytes, fwd.items())
        + rels.len()
        + info_json.len()
        + 16;
    let mut w = Writer::new(KIND, FORMAT_VERSION, SECTIONS, size);
    w.table(|| docs.iter().map(|d| d.path.as_bytes()));
    w.table(|| docs.iter().map(|d| d.meta.as_slice()));
    w.section(|o| docs.iter().for_each(|d| o.extend(d.len.to_le_bytes())));
    w.section(|o| (0..n).for_each(|i| o.extend(used.get(i).copied().unwrap_or(0).to_le_bytes())));
    w.section(|o| docs.iter().for_each(|d| o.extend(d.fresh_at.to_le_bytes())));
    w.section(|o| docs.iter().for_each(|d| o.extend(d.size.to_le_bytes())));
    w.section(|o| docs.iter().for_each(|d| o.extend(d.mtime_ns.to_le_bytes())));
    w.section(|o| docs.iter().for_each(|d| o.extend(d.topic_n.to_le_bytes())));
    let adj_of = |i: usize| adj.get(i).map(Vec::as_slice).unwrap_or(&[]);
    w.section(|o| {
        let mut c = 0u64;
        o.extend(c.to_le_bytes());
        for i in 0..n {
            c += adj_of(i).len() as u64;
            o.extend(c.to_le_bytes());
        }
    });
    w.section(|o| (0..n).for_each(|i| adj_of(i).iter().for_each(|j| o.extend(j.to_le_bytes()))));
    w.postings(&fwd, vocab.len(), |x| vocab[x as usize].as_bytes());
    drop(fwd);
    w.table(|| docs.iter().map(|d| d.words.as_bytes()));
    w.table(|| docs.iter().map(|d| d.topic.as_bytes()));
    w.section(|o| o.extend_from_slice(rels));
    w.finish(&info_json)
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
    v.s.with_info(&serde_json::to_vec(info).unwrap_or_default())
}

/// One validated, read-only index file (a main index or a side index).
pub struct Seg<'a> {
    s: Sections<'a>,
    dict: Dict<'a>,
    /// Build facts.
    pub info: Info,
    n: usize,
}

impl<'a> Seg<'a> {
    /// Checks the bytes and returns a segment, or why they cannot be trusted.
    pub fn open(b: &'a [u8]) -> Result<Seg<'a>, Corrupt> {
        let s = Sections::open(b, KIND, FORMAT_VERSION, SECTIONS)?;
        let info: Info = serde_json::from_slice(s.info()).map_err(|e| format!("index info unreadable: {e}"))?;
        let n = info.docs as usize;
        let fixed =
            [(Sec::Lens, 4), (Sec::Used, 4), (Sec::Fresh, 8), (Sec::Sizes, 8), (Sec::Mtimes, 8), (Sec::TopicN, 4)];
        for (sec, w) in fixed {
            s.check_fixed(sec as usize, n, w)?;
        }
        let tables = [
            (Sec::PathOff, Sec::Paths, 1),
            (Sec::MetaOff, Sec::Metas, 1),
            (Sec::AdjOff, Sec::Adj, 4),
            (Sec::WordOff, Sec::Words, 1),
            (Sec::TopicOff, Sec::Topics, 1),
        ];
        for (off, data, width) in tables {
            s.check_table(off as usize, data as usize, n, width)?;
        }
        let dict = Dict::open(&s, Sec::TermOff as usize, info.terms as usize, n)?;
        Ok(Seg { s, dict, info, n })
    }

    fn sec(&self, s: Sec) -> &'a [u8] {
        self.s.get(s as usize)
    }

    /// Number of documents.
    pub fn docs(&self) -> usize {
        self.n
    }

    fn range(&self, off: Sec, i: usize, limit: usize) -> (usize, usize) {
        self.s.range(off as usize, i, limit)
    }

    fn str_at(&self, off: Sec, data: Sec, i: usize) -> &'a str {
        self.s.str_at(off as usize, data as usize, i)
    }

    /// The path of document `d`.
    pub fn path(&self, d: u32) -> &'a str {
        self.str_at(Sec::PathOff, Sec::Paths, d as usize)
    }

    /// The metadata of document `d` (default when unreadable).
    pub fn meta(&self, d: u32) -> Meta {
        serde_json::from_slice(self.meta_bytes(d)).unwrap_or_default()
    }

    /// The raw metadata bytes of document `d`.
    pub fn meta_bytes(&self, d: u32) -> &'a [u8] {
        self.s.bytes_at(Sec::MetaOff as usize, Sec::Metas as usize, d as usize)
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
        segment::partition_point(self.n, |i| self.path(i as u32) < path)
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
        self.dict.terms()
    }

    /// The string of dictionary term `t`.
    pub fn term(&self, t: usize) -> &'a str {
        std::str::from_utf8(self.dict.term(t)).unwrap_or("")
    }

    /// The dictionary id of a term.
    pub fn find(&self, term: &str) -> Option<usize> {
        self.dict.find(term.as_bytes())
    }

    /// Postings `(doc, tf)` of dictionary term `t`.
    pub fn postings_of(&self, t: usize) -> impl Iterator<Item = (u32, u32)> + 'a {
        self.dict.postings_of(t)
    }

    /// The positions of term `t`'s postings, for [`Seg::posting_at`].
    pub fn postings_range(&self, t: usize) -> std::ops::Range<usize> {
        self.dict.postings_range(t)
    }

    /// The posting `(doc, tf)` at position `k` (None past the end or
    /// naming no document).
    pub fn posting_at(&self, k: usize) -> Option<(u32, u32)> {
        self.dict.posting_at(k)
    }

    /// Number of postings (document frequency) of dictionary term `t`.
    pub fn postings_len(&self, t: usize) -> usize {
        self.dict.postings_len(t)
    }

    /// Postings of a term string (empty when absent).
    pub fn postings(&self, term: &str) -> Vec<(u32, u32)> {
        self.find(term).map(|t| self.postings_of(t).collect()).unwrap_or_default()
    }
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
