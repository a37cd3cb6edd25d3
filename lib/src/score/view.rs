//! What a query reads: one main index, or a main index with a side index
//! (kb::score::side) laid over it, seen as the one index a full rebuild
//! would give. Documents get *merged ids* in path order, as in a rebuilt
//! index: a main document keeps its place unless the side removed it
//! (deleted, or replaced by its newer version), and each side document
//! slots in by its path. Term statistics are summed over both (document
//! frequencies count live main postings only; the mean length comes from
//! the exact total), so BM25 scores, ties and the order of equal hits are
//! the same as after a full rebuild — which is what lets a write be
//! visible to the next query without rewriting the main file.

use std::collections::HashMap;

use super::index::{Corrupt, Info, Meta, Seg, Words};

/// A maximal run of main documents that keep consecutive merged ids.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Merged id of the first.
    at: u32,
    /// Main id of the first.
    main: u32,
    /// How many.
    len: u32,
}

/// The side index and how its documents interleave with the main's.
struct Merge<'a> {
    side: Seg<'a>,
    /// Runs of live main documents, ascending in both ids.
    runs: Vec<Run>,
    /// Merged id of each side document, ascending.
    side_at: Vec<u32>,
    /// Main id of a replaced document → merged id of its new version.
    replaced: HashMap<u32, u32>,
    /// Graph facts by merged id (every side document and every main
    /// document whose facts changed).
    facts: HashMap<u32, (u32, Vec<u32>)>,
    /// Whether some main document is removed (then document frequencies
    /// are counted, not read).
    any_dead: bool,
}

/// Where a merged id lives.
#[derive(Debug, Clone, Copy, PartialEq)]
enum At {
    Main(u32),
    Side(u32),
}

/// The index a query reads (see the module doc).
pub struct View<'a> {
    main: Seg<'a>,
    merge: Option<Box<Merge<'a>>>,
    n: usize,
    /// Build facts of the whole: the main's, or for a main with a side
    /// index the merged directories, the side's stamps, the summed length.
    pub info: Info,
}

impl<'a> View<'a> {
    /// A main index alone.
    pub fn open(b: &'a [u8]) -> Result<View<'a>, Corrupt> {
        let main = Seg::open(b)?;
        let info = main.info.clone();
        Ok(View { n: main.docs(), main, merge: None, info })
    }

    /// A main index with a side index over it; an error when the side
    /// index is unreadable or was made against another main index.
    pub fn merged(main: &'a [u8], side: &'a [u8]) -> Result<View<'a>, Corrupt> {
        let main = Seg::open(main)?;
        let side = Seg::open(side)?;
        let s = side.info.side.clone().ok_or("not a side index")?;
        s.of.check(main.info.built, main.docs())?;
        let n_main = main.docs() as u32;
        // Insertion point of each side document among the main's.
        let pos: Vec<u32> = (0..side.docs() as u32).map(|j| main.path_rank(side.path(j)) as u32).collect();
        if pos.windows(2).any(|w| w[0] > w[1]) {
            return Err("side index paths out of order".into());
        }
        let mut runs = Vec::new();
        let mut side_at = Vec::with_capacity(pos.len());
        let mut dead = s.of.dead.iter().copied().peekable();
        let mut next = 0u32; // next merged id
        let mut cur = 0u32; // next main id to place
        let mut place = |upto: u32, next: &mut u32, cur: &mut u32, runs: &mut Vec<Run>| {
            while *cur < upto {
                while dead.peek().is_some_and(|&d| d < *cur) {
                    dead.next();
                }
                let stop = dead.peek().map_or(upto, |&d| d.min(upto));
                if stop > *cur {
                    runs.push(Run { at: *next, main: *cur, len: stop - *cur });
                    *next += stop - *cur;
                    *cur = stop;
                } else {
                    *cur += 1; // a removed document
                }
            }
        };
        for &p in &pos {
            place(p, &mut next, &mut cur, &mut runs);
            side_at.push(next);
            next += 1;
        }
        place(n_main, &mut next, &mut cur, &mut runs);
        let mut replaced = HashMap::new();
        for (j, &p) in pos.iter().enumerate() {
            if p < n_main && main.path(p) == side.path(j as u32) {
                replaced.insert(p, side_at[j]);
            }
        }
        let n = next as usize;
        let facts: HashMap<u32, (u32, Vec<u32>)> = s
            .facts
            .iter()
            .map(|(d, u, a)| (*d, (*u, a.iter().copied().filter(|&x| (x as usize) < n).collect())))
            .collect();
        let dead_len: u64 = s.of.dead.iter().map(|&d| u64::from(main.len(d))).sum();
        let total = main.info.total_len.saturating_sub(dead_len) + side.info.total_len;
        // Directories: the main's, less those gone, with the side's mtimes.
        let mut dirs: std::collections::BTreeMap<String, u64> = main.info.dirs.iter().cloned().collect();
        for g in &s.gone {
            dirs.remove(g);
        }
        dirs.extend(side.info.dirs.iter().cloned());
        let info = Info {
            docs: n as u32,
            terms: 0,
            avg_len: if n == 0 { 0.0 } else { total as f64 / n as f64 },
            dirs: dirs.into_iter().collect(),
            stamps: side.info.stamps.clone(),
            total_len: total,
            built: main.info.built,
            relations_ok: main.info.relations_ok,
            side: None,
        };
        let any_dead = !s.of.dead.is_empty();
        Ok(View { main, merge: Some(Box::new(Merge { side, runs, side_at, replaced, facts, any_dead })), n, info })
    }

