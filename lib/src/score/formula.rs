//! Seed 000's scoring formula, exactly:
//! `final = base × (0.5 + 0.3 × used_by_norm + 0.2 × freshness)` with
//! base = topic exact 1.0 / topic contains 0.8 / keyword 0.6,
//! `used_by_norm = min(used_by, 5) / 5` and
//! `freshness = max(0, 1 − days_old / 30)`; plus the full-text tier below
//! the keyword tier (base ≤ 0.5) and the graph decay `direct × 0.5^hop`.

use serde::Serialize;

use crate::library::graph;

/// Base of a query equal to the topic.
pub const TOPIC_EXACT: f64 = 1.0;
/// Base of a topic that contains the query (or is contained in it).
pub const TOPIC_CONTAINS: f64 = 0.8;
/// Base of a keyword match.
pub const KEYWORD: f64 = 0.6;
/// Highest base of a full-text (BM25) match: the best BM25 hit of a query
/// gets this, the others in proportion to their BM25 score.
pub const FULLTEXT_MAX: f64 = 0.5;
/// used_by is capped here before it is normalised.
pub const USED_BY_CAP: u32 = 5;
/// Days over which freshness decays from 1 to 0.
pub const FRESH_DAYS: f64 = 30.0;
/// Seed 000 `MAX_GRAPH_HOPS`.
pub const MAX_GRAPH_HOPS: usize = graph::MAX_GRAPH_HOPS;
/// Seed 000 `RECOMMEND_SCORE_FACTOR`.
pub const RECOMMEND_SCORE_FACTOR: f64 = 0.5;
/// Seed 000 `MAX_GRAPH_EXPAND`.
pub const MAX_GRAPH_EXPAND: usize = graph::MAX_GRAPH_EXPAND;

/// How a hit matched the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Match {
    /// The topic equals the query.
    TopicExact,
    /// The topic contains the query or the query contains the topic.
    TopicContains,
    /// A keyword contains the query or the query contains a keyword.
    Keyword,
    /// Only the text (title, keywords, body) matched.
    Fulltext,
    /// Reached over the relation graph from a direct hit.
    Graph,
}

/// `min(used_by, 5) / 5`.
pub fn used_by_norm(used_by: u32) -> f64 {
    f64::from(used_by.min(USED_BY_CAP)) / f64::from(USED_BY_CAP)
}

/// `max(0, 1 − days_old / 30)`; a date in the future counts as today.
pub fn freshness(days_old: f64) -> f64 {
    (1.0 - days_old.max(0.0) / FRESH_DAYS).clamp(0.0, 1.0)
}

/// The seed's final score.
pub fn final_score(base: f64, used_by: u32, freshness: f64) -> f64 {
    base * (0.5 + 0.3 * used_by_norm(used_by) + 0.2 * freshness)
}

/// The score of a node `hop` steps from a direct hit that scored `direct`.
pub fn hop_score(direct: f64, hop: usize) -> f64 {
    direct * RECOMMEND_SCORE_FACTOR.powi(hop as i32)
}

/// Whether `needle` occurs as a contiguous run inside `hay`.
pub fn contains_run(hay: &[String], needle: &[String]) -> bool {
    !needle.is_empty() && needle.len() <= hay.len() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Seed 000's base tier of a document for a query, from folded words:
/// topic exact, topic contains (either way round), keyword; `None` when
/// neither topic nor keywords match. Words that are all stop words never
/// match from inside a longer query ("how to" is not a topic of every
/// question).
pub fn base_tier(query: &[String], topic: &[String], keywords: &[Vec<String>]) -> Option<(Match, f64)> {
    let meaningful = |w: &[String]| w.iter().any(|x| !super::terms::is_stop(x));
    if !topic.is_empty() && topic == query {
        return Some((Match::TopicExact, TOPIC_EXACT));
    }
    if contains_run(topic, query) || (meaningful(topic) && contains_run(query, topic)) {
        return Some((Match::TopicContains, TOPIC_CONTAINS));
    }
    let kw = keywords.iter().any(|k| contains_run(k, query) || (meaningful(k) && contains_run(query, k)));
    kw.then_some((Match::Keyword, KEYWORD))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        crate::text::tokens(s)
    }

    #[test]
    fn the_seed_example_numbers() {
        // jwt-auth: topic contains "jwt", used_by 3, 2 days old.
        let s = final_score(TOPIC_CONTAINS, 3, freshness(2.0));
        assert_eq!(format!("{s:.3}"), "0.693");
        assert_eq!(format!("{:.3}", hop_score(s, 1)), "0.347");
        assert_eq!(freshness(45.0), 0.0);
        assert_eq!(freshness(-3.0), 1.0);
        assert_eq!(used_by_norm(9), 1.0);
    }

    #[test]
    fn tiers() {
        assert_eq!(base_tier(&w("jwt auth"), &w("jwt-auth"), &[]).unwrap().0, Match::TopicExact);
        assert_eq!(base_tier(&w("jwt"), &w("jwt-auth"), &[]).unwrap().0, Match::TopicContains);
        assert_eq!(base_tier(&w("how does jwt auth work"), &w("jwt-auth"), &[]).unwrap().0, Match::TopicContains);
        assert_eq!(base_tier(&w("tokens"), &w("jwt-auth"), &[w("bearer tokens")]).unwrap().0, Match::Keyword);
        assert_eq!(base_tier(&w("how to"), &w("how to"), &[]).unwrap().0, Match::TopicExact);
        assert!(base_tier(&w("how to cook"), &w("how to"), &[]).is_none());
        assert!(base_tier(&w("session"), &w("jwt-auth"), &[w("bearer")]).is_none());
    }
}
