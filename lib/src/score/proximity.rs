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
use crate::text;
use crate::text::terms;

/// How much proximity a ranking gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Proximity {
    /// Weight of the pair share added to the text share (0: off).
    pub weight: f64,
    /// How many of the best documents are re-ranked.
    pub depth: usize,
}

/// The proximity kb-score ranks with (tuned on SciFact train; docs/design/ranking.md).
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

/// The ordered word pairs of a query, ready to look for in documents.
#[derive(Debug, Clone, PartialEq)]
pub struct Pairs {
    /// The distinct terms the pairs are made of.
    terms: Vec<String>,
    /// Each pair as indexes into `terms`.
    pairs: Vec<(u16, u16)>,
}

/// A word that stands for no pair term in a document's sequence.
const OTHER: u16 = u16::MAX;

impl Pairs {
    /// The pairs of a query whose content words stem to `stems` (in the
    /// query's order, stop words already out, so "effect of smoking"
    /// pairs `effect` with `smoke`): each two neighbours, a word next to
    /// itself left out. As in the sequential dependence model, a pair the
    /// query says twice counts twice (on SciFact train, counting it once
    /// lost 0.0004 nDCG@10).
    pub fn of(stems: &[String]) -> Pairs {
        let mut out = Pairs { terms: Vec::new(), pairs: Vec::new() };
        for w in stems.windows(2).filter(|w| w[0] != w[1]).take(usize::from(OTHER) / 2) {
            let a = out.id(&w[0]);
            let b = out.id(&w[1]);
            out.pairs.push((a, b));
        }
        out
    }

    fn id(&mut self, t: &str) -> u16 {
        match self.terms.iter().position(|x| x == t) {
            Some(i) => i as u16,
            None => {
                self.terms.push(t.to_string());
                (self.terms.len() - 1) as u16
            }
        }
    }

    /// Whether the query has no pair.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The pairs' terms as a document text says them, in order: the term
    /// index of each content word, [`OTHER`] for a word that is none of
    /// them. Stop words are skipped as in the index, so adjacency is
    /// adjacency of content words; a word's letter and digit runs are not
    /// added (the query's pairs have none either). Only words that can
    /// stem to a pair term are stemmed — Snowball and the spelling folds
    /// keep a word's first letter except for a British `ae`/`oe` start —
    /// so re-ranking twenty abstracts stems a few dozen words, not
    /// thousands.
    pub fn sequence(&self, text: &str) -> Vec<u16> {
        // Snowball keeps a word's first two letters, the spelling folds
        // too except where they drop the `a`/`o` of an early `ae`/`oe`.
        let heads: Vec<&[u8]> = self.terms.iter().map(|t| &t.as_bytes()[..t.len().min(2)]).collect();
        let mut seq: Vec<u16> = Vec::new();
        text::each_token(text, |w| {
            if terms::is_stop(w) {
                return;
            }
            let b = w.as_bytes();
            let may = heads.iter().any(|h| b.starts_with(h))
                || b[..b.len().min(4)].windows(2).any(|p| p == b"ae" || p == b"oe");
            let id = if may {
                let s = terms::stem(w);
                self.terms.iter().position(|t| *t == s).map_or(OTHER, |i| i as u16)
            } else {
                OTHER
            };
            seq.push(id);
        });
        seq
    }

    /// The share in [0, 1) of the pairs that a document holds side by
    /// side, `seq` being its [`Pairs::sequence`]: Σ over pairs of BM25's
    /// saturation of how often the pair occurs, ÷ (pairs × (k1 + 1)).
    /// `len` and `avg` are the document's BM25 length and the library's
    /// mean.
    pub fn share(&self, seq: &[u16], p: &Params, len: f64, avg: f64) -> f64 {
        if self.pairs.is_empty() {
            return 0.0;
        }
        let mut sum = 0.0;
        for &(a, b) in &self.pairs {
            let tf = seq.windows(2).filter(|w| w[0] == a && w[1] == b).count() as f64;
            sum += bm25::saturate(p, tf, len, avg);
        }
        sum / (self.pairs.len() as f64 * (p.k1 + 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn pairs_are_neighbours_in_query_order() {
        let p = Pairs::of(&s(&["vitamin", "d", "vitamin", "d", "defici"]));
        assert_eq!(p.terms, s(&["vitamin", "d", "defici"]));
        assert_eq!(p.pairs, [(0, 1), (1, 0), (0, 1), (1, 2)]);
        assert!(Pairs::of(&s(&["one"])).is_empty());
        assert!(Pairs::of(&s(&["a", "a"])).is_empty());
    }

    #[test]
    fn share_counts_adjacent_ordered_pairs_only() {
        let p = bm25::PARAMS;
        let q = Pairs::of(&s(&["insulin", "resist"]));
        let share = |text: &str| q.share(&q.sequence(text), &p, 3.0, 3.0);
        // One occurrence at mean length saturates to 1 of k1 + 1 = 2.
        assert_eq!(share("Insulin resistance rises"), 0.5);
        // Stop words between do not part them; other words do; order counts.
        assert_eq!(share("insulin and the resistance"), 0.5);
        assert_eq!(share("insulin rises; resistance"), 0.0);
        assert_eq!(share("resistant to insulin"), 0.0);
        // British starts are stemmed too.
        let q = Pairs::of(&s(&["estrogen", "receptor"]));
        assert_eq!(q.sequence("oestrogen receptors, IL-6"), [0, 1, OTHER, OTHER]);
        let q = Pairs::of(&s(&["celiac", "fetal", "pediatr"]));
        assert_eq!(q.sequence("Coeliac foetal paediatric"), [0, 1, 2]);
    }
}
