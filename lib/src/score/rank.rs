//! Direct hits of one library for a query. A document's base is the
//! larger of two graded match qualities in [0, 1]: seed 000's tier
//! (topic exact 1.0, topic contains 0.8, keyword 0.6) scaled by how much
//! of the query the topic or keywords cover, squared
//! (formula::graded_tier), and its text evidence — its BM25F score
//! (heading, keywords and body as weighted fields; the query gently
//! expanded by pseudo-relevance feedback, score::feedback) as a share of
//! the query's ideal score, squared, times 0.5. Squared because the
//! seed's formula multiplies the base by up to 2× for use and freshness:
//! on a linear scale a note verified yesterday outranks one with 40 %
//! more text evidence; on the squared scale it needs to be within 18 %.
//! The best few text matches then earn a little more text evidence for
//! each pair of neighbouring query words they also hold side by side
//! (score::proximity). Then the seed's final score, ties broken by the
//! text score (never by path while the text evidence differs), and the
//! filters (`--type`, `--topic`, `--notebook`).

use std::cell::RefCell;
use std::collections::HashMap;

use crate::text;

use super::bm25;
use super::feedback::{self, Feedback, FEEDBACK};
use super::formula::{self, Match};
use super::index::{Meta, View, KEYWORD_PREFIX, NO_DATE, TOPIC_PREFIX};
use super::proximity::{Pairs, Proximity, PROXIMITY};
use super::query::Query;
use super::select::{self, Select};
use crate::text::terms;

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
    /// Its text score (BM25F, plus the proximity bonus in the same units
    /// when it was re-ranked): breaks ties of the final score, so two
    /// documents with different text evidence are never ordered by path.
    pub lexical: f64,
    /// With a model: the document's best chunk cosine with the query.
    pub cosine: Option<f64>,
    /// With a model: what meaning added to the base (kb::score::vectors).
    pub dense: f64,
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
    Scored {
        doc: d,
        score: formula::final_score(base, v.used_by(d), freshness),
        base,
        kind,
        freshness,
        lexical,
        cosine: None,
        dense: 0.0,
    }
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

/// How text evidence and the partial tiers become a base.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grading {
    /// Scale of the partial tiers (the query holds a topic or keywords).
    pub tier: f64,
    /// Both graded qualities are raised to this power: text evidence is
    /// `FULLTEXT_MAX × (bm25f / ideal)^gamma`, a partial tier
    /// `tier value × cover^gamma`.
    pub gamma: f64,
    /// Weight of a query term said n times: `n^qtf`.
    pub qtf: f64,
}

/// The grading kb-score ranks with (tuned on SciFact train, docs/design/ranking.md).
pub const GRADING: Grading = Grading { tier: 1.0, gamma: 2.0, qtf: 0.0 };

impl Grading {
    /// This grading with the knobs a tuning spec names replaced.
    pub fn tuned(self, spec: &str) -> Grading {
        let k = |key: &str, d: f64| bm25::knob(spec, key).unwrap_or(d);
        Grading { tier: k("tier", self.tier), gamma: k("gamma", self.gamma), qtf: k("qtf", self.qtf) }
    }
}

/// How meaning (a document's best chunk cosine with the query, from the
/// sentence encoder) joins the base, a convex combination so the base
/// stays in [0, 1]: `(1 − weight) × lexical share + weight × share^gamma`.
/// The lexical share is the document's base as a part of the best base
/// among the query's candidates, and the meaning share its cosine above
/// the query's floor as a part of the query's best cosine above it: both
/// sides then run from 0 to 1 for every query, whatever the query's words
/// score. The floor is the mean of the query's cosines with every
/// document plus `floor` standard deviations, so it follows the model's
/// scale: all-MiniLM-L6-v2's cosines sit near 0.1–0.6, multilingual-e5's
/// near 0.7–0.9, and a fixed floor tuned for one counted nearly every
/// document as evidence with the other. Documents the words missed enter
/// through the `depth` best cosines, those far enough above the query's
/// unrelated level ([`join_of`]). Chosen on
/// SciFact train (bench/RESULTS.md): this beat the same combination on
/// the raw base (0.72 at best) and reciprocal rank fusion (0.72) by 0.02
/// nDCG@10; the floor from the query's cosines serves both models within
/// 0.001 of each one's best fixed floor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// Weight of meaning against the text evidence.
    pub weight: f64,
    /// Standard deviations above the mean of the query's cosines that
    /// count as no evidence.
    pub floor: f64,
    /// Power of the share, as for the text evidence.
    pub gamma: f64,
    /// Documents by cosine that become candidates.
    pub depth: usize,
    /// How far above the query's unrelated level, as a share of the way
    /// from it to a cosine of 1, a document no word matched must be to
    /// become a candidate ([`join_of`]): below it, a query of other words
    /// is out of scope.
    pub join: f64,
}