    /// The main index alone.
    pub fn main(&self) -> &Seg<'a> {
        &self.main
    }

    /// The side index, when there is one.
    pub fn side(&self) -> Option<&Seg<'a>> {
        self.merge.as_ref().map(|m| &m.side)
    }

    /// Whether a side index is laid over the main one.
    pub fn has_side(&self) -> bool {
        self.merge.is_some()
    }

    fn at(&self, d: u32) -> At {
        let Some(m) = &self.merge else { return At::Main(d) };
        if let Ok(j) = m.side_at.binary_search(&d) {
            return At::Side(j as u32);
        }
        let r = m.runs.partition_point(|r| r.at + r.len <= d);
        match m.runs.get(r) {
            Some(r) if d >= r.at => At::Main(r.main + (d - r.at)),
            // Past every document: answers as the main's out-of-range id would.
            _ => At::Main(u32::MAX),
        }
    }

    /// The merged id of main document `i` (its new version's when the side
    /// replaced it), None when it was deleted.
    pub fn from_main(&self, i: u32) -> Option<u32> {
        let Some(m) = &self.merge else { return Some(i) };
        let r = m.runs.partition_point(|r| r.main + r.len <= i);
        match m.runs.get(r) {
            Some(r) if i >= r.main => Some(r.at + (i - r.main)),
            _ => m.replaced.get(&i).copied(),
        }
    }

    /// The merged id of side document `j`.
    pub fn from_side(&self, j: u32) -> Option<u32> {
        self.merge.as_ref().and_then(|m| m.side_at.get(j as usize).copied())
    }

    /// Number of documents.
    pub fn docs(&self) -> usize {
        self.n
    }

    /// Number of dictionary terms of the main index (a rebuild reads it
    /// term by term; a merged view has no one dictionary).
    pub fn terms(&self) -> usize {
        self.main.terms()
    }

    /// The string of main dictionary term `t`.
    pub fn term(&self, t: usize) -> &'a str {
        self.main.term(t)
    }

    /// The dictionary terms that start with `prefix`, in byte order, of
    /// the main index then of the side index (a term in both comes twice;
    /// the empty prefix gives the whole vocabulary).
    pub fn terms_with_prefix<'s>(&'s self, prefix: &'s str) -> impl Iterator<Item = &'a str> + 's {
        let side = self.merge.as_ref().map(|m| &m.side);
        [Some(&self.main), side].into_iter().flatten().flat_map(move |seg| {
            let start = crate::text::segment::partition_point(seg.terms(), |t| seg.term(t) < prefix);
            (start..seg.terms()).map(|t| seg.term(t)).take_while(move |t| t.starts_with(prefix))
        })
    }

    /// The terms of each segment from `from` (inclusive) to `to`
    /// (exclusive; None: to the end), in dictionary order, main then side:
    /// all of them when a segment holds at most `cap` there, else the `cap`
    /// nearest `around` in dictionary order. The spelling passes' bound
    /// (kb::score::suggest): near spellings mostly share their first
    /// letters, and a library of generated junk words costs `cap` reads.
    pub fn terms_around<'s>(
        &'s self,
        (from, to): (&'s str, Option<&'s str>),
        around: &'s str,
        cap: usize,
    ) -> impl Iterator<Item = &'a str> + 's {
        use crate::text::segment::partition_point;
        let side = self.merge.as_ref().map(|m| &m.side);
        [Some(&self.main), side].into_iter().flatten().flat_map(move |seg| {
            let n = seg.terms();
            let lo = partition_point(n, |t| seg.term(t) < from);
            let hi = to.map_or(n, |to| partition_point(n, |t| seg.term(t) < to));
            let (mut start, mut end) = (lo, hi.max(lo));
            if end - start > cap {
                let at = partition_point(n, |t| seg.term(t) < around).clamp(lo, hi);
                start = at.saturating_sub(cap / 2).clamp(lo, hi - cap);
                end = start + cap;
            }
            (start..end).map(|t| seg.term(t))
        })
    }

    /// A handle on a term for [`View::postings_of`] and
    /// [`View::postings_len`], None when no document has it.
    pub fn find(&self, term: &str) -> Option<usize> {
        let Some(m) = &self.merge else { return self.main.find(term) };
        let a = self.main.find(term).map_or(0, |t| t + 1);
        let b = m.side.find(term).map_or(0, |t| t + 1);
        (a != 0 || b != 0).then_some(a | (b << 32))
    }

    fn split(&self, t: usize) -> (Option<usize>, Option<usize>) {
        match &self.merge {
            None => (Some(t), None),
            Some(_) => ((t & 0xffff_ffff).checked_sub(1), (t >> 32).checked_sub(1)),
        }
    }

    /// Postings `(doc, tf)` of a term handle from [`View::find`].
    pub fn postings_of(&self, t: usize) -> Postings<'_, 'a> {
        let (a, b) = self.split(t);
        let main = a.map_or(0..0, |a| self.main.postings_range(a));
        let side = match (&self.merge, b) {
            (Some(m), Some(b)) => m.side.postings_range(b),
            _ => 0..0,
        };
        Postings { v: self, main, side, run: 0 }
    }

    /// Document frequency of a term handle.
    pub fn postings_len(&self, t: usize) -> usize {
        match &self.merge {
            None => self.main.postings_len(t),
            Some(m) if !m.any_dead => {
                let (a, b) = self.split(t);
                a.map_or(0, |a| self.main.postings_len(a)) + b.map_or(0, |b| m.side.postings_len(b))
            }
            Some(_) => self.postings_of(t).count(),
        }
    }

    /// Postings of a term string (empty when absent).
    pub fn postings(&self, term: &str) -> Vec<(u32, u32)> {
        self.find(term).map(|t| self.postings_of(t).collect()).unwrap_or_default()
    }

    /// The path of document `d`.
    pub fn path(&self, d: u32) -> &'a str {
        match self.at(d) {
            At::Main(i) => self.main.path(i),
            At::Side(j) => self.side_seg().path(j),
        }
    }

    fn side_seg(&self) -> &Seg<'a> {
        // Only called for At::Side, which only a merge gives.
        self.merge.as_ref().map_or(&self.main, |m| &m.side)
    }

    /// The metadata of document `d` (default when unreadable).
    pub fn meta(&self, d: u32) -> Meta {
        match self.at(d) {
            At::Main(i) => self.main.meta(i),
            At::Side(j) => self.side_seg().meta(j),
        }
    }

    /// The raw metadata bytes of document `d`.
    pub fn meta_bytes(&self, d: u32) -> &'a [u8] {
        match self.at(d) {
            At::Main(i) => self.main.meta_bytes(i),
            At::Side(j) => self.side_seg().meta_bytes(j),
        }
    }

    /// BM25 length of document `d`.
    pub fn len(&self, d: u32) -> u32 {
        match self.at(d) {
            At::Main(i) => self.main.len(i),
            At::Side(j) => self.side_seg().len(j),
        }
    }

    /// Freshness instant of document `d`.
    pub fn fresh_at(&self, d: u32) -> i64 {
        match self.at(d) {
            At::Main(i) => self.main.fresh_at(i),
            At::Side(j) => self.side_seg().fresh_at(j),
        }
    }

    /// `(size, mtime ns)` of document `d` when indexed.
    pub fn stamp(&self, d: u32) -> (u64, u64) {
        match self.at(d) {
            At::Main(i) => self.main.stamp(i),
            At::Side(j) => self.side_seg().stamp(j),
        }
    }

    /// Number of topic words of document `d`.
    pub fn topic_n(&self, d: u32) -> u32 {
        match self.at(d) {
            At::Main(i) => self.main.topic_n(i),
            At::Side(j) => self.side_seg().topic_n(j),
        }
    }

    /// The folded topic and keyword words of document `d`.
    pub fn words(&self, d: u32) -> Words<'a> {
        match self.at(d) {
            At::Main(i) => self.main.words(i),
            At::Side(j) => self.side_seg().words(j),
        }
    }

    /// The encoded words of document `d`.
    pub fn words_raw(&self, d: u32) -> &'a str {
        match self.at(d) {
            At::Main(i) => self.main.words_raw(i),
            At::Side(j) => self.side_seg().words_raw(j),
        }
    }

    /// The topic of document `d` as written.
    pub fn topic(&self, d: u32) -> &'a str {
        match self.at(d) {
            At::Main(i) => self.main.topic(i),
            At::Side(j) => self.side_seg().topic(j),
        }
    }

    /// used_by of document `d`.
    pub fn used_by(&self, d: u32) -> u32 {
        if let Some(f) = self.merge.as_ref().and_then(|m| m.facts.get(&d)) {
            return f.0;
        }
        match self.at(d) {
            At::Main(i) => self.main.used_by(i),
            At::Side(_) => 0,
        }
    }

    /// Graph neighbours of document `d`, ascending.
    pub fn neighbors(&self, d: u32) -> std::vec::IntoIter<u32> {
        if let Some(f) = self.merge.as_ref().and_then(|m| m.facts.get(&d)) {
            return f.1.clone().into_iter();
        }
        let out: Vec<u32> = match self.at(d) {
            At::Main(i) => self.main.neighbors(i).filter_map(|x| self.from_main(x)).collect(),
            At::Side(_) => Vec::new(),
        };
        out.into_iter()
    }

    /// The merged id of the document at `path`.
    pub fn find_path(&self, path: &str) -> Option<u32> {
        let Some(m) = &self.merge else { return self.main.find_path(path) };
        if let Some(j) = m.side.find_path(path) {
            return self.from_side(j);
        }
        let i = self.main.find_path(path)?;
        // A replaced main document answers through its side version above.
        self.from_main(i).filter(|&d| matches!(self.at(d), At::Main(_)))
    }
}

