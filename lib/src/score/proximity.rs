//! Term proximity: the ordered-bigram feature of the sequential
//! dependence model (Metzler & Croft 2005), as a re-ranking of the best
//! few text matches. Two query words that stand next to each other in the
//! query ("vitamin D", "insulin resistance", "smoking cessation") are
//! stronger evidence when they also stand next to each other in the
//! document than when it uses them in separate sentences; BM25F sees only
//! the bag of words.
//!
//! The index keeps no positions (so it stays small at 100,000 documents),
//! so the feature is computed on the terms of the best `depth` documents,
//! read at query time, the way feedback reads its three (score::feedback).
//! Tuned on SciFact train (bench/rank_tune.rs): adjacent pairs only
//! (a window of 2–8 words, ordered or not, gained less), every pair
//! weighted alike (weighting pairs by their words' IDF gained less), a
//! fifth of the text evidence's scale, the best 20 documents (10: about
//! half the gain; 30–50: the same as 20).

use super::bm25::{self, Params};

/// How much proximity a ranking gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Proximity {
    /// Weight of the pair share added to the text share (0: off).
    pub weight: f64,
    /// How many of the best documents are re-ranked.
    pub depth: usize,
}

/// The proximity kb-score ranks with (tuned on SciFact train; README "Ranking").
pub const PROXIMITY: Proximity = Proximity { weight: 0.2, depth: 20 };

impl Proximity {
    /// This proximity with the knobs of a tuning spec (bm25::TUNE_ENV)
    /// replaced: `prox` (weight), `proxk` (depth).
    pub fn tuned(self, spec: &str) -> Proximity {
        let k = |key: &str, d: f64| bm25::knob(spec, key).unwrap_or(d);
        Proximity { weight: k("prox", self.weight), depth: k("proxk", self.depth as f64) as usize }
    }

    /// Whether this proximity changes anything.
    pub fn active(&self) -> bool {
        self.weight > 0.0 && self.depth > 0
    }
}

/// The ordered pairs of a query: each two neighbouring BM25 terms of its
/// content words, in the query's order (stop words already out, so
/// "effect of smoking" pairs `effect` with `smoke`), a word next to
/// itself left out. As in the sequential dependence model, a pair the
/// query says twice counts twice (on SciFact train, counting it once
/// lost 0.0004 nDCG@10).
pub fn pairs(stems: &[String]) -> Vec<(String, String)> {
    stems.windows(2).filter(|w| w[0] != w[1]).map(|w| (w[0].clone(), w[1].clone())).collect()
}

/// The share in [0, 1) of a query's pairs that a document's terms (in
/// order) hold adjacent: Σ over pairs of BM25's saturation of how often
/// the pair occurs, ÷ (pairs × (k1 + 1)). `len` and `avg` are the
/// document's BM25 length and the library's mean.
pub fn share(pairs: &[(String, String)], doc: &[String], p: &Params, len: f64, avg: f64) -> f64 {
    if pairs.is_empty() {
        return 0.0;
    }
    let mut sum = 0.0;
    for (a, b) in pairs {
        let tf = doc.windows(2).filter(|w| w[0] == *a && w[1] == *b).count() as f64;
        sum += bm25::saturate(p, tf, len, avg);
    }
    sum / (pairs.len() as f64 * (p.k1 + 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn pairs_are_neighbours_in_query_order() {
        let p = pairs(&s(&["vitamin", "d", "vitamin", "d", "defici"]));
        let want = [("vitamin", "d"), ("d", "vitamin"), ("vitamin", "d"), ("d", "defici")];
        assert_eq!(p, want.map(|(a, b)| (a.to_string(), b.to_string())));
        assert!(pairs(&s(&["one"])).is_empty());
        assert!(pairs(&s(&["a", "a"])).is_empty());
    }

    #[test]
    fn share_counts_adjacent_ordered_pairs_only() {
        let p = bm25::PARAMS;
        let q = pairs(&s(&["insulin", "resist"]));
        let adjacent = share(&q, &s(&["insulin", "resist", "rise"]), &p, 3.0, 3.0);
        let apart = share(&q, &s(&["insulin", "rise", "resist"]), &p, 3.0, 3.0);
        let reversed = share(&q, &s(&["resist", "insulin"]), &p, 3.0, 3.0);
        // One occurrence at mean length saturates to 1 of k1 + 1 = 2.
        assert_eq!((adjacent, apart, reversed), (0.5, 0.0, 0.0));
        assert_eq!(share(&[], &s(&["x"]), &p, 1.0, 1.0), 0.0);
    }
}