/// The fusion kb-score ranks with (tuned on SciFact train, bench/RESULTS.md).
pub const FUSION: Fusion = Fusion { weight: 0.4, floor: 0.5, gamma: 2.0, depth: 100, join: 0.35 };

impl Fusion {
    /// This fusion with the knobs a tuning spec names replaced.
    pub fn tuned(self, spec: &str) -> Fusion {
        let k = |key: &str, d: f64| bm25::knob(spec, key).unwrap_or(d);
        Fusion {
            weight: k("dense_w", self.weight),
            floor: k("dense_floor_z", self.floor),
            gamma: k("dense_gamma", self.gamma),
            depth: k("dense_depth", self.depth as f64) as usize,
            join: k("dense_join", self.join),
        }
    }
}

/// Everything a ranking is tuned by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// BM25F.
    pub bm25: bm25::Params,
    /// Tiers and text evidence into a base.
    pub grading: Grading,
    /// Pseudo-relevance feedback.
    pub feedback: Feedback,
    /// Term proximity re-ranking of the best text matches.
    pub proximity: Proximity,
    /// Meaning and words together (with a model).
    pub fusion: Fusion,
}

/// The tuned constants.
pub const TUNING: Tuning =
    Tuning { bm25: bm25::PARAMS, grading: GRADING, feedback: FEEDBACK, proximity: PROXIMITY, fusion: FUSION };

impl Tuning {
    /// The tuning in force: [`TUNING`], or the override of
    /// bm25::TUNE_ENV (benchmark runs only).
    pub fn current() -> Tuning {
        static T: std::sync::OnceLock<Tuning> = std::sync::OnceLock::new();
        *T.get_or_init(|| TUNING.tuned(&std::env::var(bm25::TUNE_ENV).unwrap_or_default()))
    }

    /// This tuning with the knobs a tuning spec names replaced.
    pub fn tuned(self, spec: &str) -> Tuning {
        Tuning {
            bm25: self.bm25.tuned(spec),
            grading: self.grading.tuned(spec),
            feedback: self.feedback.tuned(spec),
            proximity: self.proximity.tuned(spec),
            fusion: self.fusion.tuned(spec),
        }
    }
}

/// A document's title and body, a line apart (what pseudo-relevance
/// feedback and proximity read), None when it cannot be read.
pub type DocText<'a> = &'a dyn Fn(u32) -> Option<String>;

/// Each document's best cosine with the query, by index id, when a
/// model is in use ([`Fusion`]): computed on another thread while the
/// words are scored (a CLI call's forward pass is most of its time).
pub type Cosines<'a> = &'a (dyn Fn() -> Vec<f32> + Sync);

