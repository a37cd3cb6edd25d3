//! Seed 001's out-of-scope answer: when no document passes, search says
//! so and names the closest entries ("The library has no evidence on
//! this. The closest entries are …"). Closest means, in this order: the
//! documents that did match at some tier (topic, keyword or text) but
//! were dropped by the filters; then, when nothing matched at any tier,
//! the documents whose topic and keyword words are spelled most like the
//! query's (character trigrams), so a typo or a near word still points
//! somewhere. Only this path pays for the trigram pass: a query with hits
//! never comes here.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::out::round4;

use super::formula::Match;

use super::index::{View, KEYWORD_PREFIX, TOPIC_PREFIX};
use super::query::Query;
use super::rank::{self, Filters};

/// How many closest entries the answer names.
pub const NEAREST: usize = 3;

/// A query word counts as spelled like a document word only from this
/// trigram overlap on (a typo or another inflection is well above it; one
/// shared ending such as `en$` is below it).
pub const MIN_WORD_OVERLAP: f64 = 0.3;

/// The seed's sentence, before the list of entries.
pub const NO_EVIDENCE: &str = "The library has no evidence on this.";

/// The seed's recommendation, after it.
pub const OUT_OF_SCOPE: &str = "Recommendation: this query is out of scope for the project knowledge base.";

/// How close an entry came.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Near {
    /// It matched at a seed tier, but a filter left it out.
    Filtered,
    /// Only its topic or keyword words are spelled like the query's.
    Spelling,
}

/// One closest entry (`closest[]` in `schemas/summary.schema.json`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Closest {
    /// The library it comes from.
    pub source: String,
    /// Library-relative path.
    pub path: String,
    /// Topic.
    pub topic: String,
    /// Why it is close.
    pub near: Near,
    /// The tier it matched at (`filtered` entries only).
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    pub matched: Option<Match>,
    /// In [0, 1]: its final score when it matched at a tier, else the
    /// mean over the query's words of the best trigram overlap (Dice),
    /// counting only overlaps of at least [`MIN_WORD_OVERLAP`].
    pub closeness: f64,
    /// Its document id in its source's index (to check it is current).
    #[serde(skip)]
    pub doc: u32,
    #[serde(skip)]
    order: usize,
}

/// The closest entries of one library, at most [`NEAREST`], best first;
/// `order` is the source's position (for the cross-source merge).
pub fn closest(v: &View, q: &Query, now: i64, filters: &Filters, source: &str, order: usize) -> Vec<Closest> {
    let mk = |d: u32, near, matched, closeness: f64| Closest {
        source: source.to_string(),
        path: v.path(d).to_string(),
        topic: v.meta(d).topic,
        near,
        matched,
        closeness: round4(closeness),
        doc: d,
        order,
    };
    if !filters.is_empty() {
        // Closeness needs no feedback reordering: no document text is read.
        let (unfiltered, _) =
            rank::direct(v, q, now, &Filters::default(), NEAREST, &|_| None, None, &rank::Tuning::current());
        if !unfiltered.is_empty() {
            return unfiltered.iter().map(|s| mk(s.doc, Near::Filtered, Some(s.kind), s.score)).collect();
        }
    }
    let want: Vec<Vec<u64>> = q.lookup_words().iter().map(|w| trigrams(w)).collect();
    if want.is_empty() {
        return Vec::new();
    }
    // Over the distinct topic and keyword words, not over every document's:
    // a word shared by many documents (or a document with a huge keyword
    // list) is compared once, and only the near words' postings are read.
    let mut best: HashMap<u32, Vec<f64>> = HashMap::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for prefix in [TOPIC_PREFIX, KEYWORD_PREFIX] {
        for term in v.terms_with_prefix(prefix) {
            let word = &term[prefix.len()..];
            if !seen.insert(word) {
                continue;
            }
            if !want.iter().any(|q| shares_trigram(q, word)) {
                continue;
            }
            let have = trigrams(word);
            let overlaps: Vec<f64> = want.iter().map(|q| dice(q, &have)).collect();
            if overlaps.iter().all(|&o| o < MIN_WORD_OVERLAP) {
                continue;
            }
            for key in [TOPIC_PREFIX, KEYWORD_PREFIX] {
                for (d, _) in v.postings(&format!("{key}{word}")) {
                    let b = best.entry(d).or_insert_with(|| vec![0.0; want.len()]);
                    for (x, &o) in b.iter_mut().zip(&overlaps) {
                        if o >= MIN_WORD_OVERLAP && o > *x {
                            *x = o;
                        }
                    }
                }
            }
        }
    }
    let mut scored: Vec<(f64, u32)> =
        best.into_iter().map(|(d, b)| (b.iter().sum::<f64>() / want.len() as f64, d)).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(NEAREST).map(|(c, d)| mk(d, Near::Spelling, None, c)).collect()
}

