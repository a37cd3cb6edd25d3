//! The relation graph, the one for every reader: `kb-relate neighbors`,
//! kb-score's graph facts (`used_by`, neighbours) and its recommendations
//! (seed 000 search "graph-enhanced": BFS over `.relations.jsonl`,
//! `MAX_GRAPH_HOPS` 2, `MAX_GRAPH_EXPAND` 20). Documents are the nodes,
//! numbered by their place in the list the graph is built from; every edge
//! between two documents is an undirected link; a `topic:<name>` end links
//! to every document with that topic; notebook ends are never traversed (a
//! notebook that touched many files would join unrelated documents).
//!
//! The graph is by id, never by path string: at 100,000 documents a graph
//! of strings was a third of kb-score's cold-build peak memory.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::error::Result;
use crate::library::relations::{self, Edge};
use crate::library::scan;
use crate::library::Library;

/// Seed 000 `MAX_GRAPH_HOPS`.
pub const MAX_GRAPH_HOPS: usize = 2;
/// Seed 000 `MAX_GRAPH_EXPAND`.
pub const MAX_GRAPH_EXPAND: usize = 20;

/// Edge kinds that do not count as a use of the target: authorship
/// (`wrote`) and a document's own notebook (`source`).
pub const NOT_USES: &[&str] = &["wrote", "source"];

/// The graph over documents `0..n`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graph {
    /// Per document, how many distinct sources have an edge into it
    /// (topic targets fanned out, [`NOT_USES`] kinds and self-edges
    /// skipped): kb-score's `used_by`.
    pub used: Vec<u32>,
    /// Per document, its neighbours by id, sorted and distinct.
    pub adj: Vec<Vec<u32>>,
}

/// A document reached by [`Graph::bfs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reached {
    /// The document reached.
    pub doc: u32,
    /// How many hops from the nearest start (1 = a direct neighbour).
    pub hop: usize,
    /// The document it was reached from (the smallest id among the
    /// previous hop's neighbours), shown as `← via` in search tables.
    pub via: u32,
}

impl Graph {
    /// Builds the graph of documents given as `(path, topic)`; a document's
    /// id is its place in `docs`. Edges whose ends are not among `docs`
    /// (dangling links, notebooks) link nothing; `topic:<name>` ends fan
    /// out to the documents with that topic.
    pub fn build<'a>(edges: &BTreeSet<Edge>, docs: impl Iterator<Item = (&'a str, &'a str)>) -> Graph {
        let docs: Vec<(&str, &str)> = docs.collect();
        let ids: FxHashMap<&str, u32> = docs.iter().enumerate().map(|(i, (p, _))| (*p, i as u32)).collect();
        let mut by_topic: FxHashMap<&str, Vec<u32>> = FxHashMap::default();
        for (i, (_, t)) in docs.iter().enumerate() {
            by_topic.entry(t).or_default().push(i as u32);
        }
        let resolve = |node: &str| -> &[u32] {
            match node.strip_prefix("topic:") {
                Some(t) => by_topic.get(t).map_or(&[], Vec::as_slice),
                None => ids.get(node).map_or(&[], std::slice::from_ref),
            }
        };
        let mut links: Vec<(u32, u32)> = Vec::new();
        let mut uses: Vec<(u32, &str)> = Vec::new();
        for e in edges {
            if !NOT_USES.contains(&e.kind.as_str()) {
                for &t in resolve(&e.to) {
                    if docs[t as usize].0 != e.from {
                        uses.push((t, e.from.as_str()));
                    }
                }
            }
            if e.from.starts_with("notebook:") || e.to.starts_with("notebook:") {
                continue;
            }
            for &a in resolve(&e.from) {
                links.extend(resolve(&e.to).iter().map(|&b| (a, b)));
            }
        }
        uses.sort_unstable();
        uses.dedup();
        let mut g = Graph::from_links(docs.len(), links);
        for (t, _) in uses {
            g.used[t as usize] += 1;
        }
        g
    }

    /// The graph of `n` documents joined by `links` (each undirected; a
    /// document's link to itself is dropped), no document used.
    pub fn from_links(n: usize, links: impl IntoIterator<Item = (u32, u32)>) -> Graph {
        let mut adj: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (a, b) in links {
            if a != b {
                adj[a as usize].push(b);
                adj[b as usize].push(a);
            }
        }
        for a in &mut adj {
            a.sort_unstable();
            a.dedup();
        }
        Graph { used: vec![0; n], adj }
    }

    /// Breadth-first search from `start` (hop 0, not returned) up to
    /// `max_hops`, returning at most `max_expand` documents ordered by hop
    /// then id. Each hop is completed and sorted before it is cut, so the
    /// result does not depend on hash or thread order. Built from
    /// documents in path order, id order is path order.
    pub fn bfs(&self, start: &[u32], max_hops: usize, max_expand: usize) -> Vec<Reached> {
        let mut seen: BTreeSet<u32> = start.iter().copied().collect();
        let mut frontier: Vec<u32> = seen.iter().copied().collect();
        let mut out = Vec::new();
        for hop in 1..=max_hops {
            if out.len() >= max_expand || frontier.is_empty() {
                break;
            }
            // doc -> smallest predecessor; frontier is sorted so the first wins.
            let mut level: BTreeMap<u32, u32> = BTreeMap::new();
            for &from in &frontier {
                for &to in self.adj.get(from as usize).map_or(&[][..], Vec::as_slice) {
                    if !seen.contains(&to) {
                        level.entry(to).or_insert(from);
                    }
                }
            }
            let room = max_expand - out.len();
            let next: Vec<(u32, u32)> = level.into_iter().take(room).collect();
            frontier = next.iter().map(|(d, _)| *d).collect();
            for (doc, via) in next {
                seen.insert(doc);
                out.push(Reached { doc, hop, via });
            }
        }
        out
    }
}

