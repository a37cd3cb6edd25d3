//! Pseudo-relevance feedback (RM3, Lavrenko & Croft 2001; Abdul-Jaleel
//! et al. 2004), kept gentle: the few best text matches of the first pass
//! lend the query the words they use most, at a tenth of the query's
//! weight, and the text evidence is scored again with them. A claim that
//! says "statins" finds the abstract that says "simvastatin" and
//! "cholesterol" through the abstracts that say all three. On SciFact
//! train (bench/rank_tune.rs) this lifted Recall@100 by 0.006 and nDCG@10
//! by 0.003; heavier feedback (a fifth of the weight or more) lifted
//! recall further but cost nDCG@10, the usual trade-off on collections
//! with one or two relevant documents per query.
//!
//! Feedback only reorders the documents the query itself matched: a
//! document that holds none of the query's words is never a hit (on
//! SciFact train, letting expansion-only documents in changed nothing).
//!
//! The index holds no per-document term lists, so the feedback documents
//! are read and analysed at query time: three small reads.

use std::collections::HashMap;

use super::bm25;

/// How much feedback a query gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Feedback {
    /// Share of the expanded query's weight the original terms keep
    /// (1: no feedback).
    pub mix: f64,
    /// Feedback documents: the best first-pass text matches.
    pub docs: usize,
    /// Expansion terms taken from them.
    pub terms: usize,
}

/// The feedback kb-score ranks with (tuned on SciFact train; docs/design/ranking.md).
pub const FEEDBACK: Feedback = Feedback { mix: 0.9, docs: 3, terms: 10 };

impl Feedback {
    /// This feedback with the knobs of a tuning spec (bm25::TUNE_ENV)
    /// replaced: `prf` (mix), `fbd`, `fbt`.
    pub fn tuned(self, spec: &str) -> Feedback {
        let k = |key: &str, d: f64| bm25::knob(spec, key).unwrap_or(d);
        Feedback {
            mix: k("prf", self.mix),
            docs: k("fbd", self.docs as f64) as usize,
            terms: k("fbt", self.terms as f64) as usize,
        }
    }

    /// Whether this feedback changes anything.
    pub fn active(&self) -> bool {
        self.mix < 1.0 && self.docs > 0 && self.terms > 0
    }
}

/// The expanded query: the original `terms` with their weights `qw`
/// scaled to sum to `mix`, plus the `fb.terms` words with the highest
/// relevance-model weight over the feedback documents
/// (`Σ_d score(d)/Σscore × tf(t, d)/|d|`), scaled to sum to `1 − mix`.
/// `docs` are the feedback documents' terms with their first-pass scores.
pub fn expand(terms: &[String], qw: &[f64], docs: &[(Vec<String>, f64)], fb: &Feedback) -> (Vec<String>, Vec<f64>) {
    let qz: f64 = qw.iter().sum();
    let mut out: Vec<String> = terms.to_vec();
    let mut w: Vec<f64> = qw.iter().map(|x| if qz > 0.0 { fb.mix * x / qz } else { 0.0 }).collect();
    let z: f64 = docs.iter().map(|(_, s)| s).sum();
    if z <= 0.0 {
        return (out, w);
    }
    let mut model: HashMap<&str, f64> = HashMap::new();
    for (toks, s) in docs {
        if toks.is_empty() {
            continue;
        }
        let each = s / z / toks.len() as f64;
        for t in toks {
            *model.entry(t.as_str()).or_default() += each;
        }
    }
    let mut best: Vec<(&str, f64)> = model.into_iter().collect();
    // Heaviest first; equal weights in term order, so a query always
    // expands the same way.
    best.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    best.truncate(fb.terms);
    let ez: f64 = best.iter().map(|x| x.1).sum();
    for (t, x) in best {
        let add = (1.0 - fb.mix) * x / ez;
        match out.iter().position(|y| y == t) {
            Some(i) => w[i] += add,
            None => {
                out.push(t.to_string());
                w.push(add);
            }
        }
    }
    (out, w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn expansion_keeps_the_query_heaviest_and_is_deterministic() {
        let fb = Feedback { mix: 0.9, docs: 2, terms: 2 };
        let docs = vec![(s(&["statin", "cholesterol", "statin", "ldl"]), 3.0), (s(&["statin", "ldl"]), 1.0)];
        let (t, w) = expand(&s(&["statin"]), &[1.0], &docs, &fb);
        // statin: 3/4·2/4 + 1/4·1/2 = 0.5; ldl: 3/4·1/4 + 1/4·1/2 = 0.3125;
        // cholesterol 0.1875 is third and left out.
        assert_eq!(t, s(&["statin", "ldl"]));
        let r = |x: f64| (x * 1e4).round() / 1e4;
        assert_eq!((r(w[0]), r(w[1])), (r(0.9 + 0.1 * 0.5 / 0.8125), r(0.1 * 0.3125 / 0.8125)));
        assert_eq!(expand(&s(&["a"]), &[1.0], &[], &fb), (s(&["a"]), vec![0.9]));
    }
}
