//! A search query as kb-score sees it, parsed from what a person types:
//! free words, `"exact phrase"` (its words adjacent and in order),
//! `-word` / `-"phrase"` / `-field:value` to exclude, `prefix*`, and
//! `field:value` for topic, type, keyword and path. Its words go through
//! the one lexical pipeline (kb::text tokens, kb::text::terms stems).
//! Empty, wordless, oversized and malformed queries are usage errors with
//! a sentence saying what to type instead, never panics.

use crate::error::{Error, Result};
use crate::text;

use crate::text::terms;

/// The longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 4096;

/// The shortest prefix `prefix*` accepts, in characters (one letter
/// would expand to a good part of the vocabulary).
pub const MIN_PREFIX_CHARS: usize = 2;

/// The fields `field:value` may name.
pub const FIELDS: &[&str] = &["topic", "type", "keyword", "path"];

/// A `field:value` clause.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    /// The topic holds the value's words in a row.
    Topic(Vec<String>),
    /// The type is one of the value's `|`-separated names (as `--type`).
    Type(Vec<String>),
    /// A keyword holds the value's words in a row.
    Keyword(Vec<String>),
    /// The path holds the value (case-insensitive).
    Path(String),
}

/// A clause a document must hold (or, under `-`, must not).
#[derive(Debug, Clone, PartialEq)]
pub enum Clause {
    /// One folded word, matched by its stem, topic or keyword word.
    Word(String),
    /// Folded words adjacent and in order (two or more).
    Phrase(Vec<String>),
    /// A folded prefix of a word.
    Prefix(String),
    /// A field clause.
    Field(Field),
}

/// A parsed query.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The query as typed.
    pub text: String,
    /// Its folded words in order (stop words kept: they are part of
    /// topics): the free words, the phrases' words and the words of
    /// `topic:` and `keyword:` values.
    pub words: Vec<String>,
    /// Distinct BM25 terms; stop words dropped unless nothing else is left;
    /// after them the letter and digit runs of words that mix both
    /// (kb::text::terms).
    pub terms: Vec<String>,
    /// How many times the query says each of [`Query::terms`].
    pub counts: Vec<u32>,
    /// What every hit must hold: phrases and fields.
    pub required: Vec<Clause>,
    /// What no hit may hold.
    pub excluded: Vec<Clause>,
    /// The prefixes of `prefix*`, folded.
    pub prefixes: Vec<String>,
}

/// One lexical piece of a query: a clause, and whether `-` negates it.
struct Piece {
    negated: bool,
    clause: Clause,
}

impl Query {
    /// Parses a query, rejecting empty, wordless, oversized and malformed
    /// ones.
    pub fn parse(text: &str) -> Result<Query> {
        if text.trim().is_empty() {
            return Err(Error::usage("empty query: give the words to search for"));
        }
        let n = text.chars().count();
        if n > MAX_QUERY_CHARS {
            return Err(Error::usage(format!("query is {n} characters long; at most {MAX_QUERY_CHARS} are searched")));
        }
        let mut words = Vec::new();
        let (mut required, mut excluded, mut prefixes) = (Vec::new(), Vec::new(), Vec::new());
        for p in pieces(text)? {
            if p.negated {
                excluded.push(p.clause);
                continue;
            }
            match p.clause {
                Clause::Word(w) => words.push(w),
                Clause::Phrase(ws) => {
                    words.extend(ws.iter().cloned());
                    required.push(Clause::Phrase(ws));
                }
                Clause::Prefix(w) => prefixes.push(w),
                Clause::Field(f) => {
                    if let Field::Topic(ws) | Field::Keyword(ws) = &f {
                        words.extend(ws.iter().cloned());
                    }
                    required.push(Clause::Field(f));
                }
            }
        }
        if words.is_empty() && prefixes.is_empty() {
            let why = if !excluded.is_empty() {
                "only excludes; give a word to search for besides the -words"
            } else if !required.is_empty() {
                "only filters by type: or path:; give a word to search for as well"
            } else {
                "has no letters or digits to search for"
            };
            return Err(Error::usage(format!("query '{}' {why}", text.trim())));
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
        Ok(Query { text: text.trim().to_string(), words, terms: out, counts, required, excluded, prefixes })
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

    /// Whether the query has clauses beyond free words (phrases,
    /// exclusions, fields) that a document must be checked against.
    pub fn constrains(&self) -> bool {
        !self.required.is_empty() || !self.excluded.is_empty()
    }
}

/// Whether `c` opens or closes a phrase (straight or curly quotes).
fn is_quote(c: char) -> bool {
    matches!(c, '"' | '\u{201c}' | '\u{201d}')
}

/// Splits a query into its pieces: `-` before a letter or a quote
/// negates what follows (so "-2" and a lone "-" stay plain text), a
/// quote runs to the next quote, a bare word runs to the next space or
/// quote.
fn pieces(text: &str) -> Result<Vec<Piece>> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_whitespace() {
            i += 1;
            continue;
        }
        let negated = chars[i] == '-' && chars.get(i + 1).is_some_and(|&c| c.is_alphabetic() || is_quote(c));
        let start = if negated { i + 1 } else { i };
        let (clause, next) = if is_quote(chars[start]) {
            let (inner, next) = quoted(&chars, start)?;
            i = next;
            if let Some(clause) = phrase(&inner) {
                out.push(Piece { negated, clause });
            }
            continue;
        } else {
            let mut end = start;
            while end < chars.len() && !chars[end].is_whitespace() && !is_quote(chars[end]) {
                end += 1;
            }
            let word: String = chars[start..end].iter().collect();
            match field_name(&word) {
                Some(name) => {
                    let value_at = start + name.chars().count() + 1;
                    let (value, next) = if chars.get(value_at).copied().is_some_and(is_quote) {
                        quoted(&chars, value_at)?
                    } else {
                        (chars[value_at..end].iter().collect(), end)
                    };
                    (Some(field(name, &value, &word)?), next)
                }
                None => (bare(&word)?, end),
            }
        };
        i = next;
        match clause {
            // A bare word of several tokens ("IL-6", "热点键过期") gives
            // its tokens as words; negated, it stays one phrase.
            Some(Clause::Phrase(ws)) if !negated => {
                out.extend(ws.into_iter().map(|w| Piece { negated, clause: Clause::Word(w) }))
            }
            Some(clause) => out.push(Piece { negated, clause }),
            None => {}
        }
    }
    Ok(out)
}