/// A library's documents, sorted by path, and their graph (ids index
/// `paths`).
pub struct Loaded {
    /// Every document's library-relative path, sorted.
    pub paths: Vec<String>,
    /// The graph over them.
    pub graph: Graph,
}

impl Loaded {
    /// The id of a document, None when `path` is not one.
    pub fn id(&self, path: &str) -> Option<u32> {
        self.paths.binary_search_by(|p| p.as_str().cmp(path)).ok().map(|i| i as u32)
    }

    /// The path of an id.
    pub fn path(&self, id: u32) -> &str {
        &self.paths[id as usize]
    }
}

/// One document `kb-relate neighbors` reached (the `neighbor` record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "record", rename = "neighbor")]
pub struct Neighbor<'a> {
    /// The document reached.
    pub path: &'a str,
    /// Hops from the start (1 = a direct neighbour).
    pub hop: usize,
    /// The document it was reached from.
    pub via: &'a str,
}

impl Loaded {
    /// The documents within `hops` of `path` (none when it is not a
    /// document), at most `max`, by hop then path.
    pub fn neighbors(&self, path: &str, hops: usize, max: usize) -> Vec<Neighbor<'_>> {
        let reached = self.graph.bfs(self.id(path).as_slice(), hops, max);
        reached.iter().map(|r| Neighbor { path: self.path(r.doc), hop: r.hop, via: self.path(r.via) }).collect()
    }
}

/// Loads the graph of a library: `.relations.jsonl` (rebuilt in memory
/// when it cannot be trusted) over a fresh scan of the documents.
pub fn load(lib: &Library) -> Result<Loaded> {
    let scan = scan::library(lib);
    let edges = match relations::read(lib)? {
        Some(set) => set,
        None => relations::all_edges(scan.docs.iter().map(|d| d.edges.as_slice()), lib)?,
    };
    let mut docs: Vec<(String, String)> = scan.docs.into_iter().map(|d| (d.entry.path, d.entry.topic)).collect();
    docs.sort();
    let graph = Graph::build(&edges, docs.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    Ok(Loaded { paths: docs.into_iter().map(|(p, _)| p).collect(), graph })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(from: &str, to: &str, kind: &str) -> Edge {
        Edge { from: from.into(), to: to.into(), kind: kind.into() }
    }

    /// Every rule at once: both directions of one link are one neighbour,
    /// topic ends fan out, notebook ends link nothing but a notebook's
    /// `referenced` is a use, `wrote`/`source` are not, dangling ends and
    /// self-edges count for nothing.
    fn fixture() -> Graph {
        let docs = [
            ("a/x.md", "alpha"),
            ("a/y.md", "beta"),
            ("b/z.md", "alpha"),
            ("notes/v.md", "delta"),
            ("notes/w.md", "gamma"),
        ];
        let edges: BTreeSet<Edge> = [
            edge("a/x.md", "a/y.md", "related"),
            edge("a/y.md", "a/x.md", "link"),
            edge("notes/w.md", "topic:alpha", "related"),
            edge("b/z.md", "topic:alpha", "related"),
            edge("notebook:nb", "notes/v.md", "wrote"),
            edge("notebook:nb", "notes/v.md", "referenced"),
            edge("notebook:nc", "a/y.md", "referenced"),
            edge("a/x.md", "notebook:nb", "source"),
            edge("gone.md", "notes/v.md", "link"),
            edge("a/x.md", "gone.md", "related"),
            edge("notes/v.md", "notes/v.md", "link"),
        ]
        .into_iter()
        .collect();
        Graph::build(&edges, docs.iter().copied())
    }

    #[test]
    fn uses_and_links_follow_the_rules() {
        let g = fixture();
        // a/x.md: used by a/y.md, b/z.md (topic alpha), notes/w.md (topic alpha).
        assert_eq!(g.used, [3, 2, 1, 2, 0]);
        assert_eq!(g.adj, [vec![1, 2, 4], vec![0], vec![0, 4], vec![], vec![0, 2]]);
    }

    #[test]
    fn bfs_is_ordered_by_hop_then_id_and_capped() {
        let g = fixture();
        let want = vec![
            Reached { doc: 0, hop: 1, via: 1 },
            Reached { doc: 2, hop: 2, via: 0 },
            Reached { doc: 4, hop: 2, via: 0 },
        ];
        assert_eq!(g.bfs(&[1], 2, 20), want);
        assert_eq!(g.bfs(&[1], 2, 2), want[..2]);
        assert_eq!(g.bfs(&[1], 1, 20), want[..1]);
        // notes/v.md reaches a/x.md only through notebook nb: never traversed.
        assert!(g.bfs(&[3], 2, 20).is_empty());
        assert!(g.bfs(&[], 2, 20).is_empty());
    }
}
