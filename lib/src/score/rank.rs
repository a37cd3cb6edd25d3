//! Direct hits of one library for a query. A document's base is the
//! larger of two graded match qualities in [0, 1]: seed 000's tier
//! (topic exact 1.0, topic contains 0.8, keyword 0.6) scaled by how much
//! of the query the topic or keywords cover (formula::graded_tier), and
//! its text evidence — its BM25F score (heading, keywords and body as
//! weighted fields) as a share of the query's ideal score, at most 0.5.
//! Then the seed's final score, ties broken by the BM25F score (never by
//! path while the text evidence differs), and the filters (`--type`,
//! `--topic`, `--notebook`).

use std::collections::HashMap;

use crate::text;

use super::bm25;
use super::formula::{self, Match};
use super::index::{Meta, View, KEYWORD_PREFIX, NO_DATE, TOPIC_PREFIX};
use super::query::Query;
use super::terms;

/// Seed 000's search filters.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// `--type`: pipe-separated segments, any of which may match the type.
    pub types: Vec<String>,
    /// `--topic`: folded words the topic must contain.
    pub topic: Vec<String>,
    /// `--notebook`: a notebook named in `sources.notebook`.
    pub notebook: Option<String>,
}

impl Filters {
    /// Parses the three flags.
    pub fn new(types: Option<&str>, topic: Option<&str>, notebook: Option<&str>) -> Filters {
        Filters {
            types: types
                .map(|t| t.split('|').map(|s| s.trim().to_lowercase()).filter(|s| !s.is_empty()).collect())
                .unwrap_or_default(),
            topic: topic.map(text::tokens).unwrap_or_default(),
            notebook: notebook.map(|n| n.trim().to_string()).filter(|n| !n.is_empty()),
        }
    }

    /// Whether no filter is set.
    pub fn is_empty(&self) -> bool {
        self.types.is_empty() && self.topic.is_empty() && self.notebook.is_none()
    }

    /// Whether a document passes every filter.
    pub fn pass(&self, m: &Meta) -> bool {
        let ty = m.doc_type.as_deref().map(str::to_lowercase);
        (self.types.is_empty() || ty.is_some_and(|t| self.types.contains(&t)))
            && (self.topic.is_empty() || formula::contains_run(&text::tokens(&m.topic), &self.topic))
            && self.notebook.as_ref().is_none_or(|nb| m.notebooks.contains(nb))
    }
}

/// One scored document.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// Document id in its index.
    pub doc: u32,
    /// Final score.
    pub score: f64,
    /// Base: the larger of its graded tier and its text evidence.
    pub base: f64,
    /// What gave the base.
    pub kind: Match,
    /// Freshness used.
    pub freshness: f64,
    /// Its BM25F score: breaks ties of the final score, so two documents
    /// with different text evidence are never ordered by path.
    pub lexical: f64,
}

/// The freshness of document `d` at `now` (epoch seconds).
pub fn freshness_of(v: &View, d: u32, now: i64) -> f64 {
    match v.fresh_at(d) {
        NO_DATE => 0.0,
        at => formula::freshness((now.saturating_sub(at)) as f64 / 86_400.0),
    }
}

/// Scores a document with a base.
pub fn score(v: &View, d: u32, base: f64, kind: Match, lexical: f64, now: i64) -> Scored {
    let freshness = freshness_of(v, d, now);
    Scored { doc: d, score: formula::final_score(base, v.used_by(d), freshness), base, kind, freshness, lexical }
}

/// Ranking order: final score, then text evidence, then document id
/// (path order, only for documents that are equal in both).
pub fn order(a: &Scored, b: &Scored) -> std::cmp::Ordering {
    b.score.total_cmp(&a.score).then(b.lexical.total_cmp(&a.lexical)).then(a.doc.cmp(&b.doc))
}

/// The share of a query's IDF mass that a set of folded words covers:
/// Σ idf of the query terms among the words' stems ÷ Σ idf of all the
/// query's terms.
fn coverage(q: &Query, idf: &[f64], words: &[&&str]) -> f64 {
    let total: f64 = idf.iter().sum();
    if total <= 0.0 {
        return 0.0;
    }
    let stems: Vec<String> = words.iter().map(|w| terms::stem(w)).collect();
    let held: f64 = q.terms.iter().zip(idf).filter(|(t, _)| stems.contains(t)).map(|(_, w)| w).sum();
    held / total
}

/// The direct hits of a query, best first ([`order`]), those passing
/// the filters, at most `limit`; plus how many documents matched in all.
pub fn direct(v: &View, q: &Query, now: i64, filters: &Filters, limit: usize) -> (Vec<Scored>, usize) {
    // Text evidence: BM25F over heading, keywords and body.
    let sc = bm25::search(v, &q.terms, &bm25::params());
    let mut best: HashMap<u32, (f64, Match, f64)> = HashMap::with_capacity(sc.docs.len());
    if sc.ideal > 0.0 {
        for &(d, s) in &sc.docs {
            best.insert(d, (formula::FULLTEXT_MAX * s / sc.ideal, Match::Fulltext, s));
        }
    }
    // Seed tiers, graded, through the topic and keyword words.
    let lookup = q.lookup_words();
    let mut cands: Vec<u32> = Vec::new();
    for w in &lookup {
        for (d, _) in v.postings(&format!("{TOPIC_PREFIX}{w}")) {
            cands.push(d);
        }
        for (d, _) in v.postings(&format!("{KEYWORD_PREFIX}{w}")) {
            cands.push(d);
        }
    }
    cands.sort_unstable();
    cands.dedup();
    let qwords: Vec<&str> = q.words.iter().map(String::as_str).collect();
    for d in cands {
        let w = v.words(d);
        let cover = |held: &[&&str]| coverage(q, &sc.idf, held);
        if let Some((kind, base)) = formula::graded_tier(&qwords, &w.topic, &w.keywords, cover) {
            // `match` names the tier whenever one matched; the base is the
            // better of the two qualities.
            let e = best.entry(d).or_insert((0.0, kind, 0.0));
            e.0 = e.0.max(base);
            e.1 = kind;
        }
    }
    let mut all: Vec<Scored> = best
        .into_iter()
        .filter(|(_, b)| b.0 > 0.0)
        .map(|(d, (base, kind, lex))| score(v, d, base, kind, lex, now))
        .collect();
    if filters.is_empty() {
        let matched = all.len();
        if limit < all.len() {
            // Only the best `limit` need sorting (common words match most documents).
            all.select_nth_unstable_by(limit, order);
            all.truncate(limit);
        }
        all.sort_unstable_by(order);
        return (all, matched);
    }
    all.sort_unstable_by(order);
    let kept: Vec<Scored> = all.into_iter().filter(|s| filters.pass(&v.meta(s.doc))).collect();
    let matched = kept.len();
    (kept.into_iter().take(limit).collect(), matched)
}
