//! Seed 000's scoring formula, exactly:
//! `final = base × (0.5 + 0.3 × used_by_norm + 0.2 × freshness)` with
//! base = topic exact 1.0 / topic contains 0.8 / keyword 0.6,
//! `used_by_norm = min(used_by, 5) / 5` and
//! `freshness = max(0, 1 − days_old / 30)`; plus the full-text evidence
//! (base ≤ 0.5) and the graph decay `direct × 0.5^hop`. The tiers are
//! graded by how much of the query they cover ([`graded_tier`]); a
//! document's base is the larger of its tier and its text evidence
//! (kb::score::rank).

use serde::Serialize;

use crate::library::graph;

/// Base of a query equal to the topic.
pub const TOPIC_EXACT: f64 = 1.0;
/// Base of a topic that contains the query (or is contained in it).
pub const TOPIC_CONTAINS: f64 = 0.8;
/// Base of a keyword match.
pub const KEYWORD: f64 = 0.6;
/// Highest base of a full-text match: a document's BM25F score as a share
/// of the query's ideal score (`bm25::Scores::ideal`), times this. It
/// keeps text-only evidence at most half of a topic equal to the query,
/// as in the seed, but it is graded like the tiers above it.
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
    /// Only the meaning matched: the sentence encoder's vectors, no word.
    Dense,
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
pub fn contains_run<T: PartialEq>(hay: &[T], needle: &[T]) -> bool {
    !needle.is_empty() && needle.len() <= hay.len() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Seed 000's base tier of a document for a query, from folded words,
/// *graded*: a topic equal to the query is 1.0, a topic or keyword that
/// holds the whole query is 0.8 or 0.6 as in the seed; a topic or
/// keywords that the query holds (the query says more than they do) get
/// their tier value times `cover(words)` — the IDF-weighted share of the
/// query those words account for (kb::score::rank) — so one common word
/// of a long question shared with a keyword weighs what that word is
/// worth, not the whole tier. `None` when neither topic nor keywords match.
/// Words that are all stop words never match from inside a longer query
/// ("how to" is not a topic of every question).
pub fn graded_tier<S: AsRef<str> + PartialEq>(
    query: &[S],
    topic: &[S],
    keywords: &[Vec<S>],
    cover: impl Fn(&[&S]) -> f64,
) -> Option<(Match, f64)> {
    let meaningful = |w: &[S]| w.iter().any(|x| !crate::text::terms::is_stop(x.as_ref()));
    if !topic.is_empty() && topic == query {
        return Some((Match::TopicExact, TOPIC_EXACT));
    }
    if contains_run(topic, query) {
        return Some((Match::TopicContains, TOPIC_CONTAINS));
    }
    let mut found: Vec<(Match, f64)> = Vec::new();
    if meaningful(topic) && contains_run(query, topic) {
        found.push((Match::TopicContains, TOPIC_CONTAINS * cover(&topic.iter().collect::<Vec<_>>()).min(1.0)));
    }
    if keywords.iter().any(|k| contains_run(k, query)) {
        found.push((Match::Keyword, KEYWORD));
    }
    let held: Vec<&S> =
        keywords.iter().filter(|k| meaningful(k) && contains_run(query, k)).flat_map(|k| k.iter()).collect();
    if !held.is_empty() {
        found.push((Match::Keyword, KEYWORD * cover(&held).min(1.0)));
    }
    // The best; on a tie the higher tier (found in tier order).
    found.into_iter().fold(None, |best, m| match best {
        Some((_, b)) if b >= m.1 => best,
        _ => Some(m),
    })
}

/// [`graded_tier`] when the held words cover the whole query: seed 000's
/// tiers as the seed states them.
pub fn base_tier(query: &[String], topic: &[String], keywords: &[Vec<String>]) -> Option<(Match, f64)> {
    graded_tier(query, topic, keywords, |_| 1.0)
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
