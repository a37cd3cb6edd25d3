//! The words the full-text (BM25) tier indexes and searches: kb::text's
//! Unicode tokens, minus English stop words, with English words reduced
//! to their Porter stem (so "tokens" finds "token") after British
//! spellings are folded to American ("tumour" finds "tumor"); a word that
//! mixes letters and digits also gives its letter and digit runs ("IL6"
//! finds "IL-6"). CJK bigrams and other scripts pass through unchanged.

use std::cell::RefCell;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashMap;

use crate::text;

mod spelling;

/// English function words that carry no topic; dropped from BM25 terms
/// (not from topic or keyword matching) unless a query has nothing else.
pub const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can",
    "could", "did", "do", "does", "for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it",
    "its", "may", "more", "most", "no", "not", "of", "on", "or", "other", "our", "should", "so", "such", "than",
    "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "was", "we", "were",
    "what", "when", "where", "which", "while", "who", "why", "will", "with", "would", "you", "your",
];

/// Whether a folded token is a stop word.
pub fn is_stop(word: &str) -> bool {
    // No stop word is longer than six bytes: most words skip the search,
    // and the rest compare as one integer each, not byte strings (every
    // term of every document passes here).
    static KEYS: OnceLock<Vec<u64>> = OnceLock::new();
    let keys = KEYS.get_or_init(|| STOP_WORDS.iter().map(|w| stop_key(w.as_bytes())).collect());
    word.len() <= 6 && keys.binary_search(&stop_key(word.as_bytes())).is_ok()
}

/// A word of at most six bytes as an integer that sorts as the word does
/// (bytes big-endian, then zeros; a stop word has no zero byte).
fn stop_key(w: &[u8]) -> u64 {
    w.iter().take(8).enumerate().fold(0, |k, (i, &b)| k | u64::from(b) << (8 * (7 - i)))
}

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

thread_local! {
    static STEMS: RefCell<FxHashMap<String, String>> = RefCell::new(FxHashMap::default());
}

/// The BM25 term of one folded token: ASCII words are stemmed (memoised
/// per thread, since vocabularies are small and Zipfian), others kept.
pub fn stem(word: &str) -> String {
    if !word.bytes().all(|b| b.is_ascii_lowercase()) || word.len() < 3 {
        return word.to_string();
    }
    STEMS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(s) = cache.get(word) {
            return s.clone();
        }
        let s = stem_raw(word);
        if cache.len() < 200_000 {
            cache.insert(word.to_string(), s.clone());
        }
        s
    })
}

/// The stem of an ASCII lower-case word, its British spelling folded
/// to American first ([`spelling`]).
fn stem_raw(word: &str) -> String {
    stemmer().stem(&spelling::american(word)).into_owned()
}

/// Calls `f` with the letter runs and digit runs of a word that mixes
/// letters and digits ("apoe4" → "apoe", "4"; "hnf4a" → "hnf", "4"),
/// stop words left out: biomedical names are written "IL-6", "IL6" and
/// "IL 6", and gene names carry digits ("CDK5", "HIV-1"), so the runs
/// meet the other spellings. The whole word is a term of its own too,
/// which keeps an exact spelling the best match.
fn each_run(word: &str, mut f: impl FnMut(&str)) {
    let b = word.as_bytes();
    if b.len() < 2 || !b.iter().all(u8::is_ascii_alphanumeric) {
        return;
    }
    if !b.windows(2).any(|p| p[0].is_ascii_digit() != p[1].is_ascii_digit()) {
        return;
    }
    let mut start = 0;
    for i in 1..=b.len() {
        if i == b.len() || b[i].is_ascii_digit() != b[i - 1].is_ascii_digit() {
            let part = &word[start..i];
            if !is_stop(part) {
                f(part);
            }
            start = i;
        }
    }
}

/// The BM25 terms of a document text, in order, stop words removed.
pub fn analyse(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    each_term(text, |t| out.push(t.to_string()));
    out
}

/// Calls `f` with each BM25 term of a text (what [`analyse`] returns),
/// without allocating per term once a word's stem is memoised. A word
/// that mixes letters and digits is followed by its runs ([`each_run`]),
/// which count in the document's length like any term (on SciFact train
/// that gave the better recall).
pub fn each_term(text: &str, mut f: impl FnMut(&str)) {
    STEMS.with(|cache| {
        let mut cache = cache.borrow_mut();
        let mut one = |w: &str, f: &mut dyn FnMut(&str)| {
            if w.len() < 3 || !w.bytes().all(|b| b.is_ascii_lowercase()) {
                return f(w);
            }
            if let Some(s) = cache.get(w) {
                return f(s);
            }
            let s = stem_raw(w);
            f(&s);
            if cache.len() < 200_000 {
                cache.insert(w.to_string(), s);
            }
        };
        text::each_token(text, |w| {
            if is_stop(w) {
                return;
            }
            one(w, &mut f);
            each_run(w, |part| one(part, &mut f));
        })
    })
}

/// The runs of the query words that mix letters and digits, as terms
/// (kb::score::query adds them to a query's terms, as [`each_term`]
/// adds them to a document's).
pub fn runs<'a>(words: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out = Vec::new();
    for w in words {
        each_run(w, |part| out.push(stem(part)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(STOP_WORDS.windows(2).all(|w| stop_key(w[0].as_bytes()) < stop_key(w[1].as_bytes())));
        assert!(STOP_WORDS.iter().all(|w| w.len() <= 6 && is_stop(w)));
        for w in ["", "x", "abo", "abouts", "thes", "thesee", "yours", "zz"] {
            assert!(!is_stop(w), "{w:?}");
        }
    }

    #[test]
    fn analysis() {
        assert_eq!(analyse("The tokens of JWT authentication"), ["token", "jwt", "authent"]);
        assert_eq!(analyse("知识库"), ["知识", "识库"]);
        // Mixed letters and digits: the word, then its runs (stemmed).
        assert_eq!(analyse("APOE4 and IL-6 in HNF4A"), ["apoe4", "apo", "4", "il", "6", "hnf4a", "hnf", "4"]);
        // British spellings meet American ones.
        assert_eq!(analyse("tumours randomised"), analyse("tumors randomized"));
    }
}
