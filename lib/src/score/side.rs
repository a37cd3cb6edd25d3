//! The side index: what changed since the main index was built, so the
//! first query after a write reads a few documents instead of rewriting
//! the whole index (3.9 s at 100,000 documents before it existed).
//!
//! A side index is an ordinary index file (kb::score::index) of the
//! documents added or changed since the main index, plus in its info which
//! main documents it removes (deleted or replaced), which watched
//! directories are gone, and the graph facts (used_by, neighbours) of every
//! document whose facts changed. kb::score::view lays it over the main
//! index as the one index a full rebuild would give. It is always made
//! against the main index alone (a newer side replaces the older one), so
//! it never stacks; when it would hold more than [`limit`] documents, or
//! too much of the graph changed, the caller rebuilds the main index.
//!
//! Found without reading the library: the watched directories whose mtime
//! changed are listed again (a write renames a file into its directory),
//! the documents the last side index held and those a query found edited
//! in place are checked again, and `.relations.jsonl` is diffed line by
//! line against the copy the main index keeps.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs;

use rayon::prelude::*;
use rustc_hash::FxHashSet;

use crate::error::Result;
use crate::library::graph::Graph;
use crate::library::relations::{self, Edge};
use crate::library::scan::Problem;
use crate::library::Library;

use super::build::{self, mtime_ns, stamp, Vocab};
use super::index::{self, DocRec, Info, Seg, Side, NO_DATE};
use super::view::View;
use super::walk;
use super::written;
use crate::text::segment::SideOf;

/// The most documents (added, changed or removed) a side index holds:
/// past this, rebuilding the main index is the better buy.
pub fn limit(main_docs: usize) -> usize {
    (main_docs / 20).max(256)
}

/// The most documents whose graph facts a side index recomputes.
pub const GRAPH_LIMIT: usize = 512;

/// A side index and what went wrong on the way.
pub struct Built {
    /// The side index bytes.
    pub bytes: Vec<u8>,
    /// Files that could not be read.
    pub problems: Vec<Problem>,
    /// Documents read from disk.
    pub read: usize,
}

