//! The words the full-text (BM25) tier indexes and searches: kb::text's
//! Unicode tokens, minus English stop words, with English words reduced
//! to their Porter stem (so "tokens" finds "token"). CJK bigrams and
//! other scripts pass through unchanged.

use std::cell::RefCell;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashMap;

use crate::text;

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
    // No stop word is longer than six bytes: most words skip the search.
    word.len() <= 6 && STOP_WORDS.binary_search(&word).is_ok()
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
        let s = stemmer().stem(word).into_owned();
        if cache.len() < 200_000 {
            cache.insert(word.to_string(), s.clone());
        }
        s
    })
}

/// The BM25 terms of a document text, in order, stop words removed.
pub fn analyse(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    each_term(text, |t| out.push(t.to_string()));
    out
}

/// Calls `f` with each BM25 term of a text (what [`analyse`] returns),
/// without allocating per term once a word's stem is memoised.
pub fn each_term(text: &str, mut f: impl FnMut(&str)) {
    STEMS.with(|cache| {
        let mut cache = cache.borrow_mut();
        text::each_token(text, |w| {
            if is_stop(w) {
                return;
            }
            if w.len() < 3 || !w.bytes().all(|b| b.is_ascii_lowercase()) {
                return f(w);
            }
            if let Some(s) = cache.get(w) {
                return f(s);
            }
            let s = stemmer().stem(w).into_owned();
            f(&s);
            if cache.len() < 200_000 {
                cache.insert(w.to_string(), s);
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(STOP_WORDS.iter().all(|w| w.len() <= 6));
    }

    #[test]
    fn analysis() {
        assert_eq!(analyse("The tokens of JWT authentication"), ["token", "jwt", "authent"]);
        assert_eq!(analyse("知识库"), ["知识", "识库"]);
    }
}
