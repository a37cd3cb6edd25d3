//! "Did you mean": for a query none of whose words the library holds,
//! each word's nearest word that it does hold (edit distance, as
//! kb::text::closest allows), so `platfromio` answers `platformio`.
//! One pass over the index's vocabulary, each word first checked by two
//! cheap bounds (length, letter counts) that no near word fails, so a
//! query that matches nothing costs about what one that matches does.

use super::index::{KEYWORD_PREFIX, TOPIC_PREFIX};
use super::query::Query;
use super::terms;
use super::view::View;
use crate::text;

/// A word the library holds, near a query word.
#[derive(Debug, Clone, PartialEq)]
pub struct Near {
    /// Edit distance.
    pub distance: usize,
    /// The word as written (a topic or keyword word), or the BM25 term
    /// whose written form [`View`] does not keep.
    pub word: String,
    /// Whether `word` is a BM25 term (a stem) rather than a written word.
    pub stem: bool,
}

/// A query word's letters counted in 64 buckets: half the L1 difference
/// of two words' counts is at most their edit distance.
fn counts(w: &str) -> [i16; 64] {
    let mut c = [0i16; 64];
    for b in w.bytes() {
        c[usize::from(b & 63)] += 1;
    }
    c
}

/// Whether `cand` can be within `max` edits of the word counted in `want`
/// (`len` bytes long): first its length, then how many of its bytes the
/// word lacks altogether (each is an edit), then the counts.
fn may_be_near(cand: &str, want: &[i16; 64], len: usize, max: usize) -> bool {
    if cand.len().abs_diff(len) > max {
        return false;
    }
    if cand.bytes().filter(|&b| want[usize::from(b & 63)] == 0).count() > max {
        return false;
    }
    let mut c = *want;
    for b in cand.bytes() {
        c[usize::from(b & 63)] -= 1;
    }
    c.iter().map(|x| x.unsigned_abs() as usize).sum::<usize>() <= 2 * max
}

/// Per word of the query (its non-stop words), the nearest word `v`
/// holds; None when the query has a prefix or a word `v` already holds.
pub fn nearest(v: &View, q: &Query) -> Option<Vec<(String, Option<Near>)>> {
    let words = q.lookup_words();
    if !q.prefixes.is_empty() || words.iter().any(|w| known(v, w)) {
        return None;
    }
    struct Want<'w> {
        word: &'w str,
        stem: String,
        counts: [i16; 64],
        stem_counts: [i16; 64],
        max: usize,
        best: Option<Near>,
    }
    let mut want: Vec<Want> = words
        .iter()
        .map(|w| {
            let stem = terms::stem(w);
            let stem_counts = counts(&stem);
            Want { word: w, counts: counts(w), stem_counts, stem, max: 2.max(w.chars().count() / 3), best: None }
        })
        .collect();
    let offer = |w: &mut Want, cand: &str, against: &str, stem: bool| {
        let d = text::distance(against, cand);
        let better = w.best.as_ref().is_none_or(|b| (d, stem) < (b.distance, b.stem));
        if d <= w.max && better {
            w.best = Some(Near { distance: d, word: cand.to_string(), stem });
        }
    };
    for term in v.terms_with_prefix("") {
        let written = term.strip_prefix(TOPIC_PREFIX).or_else(|| term.strip_prefix(KEYWORD_PREFIX));
        for w in want.iter_mut() {
            match written {
                Some(x) => {
                    if may_be_near(x, &w.counts, w.word.len(), w.max) {
                        offer(w, x, w.word, false);
                    }
                }
                None if term.starts_with('\u{1}') => {}
                None => {
                    if may_be_near(term, &w.stem_counts, w.stem.len(), w.max) {
                        let against = w.stem.clone();
                        offer(w, term, &against, true);
                    }
                }
            }
        }
    }
    Some(want.into_iter().map(|w| (w.word.to_string(), w.best)).collect())
}

/// Whether the library holds a word: as a BM25 term, a topic or a keyword word.
fn known(v: &View, w: &str) -> bool {
    v.find(&terms::stem(w)).is_some()
        || v.find(&format!("{TOPIC_PREFIX}{w}")).is_some()
        || v.find(&format!("{KEYWORD_PREFIX}{w}")).is_some()
}

/// The written form of a BM25 term: the first word of a document holding
/// it whose stem it is (`doc_text` reads a document).
pub fn written(v: &View, term: &str, doc_text: impl Fn(u32) -> Option<String>) -> Option<String> {
    let (d, _) = v.postings(term).into_iter().next()?;
    text::tokens(&doc_text(d)?).into_iter().find(|t| terms::stem(t) == term)
}
