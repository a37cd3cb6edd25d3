//! The TopK neighbour search of seed 003 "治理逻辑" over `notes/`, served
//! from a derived inverted index `.search.idx` next to `notes/`, so a
//! decide costs the postings of the query's terms, not a rescan of every
//! note. The index is rebuilt from the notes alone (`reindex`); when it is
//! missing or older than `notes/` (the directory's mtime changes with every
//! add, rename or delete), decide builds one in memory from the notes.
//!
//! Layout (little endian): magic `KBMGIX04`, notes-dir mtime (i64 ns),
//! doc count (u32), term count (u32), total word length (u64), total
//! n-gram length (u64); docs (48 bytes each: name offset u32, name length
//! u32, size u64, mtime i64, word length u32, n-gram length u32, duplicate
//! digest 16 bytes); terms
//! sorted by key (16 bytes: key u64, postings offset u32, count u32);
//! postings (8 bytes: doc u32, tf u32); names (UTF-8, `id\tfile`).

use std::collections::BTreeMap;

use super::delta::Change;
use super::similarity::{self as sim, Features};

/// Version 04: word terms through `lemma::base` ("went" → go); 03 added
/// word pairs and Latin 4-grams (an index of an older version is stale:
/// rebuilt, never read with other terms).
const MAGIC: &[u8; 8] = b"KBMGIX04";
const HEAD: usize = 40;
const DOC: usize = 48;
const TERM: usize = 16;
const POST: usize = 8;

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

/// Serialises the index; docs are stored in id order, which is also the
/// order ties are broken in.
pub fn encode(dir_mtime_ns: i64, docs: &[DocEntry]) -> Vec<u8> {
    let mut docs: Vec<&DocEntry> = docs.iter().collect();
    docs.sort_by(|a, b| a.id.cmp(&b.id));
    let mut postings: BTreeMap<u64, Vec<(u32, u32)>> = BTreeMap::new();
    let (mut total, mut total_grams) = (0u64, 0u64);
    for (i, d) in docs.iter().enumerate() {
        total += u64::from(d.features.word_len);
        total_grams += u64::from(d.features.gram_len);
        for &(k, tf) in d.features.words.iter().chain(&d.features.grams) {
            postings.entry(k).or_default().push((i as u32, tf));
        }
    }
    let n_post: usize = postings.values().map(Vec::len).sum();
    let mut out = Vec::with_capacity(HEAD + docs.len() * DOC + postings.len() * TERM + n_post * POST);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&dir_mtime_ns.to_le_bytes());
    out.extend_from_slice(&(docs.len() as u32).to_le_bytes());
    out.extend_from_slice(&(postings.len() as u32).to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(&total_grams.to_le_bytes());
    let mut names = Vec::new();
    for d in docs {
        let name = format!("{}\t{}", d.id, d.file);
        out.extend_from_slice(&(names.len() as u32).to_le_bytes());
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        names.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&d.size.to_le_bytes());
        out.extend_from_slice(&d.mtime_ns.to_le_bytes());
        out.extend_from_slice(&d.features.word_len.to_le_bytes());
        out.extend_from_slice(&d.features.gram_len.to_le_bytes());
        out.extend_from_slice(&d.features.dup);
    }
    let mut off = 0u32;
    for (k, list) in &postings {
        out.extend_from_slice(&k.to_le_bytes());
        out.extend_from_slice(&off.to_le_bytes());
        out.extend_from_slice(&(list.len() as u32).to_le_bytes());
        off += list.len() as u32;
    }
    for list in postings.values() {
        for (d, tf) in list {
            out.extend_from_slice(&d.to_le_bytes());
            out.extend_from_slice(&tf.to_le_bytes());
        }
    }
    out.extend_from_slice(&names);
    out
}