/// The text between the quote at `open` and the next quote, and the
/// position after it; an unbalanced quote is an error.
fn quoted(chars: &[char], open: usize) -> Result<(String, usize)> {
    let close = chars[open + 1..].iter().position(|&c| is_quote(c)).map(|k| open + 1 + k);
    let Some(close) = close else {
        let rest: String = chars[open..].iter().take(30).collect();
        return Err(Error::usage(format!(
            "unbalanced quote at '{rest}': close the phrase with a second \" (or drop the quote)"
        )));
    };
    Ok((chars[open + 1..close].iter().collect(), close + 1))
}

/// A phrase's clause: its folded words (one word is a plain word; none
/// is nothing).
fn phrase(inner: &str) -> Option<Clause> {
    let ws = text::tokens(inner);
    match ws.len() {
        0 => None,
        1 => Some(Clause::Word(ws[0].clone())),
        _ => Some(Clause::Phrase(ws)),
    }
}

/// The field a bare word names before its first `:` (ASCII letters only,
/// so "10:30" and a lone ":" stay text), lower-cased.
fn field_name(word: &str) -> Option<&str> {
    let (name, _) = word.split_once(':')?;
    (!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphabetic())).then_some(name)
}

/// A `field:value` clause; an unknown field or an empty value is an error.
fn field(name: &str, value: &str, typed: &str) -> Result<Clause> {
    let lower = name.to_ascii_lowercase();
    let value = value.trim();
    if !FIELDS.contains(&lower.as_str()) {
        return Err(Error::usage(format!(
            "unknown field '{name}' in '{typed}': the fields are {}; to search for the text itself, quote it \
             (\"{typed}\")",
            FIELDS.join(", ")
        )));
    }
    if value.is_empty() {
        return Err(Error::usage(format!("field '{lower}:' has no value: write {lower}:VALUE")));
    }
    let words = text::tokens(value);
    let f = match lower.as_str() {
        "type" => Field::Type(value.split('|').map(|s| s.trim().to_lowercase()).filter(|s| !s.is_empty()).collect()),
        "path" => Field::Path(value.to_lowercase()),
        _ if words.is_empty() => {
            return Err(Error::usage(format!("field '{lower}:{value}' has no letters or digits to match")))
        }
        "topic" => Field::Topic(words),
        _ => Field::Keyword(words),
    };
    Ok(Clause::Field(f))
}

/// A bare word: `prefix*`, or its tokens as a phrase (one token is a
/// word, several a phrase that [`pieces`] splits into words when it is
/// not negated).
fn bare(word: &str) -> Result<Option<Clause>> {
    let Some(stripped) = word.strip_suffix('*') else { return Ok(phrase(word)) };
    let mut ws = text::tokens(stripped);
    let Some(last) = ws.pop() else {
        return Err(Error::usage(format!("'{word}': a '*' ends a prefix, as in pool*")));
    };
    if last.chars().count() < MIN_PREFIX_CHARS {
        return Err(Error::usage(format!(
            "prefix '{word}' is too short: give at least {MIN_PREFIX_CHARS} characters before '*'"
        )));
    }
    if !ws.is_empty() {
        return Err(Error::usage(format!("'{word}': a prefix is one word, as in pool*")));
    }
    Ok(Some(Clause::Prefix(last)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_queries_are_usage_errors() {
        assert!(Query::parse("   ").is_err());
        assert!(Query::parse("?!-- ...").is_err());
        assert!(Query::parse(&"x".repeat(MAX_QUERY_CHARS + 1)).is_err());
        for bad in ["\"open", "-pgbouncer", "topic:", "colour:red", "a*", "*", "type:x", "x \"a b"] {
            assert!(Query::parse(bad).is_err(), "{bad}");
        }
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

    #[test]
    fn syntax_pieces() {
        let q =
            Query::parse("\"Connection Pooling\" -pgbouncer -\"read replica\" pool* topic:db type:howto|ref").unwrap();
        assert_eq!(q.words, ["connection", "pooling", "db"]);
        assert_eq!(q.prefixes, ["pool"]);
        assert_eq!(
            q.excluded,
            [Clause::Word("pgbouncer".into()), Clause::Phrase(vec!["read".into(), "replica".into()])]
        );
        assert_eq!(
            q.required,
            [
                Clause::Phrase(vec!["connection".into(), "pooling".into()]),
                Clause::Field(Field::Topic(vec!["db".into()])),
                Clause::Field(Field::Type(vec!["howto".into(), "ref".into()])),
            ]
        );
        // Plain text stays plain: a negative number, a lone dash, a time,
        // a hyphenated word.
        let q = Query::parse("E2f-1, -2 - 10:30 IL-6").unwrap();
        assert_eq!(q.words, ["e2f", "1", "2", "10", "30", "il", "6"]);
        assert!(!q.constrains());
    }
}