/// Builds the side index of `lib` over the main index `main` (bytes of a
/// main index). `prev` is the side index in use, whose documents are
/// checked again; `stale` are documents a query found edited in place.
/// None when a side index cannot stand for the change (too large, the
/// main index keeps no trusted relations, the relations file is not one
/// a rebuild would trust): then the main index must be rebuilt.
pub fn build(lib: &Library, main_bytes: &[u8], prev: Option<&Seg>, stale: &[String]) -> Result<Option<Built>> {
    let lap = build::profiler("side");
    let Ok(main) = Seg::open(main_bytes) else { return Ok(None) };
    if !main.info.relations_ok {
        return Ok(None);
    }
    // Stamps first: a change made while we read makes the next query look again.
    let stamps = build::watched_stamps(lib);
    let rels = match fs::read(lib.path(relations::FILE)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(_) => return Ok(None),
    };
    let Ok(rels) = String::from_utf8(rels) else { return Ok(None) };
    if !rels.is_empty() && !rels.ends_with('\n') {
        return Ok(None);
    }

    // Directories whose mtime changed, and those gone.
    let now: Vec<Option<u64>> =
        main.info.dirs.par_iter().map(|(d, _)| fs::metadata(lib.path(d)).ok().map(|m| mtime_ns(&m))).collect();
    let mut changed: Vec<&str> = Vec::new();
    let mut gone: Vec<String> = Vec::new();
    for ((d, m), n) in main.info.dirs.iter().zip(&now) {
        match n {
            None => gone.push(d.clone()),
            Some(n) if n != m => changed.push(d),
            Some(_) => {}
        }
    }
    let known: HashSet<&str> = main.info.dirs.iter().map(|(d, _)| d.as_str()).collect();
    let listed = walk::relist(lib, &changed, &known);
    lap("directories");
    let relisted: HashSet<&str> = listed.dirs.iter().map(|(d, _)| d.as_str()).collect();

    // Candidates: what the listed directories hold now and held then, what
    // the gone ones held, the last side index's documents, the stale ones.
    let mut cand: BTreeSet<String> = listed.paths.iter().cloned().collect();
    let main_under = |prefix: &str, direct: bool, out: &mut BTreeSet<String>| {
        let p = if prefix.is_empty() { String::new() } else { format!("{prefix}/") };
        let start = main.path_rank(&p);
        for i in start..main.docs() {
            let path = main.path(i as u32);
            let Some(rest) = path.strip_prefix(p.as_str()) else { break };
            if !direct || !rest.contains('/') {
                out.insert(path.to_string());
            }
        }
    };
    for d in &changed {
        main_under(d, true, &mut cand);
    }
    for g in &gone {
        main_under(g, false, &mut cand);
    }
    if let Some(s) = prev {
        cand.extend((0..s.docs() as u32).map(|j| s.path(j).to_string()));
        if let Some(side) = &s.info.side {
            cand.extend(side.of.dead.iter().map(|&i| main.path(i).to_string()));
        }
    }
    cand.extend(stale.iter().cloned());
    if cand.len() > limit(main.docs()) {
        return Ok(None);
    }
    let listed_set: HashSet<&str> = listed.paths.iter().map(String::as_str).collect();
    let dir_of = |p: &str| p.rsplit_once('/').map_or("", |(d, _)| d).to_string();
    let under_gone = |p: &str| gone.iter().any(|g| p.starts_with(&format!("{g}/")));
    let mut dead: Vec<u32> = Vec::new();
    let mut to_read: Vec<String> = Vec::new();
    for p in &cand {
        let st = stamp(&lib.path(p));
        let exists = if relisted.contains(dir_of(p).as_str()) {
            listed_set.contains(p.as_str())
        } else {
            !under_gone(p) && st != (0, 0) && lib.path(p).is_file()
        };
        let mi = main.find_path(p);
        if exists {
            if let Some(i) = mi {
                if main.stamp(i) == st {
                    continue;
                }
                dead.push(i);
            }
            to_read.push(p.clone());
        } else if let Some(i) = mi {
            dead.push(i);
        }
    }

    lap("candidates");
    // Read the new versions.
    let written = written::for_paths(lib, &to_read);
    let fresh: Vec<_> = to_read.par_iter().map(|p| build::read_one(lib, p, &written)).collect();
    let mut problems = listed.problems;
    let mut vocab = Vocab::default();
    let mut docs: Vec<DocRec> = Vec::new();
    let mut undated: Vec<(usize, index::Meta)> = Vec::new();
    for (f, probs) in fresh {
        problems.extend(probs);
        let Some(f) = f else { continue };
        let mut rec = f.rec;
        rec.terms = f.words.iter().map(|(w, tf)| (vocab.id(w), *tf)).collect();
        rec.meta = serde_json::to_vec(&f.meta).unwrap_or_default();
        if rec.fresh_at == NO_DATE {
            undated.push((docs.len(), f.meta));
        }
        docs.push(rec);
    }
    build::date_from_git(lib, &mut docs, undated);
    problems.sort_by(|a, b| a.path.cmp(&b.path));
    dead.sort_unstable();
    dead.dedup();
    let read = to_read.len();

    // The side without graph facts first: the merged view resolves paths
    // and topics for the graph.
    let side = Side { of: SideOf { main_built: main.info.built, dead }, gone, facts: Vec::new() };
    let info = Info { dirs: listed.dirs, stamps, side: Some(side), ..Info::default() };
    let bytes = index::write(docs, &vocab.words, &[], &[], b"", info);
    lap("read");
    let Ok(view) = View::merged(main_bytes, &bytes) else { return Ok(None) };
    let Some(facts) = graph_facts(&view, &main, &rels) else { return Ok(None) };
    lap("graph");
    let Some(seg) = view.side() else { return Ok(None) };
    let mut info = seg.info.clone();
    if let Some(s) = &mut info.side {
        s.facts = facts;
    }
    let bytes = index::with_info(seg, &info);
    Ok(Some(Built { bytes, problems, read }))
}

