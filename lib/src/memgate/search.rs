//! The TopK neighbour search of seed 003 "治理逻辑" over `notes/`, served
//! from a derived inverted index `.search.idx` next to `notes/`, so a
//! decide costs the postings of the query's terms, not a rescan of every
//! note. The index is rebuilt from the notes alone (`reindex`); when it is
//! missing or older than `notes/` (the directory's mtime changes with every
//! add, rename or delete), decide builds one in memory from the notes.
//!
//! The file is a segment of the project's one binary index format
//! (kb::text::segment, kind `memgate`): per note its name (`id\tfile`),
//! size, mtime, word and n-gram lengths and duplicate digest; one term
//! dictionary of word and n-gram keys (8 bytes big-endian, so the
//! dictionary's byte order is the keys' order; a key's low bit tells the
//! halves apart) with postings `(doc, tf)`; and the build facts (the
//! notes-dir mtime it is current with, the total lengths). A version 03
//! file (`KBMGIX03`, before the shared format) or a damaged one is refused
//! and rebuilt from the notes, never read with another layout.
//!
//! What `apply` changed since the index was written whole is a *side
//! segment* `.search.side` in the same format (the notes written since,
//! and which indexed notes they remove): [`View::with_side`] lays it over
//! the index, as kb-score does with its side index.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::similarity::{self as sim, Features};
use crate::text::segment::{self, Corrupt, Dict, Forward, Sections, SideOf, Writer};

/// The segment kind of a memgate index.
pub const KIND: &[u8; 8] = b"memgate\0";
/// Version 7: the shared segment format (version 03 had its own layout;
/// 4 stored the terms before lemmas and possessives were reduced, 5 before
/// clipped words were expanded, 6 before a project's clippings — repo,
/// config, db — were, so their keys no longer meet a query's).
pub const FORMAT_VERSION: u32 = 7;
const NAME_OFF: usize = 0;
const NAMES: usize = 1;
const SIZES: usize = 2;
const MTIMES: usize = 3;
const WORD_LENS: usize = 4;
const GRAM_LENS: usize = 5;
const DUPS: usize = 6;
/// The term dictionary's first section (four in a row).
const DICT: usize = 7;
/// The info section, last.
const SECTIONS: usize = 12;

/// Build facts of a memgate segment (its info section, JSON).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Info {
    /// Number of notes.
    pub docs: u32,
    /// Number of dictionary keys.
    pub terms: u32,
    /// The notes-dir mtime (ns) the segment (a side: with its main) is current with.
    pub dir_mtime_ns: i64,
    /// Sum of the word lengths.
    pub total_len: u64,
    /// Sum of the n-gram lengths.
    pub total_grams: u64,
    /// When a main segment was written (kb::text::segment::build_stamp).
    pub built: u64,
    /// Set in a side segment: the main it extends and the notes it removes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<SideOf>,
}

/// One indexed note.
#[derive(Debug, Clone, PartialEq)]
pub struct DocEntry {
    /// The note's id.
    pub id: String,
    /// Its file name under notes/.
    pub file: String,
    /// File size when indexed.
    pub size: u64,
    /// File mtime (ns) when indexed.
    pub mtime_ns: i64,
    /// Its features.
    pub features: Features,
}

/// Serialises a main index, current with the notes-dir mtime
/// `dir_mtime_ns`; notes are stored in id order, which is also the order
/// ties are broken in.
pub fn encode(dir_mtime_ns: i64, docs: &[DocEntry]) -> Vec<u8> {
    write(docs, Info { dir_mtime_ns, built: segment::build_stamp(), ..Info::default() })
}

/// Serialises a side segment over the main index `of` names, current with
/// `dir_mtime_ns`, holding the notes written since that main.
pub fn encode_side(dir_mtime_ns: i64, docs: &[DocEntry], of: SideOf) -> Vec<u8> {
    write(docs, Info { dir_mtime_ns, side: Some(of), ..Info::default() })
}

