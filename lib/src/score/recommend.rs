//! Seed 000's graph recommendations: after the direct hits, a BFS over
//! the relation graph (kb::library::graph, `MAX_GRAPH_HOPS` 2, `MAX_GRAPH_EXPAND`
//! 20) from each direct hit; a document `k` hops away scores
//! `direct × 0.5^k` (RECOMMEND_SCORE_FACTOR per hop) and keeps its best
//! score over all direct hits, with the hop and the document it was
//! reached through (`via`).

use std::collections::{HashMap, HashSet};

use crate::library::graph::Graph;

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

/// The part of the graph a walk from `start` can see: links of the start
/// and of the first `MAX_GRAPH_EXPAND` neighbours by path (the only hop-1
/// nodes the BFS expands further), as a kb::library::graph::Graph over
/// those documents in path order, and the index id of each.
fn neighbourhood(v: &View, start: u32) -> (Graph, Vec<u32>) {
    let mut first: Vec<(&str, u32)> = v.neighbors(start).map(|n| (v.path(n), n)).collect();
    first.sort();
    let mut links: Vec<(u32, u32)> = first.iter().map(|&(_, n)| (start, n)).collect();
    for &(_, n) in first.iter().take(MAX_GRAPH_EXPAND) {
        links.extend(v.neighbors(n).map(|m| (n, m)));
    }
    let mut nodes: Vec<(&str, u32)> = links.iter().flat_map(|&(a, b)| [a, b]).map(|d| (v.path(d), d)).collect();
    nodes.push((v.path(start), start));
    nodes.sort();
    nodes.dedup();
    let local: HashMap<u32, u32> = nodes.iter().enumerate().map(|(i, &(_, d))| (d, i as u32)).collect();
    let g = Graph::from_links(nodes.len(), links.iter().map(|(a, b)| (local[a], local[b])));
    (g, nodes.into_iter().map(|(_, d)| d).collect())
}

/// Recommendations from the direct hits `(doc, score)`, best first (ties
/// by hop then path), excluding direct hits and documents `keep` rejects,
/// at most `MAX_GRAPH_EXPAND`.
pub fn recommend(v: &View, direct: &[(u32, f64)], keep: impl Fn(u32) -> bool) -> Vec<Recommended> {
    let is_direct: HashSet<u32> = direct.iter().map(|(d, _)| *d).collect();
    let mut best: HashMap<u32, Recommended> = HashMap::new();
    for &(start, s) in direct {
        let (g, ids) = neighbourhood(v, start);
        let Some(from) = ids.iter().position(|&d| d == start) else { continue };
        for r in g.bfs(&[from as u32], MAX_GRAPH_HOPS, MAX_GRAPH_EXPAND) {
            let (doc, via) = (ids[r.doc as usize], ids[r.via as usize]);
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