/// Merges the sources' closest entries: filtered matches before spelling
/// neighbours, then closeness, source order, path.
pub fn merge(mut all: Vec<Closest>) -> Vec<Closest> {
    all.sort_by(|a, b| {
        a.near
            .cmp(&b.near)
            .then(b.closeness.total_cmp(&a.closeness))
            .then(a.order.cmp(&b.order))
            .then_with(|| a.path.cmp(&b.path))
    });
    all.truncate(NEAREST);
    all
}

/// The seed's answer: "The library has no evidence on this. The closest
/// entries are … Recommendation: …".
pub fn answer(closest: &[Closest]) -> String {
    if closest.is_empty() {
        return format!("{NO_EVIDENCE} No entry comes close. {OUT_OF_SCOPE}");
    }
    let names: Vec<String> = closest
        .iter()
        .map(|c| {
            let at =
                if c.source == super::sources::LOCAL { c.path.clone() } else { format!("{}:{}", c.source, c.path) };
            format!("{} ({at})", c.topic)
        })
        .collect();
    format!("{NO_EVIDENCE} The closest entries are {}. {OUT_OF_SCOPE}", names.join(", "))
}

/// The padded character trigrams of a folded word (`^ab`, `abc`, `bc$`),
/// each packed into an integer (21 bits a character), sorted and distinct.
fn trigrams(w: &str) -> Vec<u64> {
    let chars: Vec<u64> = std::iter::once('^').chain(w.chars()).chain(std::iter::once('$')).map(u64::from).collect();
    let mut out: Vec<u64> = chars.windows(3).map(|t| t[0] << 42 | t[1] << 21 | t[2]).collect();
    if out.is_empty() {
        out.push(chars.iter().fold(0, |k, &c| k << 21 | c));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether a word has one of the sorted trigrams `want` (no allocation:
/// most of a vocabulary shares none with a query word, and is passed
/// over at this cost).
fn shares_trigram(want: &[u64], w: &str) -> bool {
    let (mut a, mut b) = (0u64, u64::from('^'));
    let mut first = true;
    for c in w.chars().map(u64::from).chain(std::iter::once(u64::from('$'))) {
        if !first && want.binary_search(&(a << 42 | b << 21 | c)).is_ok() {
            return true;
        }
        (a, b, first) = (b, c, false);
    }
    // The empty word has the one packed gram [`trigrams`] makes.
    w.is_empty() && trigrams(w).iter().any(|t| want.binary_search(t).is_ok())
}

/// Dice overlap of two sorted, distinct trigram sets.
fn dice(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut both) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                both += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * both as f64 / (a.len() + b.len()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dice_of_a_typo_is_high_and_of_strangers_zero() {
        assert!(dice(&trigrams("authentication"), &trigrams("authentcation")) > 0.7);
        assert_eq!(dice(&trigrams("swallow"), &trigrams("jwt")), 0.0);
        assert_eq!(dice(&trigrams("a"), &trigrams("a")), 1.0);
    }

    #[test]
    fn answer_uses_the_seed_wording() {
        assert_eq!(
            answer(&[]),
            "The library has no evidence on this. No entry comes close. Recommendation: this query is out of scope \
             for the project knowledge base."
        );
    }
}