fn write(docs: &[DocEntry], mut info: Info) -> Vec<u8> {
    let mut docs: Vec<&DocEntry> = docs.iter().collect();
    docs.sort_by(|a, b| a.id.cmp(&b.id));
    let mut ids: HashMap<u64, u32> = HashMap::new();
    let mut keys: Vec<[u8; 8]> = Vec::new();
    let mut fwd = Forward::default();
    for d in &docs {
        info.total_len += u64::from(d.features.word_len);
        info.total_grams += u64::from(d.features.gram_len);
        fwd.push_doc(d.features.words.iter().chain(&d.features.grams).map(|&(k, tf)| {
            let id = *ids.entry(k).or_insert_with(|| {
                keys.push(k.to_be_bytes());
                keys.len() as u32 - 1
            });
            (id, tf)
        }));
    }
    info.docs = docs.len() as u32;
    info.terms = keys.len() as u32;
    let info_json = serde_json::to_vec(&info).unwrap_or_default();
    let names: Vec<String> = docs.iter().map(|d| format!("{}\t{}", d.id, d.file)).collect();
    let n = docs.len();
    let size = segment::header_len(SECTIONS)
        + (n + 1) * 8
        + names.iter().map(String::len).sum::<usize>()
        + n * (8 + 8 + 4 + 4 + 16)
        + segment::postings_size(keys.len(), keys.len() * 8, fwd.items())
        + info_json.len()
        + 16;
    let mut w = Writer::new(KIND, FORMAT_VERSION, SECTIONS, size);
    w.table(|| names.iter().map(String::as_bytes));
    w.section(|o| docs.iter().for_each(|d| o.extend(d.size.to_le_bytes())));
    w.section(|o| docs.iter().for_each(|d| o.extend(d.mtime_ns.to_le_bytes())));
    w.section(|o| docs.iter().for_each(|d| o.extend(d.features.word_len.to_le_bytes())));
    w.section(|o| docs.iter().for_each(|d| o.extend(d.features.gram_len.to_le_bytes())));
    w.section(|o| docs.iter().for_each(|d| o.extend(d.features.dup)));
    w.postings(&fwd, keys.len(), |t| &keys[t as usize]);
    w.finish(&info_json)
}

/// A read-only view of an encoded index (mapped or in memory), with a
/// side segment laid over it ([`View::with_side`]): docs `0..n_main` are
/// the index's, the ones after are the side's; a doc the side removed or
/// rewrote is gone from the index's part.
pub struct View<'a> {
    s: Sections<'a>,
    dict: Dict<'a>,
    /// The main segment's build facts.
    info: Info,
    /// The notes-dir mtime the index (with its side) is current with.
    pub dir_mtime_ns: i64,
    n_main: usize,
    /// Main docs removed or rewritten by the side, ascending.
    dead: Vec<u32>,
    /// Per index doc: removed or rewritten by the side (empty: none).
    gone: Vec<bool>,
    /// The docs the side holds.
    extra: Vec<DocEntry>,
    /// Live docs and their total lengths (word half, n-gram half).
    live: usize,
    total_len: u64,
    total_grams: u64,
}

/// A neighbour found by the search, before governance reads its file.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Position in the view.
    pub doc: usize,
    /// BM25 over words, divided by the query's own score (0–1).
    pub bm25: f64,
    /// BM25 over character n-grams, divided the same way (0–1).
    pub ngram: f64,
    /// Same canonical one-liner.
    pub duplicate: bool,
    /// The fused score.
    pub score: f64,
}

/// A term's postings within one doc's features (sorted by key).
fn tf_in(f: &Features, key: u64) -> Option<u32> {
    let list = if key & 1 == 1 { &f.grams } else { &f.words };
    list.binary_search_by_key(&key, |&(k, _)| k).ok().map(|i| list[i].1)
}

impl<'a> View<'a> {
    /// Opens an encoded main index; why not when it is not one (another
    /// kind or version, truncated, damaged).
    pub fn open(b: &'a [u8]) -> Result<View<'a>, Corrupt> {
        let s = Sections::open(b, KIND, FORMAT_VERSION, SECTIONS)?;
        let info: Info = serde_json::from_slice(s.info()).map_err(|e| format!("index info unreadable: {e}"))?;
        let n = info.docs as usize;
        s.check_table(NAME_OFF, NAMES, n, 1)?;
        for (sec, width) in [(SIZES, 8), (MTIMES, 8), (WORD_LENS, 4), (GRAM_LENS, 4), (DUPS, 16)] {
            s.check_fixed(sec, n, width)?;
        }
        let dict = Dict::open(&s, DICT, info.terms as usize, n)?;
        Ok(View {
            s,
            dict,
            dir_mtime_ns: info.dir_mtime_ns,
            n_main: n,
            dead: Vec::new(),
            gone: Vec::new(),
            extra: Vec::new(),
            live: n,
            total_len: info.total_len,
            total_grams: info.total_grams,
            info,
        })
    }

    /// This main index with the side segment `side` laid over it; the view
    /// is then current with the side's notes-dir mtime. An error when the
    /// side is unreadable or extends another main index.
    pub fn with_side(self, side: &[u8]) -> Result<View<'a>, Corrupt> {
        let sv = View::open(side)?;
        let of = sv.info.side.clone().ok_or("not a side index")?;
        of.check(self.info.built, self.n_main)?;
        let at = sv.info.dir_mtime_ns;
        let mut v = self.with_changes(of.dead, sv.entries());
        v.dir_mtime_ns = at;
        Ok(v)
    }