/// The direct hits of a query, best first ([`order`]), those passing
/// the filters, at most `limit`; plus how many documents matched in all.
/// `dense` gives each document's best cosine with the query when a model
/// is in use. `t` is [`Tuning::current`] except in the tuning harness
/// (bench/rank_tune.rs).
#[allow(clippy::too_many_arguments)]
pub fn direct(
    v: &View,
    q: &Query,
    now: i64,
    filters: &Filters,
    limit: usize,
    doc_text: DocText,
    dense: Option<Cosines>,
    t: &Tuning,
) -> (Vec<Scored>, usize) {
    std::thread::scope(|s| {
        let meaning = dense.map(|f| s.spawn(f));
        let dense = || meaning.map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        let (p, g) = (&t.bm25, &t.grading);
        // Feedback, proximity and phrases may read the same documents: once each.
        let read: RefCell<HashMap<u32, Option<String>>> = RefCell::default();
        let doc_text = |d: u32| read.borrow_mut().entry(d).or_insert_with(|| doc_text(d)).clone();
        let doc_text: DocText = &doc_text;
        // `prefix*` searches the terms it stands for.
        let expanded;
        let (q, groups) = if q.prefixes.is_empty() {
            (q, Vec::new())
        } else {
            let (e, groups) = select::with_prefixes(v, q);
            expanded = e;
            (&expanded, groups)
        };
        let sel = Select::new(v, q);
        // Text evidence: BM25F over heading, keywords and body.
        let qtf: Vec<f64> = q.counts.iter().map(|&n| f64::from(n).powf(g.qtf)).collect();
        let mut first = bm25::search(v, &q.terms, &qtf, p);
        // A prefix is one word of the query: its best term counts in the
        // ideal score, not all the terms it stands for.
        for group in &groups {
            let idf: Vec<f64> = group.iter().map(|&i| first.idf[i]).collect();
            let best = idf.iter().copied().fold(0.0, f64::max);
            first.ideal -= (idf.iter().sum::<f64>() - best) * (p.k1 + 1.0);
        }
        if q.constrains() {
            first.docs.retain(|&(d, _)| sel.admits(d, doc_text));
        }
        // Feedback would expand a prefix's terms again: off for prefixes.
        let feedback = t.feedback.active() && groups.is_empty();
        let refined = if feedback { refine(v, q, &qtf, &first, doc_text, t) } else { None };
        let sc = refined.as_ref().unwrap_or(&first);
        let mut best: HashMap<u32, (f64, Match, f64)> = HashMap::with_capacity(sc.docs.len());
        if sc.ideal > 0.0 {
            for &(d, s) in &sc.docs {
                let share = (s / sc.ideal).min(1.0);
                best.insert(d, (formula::FULLTEXT_MAX * share.powf(g.gamma), Match::Fulltext, s));
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
        if q.constrains() {
            cands.retain(|&d| sel.admits(d, doc_text));
        }
        let qwords: Vec<&str> = q.words.iter().map(String::as_str).collect();
        for d in cands {
            let w = v.words(d);
            let cover = |held: &[&&str]| g.tier * coverage(q, &first.idf, held).powf(g.gamma);
            if let Some((kind, base)) = formula::graded_tier(&qwords, &w.topic, &w.keywords, cover) {
                // `match` names the tier whenever one matched; the base is the
                // better of the two qualities.
                let e = best.entry(d).or_insert((0.0, kind, 0.0));
                e.0 = e.0.max(base);
                e.1 = kind;
            }
        }
        best.retain(|_, b| b.0 > 0.0);
        let (meaning, lexical_best) = dense().map(|cos| fuse(&cos, &mut best, &t.fusion)).unwrap_or_default();
        let mut all: Vec<Scored> = best
            .into_iter()
            .map(|(d, (base, kind, lex))| {
                let mut s = score(v, d, base, kind, lex, now);
                if let Some(&(cosine, part)) = meaning.get(&d) {
                    s.cosine = Some(cosine);
                    s.dense = part;
                }
                s
            })
            .collect();
        if t.proximity.active() && sc.ideal > 0.0 {
            rerank_by_proximity(v, q, (sc.ideal, lexical_best), &mut all, doc_text, t, now);
        }
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
    })
}

/// Adds meaning to the bases in `best` ([`Fusion`]), the `depth` best
/// cosines of at least [`join_of`] joining as `Match::Dense` when no word
/// matched them; returns each scored document's cosine and what meaning
/// added, and the best lexical base the shares were taken of.
fn fuse(cos: &[f32], best: &mut HashMap<u32, (f64, Match, f64)>, f: &Fusion) -> (HashMap<u32, (f64, f64)>, f64) {
    let mut top: Vec<u32> = (0..cos.len() as u32).collect();
    let by_cos = |a: &u32, b: &u32| cos[*b as usize].total_cmp(&cos[*a as usize]).then(a.cmp(b));
    let depth = f.depth.min(top.len());
    if depth < top.len() {
        top.select_nth_unstable_by(depth, by_cos);
    }
    top.truncate(depth);
    let Some(max) = top.iter().map(|&d| f64::from(cos[d as usize])).reduce(f64::max) else {
        return (HashMap::new(), 0.0);
    };
    let join = join_of(cos, f.join);
    for &d in &top {
        if f64::from(cos[d as usize]) >= join {
            best.entry(d).or_insert((0.0, Match::Dense, 0.0));
        }
    }
    let lexical_best = best.values().map(|b| b.0).fold(0.0, f64::max);
    let floor = floor_of(cos, f.floor);
    let mut out = HashMap::with_capacity(best.len());
    for (&d, b) in best.iter_mut() {
        let c = f64::from(cos.get(d as usize).copied().unwrap_or(0.0));
        // Cosines all alike (one document, or ties at the top) tell
        // nothing apart: those at the best count in full.
        let share = match max > floor {
            true => ((c - floor) / (max - floor)).clamp(0.0, 1.0),
            false => f64::from(c >= max),
        };
        let part = f.weight * share.powf(f.gamma);
        b.0 = fused(b.0, lexical_best, part, f);
        out.insert(d, (c, part));
    }
    best.retain(|_, b| b.0 > 0.0);
    (out, lexical_best)
}

/// The cosine a document no word matched needs to join a query's
/// candidates: the query's unrelated level, the median of its cosines
/// with every document (most documents of a library are not about any one
/// question), plus `margin` of the way from there to 1. A fixed cosine
/// cannot serve two models: a question off every topic of SciFact reaches
/// 0.21–0.29 at best with all-MiniLM-L6-v2 and 0.8 or more with
/// multilingual-e5-small, whose cosines of unrelated texts sit near 0.75.
fn join_of(cos: &[f32], margin: f64) -> f64 {
    let mut cos = cos.to_vec();
    let n = cos.len();
    let median = match n {
        0 => return f64::INFINITY,
        // One document has no unrelated level to stand above: it is taken
        // as orthogonal, so `margin` reads as a plain cosine there.
        1 => 0.0,
        // Selected, not sorted: linear in the library, on every query.
        _ => {
            let (below, &mut mid, _) = cos.select_nth_unstable_by(n / 2, f32::total_cmp);
            match n % 2 {
                1 => f64::from(mid),
                _ => (f64::from(below.iter().copied().fold(f32::NEG_INFINITY, f32::max)) + f64::from(mid)) / 2.0,
            }
        }
    };
    median + margin * (1.0 - median)
}

/// The cosine that counts as no evidence for a query: the mean of its
/// cosines with every document plus `z` standard deviations ([`Fusion`]).
fn floor_of(cos: &[f32], z: f64) -> f64 {
    let n = cos.len().max(1) as f64;
    let mean = cos.iter().map(|&c| f64::from(c)).sum::<f64>() / n;
    let var = cos.iter().map(|&c| (f64::from(c) - mean).powi(2)).sum::<f64>() / n;
    mean + z * var.sqrt()
}

/// The base of a document whose words scored `lexical` and whose meaning
/// added `part` ([`Fusion`]): its share of the query's best lexical base
/// (at most all of it), weighted, plus the part. One formula for the
/// fusion and for the proximity raise after it, so a raised document is
/// measured against the same best base as the rest.
fn fused(lexical: f64, lexical_best: f64, part: f64, f: &Fusion) -> f64 {
    let share = if lexical_best > 0.0 { (lexical / lexical_best).min(1.0) } else { 0.0 };
    (1.0 - f.weight) * share + part
}

/// Raises the text evidence of the `t.proximity.depth` best documents
/// (by [`order`]) by the share of the query's neighbouring word pairs they
/// hold side by side (kb::score::proximity): text share
/// `min(1, bm25f / ideal + weight × pair share)`, graded as before; the
/// base stays the larger of that and the tier. Only raises, and only the
/// best few, so recall below them is untouched. With meaning fused in
/// ([`fuse`]), the raised text evidence is a share of the same best
/// lexical base (`lexical_best`) the fusion divided by.
fn rerank_by_proximity(
    v: &View,
    q: &Query,
    (ideal, lexical_best): (f64, f64),
    all: &mut [Scored],
    doc_text: DocText,
    t: &Tuning,
    now: i64,
) {
    let pairs = Pairs::of(&q.stems());
    let depth = t.proximity.depth.min(all.len());
    if pairs.is_empty() || depth == 0 {
        return;
    }
    if depth < all.len() {
        all.select_nth_unstable_by(depth, order);
    }
    let g = &t.grading;
    for s in all.iter_mut().take(depth) {
        let Some(doc) = doc_text(s.doc) else { continue };
        let near = pairs.share(&pairs.sequence(&doc), &t.bm25, f64::from(v.len(s.doc)), v.info.avg_len);
        if near <= 0.0 {
            continue;
        }
        let bonus = t.proximity.weight * near;
        let text = formula::FULLTEXT_MAX * ((s.lexical / ideal).min(1.0) + bonus).min(1.0).powf(g.gamma);
        let (cosine, dense) = (s.cosine, s.dense);
        let text = if cosine.is_some() { fused(text, lexical_best, dense, &t.fusion) } else { text };
        *s = score(v, s.doc, s.base.max(text), s.kind, s.lexical + bonus * ideal, now);
        (s.cosine, s.dense) = (cosine, dense);
    }
}

/// The text scores of the query expanded by pseudo-relevance feedback
/// (kb::score::feedback) from the best first-pass text matches.
/// None when there is nothing to learn from.
fn refine(
    v: &View,
    q: &Query,
    qtf: &[f64],
    first: &bm25::Scores,
    doc_text: DocText,
    t: &Tuning,
) -> Option<bm25::Scores> {
    let mut top: Vec<(u32, f64)> = first.docs.clone();
    let n = t.feedback.docs.min(top.len());
    if n == 0 {
        return None;
    }
    let by_score = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if n < top.len() {
        top.select_nth_unstable_by(n, by_score);
        top.truncate(n);
    }
    top.sort_unstable_by(by_score);
    let docs: Vec<(Vec<String>, f64)> =
        top.iter().filter_map(|&(d, s)| Some((terms::analyse(&doc_text(d)?), s))).collect();
    if docs.is_empty() {
        return None;
    }
    let (terms, weights) = feedback::expand(&q.terms, qtf, &docs, &t.feedback);
    let mut out = bm25::search(v, &terms, &weights, &t.bm25);
    // Only the documents the query matched (both lists are by id).
    let mut keep = first.docs.iter().map(|x| x.0).peekable();
    out.docs.retain(|&(d, _)| {
        while keep.next_if(|&k| k < d).is_some() {}
        keep.peek() == Some(&d)
    });
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meaning_alone_below_the_join_cosine_adds_no_candidate() {
        let f = Fusion { depth: 10, ..FUSION };
        // No word matched; every cosine weak: nothing to answer with.
        let mut best = HashMap::new();
        fuse(&[0.3, 0.2, 0.1], &mut best, &f);
        assert!(best.is_empty(), "{best:?}");
        // One strong cosine joins, the weak ones stay out.
        fuse(&[0.6, 0.2, 0.34], &mut best, &f);
        assert_eq!(best.keys().copied().collect::<Vec<u32>>(), [0]);
        assert_eq!(best[&0].1, Match::Dense);
    }

    #[test]
    fn the_join_cosine_follows_the_querys_unrelated_level_whatever_the_models_scale() {
        let f = Fusion { depth: 10, ..FUSION };
        // Cosines high and close, as multilingual-e5's are: all alike, none
        // joins; one well above the rest joins alone.
        let mut best = HashMap::new();
        fuse(&[0.80, 0.79, 0.78, 0.81, 0.79], &mut best, &f);
        assert!(best.is_empty(), "{best:?}");
        fuse(&[0.95, 0.79, 0.78, 0.81, 0.79], &mut best, &f);
        assert_eq!(best.keys().copied().collect::<Vec<u32>>(), [0]);
        // The same cosines on a low scale: the same answer.
        let low: Vec<f32> = [0.80f32, 0.79, 0.78, 0.81, 0.79].iter().map(|c| 4.0 * c - 3.0).collect();
        let mut best = HashMap::new();
        fuse(&low, &mut best, &f);
        assert!(best.is_empty(), "{best:?}");
        // One document has no unrelated level to stand above: `join` is a
        // plain cosine there, so a library of one note still answers a
        // paraphrase by meaning alone, and an unrelated question not.
        fuse(&[0.2], &mut best, &f);
        assert!(best.is_empty(), "{best:?}");
        fuse(&[0.9], &mut best, &f);
        assert_eq!(best[&0].1, Match::Dense);
        // The unrelated level is the median: the middle cosine, or the mean
        // of the two middle ones, in any order.
        assert_eq!(join_of(&[0.4, 0.1, 0.3, 0.2, 0.5], 0.0), f64::from(0.3f32));
        let even = join_of(&[0.4, 0.1, 0.3, 0.2], 0.0);
        assert_eq!(even, (f64::from(0.2f32) + f64::from(0.3f32)) / 2.0);
        assert!((join_of(&[0.4, 0.1, 0.3, 0.2], 0.5) - (even + 0.5 * (1.0 - even))).abs() < 1e-12);
    }

    #[test]
    fn the_floor_follows_the_querys_cosines_whatever_the_models_scale() {
        let f = Fusion { depth: 10, ..FUSION };
        let words = || (0..5).map(|d| (d, (0.1, Match::Fulltext, 1.0))).collect::<HashMap<_, _>>();
        // One model's cosines sit high and close, another's low and apart:
        // the same order, the same spread in units of each query's own.
        let high = [0.90f32, 0.86, 0.82, 0.80, 0.79];
        let low: Vec<f32> = high.iter().map(|c| 4.0 * c - 3.0).collect();
        let parts = |cos: &[f32]| {
            let mut best = words();
            let (meaning, _) = fuse(cos, &mut best, &f);
            (0..5).map(|d| meaning[&d].1).collect::<Vec<f64>>()
        };
        let (a, b) = (parts(&high), parts(&low));
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() < 1e-5, "{a:?} {b:?}");
        }
        // The best earns the whole weight; those under mean + z·sd nothing.
        assert!((a[0] - f.weight).abs() < 1e-9, "{a:?}");
        let floor = floor_of(&high, f.floor);
        for (c, p) in high.iter().zip(&a) {
            assert_eq!(f64::from(*c) <= floor, *p == 0.0, "{floor} {high:?} {a:?}");
        }
        assert!(a[1] > 0.0 && a[4] == 0.0, "{a:?}");
    }

    #[test]
    fn one_document_found_by_its_words_earns_the_whole_weight_of_meaning() {
        let f = Fusion { depth: 10, ..FUSION };
        // One cosine has no spread to take a floor from: it counts in full.
        let mut best = HashMap::from([(0, (0.1, Match::Fulltext, 1.0))]);
        let (meaning, _) = fuse(&[0.6], &mut best, &f);
        assert_eq!(meaning[&0].1, f.weight);
        assert_eq!(best[&0].1, Match::Fulltext);
    }

    #[test]
    fn the_lexical_side_is_a_share_of_the_querys_best_base() {
        let f = Fusion { depth: 10, ..FUSION };
        let mut best = HashMap::from([(0, (0.2, Match::Fulltext, 1.0)), (1, (0.1, Match::Fulltext, 0.5))]);
        // Equal cosines: the order and ratio of the words' shares remain.
        fuse(&[0.5, 0.5], &mut best, &f);
        let part = f.weight;
        assert!((best[&0].0 - ((1.0 - f.weight) + part)).abs() < 1e-12, "{best:?}");
        assert!((best[&1].0 - ((1.0 - f.weight) * 0.5 + part)).abs() < 1e-12, "{best:?}");
    }

    #[test]
    fn a_proximity_raise_is_measured_against_the_fusions_best_base() {
        let f = Fusion { depth: 10, ..FUSION };
        let mut best = HashMap::from([(0, (0.5, Match::Fulltext, 1.0)), (1, (0.25, Match::Fulltext, 0.5))]);
        let (meaning, lexical_best) = fuse(&[0.6, 0.4], &mut best, &f);
        assert_eq!(lexical_best, 0.5);
        // Raised by nothing, a document keeps the base the fusion gave it
        // (the raise once took the raw text, half of this, and did nothing).
        assert_eq!(fused(0.25, lexical_best, meaning[&1].1, &f), best[&1].0);
        // Raised to the best base or past it, its words count in full.
        assert_eq!(fused(0.5, lexical_best, meaning[&1].1, &f), (1.0 - f.weight) + meaning[&1].1);
        assert_eq!(fused(0.9, lexical_best, meaning[&1].1, &f), (1.0 - f.weight) + meaning[&1].1);
    }
}
