//! "Did you mean": for a query none of whose words the library holds,
//! each word's nearest word that it does hold (edit distance, as
//! kb::text::closest allows), so `platfromio` answers `platformio`.
//! One pass over the index's vocabulary, each word first checked by two
//! cheap bounds (length, letter counts) that no near word fails, and at
//! most [`WINDOW`] words of each kind per query word (those nearest it in
//! dictionary order), so a query that matches nothing costs about what
//! one that matches does, even over millions of generated words.

use super::index::{KEYWORD_PREFIX, TOPIC_PREFIX};
use super::query::Query;
use super::view::View;
use crate::text;
use crate::text::terms;

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

/// Dictionary terms each spelling range of a query word reads at most
/// (View::terms_around): the whole range in any library of fewer distinct
/// words, the nearest ones in dictionary order beyond.
const WINDOW: usize = 100_000;

/// The dictionary's ranges of keyword words, topic words and BM25 terms
/// (those sort after every prefixed word: they never start with a
/// control character).
const KEYWORD_RANGE: (&str, Option<&str>) = (KEYWORD_PREFIX, Some("\u{1}l"));
const TOPIC_RANGE: (&str, Option<&str>) = (TOPIC_PREFIX, Some("\u{1}u"));
const BM25_RANGE: (&str, Option<&str>) = ("\u{2}", None);

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
    for w in want.iter_mut() {
        // In dictionary order (keyword words, topic words, BM25 terms),
        // as a scan of the whole dictionary meets them: ties keep the first.
        let keyword = format!("{KEYWORD_PREFIX}{}", w.word);
        let topic = format!("{TOPIC_PREFIX}{}", w.word);
        let ranges = [(KEYWORD_RANGE, keyword.as_str()), (TOPIC_RANGE, topic.as_str())];
        for (range, around) in ranges {
            let written: Vec<&str> = v.terms_around(range, around, WINDOW).collect();
            for term in written {
                let x = &term[range.0.len()..];
                if may_be_near(x, &w.counts, w.word.len(), w.max) {
                    offer(w, x, w.word, false);
                }
            }
        }
        let stem = w.stem.clone();
        let terms: Vec<&str> = v.terms_around(BM25_RANGE, &stem, WINDOW).collect();
        for term in terms {
            if may_be_near(term, &w.stem_counts, w.stem.len(), w.max) {
                offer(w, term, &stem, true);
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
