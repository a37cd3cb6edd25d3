//! Which documents a query's clauses admit (kb::score::query): every hit
//! holds each `"phrase"` and `field:value` and none of the `-` clauses;
//! and which dictionary terms a `prefix*` stands for. The index keeps no
//! word positions, so a phrase is checked in the document's text — only
//! for documents whose postings hold every word of it, so the text is read
//! for few documents, never for the library.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use super::formula::contains_run;
use super::index::{KEYWORD_PREFIX, TOPIC_PREFIX};
use super::query::{Clause, Field, Query};
use super::rank::{DocText, Filters};
use super::view::View;
use crate::text;
use crate::text::terms;

/// The most dictionary terms one `prefix*` expands to (those in the most
/// documents are kept).
pub const MAX_EXPANSIONS: usize = 32;

/// The clauses of one query over one index, with what they cost to
/// check computed once.
pub struct Select<'a> {
    v: &'a View<'a>,
    q: &'a Query,
    /// Per clause (required, then excluded): the documents whose postings
    /// can hold it (None: any document may).
    cands: Vec<Option<HashSet<u32>>>,
    seen: RefCell<HashMap<u32, bool>>,
}

impl<'a> Select<'a> {
    /// Prepares the checks of `q`'s clauses over `v`.
    pub fn new(v: &'a View<'a>, q: &'a Query) -> Select<'a> {
        let cands = q.required.iter().chain(&q.excluded).map(|c| candidates(v, c)).collect();
        Select { v, q, cands, seen: RefCell::default() }
    }

    /// Whether document `d` holds every required clause and no excluded
    /// one (`doc_text` gives its title and body for phrases).
    pub fn admits(&self, d: u32, doc_text: DocText) -> bool {
        if !self.q.constrains() {
            return true;
        }
        if let Some(&ok) = self.seen.borrow().get(&d) {
            return ok;
        }
        let n = self.q.required.len();
        let holds =
            |i: usize, c: &Clause| self.cands[i].as_ref().is_none_or(|s| s.contains(&d)) && self.holds(d, c, doc_text);
        let ok = self.q.required.iter().enumerate().all(|(i, c)| holds(i, c))
            && !self.q.excluded.iter().enumerate().any(|(i, c)| holds(n + i, c));
        self.seen.borrow_mut().insert(d, ok);
        ok
    }

    /// Whether document `d` holds a clause, its postings permitting.
    fn holds(&self, d: u32, c: &Clause, doc_text: DocText) -> bool {
        let v = self.v;
        match c {
            // The postings decided these.
            Clause::Word(_) | Clause::Prefix(_) => true,
            Clause::Phrase(ws) => {
                let w = v.words(d);
                let run = |hay: &[&str]| contains_run(hay, &ws.iter().map(String::as_str).collect::<Vec<_>>());
                run(&w.topic)
                    || w.keywords.iter().any(|k| run(k))
                    || doc_text(d).is_some_and(|t| contains_run(&text::tokens(&t), ws))
            }
            Clause::Field(Field::Topic(ws)) => Filters { topic: ws.clone(), ..Filters::default() }.pass(&v.meta(d)),
            Clause::Field(Field::Type(ts)) => Filters { types: ts.clone(), ..Filters::default() }.pass(&v.meta(d)),
            Clause::Field(Field::Keyword(ws)) => {
                let ws: Vec<&str> = ws.iter().map(String::as_str).collect();
                v.words(d).keywords.iter().any(|k| contains_run(k, &ws))
            }
            Clause::Field(Field::Path(p)) => v.path(d).to_lowercase().contains(p.as_str()),
        }
    }
}

/// The documents holding a word anywhere the index sees it: its BM25
/// term (title, keywords, body), a topic word or a keyword word.
fn holding(v: &View, word: &str) -> HashSet<u32> {
    let mut out: HashSet<u32> = v.postings(&terms::stem(word)).into_iter().map(|(d, _)| d).collect();
    for key in [format!("{TOPIC_PREFIX}{word}"), format!("{KEYWORD_PREFIX}{word}")] {
        out.extend(v.postings(&key).into_iter().map(|(d, _)| d));
    }
    out
}

/// The documents that can hold a clause, from postings alone.
fn candidates(v: &View, c: &Clause) -> Option<HashSet<u32>> {
    match c {
        Clause::Word(w) => Some(holding(v, w)),
        Clause::Prefix(p) => Some(expand(v, p).iter().flat_map(|t| v.postings(t)).map(|(d, _)| d).collect()),
        Clause::Phrase(ws) => {
            let mut out: Option<HashSet<u32>> = None;
            for w in ws.iter().filter(|w| !terms::is_stop(w)) {
                let has = holding(v, w);
                out = Some(match out {
                    None => has,
                    Some(o) => o.intersection(&has).copied().collect(),
                });
            }
            out
        }
        Clause::Field(_) => None,
    }
}

/// The dictionary terms a prefix stands for: the BM25 terms that start
/// with it, and the stems of the topic and keyword words that do (a stem
/// can be shorter than the prefix typed: "authentica*" finds the keyword
/// "authentication", whose term is "authent"); at most
/// [`MAX_EXPANSIONS`], those in the most documents first.
pub fn expand(v: &View, prefix: &str) -> Vec<String> {
    let mut found: Vec<String> = v.terms_with_prefix(prefix).map(str::to_string).collect();
    for key in [TOPIC_PREFIX, KEYWORD_PREFIX] {
        let words: Vec<String> =
            v.terms_with_prefix(&format!("{key}{prefix}")).map(|t| terms::stem(&t[key.len()..])).collect();
        found.extend(words.into_iter().filter(|t| v.find(t).is_some()));
    }
    found.sort_unstable();
    found.dedup();
    let mut by_df: Vec<(usize, String)> =
        found.into_iter().map(|t| (v.find(&t).map_or(0, |id| v.postings_len(id)), t)).collect();
    by_df.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    by_df.into_iter().take(MAX_EXPANSIONS).map(|(_, t)| t).collect()
}

/// The query with its prefixes' terms added to its BM25 terms, and for
/// each prefix the positions of its terms among them (a prefix counts
/// once in the ideal score, as one word: kb::score::rank).
pub fn with_prefixes(v: &View, q: &Query) -> (Query, Vec<Vec<usize>>) {
    let mut out = q.clone();
    let mut groups = Vec::new();
    for p in &q.prefixes {
        let mut group = Vec::new();
        for t in expand(v, p) {
            let i = match out.terms.iter().position(|x| *x == t) {
                Some(i) => i,
                None => {
                    out.terms.push(t);
                    out.counts.push(1);
                    out.terms.len() - 1
                }
            };
            group.push(i);
        }
        groups.push(group);
    }
    (out, groups)
}
