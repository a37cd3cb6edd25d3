//! A search query as kb-score sees it: its folded words (for topic and
//! keyword matching, seed 000's base tiers) and its BM25 terms. Empty,
//! wordless and oversized queries are usage errors, never panics.

use crate::error::{Error, Result};
use crate::text;

use super::terms;

/// The longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 4096;

/// A parsed query.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The query as typed.
    pub text: String,
    /// Its folded words in order (stop words kept: they are part of topics).
    pub words: Vec<String>,
    /// Distinct BM25 terms; stop words dropped unless nothing else is left;
    /// after them the letter and digit runs of words that mix both
    /// (kb::score::terms).
    pub terms: Vec<String>,
    /// How many times the query says each of [`Query::terms`].
    pub counts: Vec<u32>,
}

impl Query {
    /// Parses a query, rejecting empty, wordless and oversized ones.
    pub fn parse(text: &str) -> Result<Query> {
        if text.trim().is_empty() {
            return Err(Error::usage("empty query: give the words to search for"));
        }
        let n = text.chars().count();
        if n > MAX_QUERY_CHARS {
            return Err(Error::usage(format!("query is {n} characters long; at most {MAX_QUERY_CHARS} are searched")));
        }
        let words = text::tokens(text);
        if words.is_empty() {
            return Err(Error::usage(format!("query '{}' has no letters or digits to search for", text.trim())));
        }
        let content: Vec<&String> = words.iter().filter(|w| !terms::is_stop(w)).collect();
        let chosen: Vec<&String> = if content.is_empty() { words.iter().collect() } else { content };
        let mut out: Vec<String> = Vec::new();
        let mut counts: Vec<u32> = Vec::new();
        let runs = terms::runs(chosen.iter().map(|w| w.as_str()));
        for t in chosen.iter().map(|w| terms::stem(w)).chain(runs) {
            match out.iter().position(|x| *x == t) {
                Some(i) => counts[i] += 1,
                None => {
                    out.push(t);
                    counts.push(1);
                }
            }
        }
        Ok(Query { text: text.trim().to_string(), words, terms: out, counts })
    }

    /// The BM25 terms of the query's words in the order it says them,
    /// repeats kept and runs left out: what term proximity pairs
    /// (kb::score::proximity).
    pub fn stems(&self) -> Vec<String> {
        let content: Vec<&String> = self.words.iter().filter(|w| !terms::is_stop(w)).collect();
        let chosen: Vec<&String> = if content.is_empty() { self.words.iter().collect() } else { content };
        chosen.iter().map(|w| terms::stem(w)).collect()
    }

    /// The distinct words worth looking up in topic and keyword postings:
    /// non-stop words, or all words when the query has only stop words.
    pub fn lookup_words(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.words.iter().map(String::as_str).filter(|w| !terms::is_stop(w)).collect();
        if out.is_empty() {
            out = self.words.iter().map(String::as_str).collect();
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_queries_are_usage_errors() {
        assert!(Query::parse("   ").is_err());
        assert!(Query::parse("?!-- ...").is_err());
        assert!(Query::parse(&"x".repeat(MAX_QUERY_CHARS + 1)).is_err());
    }

    #[test]
    fn stop_word_queries_still_search() {
        let q = Query::parse("the of").unwrap();
        assert_eq!(q.terms, ["the", "of"]);
        let q = Query::parse("How does JWT auth work?").unwrap();
        assert_eq!(q.words, ["how", "does", "jwt", "auth", "work"]);
        assert_eq!(q.terms, ["jwt", "auth", "work"]);
        assert_eq!(q.lookup_words(), ["auth", "jwt", "work"]);
        let q = Query::parse("Does IL6 raise tumour growth?").unwrap();
        assert_eq!(q.terms, ["il6", "rais", "tumor", "growth", "il", "6"]);
        assert_eq!(q.stems(), ["il6", "rais", "tumor", "growth"]);
        assert_eq!(Query::parse("tumour growth, tumours").unwrap().stems(), ["tumor", "growth", "tumor"]);
    }
}