/// The postings of one term over a (merged) view: the main's, with
/// removed documents skipped and ids moved to their merged place, then
/// the side's.
pub struct Postings<'v, 'a> {
    v: &'v View<'a>,
    main: std::ops::Range<usize>,
    side: std::ops::Range<usize>,
    /// Cursor into the runs (main postings come in ascending main id).
    run: usize,
}

impl Iterator for Postings<'_, '_> {
    type Item = (u32, u32);

    fn next(&mut self) -> Option<(u32, u32)> {
        for k in self.main.by_ref() {
            let Some((d, tf)) = self.v.main.posting_at(k) else { continue };
            let Some(m) = &self.v.merge else { return Some((d, tf)) };
            // Ascending ids: advance the run cursor; a gap is a removed document.
            if m.runs.get(self.run).is_some_and(|r| r.main > d) {
                self.run = m.runs.partition_point(|r| r.main + r.len <= d);
            }
            while m.runs.get(self.run).is_some_and(|r| r.main + r.len <= d) {
                self.run += 1;
            }
            match m.runs.get(self.run) {
                Some(r) if d >= r.main => return Some((r.at + (d - r.main), tf)),
                _ => continue,
            }
        }
        let m = self.v.merge.as_ref()?;
        for k in self.side.by_ref() {
            let Some((j, tf)) = m.side.posting_at(k) else { continue };
            if let Some(&at) = m.side_at.get(j as usize) {
                return Some((at, tf));
            }
        }
        None
    }
}
