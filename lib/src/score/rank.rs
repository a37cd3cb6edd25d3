//! Direct hits of one library for a query: seed 000's base tiers (topic
//! exact, topic contains, keyword) found through the topic and keyword
//! words of the index, the full-text BM25 tier below them, the seed's
//! final score, and the filters (`--type`, `--topic`, `--notebook`).

use std::collections::HashMap;

use crate::text;

use super::bm25;
use super::formula::{self, Match};
use super::index::{Meta, View, KEYWORD_PREFIX, NO_DATE, TOPIC_PREFIX};
use super::query::Query;

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
    /// Base of its best tier.
    pub base: f64,
    /// Its best tier.
    pub kind: Match,
    /// Freshness used.
    pub freshness: f64,
}

/// The freshness of document `d` at `now` (epoch seconds).
pub fn freshness_of(v: &View, d: u32, now: i64) -> f64 {
    match v.fresh_at(d) {
        NO_DATE => 0.0,
        at => formula::freshness((now.saturating_sub(at)) as f64 / 86_400.0),
    }
}

/// Scores a document with a base.
pub fn score(v: &View, d: u32, base: f64, kind: Match, now: i64) -> Scored {
    let freshness = freshness_of(v, d, now);
    Scored { doc: d, score: formula::final_score(base, v.used_by(d), freshness), base, kind, freshness }
}

/// The direct hits of a query, best first (ties by path), those passing
/// the filters, at most `limit`; plus how many documents matched in all.
pub fn direct(v: &View, q: &Query, now: i64, filters: &Filters, limit: usize) -> (Vec<Scored>, usize) {
    let mut best: HashMap<u32, (f64, Match)> = HashMap::new();
    // Seed tiers through the topic and keyword words.
    let lookup = q.lookup_words();
    let mut cands: Vec<u32> = Vec::new();
    let mut in_topic: HashMap<u32, u32> = HashMap::new();
    for w in &lookup {
        for (d, _) in v.postings(&format!("{TOPIC_PREFIX}{w}")) {
            *in_topic.entry(d).or_insert(0) += 1;
            cands.push(d);
        }
        for (d, _) in v.postings(&format!("{KEYWORD_PREFIX}{w}")) {
            cands.push(d);
        }
    }
    cands.sort_unstable();
    cands.dedup();
    let single = q.words.len() == 1;
    for d in cands {
        let tier = if single {
            // One word: its presence among the topic words decides, no parse.
            match in_topic.get(&d) {
                Some(_) if v.topic_n(d) == 1 => Some((Match::TopicExact, formula::TOPIC_EXACT)),
                Some(_) => Some((Match::TopicContains, formula::TOPIC_CONTAINS)),
                None => Some((Match::Keyword, formula::KEYWORD)),
            }
        } else {
            let m = v.meta(d);
            let kws: Vec<Vec<String>> = m.keywords.iter().map(|k| text::tokens(k)).collect();
            formula::base_tier(&q.words, &text::tokens(&m.topic), &kws)
        };
        if let Some((kind, base)) = tier {
            best.insert(d, (base, kind));
        }
    }
    // The full-text tier: BM25 relative to the query's best BM25 hit.
    let ft = bm25::search(v, &q.terms);
    let top = ft.iter().map(|(_, s)| *s).fold(0.0f64, f64::max);
    if top > 0.0 {
        for (d, s) in ft {
            let base = formula::FULLTEXT_MAX * s / top;
            let e = best.entry(d).or_insert((base, Match::Fulltext));
            if e.0 < base {
                *e = (base, Match::Fulltext);
            }
        }
    }
    let mut all: Vec<Scored> = best.into_iter().map(|(d, (base, kind))| score(v, d, base, kind, now)).collect();
    let order = |a: &Scored, b: &Scored| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc));
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