/// A read-only view of an encoded index (mapped or in memory), with the
/// change log laid over it ([`View::overlay`]): docs `0..n_main` are the
/// index's, the ones after are the log's; a doc the log removed or
/// rewrote is gone from the index's part.
pub struct View<'a> {
    b: &'a [u8],
    /// The notes-dir mtime the index (with its log) is current with.
    pub dir_mtime_ns: i64,
    n_main: usize,
    n_terms: usize,
    terms_at: usize,
    posts_at: usize,
    names_at: usize,
    /// Per index doc: removed or rewritten by the log (empty: none).
    gone: Vec<bool>,
    /// The docs the log wrote.
    extra: Vec<DocEntry>,
    /// Live docs and their total lengths (word half, n-gram half).
    live: usize,
    total_len: u64,
    total_grams: u64,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).map_or(0, |s| {
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        u64::from_le_bytes(a)
    })
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
    /// Opens an encoded index; `None` when it is not one (or truncated).
    pub fn open(b: &'a [u8]) -> Option<View<'a>> {
        if b.len() < HEAD || &b[..8] != MAGIC {
            return None;
        }
        let n_main = u32_at(b, 16) as usize;
        let n_terms = u32_at(b, 20) as usize;
        let terms_at = HEAD.checked_add(n_main.checked_mul(DOC)?)?;
        let posts_at = terms_at.checked_add(n_terms.checked_mul(TERM)?)?;
        let n_post = if n_terms == 0 {
            0
        } else {
            let last = terms_at + (n_terms - 1) * TERM;
            (u64::from(u32_at(b, last + 8)) + u64::from(u32_at(b, last + 12))) as usize
        };
        let names_at = posts_at.checked_add(n_post.checked_mul(POST)?)?;
        if names_at > b.len() {
            return None;
        }
        Some(View {
            b,
            dir_mtime_ns: u64_at(b, 8) as i64,
            n_main,
            n_terms,
            terms_at,
            posts_at,
            names_at,
            gone: Vec::new(),
            extra: Vec::new(),
            live: n_main,
            total_len: u64_at(b, 24),
            total_grams: u64_at(b, 32),
        })
    }

    /// The notes-dir mtime the index itself was written against.
    pub fn base_mtime_ns(&self) -> i64 {
        u64_at(self.b, 8) as i64
    }

    /// Number of docs in the index itself (before the log).
    pub fn base_len(&self) -> usize {
        self.n_main
    }

    /// This view with the log's changes laid over it, in order; the view
    /// is then current with the last change's notes-dir mtime.
    pub fn overlay(mut self, changes: Vec<Change>) -> View<'a> {
        for c in changes {
            let put_id = c.put.as_ref().map(|e| e.id.clone());
            for id in c.del.iter().chain(&put_id) {
                self.remove(id);
            }
            if let Some(e) = c.put {
                self.live += 1;
                self.total_len += u64::from(e.features.word_len);
                self.total_grams += u64::from(e.features.gram_len);
                self.extra.push(e);
            }
            self.dir_mtime_ns = c.at;
        }
        self
    }

    fn remove(&mut self, id: &str) {
        let (w, g) = if let Some(i) = self.extra.iter().position(|e| e.id == id) {
            let e = self.extra.remove(i);
            (e.features.word_len, e.features.gram_len)
        } else if let Some(i) = self.find_main(id).filter(|&i| !self.gone.get(i).copied().unwrap_or(false)) {
            if self.gone.is_empty() {
                self.gone = vec![false; self.n_main];
            }
            self.gone[i] = true;
            (self.word_len(i), self.gram_len(i))
        } else {
            return;
        };
        self.live -= 1;
        self.total_len = self.total_len.saturating_sub(u64::from(w));
        self.total_grams = self.total_grams.saturating_sub(u64::from(g));
    }

    /// The index doc with this id (index docs are in id order).
    fn find_main(&self, id: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0usize, self.n_main);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.name(mid).0.as_str().cmp(id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Number of notes indexed.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no note is indexed.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    fn slots(&self) -> usize {
        self.n_main + self.extra.len()
    }

    fn is_live(&self, i: usize) -> bool {
        !self.gone.get(i).copied().unwrap_or(false)
    }

    fn doc_at(&self, i: usize) -> usize {
        HEAD + i * DOC
    }

    /// The id and file name of doc `i`.
    pub fn name(&self, i: usize) -> (String, String) {
        if let Some(e) = i.checked_sub(self.n_main).and_then(|j| self.extra.get(j)) {
            return (e.id.clone(), e.file.clone());
        }
        let at = self.doc_at(i);
        let (off, len) = (u32_at(self.b, at) as usize, u32_at(self.b, at + 4) as usize);
        let s = self.b.get(self.names_at + off..self.names_at + off + len).unwrap_or(&[]);
        let s = String::from_utf8_lossy(s);
        let (id, file) = s.split_once('\t').unwrap_or((&s, ""));
        (id.to_string(), file.to_string())
    }

    /// Size and mtime of doc `i` when it was indexed.
    pub fn stamp(&self, i: usize) -> (u64, i64) {
        if let Some(e) = i.checked_sub(self.n_main).and_then(|j| self.extra.get(j)) {
            return (e.size, e.mtime_ns);
        }
        let at = self.doc_at(i);
        (u64_at(self.b, at + 8), u64_at(self.b, at + 16) as i64)
    }

    fn word_len(&self, i: usize) -> u32 {
        match i.checked_sub(self.n_main).and_then(|j| self.extra.get(j)) {
            Some(e) => e.features.word_len,
            None => u32_at(self.b, self.doc_at(i) + 24),
        }
    }

    fn gram_len(&self, i: usize) -> u32 {
        match i.checked_sub(self.n_main).and_then(|j| self.extra.get(j)) {
            Some(e) => e.features.gram_len,
            None => u32_at(self.b, self.doc_at(i) + 28),
        }
    }

    fn dup(&self, i: usize) -> [u8; 16] {
        let mut out = [0u8; 16];
        match i.checked_sub(self.n_main).and_then(|j| self.extra.get(j)) {
            Some(e) => out = e.features.dup,
            None => {
                let at = self.doc_at(i) + 32;
                if let Some(s) = self.b.get(at..at + 16) {
                    out.copy_from_slice(s);
                }
            }
        }
        out
    }

    /// The live postings of a term: (doc, tf) pairs, index docs first.
    fn postings(&self, key: u64) -> Vec<(usize, u32)> {
        let (mut lo, mut hi) = (0usize, self.n_terms);
        let mut found = None;
        while lo < hi {
            let mid = (lo + hi) / 2;
            let k = u64_at(self.b, self.terms_at + mid * TERM);
            match k.cmp(&key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    found = Some(mid);
                    break;
                }
            }
        }
        let mut out: Vec<(usize, u32)> = match found {
            Some(m) => self.postings_at(self.terms_at + m * TERM).filter(|&(d, _)| self.is_live(d)).collect(),
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
        for t in 0..self.n_terms {
            let at = self.terms_at + t * TERM;
            let key = u64_at(self.b, at);
            for (d, tf) in self.postings_at(at) {
                if let Some(doc) = docs.get_mut(d) {
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

    fn postings_at(&self, term_at: usize) -> impl Iterator<Item = (usize, u32)> + '_ {
        let (off, n) = (u32_at(self.b, term_at + 8) as usize, u32_at(self.b, term_at + 12) as usize);
        (off..off + n).map(move |p| {
            let at = self.posts_at + p * POST;
            (u32_at(self.b, at) as usize, u32_at(self.b, at + 4))
        })
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
    fn an_overlay_scores_as_the_index_written_whole() {
        let docs = vec![doc("MEM-a", "use pnpm for installs"), doc("MEM-b", "tabs in go files"), doc("MEM-c", "tabs")];
        let base = encode(1, &docs);
        let put = doc("MEM-d", "use yarn for installs");
        let changes = vec![
            Change { at: 2, del: vec!["MEM-c".into()], put: Some(put.clone()) },
            Change { at: 3, del: Vec::new(), put: Some(doc("MEM-a", "use pnpm for all installs")) },
        ];
        let bytes = encode(3, &[docs[1].clone(), put, doc("MEM-a", "use pnpm for all installs")]);
        let whole = View::open(&bytes).unwrap();
        let over = View::open(&base).unwrap().overlay(changes);
        assert_eq!((over.dir_mtime_ns, over.len()), (3, 3));
        let q = sim::features("pnpm or yarn for installs in go", "x");
        let named = |v: &View, hits: Vec<Hit>| -> Vec<(String, String, String)> {
            hits.iter().map(|h| (v.name(h.doc).0, format!("{:.9}", h.bm25), format!("{:.9}", h.ngram))).collect()
        };
        assert_eq!(named(&over, over.search(&q, 5)), named(&whole, whole.search(&q, 5)));
        let mut a = over.entries();
        a.sort_by(|x, y| x.id.cmp(&y.id));
        assert_eq!(a, whole.entries());
    }
}