    /// This main index with the main docs `dead` (ascending) removed and
    /// `extra` added.
    pub fn with_changes(mut self, dead: Vec<u32>, extra: Vec<DocEntry>) -> View<'a> {
        for &i in &dead {
            if self.gone.is_empty() {
                self.gone = vec![false; self.n_main];
            }
            if let Some(g) = self.gone.get_mut(i as usize).filter(|g| !**g) {
                *g = true;
                self.live -= 1;
                self.total_len = self.total_len.saturating_sub(u64::from(self.word_len(i as usize)));
                self.total_grams = self.total_grams.saturating_sub(u64::from(self.gram_len(i as usize)));
            }
        }
        for e in &extra {
            self.live += 1;
            self.total_len += u64::from(e.features.word_len);
            self.total_grams += u64::from(e.features.gram_len);
        }
        self.dead = dead;
        self.extra = extra;
        self
    }

    /// The main index's build stamp (a side segment names it).
    pub fn built(&self) -> u64 {
        self.info.built
    }

    /// The main docs the side removes, ascending.
    pub fn dead(&self) -> &[u32] {
        &self.dead
    }

    /// The docs the side holds.
    pub fn extra(&self) -> &[DocEntry] {
        &self.extra
    }

    /// The index doc with this id (index docs are in id order), removed or not.
    pub fn find_main(&self, id: &str) -> Option<usize> {
        let i = segment::partition_point(self.n_main, |i| self.main_id(i) < id);
        (i < self.n_main && self.main_id(i) == id).then_some(i)
    }

    fn main_name(&self, i: usize) -> &'a str {
        self.s.str_at(NAME_OFF, NAMES, i)
    }

    fn main_id(&self, i: usize) -> &'a str {
        let s = self.main_name(i);
        s.split_once('\t').map_or(s, |(id, _)| id)
    }

    /// Number of notes indexed.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no note is indexed.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// How many docs positions run to, removed ones included.
    pub fn slots(&self) -> usize {
        self.n_main + self.extra.len()
    }

    /// The positions of the live docs, in order.
    pub fn docs(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.slots()).filter(|&i| self.is_live(i))
    }

    fn is_live(&self, i: usize) -> bool {
        !self.gone.get(i).copied().unwrap_or(false)
    }

    /// The id and file name of doc `i`.
    pub fn name(&self, i: usize) -> (String, String) {
        if let Some(e) = i.checked_sub(self.n_main).and_then(|j| self.extra.get(j)) {
            return (e.id.clone(), e.file.clone());
        }
        let s = self.main_name(i);
        let (id, file) = s.split_once('\t').unwrap_or((s, ""));
        (id.to_string(), file.to_string())
    }

    /// Size and mtime of doc `i` when it was indexed.
    pub fn stamp(&self, i: usize) -> (u64, i64) {
        if let Some(e) = i.checked_sub(self.n_main).and_then(|j| self.extra.get(j)) {
            return (e.size, e.mtime_ns);
        }
        (self.s.u64_of(SIZES, i).unwrap_or(0), self.s.u64_of(MTIMES, i).unwrap_or(0) as i64)
    }

    fn word_len(&self, i: usize) -> u32 {
        match i.checked_sub(self.n_main).and_then(|j| self.extra.get(j)) {
            Some(e) => e.features.word_len,
            None => self.s.u32_of(WORD_LENS, i).unwrap_or(0),
        }
    }

    fn gram_len(&self, i: usize) -> u32 {
        match i.checked_sub(self.n_main).and_then(|j| self.extra.get(j)) {
            Some(e) => e.features.gram_len,
            None => self.s.u32_of(GRAM_LENS, i).unwrap_or(0),
        }
    }

    fn dup(&self, i: usize) -> [u8; 16] {
        let mut out = [0u8; 16];
        match i.checked_sub(self.n_main).and_then(|j| self.extra.get(j)) {
            Some(e) => out = e.features.dup,
            None => {
                if let Some(s) = self.s.get(DUPS).get(i * 16..i * 16 + 16) {
                    out.copy_from_slice(s);
                }
            }
        }
        out
    }

    /// The live postings of a term: (doc, tf) pairs, index docs first.
    fn postings(&self, key: u64) -> Vec<(usize, u32)> {
        let mut out: Vec<(usize, u32)> = match self.dict.find(&key.to_be_bytes()) {
            Some(t) => {
                self.dict.postings_of(t).map(|(d, tf)| (d as usize, tf)).filter(|&(d, _)| self.is_live(d)).collect()
            }
            None => Vec::new(),
        };
        for (j, e) in self.extra.iter().enumerate() {
            if let Some(tf) = tf_in(&e.features, key) {
                out.push((self.n_main + j, tf));
            }
        }
        out
    }

    /// The `k` best notes for a query, best first (ties by id), each with
    /// its two normalised BM25 halves, duplicate flag and fused score.
    /// Only notes sharing a term with the query are touched.
    pub fn search(&self, q: &Features, k: usize) -> Vec<Hit> {
        if self.live == 0 {
            return Vec::new();
        }
        let mut seen = vec![false; self.slots()];
        let words = self.half(&q.words, q.word_len, sim::params().words, self.total_len, Self::word_len, &mut seen);
        let grams = self.half(&q.grams, q.gram_len, sim::params().grams, self.total_grams, Self::gram_len, &mut seen);
        let mut hits: Vec<Hit> = (0..self.slots())
            .filter(|&d| seen[d])
            .map(|d| {
                let duplicate = self.dup(d) == q.dup;
                let (b, c) = (words[d], grams[d]);
                Hit { doc: d, bm25: b, ngram: c, duplicate, score: sim::fuse(b, c, duplicate) }
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| self.name(a.doc).0.cmp(&self.name(b.doc).0)));
        hits.truncate(k);
        hits
    }

    /// One half's BM25 of every note against the query's terms, divided by
    /// the query's score against itself (0–1); marks the notes touched.
    fn half(
        &self,
        q: &[(u64, u32)],
        q_len: u32,
        p: sim::Bm25,
        total: u64,
        len: fn(&Self, usize) -> u32,
        seen: &mut [bool],
    ) -> Vec<f64> {
        let n = self.live as f64;
        let avg = total as f64 / n;
        let mut acc = vec![0.0f64; self.slots()];
        let mut ideal = 0.0;
        for &(key, qtf) in q {
            let list = self.postings(key);
            let idf = sim::idf(n, list.len() as f64);
            ideal += p.term(idf, f64::from(qtf), f64::from(q_len), avg);
            for (d, tf) in list {
                let Some(a) = acc.get_mut(d) else { continue };
                seen[d] = true;
                *a += p.term(idf, f64::from(tf), f64::from(len(self, d)), avg);
            }
        }
        if ideal > 0.0 {
            acc.iter_mut().for_each(|a| *a = (*a / ideal).min(1.0));
        }
        acc
    }

    /// Scores one document's features against a query with this index's
    /// statistics (for a note whose file changed since it was indexed).
    pub fn score_one(&self, q: &Features, d: &Features) -> Hit {
        let n = self.live.max(1) as f64;
        let half = |qt: &[(u64, u32)], q_len: u32, dt: &[(u64, u32)], d_len: u32, p: sim::Bm25, total: u64| {
            let avg = if self.live == 0 { f64::from(d_len) } else { total as f64 / n };
            let dmap: BTreeMap<u64, u32> = dt.iter().copied().collect();
            let (mut s, mut ideal) = (0.0, 0.0);
            for &(key, qtf) in qt {
                let df = (self.postings(key).len() as f64).max(1.0);
                let idf = sim::idf(n, df);
                ideal += p.term(idf, f64::from(qtf), f64::from(q_len), avg);
                if let Some(tf) = dmap.get(&key) {
                    s += p.term(idf, f64::from(*tf), f64::from(d_len), avg);
                }
            }
            if ideal > 0.0 {
                (s / ideal).min(1.0)
            } else {
                0.0
            }
        };
        let bm25 = half(&q.words, q.word_len, &d.words, d.word_len, sim::params().words, self.total_len);
        let ngram = half(&q.grams, q.gram_len, &d.grams, d.gram_len, sim::params().grams, self.total_grams);
        let duplicate = q.dup == d.dup;
        Hit { doc: usize::MAX, bm25, ngram, duplicate, score: sim::fuse(bm25, ngram, duplicate) }
    }

    /// Every live entry back as an owned value (to write the index whole).
    pub fn entries(&self) -> Vec<DocEntry> {
        let mut docs: Vec<DocEntry> = (0..self.n_main)
            .map(|i| {
                let (id, file) = self.name(i);
                let (size, mtime_ns) = self.stamp(i);
                DocEntry {
                    id,
                    file,
                    size,
                    mtime_ns,
                    features: Features {
                        word_len: self.word_len(i),
                        gram_len: self.gram_len(i),
                        dup: self.dup(i),
                        ..Features::default()
                    },
                }
            })
            .collect();
        for t in 0..self.dict.terms() {
            let Ok(key) = <[u8; 8]>::try_from(self.dict.term(t)) else { continue };
            let key = u64::from_be_bytes(key);
            for (d, tf) in self.dict.postings_of(t) {
                if let Some(doc) = docs.get_mut(d as usize) {
                    let f = &mut doc.features;
                    if key & 1 == 1 { &mut f.grams } else { &mut f.words }.push((key, tf));
                }
            }
        }
        let mut out: Vec<DocEntry> =
            docs.into_iter().enumerate().filter(|(i, _)| self.is_live(*i)).map(|(_, d)| d).collect();
        out.extend(self.extra.iter().cloned());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, text: &str) -> DocEntry {
        DocEntry { id: id.into(), file: format!("{id}.md"), size: 1, mtime_ns: 2, features: sim::features(text, text) }
    }

    #[test]
    fn encode_search_and_decode() {
        let docs =
            vec![doc("MEM-a", "use pnpm for installs"), doc("MEM-b", "不要用 var，用 let"), doc("MEM-c", "tabs")];
        let bytes = encode(7, &docs);
        let v = View::open(&bytes).unwrap();
        assert_eq!(v.dir_mtime_ns, 7);
        let hits = v.search(&sim::features("Use pnpm for installs.", "Use pnpm for installs."), 5);
        assert_eq!(v.name(hits[0].doc).0, "MEM-a");
        assert!(hits[0].duplicate);
        let hits = v.search(&sim::features("别用 var", "别用 var"), 5);
        assert_eq!(v.name(hits[0].doc).0, "MEM-b");
        assert_eq!(v.entries(), docs);
    }

    #[test]
    fn a_side_segment_scores_as_the_index_written_whole() {
        let docs = vec![doc("MEM-a", "use pnpm for installs"), doc("MEM-b", "tabs in go files"), doc("MEM-c", "tabs")];
        let base = encode(1, &docs);
        let main = View::open(&base).unwrap();
        // MEM-c removed, MEM-d added, MEM-a rewritten.
        let side_docs = vec![doc("MEM-d", "use yarn for installs"), doc("MEM-a", "use pnpm for all installs")];
        let of = SideOf { main_built: main.built(), dead: vec![0, 2] };
        let side = encode_side(3, &side_docs, of.clone());
        let bytes = encode(3, &[docs[1].clone(), side_docs[0].clone(), side_docs[1].clone()]);
        let whole = View::open(&bytes).unwrap();
        let over = View::open(&base).unwrap().with_side(&side).unwrap();
        assert_eq!((over.dir_mtime_ns, over.len(), over.dead()), (3, 3, [0, 2].as_slice()));
        let q = sim::features("pnpm or yarn for installs in go", "x");
        let named = |v: &View, hits: Vec<Hit>| -> Vec<(String, String, String)> {
            hits.iter().map(|h| (v.name(h.doc).0, format!("{:.9}", h.bm25), format!("{:.9}", h.ngram))).collect()
        };
        assert_eq!(named(&over, over.search(&q, 5)), named(&whole, whole.search(&q, 5)));
        let mut a = over.entries();
        a.sort_by(|x, y| x.id.cmp(&y.id));
        assert_eq!(a, whole.entries());
        // A side of another main, or a main read as a side, is refused.
        let other = encode_side(3, &side_docs, SideOf { main_built: main.built() + 1, ..of });
        assert!(View::open(&base).unwrap().with_side(&other).is_err());
        assert!(View::open(&base).unwrap().with_side(&bytes).is_err());
    }

    #[test]
    fn an_old_or_damaged_index_is_refused() {
        let mut old = b"KBMGIX03".to_vec();
        old.extend([0u8; 64]);
        assert!(View::open(&old).err().is_some_and(|e| e.contains("bad magic")));
        let bytes = encode(7, &[doc("MEM-a", "use pnpm for installs")]);
        assert!(View::open(&bytes[..bytes.len() - 3]).is_err());
        let mut v3 = bytes.clone();
        v3[16..20].copy_from_slice(&3u32.to_le_bytes());
        assert!(View::open(&v3).err().is_some_and(|e| e.contains("memgate index format 3, expected 7")));
    }
}