/// The lines only one of two relations files has: `(old only, new
/// only)`, or a few more (a line repeated in the common part may be
/// reported: its edge's ends are then recomputed, which is harmless).
/// The common head and tail are skipped by comparing bytes (a write
/// changes a few lines), the rest compared as sets of lines.
fn changed_lines<'t>(old: &'t str, new: &'t str) -> (Vec<&'t str>, Vec<&'t str>) {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let mut head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    head = a[..head].iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
    let max_tail = a.len().min(b.len()) - head;
    let mut tail = a.iter().rev().zip(b.iter().rev()).take(max_tail).take_while(|(x, y)| x == y).count();
    // Whole lines only: the tail starts after its first newline.
    tail = a[a.len() - tail..].iter().position(|&c| c == b'\n').map_or(0, |i| tail - (i + 1));
    let (mid_a, mid_b) = (&old[head..old.len() - tail], &new[head..new.len() - tail]);
    let set = |t: &'t str| -> FxHashSet<&'t str> { t.lines().filter(|l| !l.trim().is_empty()).collect() };
    let (sa, sb) = (set(mid_a), set(mid_b));
    (sa.difference(&sb).copied().collect(), sb.difference(&sa).copied().collect())
}

/// Topic → merged ids, computed on demand (one pass over all topics).
struct Topics<'v, 'a> {
    view: &'v View<'a>,
    by: Option<HashMap<&'a str, Vec<u32>>>,
}

impl<'a> Topics<'_, 'a> {
    fn of(&mut self, t: &str) -> Vec<u32> {
        let view = self.view;
        let by = self.by.get_or_insert_with(|| {
            let mut by: HashMap<&'a str, Vec<u32>> = HashMap::new();
            for d in 0..view.docs() as u32 {
                by.entry(view.topic(d)).or_default().push(d);
            }
            by
        });
        by.get(t).cloned().unwrap_or_default()
    }

    /// The documents an edge end names: a path, every document of a
    /// `topic:`, nothing for a notebook (kb::library::graph's rules).
    fn resolve(&mut self, node: &str) -> Vec<u32> {
        if node.starts_with("notebook:") {
            Vec::new()
        } else if let Some(t) = node.strip_prefix("topic:") {
            self.of(t)
        } else {
            self.view.find_path(node).into_iter().collect()
        }
    }
}

/// The edges of `text` on lines mentioning any of `needles` (JSON strings).
fn edges_mentioning(text: &str, needles: &[String]) -> Option<BTreeSet<Edge>> {
    let mut starts: BTreeSet<usize> = BTreeSet::new();
    for n in needles {
        for (at, _) in text.match_indices(n.as_str()) {
            starts.insert(text[..at].rfind('\n').map_or(0, |i| i + 1));
        }
    }
    let mut out = BTreeSet::new();
    for s in starts {
        let line = text[s..].split('\n').next().unwrap_or("");
        out.insert(serde_json::from_str::<Edge>(line).ok()?);
    }
    Some(out)
}

fn quoted(s: &str) -> String {
    // Serialising a &str cannot fail.
    serde_json::to_string(s).unwrap_or_default()
}

