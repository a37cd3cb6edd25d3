//! The relation graph as search and `kb-relate neighbors` walk it (seed 000
//! search "graph-enhanced": BFS over `.relations.jsonl`, `MAX_GRAPH_HOPS`
//! 2, `MAX_GRAPH_EXPAND` 20). Documents are the nodes; every edge between
//! two documents is an undirected link; a `topic:<name>` target links to
//! every document with that topic; notebook nodes are never traversed (a
//! notebook that touched many files would join unrelated documents).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::error::Result;
use crate::library::entry::Entry;
use crate::library::relations::{self, Edge};
use crate::library::scan;
use crate::library::Library;

/// Seed 000 `MAX_GRAPH_HOPS`.
pub const MAX_GRAPH_HOPS: usize = 2;
/// Seed 000 `MAX_GRAPH_EXPAND`.
pub const MAX_GRAPH_EXPAND: usize = 20;

/// Undirected adjacency between documents, each neighbour labelled with the
/// kinds of edge that join them (sorted, so output is deterministic).
#[derive(Debug, Clone, Default)]
pub struct Graph {
    adj: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
}

/// A document reached by [`Graph::bfs`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reached {
    /// The document reached.
    pub path: String,
    /// How many hops from the nearest start (1 = a direct neighbour).
    pub hop: usize,
    /// The document it was reached from (the smallest path among the
    /// previous hop's neighbours), shown as `← via` in search tables.
    pub via: String,
}

impl Graph {
    /// Builds the graph from an edge set and the library's entries: edges
    /// whose ends are not documents in `entries` (dangling links,
    /// notebooks) are dropped; `topic:<name>` ends fan out to the documents
    /// with that topic.
    pub fn from_edges(edges: &BTreeSet<Edge>, entries: &[Entry]) -> Graph {
        let docs: BTreeSet<&str> = entries.iter().map(|e| e.path.as_str()).collect();
        let mut by_topic: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for e in entries {
            by_topic.entry(e.topic.as_str()).or_default().push(e.path.as_str());
        }
        let resolve = |node: &str| -> Vec<String> {
            if let Some(topic) = node.strip_prefix("topic:") {
                by_topic.get(topic).map(|v| v.iter().map(|s| s.to_string()).collect()).unwrap_or_default()
            } else if docs.contains(node) {
                vec![node.to_string()]
            } else {
                Vec::new()
            }
        };
        let mut g = Graph::default();
        for edge in edges {
            if edge.from.starts_with("notebook:") || edge.to.starts_with("notebook:") {
                continue;
            }
            for a in resolve(&edge.from) {
                for b in resolve(&edge.to) {
                    if a != b {
                        g.link(&a, &b, &edge.kind);
                    }
                }
            }
        }
        g
    }

    fn link(&mut self, a: &str, b: &str, kind: &str) {
        self.adj.entry(a.to_string()).or_default().entry(b.to_string()).or_default().insert(kind.to_string());
        self.adj.entry(b.to_string()).or_default().entry(a.to_string()).or_default().insert(kind.to_string());
    }

    /// Loads the graph of a library: `.relations.jsonl` (rebuilt in memory
    /// when it cannot be trusted) over a fresh scan of the documents.
    pub fn load(lib: &Library) -> Result<Graph> {
        let scan = scan::library(lib);
        let edges = match relations::read(lib)? {
            Some(set) => set,
            None => relations::all_edges(scan.docs.iter().map(|d| d.edges.as_slice()), lib)?,
        };
        let entries: Vec<Entry> = scan.docs.into_iter().map(|d| d.entry).collect();
        Ok(Graph::from_edges(&edges, &entries))
    }

    /// The direct neighbours of a document with the edge kinds joining
    /// them, sorted by path.
    pub fn neighbors(&self, path: &str) -> Vec<(&str, Vec<&str>)> {
        self.adj
            .get(path)
            .map(|n| n.iter().map(|(p, k)| (p.as_str(), k.iter().map(String::as_str).collect())).collect())
            .unwrap_or_default()
    }

    /// How many documents link to or from this one.
    pub fn degree(&self, path: &str) -> usize {
        self.adj.get(path).map_or(0, BTreeMap::len)
    }

    /// Breadth-first search from `start` (hop 0, not returned) up to
    /// `max_hops`, returning at most `max_expand` documents ordered by hop
    /// then path. Each hop is completed and sorted before it is cut, so the
    /// result does not depend on hash or thread order.
    pub fn bfs(&self, start: &[String], max_hops: usize, max_expand: usize) -> Vec<Reached> {
        let mut seen: BTreeSet<&str> = start.iter().map(String::as_str).collect();
        let mut frontier: Vec<&str> = seen.iter().copied().collect();
        let mut out = Vec::new();
        for hop in 1..=max_hops {
            if out.len() >= max_expand || frontier.is_empty() {
                break;
            }
            // path -> smallest predecessor; frontier is sorted so the first wins.
            let mut level: BTreeMap<&str, &str> = BTreeMap::new();
            for from in &frontier {
                for to in self.adj.get(*from).into_iter().flat_map(BTreeMap::keys) {
                    if !seen.contains(to.as_str()) {
                        level.entry(to.as_str()).or_insert(from);
                    }
                }
            }
            let room = max_expand - out.len();
            let next: Vec<(&str, &str)> = level.into_iter().take(room).collect();
            frontier = next.iter().map(|(p, _)| *p).collect();
            for (path, via) in next {
                seen.insert(path);
                out.push(Reached { path: path.to_string(), hop, via: via.to_string() });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str) -> Entry {
        Entry::from_text(path, "").expect("a document path")
    }

    fn edge(from: &str, to: &str, kind: &str) -> Edge {
        Edge { from: from.into(), to: to.into(), kind: kind.into() }
    }

    #[test]
    fn bfs_is_ordered_by_hop_then_path_and_capped() {
        let entries: Vec<Entry> = ["a.md", "b.md", "c.md", "d.md", ".memory/.references/rate-limiting-v1.md"]
            .iter()
            .map(|p| entry(p))
            .collect();
        let edges: BTreeSet<Edge> = [
            edge("a.md", "c.md", "link"),
            edge("b.md", "a.md", "related"),
            edge("c.md", "topic:rate-limiting", "related"),
            edge("notebook:nb1", "d.md", "wrote"),
            edge("notebook:nb1", "a.md", "wrote"),
            edge("a.md", "missing.md", "link"),
        ]
        .into_iter()
        .collect();
        let g = Graph::from_edges(&edges, &entries);
        let got = g.bfs(&["a.md".to_string()], 2, 20);
        let want = vec![
            Reached { path: "b.md".into(), hop: 1, via: "a.md".into() },
            Reached { path: "c.md".into(), hop: 1, via: "a.md".into() },
            Reached { path: ".memory/.references/rate-limiting-v1.md".into(), hop: 2, via: "c.md".into() },
        ];
        assert_eq!(got, want);
        assert_eq!(g.bfs(&["a.md".to_string()], 2, 1).len(), 1);
        assert_eq!(g.bfs(&["a.md".to_string()], 1, 20).len(), 2);
        assert!(g.bfs(&["d.md".to_string()], 2, 20).is_empty(), "notebooks are not traversed");
    }
}
