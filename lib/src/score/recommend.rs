//! Seed 000's graph recommendations: after the direct hits, a BFS over
//! the relation graph (kb::library::graph, `MAX_GRAPH_HOPS` 2, `MAX_GRAPH_EXPAND`
//! 20) from each direct hit; a document `k` hops away scores
//! `direct × 0.5^k` (RECOMMEND_SCORE_FACTOR per hop) and keeps its best
//! score over all direct hits, with the hop and the document it was
//! reached through (`via`).

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::library::entry::Entry;
use crate::library::graph::Graph;
use crate::library::relations::Edge;

use super::formula::{self, MAX_GRAPH_EXPAND, MAX_GRAPH_HOPS};
use super::index::View;

/// A recommended document.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommended {
    /// Document id.
    pub doc: u32,
    /// `direct × 0.5^hop`.
    pub score: f64,
    /// Hops from the direct hit.
    pub hop: usize,
    /// The document it was reached through.
    pub via: u32,
    /// The direct hit the walk started from.
    pub root: u32,
}

/// The part of the graph a walk from `start` can see: edges of the start
/// and of the first `MAX_GRAPH_EXPAND` neighbours by path (the only hop-1
/// nodes kb::library::graph's BFS expands further), as a kb::library::graph::Graph.
fn neighbourhood(v: &View, start: u32) -> (Graph, HashMap<String, u32>) {
    let mut edges = BTreeSet::new();
    let mut nodes: HashMap<String, u32> = HashMap::new();
    let sp = v.path(start).to_string();
    nodes.insert(sp.clone(), start);
    let mut first: Vec<(String, u32)> = v.neighbors(start).map(|n| (v.path(n).to_string(), n)).collect();
    first.sort();
    for (p, n) in &first {
        edges.insert(Edge { from: sp.clone(), to: p.clone(), kind: "related".into() });
        nodes.insert(p.clone(), *n);
    }
    for (p, n) in first.iter().take(MAX_GRAPH_EXPAND) {
        for m in v.neighbors(*n) {
            let q = v.path(m).to_string();
            edges.insert(Edge { from: p.clone(), to: q.clone(), kind: "related".into() });
            nodes.insert(q, m);
        }
    }
    let entries: Vec<Entry> =
        nodes.keys().filter_map(|p| Entry::from_text(p, "").or_else(|| super::build::skill_reference(p, ""))).collect();
    (Graph::from_edges(&edges, &entries), nodes)
}

/// Recommendations from the direct hits `(doc, score)`, best first (ties
/// by hop then path), excluding direct hits and documents `keep` rejects,
/// at most `MAX_GRAPH_EXPAND`.
pub fn recommend(v: &View, direct: &[(u32, f64)], keep: impl Fn(u32) -> bool) -> Vec<Recommended> {
    let is_direct: HashSet<u32> = direct.iter().map(|(d, _)| *d).collect();
    let mut best: HashMap<u32, Recommended> = HashMap::new();
    for &(start, s) in direct {
        let (g, ids) = neighbourhood(v, start);
        for r in g.bfs(&[v.path(start).to_string()], MAX_GRAPH_HOPS, MAX_GRAPH_EXPAND) {
            let (Some(&doc), Some(&via)) = (ids.get(&r.path), ids.get(&r.via)) else { continue };
            if is_direct.contains(&doc) {
                continue;
            }
            let rec = Recommended { doc, score: formula::hop_score(s, r.hop), hop: r.hop, via, root: start };
            match best.get(&doc) {
                Some(b) if b.score >= rec.score => {}
                _ => {
                    best.insert(doc, rec);
                }
            }
        }
    }
    let mut out: Vec<Recommended> = best.into_values().filter(|r| keep(r.doc)).collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.hop.cmp(&b.hop)).then(a.doc.cmp(&b.doc)));
    out.truncate(MAX_GRAPH_EXPAND);
    out
}