/// Graph facts `(merged id, used_by, neighbours)` of every document whose
/// facts may differ from the main index's: the side's documents, the ends
/// of changed edges, the neighbours of removed documents, and whatever
/// links to a document that came, went or changed topic. Each is
/// recomputed by kb::library::graph::Graph::build over every edge touching
/// it, so it equals a full rebuild's. None when too many changed.
fn graph_facts(view: &View, main: &Seg, rels: &str) -> Option<Vec<(u32, u32, Vec<u32>)>> {
    let lap = build::profiler("side graph");
    let side = view.side()?;
    let old = std::str::from_utf8(main.relations()).ok()?;
    let (gone_l, added_l) = changed_lines(old, rels);
    let mut changed: Vec<Edge> = Vec::new();
    for l in gone_l.iter().chain(&added_l) {
        changed.push(serde_json::from_str(l).ok()?);
    }
    lap("diff");
    let mut topics = Topics { view, by: None };
    let mut affected: BTreeSet<u32> = BTreeSet::new();
    for e in &changed {
        affected.extend(topics.resolve(&e.from));
        affected.extend(topics.resolve(&e.to));
    }
    // Whatever links to a document that came, went or changed topic.
    let mut needles: Vec<String> = Vec::new();
    let dead = side.info.side.as_ref().map(|s| s.of.dead.clone()).unwrap_or_default();
    for &i in &dead {
        affected.extend(main.neighbors(i).filter_map(|x| view.from_main(x)));
        let (p, t) = (main.path(i), main.topic(i));
        let replaced = side.find_path(p);
        if replaced.is_none_or(|j| side.topic(j) != t) {
            needles.push(quoted(p));
            needles.push(quoted(&format!("topic:{t}")));
        }
    }
    for j in 0..side.docs() as u32 {
        affected.extend(view.from_side(j));
        let p = side.path(j);
        if main.find_path(p).is_none_or(|i| main.topic(i) != side.topic(j)) {
            needles.push(quoted(p));
            needles.push(quoted(&format!("topic:{}", side.topic(j))));
        }
    }
    lap("changed ends");
    for e in edges_mentioning(rels, &needles)? {
        affected.extend(topics.resolve(&e.from));
        affected.extend(topics.resolve(&e.to));
    }
    if affected.len() > GRAPH_LIMIT {
        return None;
    }
    // Every edge touching an affected document, and every document those
    // edges reach: the graph over them is exact for the affected ones.
    let mut needles: Vec<String> = Vec::new();
    for &d in &affected {
        needles.push(quoted(view.path(d)));
        needles.push(quoted(&format!("topic:{}", view.topic(d))));
    }
    lap("affected");
    let edges = edges_mentioning(rels, &needles)?;
    lap("edges");
    let mut reach: BTreeSet<u32> = affected.clone();
    for e in &edges {
        reach.extend(topics.resolve(&e.from));
        reach.extend(topics.resolve(&e.to));
    }
    let ids: Vec<u32> = reach.into_iter().collect();
    lap("reach");
    let Graph { used, adj } = Graph::build(&edges, ids.iter().map(|&d| (view.path(d), view.topic(d))));
    let mut out = Vec::with_capacity(affected.len());
    for (k, &d) in ids.iter().enumerate() {
        if affected.contains(&d) {
            out.push((d, used[k], adj[k].iter().map(|&x| ids[x as usize]).collect()));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_are_exactly_the_set_difference() {
        let cases = [
            ("a\nb\nc\n", "a\nb\nc\n"),
            ("a\nb\nc\n", "a\nbb\nc\n"),
            ("a\nb\nc\n", "a\nc\n"),
            ("", "x\n"),
            ("x\n", ""),
            ("ab\nb\n", "b\n"),
            ("a\nb\n", "a\nb\nb\n"),
            ("k\nab\ncd\n", "k\nb\ncd\n"),
            ("one\ntwo\n", "zero\none\ntwo\nthree\n"),
        ];
        for (old, new) in cases {
            let (g, a) = changed_lines(old, new);
            let so: BTreeSet<&str> = old.lines().collect();
            let sn: BTreeSet<&str> = new.lines().collect();
            // Every changed line is reported (a duplicate line may be too:
            // recomputing an unchanged edge's ends is harmless).
            for x in so.difference(&sn) {
                assert!(g.contains(x), "{old:?} -> {new:?}: {x} gone");
            }
            for x in sn.difference(&so) {
                assert!(a.contains(x), "{old:?} -> {new:?}: {x} added");
            }
            assert!(g.iter().all(|x| so.contains(x)) && a.iter().all(|x| sn.contains(x)));
            if old == new {
                assert!(g.is_empty() && a.is_empty());
            }
        }
    }
}
