//! kb-score: seed 000's `library search` over one or many libraries
//! (seed 001). For each source: direct hits (base tiers + BM25, the
//! seed's final score, filters) from its cached index, graph
//! recommendations from the best direct hits; then one ranking across
//! sources, tier loading under a token budget, a final summary record and
//! an audit event in the local library.

pub mod answer;
pub mod audit;
pub mod bm25;
pub mod build;
pub mod cache;
pub mod feedback;
pub mod formula;
pub mod index;
pub mod loading;
pub mod nearest;
pub mod passage;
pub mod proximity;
pub mod query;
pub mod rank;
pub mod recommend;
pub mod select;
pub mod side;
pub mod sources;
pub mod suggest;
pub mod table;
pub mod vectors;
pub mod view;
pub mod walk;
pub mod written;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::out::round4;

use formula::Match;
use loading::Tier;
use query::Query;
use rank::Filters;
use sources::{Source, SourceError};

/// What the user asked for besides the query.
#[derive(Debug, Clone)]
pub struct Options {
    /// Direct hits to return.
    pub limit: usize,
    /// Graph recommendations on (`--no-recommend` turns them off).
    pub recommend: bool,
    /// Tier to load.
    pub tier: Tier,
    /// Token budget.
    pub budget: Option<usize>,
    /// Filters.
    pub filters: Filters,
    /// Check every document's size and mtime before trusting the cache.
    pub verify: bool,
    /// Leave out direct hits scoring below this share of the best one
    /// (None: keep `limit`; an explicit `--limit` turns the cut off, so
    /// recall can be measured).
    pub tail_cut: Option<f64>,
    /// The sentence encoder's folder (`--model`, `KB_MODEL`): meaning
    /// joins the words (kb::score::vectors); `None` is lexical only.
    pub model: Option<std::path::PathBuf>,
}

/// The default tail cut: a direct hit scoring below this share of the
/// best one is left out of the default output (tuned on SciFact train,
/// bench/tail_cut.py).
pub const TAIL_CUT: f64 = 0.2;

impl Default for Options {
    fn default() -> Options {
        Options {
            limit: 10,
            recommend: true,
            tier: Tier::Index,
            budget: None,
            filters: Filters::default(),
            verify: false,
            tail_cut: Some(TAIL_CUT),
            model: None,
        }
    }
}

/// One `hit` record (`schemas/hit.schema.json`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "hit")]
pub struct Hit {
    /// 1-based rank.
    pub rank: usize,
    /// The library it comes from (`local` or an external's name).
    pub source: String,
    /// Library-relative path.
    pub path: String,
    /// Topic.
    pub topic: String,
    /// Title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Type.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub doc_type: Option<String>,
    /// Keywords.
    pub keywords: Vec<String>,
    /// Final score (rounded to 4 decimals).
    pub score: f64,
    /// Base of the direct tier (0 for graph hits).
    pub base: f64,
    /// How it matched.
    #[serde(rename = "match")]
    pub matched: Match,
    /// used_by count (uncapped).
    pub used_by: u32,
    /// Freshness in [0, 1].
    pub freshness: f64,
    /// 0 for a direct hit, k for a document k hops from one.
    pub hop: usize,
    /// The document it was reached through (graph hits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// The topic of `via`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via_topic: Option<String>,
    /// Estimated tokens of what this record loads.
    pub tokens: usize,
    /// Tier 2: `.summary.md` snippet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Tier 3: full content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The snippet or content was cut to fit `--budget` (the last hit).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Where the snippet holds the query's words (byte ranges), for the
    /// table to mark.
    #[serde(skip)]
    pub marks: Vec<std::ops::Range<usize>>,
    /// With a model: the document's best chunk cosine with the query.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense: Option<f64>,
    #[serde(skip)]
    exact: f64,
    #[serde(skip)]
    lexical: f64,
    #[serde(skip)]
    order: usize,
}

/// The final `summary` record (`schemas/summary.schema.json`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "summary")]
pub struct Summary {
    /// The query.
    pub query: String,
    /// Hit records emitted.
    pub hits: usize,
    /// Of which direct.
    pub direct: usize,
    /// Of which graph recommendations.
    pub recommended: usize,
    /// Documents matching directly, over all sources (before `--limit`).
    pub matched: usize,
    /// Tier loaded.
    pub tier: u8,
    /// `--budget`, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<usize>,
    /// Estimated tokens of all hit records emitted.
    pub tokens_used: usize,
    /// Hits left out because the budget would have been exceeded.
    pub omitted: usize,
    /// The tail cut applied: direct hits below this share of the best
    /// one's score were left out (absent under an explicit `--limit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail_cut: Option<f64>,
    /// Direct hits the tail cut left out.
    #[serde(skip_serializing_if = "is_zero")]
    pub cut: usize,
    /// Sources queried, local first then alphabetical.
    pub sources_queried: Vec<String>,
    /// Sources with at least one direct hit.
    pub sources_with_findings: Vec<String>,
    /// Sources that could not be queried.
    pub sources_failed: Vec<String>,
    /// Whether a cross-library synthesis applies (≥ 2 sources with findings).
    pub synthesis: bool,
    /// No document matched in any source (seed 001's out-of-scope answer).
    pub out_of_scope: bool,
    /// When out of scope: the closest entries, best first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub closest: Vec<nearest::Closest>,
    /// When out of scope: the seed's sentence naming them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// When out of scope and the library holds none of the query's words:
    /// the query with each word replaced by the nearest one it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub did_you_mean: Option<String>,
}

/// Everything a search produced, ready to print.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Hits in rank order.
    pub hits: Vec<Hit>,
    /// The summary.
    pub summary: Summary,
    /// Failed sources.
    pub errors: Vec<SourceError>,
    /// Warnings for stderr (cache trouble, unreadable documents).
    pub warnings: Vec<String>,
}

/// A per-source result before the cross-source merge.
struct Partial {
    direct: Vec<Hit>,
    recs: Vec<(Hit, String)>,
    matched: usize,
}

/// Index caches kept open across searches by a process that answers
/// many (kb-mcp), one per cache file: a warm search then revalidates the
/// open maps with a few stats instead of mapping and parsing them again.
#[derive(Default)]
pub struct Open {
    held: std::collections::HashMap<std::path::PathBuf, cache::Held>,
    /// The sentence encoder, loaded once, with its folder.
    encoder: Option<(std::path::PathBuf, std::sync::Arc<crate::text::bert::Encoder>)>,
}

impl Open {
    /// The encoder of `dir`, loaded on first use and kept; its weights
    /// mapped from an aligned copy in `cache` (the local library's index
    /// cache directory, else the user's), so a CLI call does not read them.
    fn encoder(
        &mut self,
        dir: &std::path::Path,
        cache: Option<&std::path::Path>,
    ) -> Result<std::sync::Arc<crate::text::bert::Encoder>> {
        if self.encoder.as_ref().is_none_or(|(d, _)| d != dir) {
            let enc = crate::text::bert::Encoder::load_cached(dir, cache)?;
            self.encoder = Some((dir.to_path_buf(), std::sync::Arc::new(enc)));
        }
        Ok(self.encoder.as_ref().expect("just loaded").1.clone())
    }
}

impl std::fmt::Debug for Open {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Open({} caches)", self.held.len())
    }
}

/// Runs `f` on a source's index, kept open in `open` (the out-of-scope
/// passes after the search then reopen nothing).
fn with_source<R>(
    open: &mut Open,
    src: &Source,
    local: Option<&crate::Library>,
    verify: bool,
    f: impl Fn(&index::View) -> (R, Vec<u32>),
) -> Result<(R, cache::Report)> {
    let cache_path = cache::path_for(&src.lib, local, src.external);
    let mut none = cache::Held::default();
    let held = match &cache_path {
        Some(p) => open.held.entry(p.clone()).or_default(),
        None => &mut none,
    };
    cache::with_held(held, &src.lib, cache_path.as_deref(), verify, f)
}

/// The encoder and the query's vector, encoded once for every source at
/// its first need: the first source's stored vectors are then read on
/// one thread while the query is encoded on the other.
struct QueryVector<'a> {
    encoder: &'a crate::text::bert::Encoder,
    text: &'a str,
    vector: std::sync::OnceLock<Vec<f32>>,
}

impl QueryVector<'_> {
    fn get(&self) -> &[f32] {
        self.vector.get_or_init(|| {
            let lap = build::profiler("meaning");
            let v = self.encoder.encode_query(self.text);
            lap("query encoded");
            v
        })
    }
}

/// Searches one source; `dense` is the encoder and the query's vector.
#[allow(clippy::too_many_arguments)]
fn search_source(
    open: &mut Open,
    dense: Option<&QueryVector>,
    src: &Source,
    order: usize,
    local: Option<&crate::Library>,
    q: &Query,
    opts: &Options,
    now: i64,
) -> Result<(Partial, cache::Report)> {
    let cache_path = cache::path_for(&src.lib, local, src.external);
    with_source(open, src, local, opts.verify, |v| {
        let title_body = |d: u32| {
            let text = loading::content(&src.lib, v.path(d))?;
            let body = crate::doc::frontmatter::locate(&text).map_or(text.as_str(), |(_, _, b)| &text[b..]);
            Some((v.meta(d).title.unwrap_or_default(), body.to_string()))
        };
        let doc_text = |d: u32| title_body(d).map(|(t, b)| format!("{t}\n{b}"));
        let (cache_path, title_body_ref) = (cache_path.as_deref(), &title_body);
        let cosines = dense.map(|qv| {
            move || {
                let file = cache_path.map(|c| vectors::path_for(c, qv.encoder)).unwrap_or_default();
                let lap = build::profiler("meaning");
                let cosines = vectors::dense(&file, v, qv.encoder, || qv.get(), title_body_ref).cosine;
                lap("documents' cosines");
                cosines
            }
        });
        let tuning = rank::Tuning::current();
        let cosines = cosines.as_ref().map(|f| f as rank::Cosines);
        let (direct, matched) = rank::direct(v, q, now, &opts.filters, opts.limit, &doc_text, cosines, &tuning);
        let mk = |d: u32,
                  (score, base, lexical): (f64, f64, f64),
                  kind: Match,
                  freshness: f64,
                  hop: usize,
                  via: Option<u32>| {
            let m = v.meta(d);
            Hit {
                rank: 0,
                source: src.name.clone(),
                path: v.path(d).to_string(),
                topic: m.topic,
                title: m.title,
                doc_type: m.doc_type,
                keywords: m.keywords,
                score: round4(score),
                base,
                matched: kind,
                used_by: v.used_by(d),
                freshness: round4(freshness),
                hop,
                via: via.map(|x| v.path(x).to_string()),
                via_topic: via.map(|x| v.meta(x).topic),
                tokens: 0,
                summary: None,
                content: None,
                truncated: false,
                marks: Vec::new(),
                dense: None,
                exact: score,
                lexical,
                order,
            }
        };
        let hits: Vec<Hit> = direct
            .iter()
            .map(|s| Hit {
                dense: s.cosine.map(round4),
                ..mk(s.doc, (s.score, round4(s.base), s.lexical), s.kind, s.freshness, 0, None)
            })
            .collect();
        let mut rec_docs = Vec::new();
        let recs = if opts.recommend {
            let roots: Vec<(u32, f64)> = direct.iter().map(|s| (s.doc, s.score)).collect();
            let keep = |d: u32| opts.filters.is_empty() || opts.filters.pass(&v.meta(d));
            recommend::recommend(v, &roots, keep)
                .into_iter()
                .map(|r| {
                    rec_docs.push(r.doc);
                    let f = rank::freshness_of(v, r.doc, now);
                    (mk(r.doc, (r.score, 0.0, 0.0), Match::Graph, f, r.hop, Some(r.via)), v.path(r.root).to_string())
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut used: Vec<u32> = direct.iter().map(|s| s.doc).collect();
        used.extend(rec_docs);
        (Partial { direct: hits, recs, matched }, used)
    })
}

/// Final score, then text evidence (so path decides only between
/// documents equal in both), hop, source order, path.
fn by_rank(a: &Hit, b: &Hit) -> std::cmp::Ordering {
    b.exact
        .total_cmp(&a.exact)
        .then(b.lexical.total_cmp(&a.lexical))
        .then(a.hop.cmp(&b.hop))
        .then(a.order.cmp(&b.order))
        .then_with(|| a.path.cmp(&b.path))
}

/// Runs a search over resolved sources. `errors` are the sources that
/// already failed to resolve; `now` is epoch seconds.
pub fn search(sources: &[Source], errors: Vec<SourceError>, q: &Query, opts: &Options, now: i64) -> Result<Outcome> {
    search_with(&mut Open::default(), sources, errors, q, opts, now)
}

/// [`search`] keeping the sources' indexes open in `open` across calls.
pub fn search_with(
    open: &mut Open,
    sources: &[Source],
    mut errors: Vec<SourceError>,
    q: &Query,
    opts: &Options,
    now: i64,
) -> Result<Outcome> {
    let local = sources.iter().find(|s| !s.external).map(|s| &s.lib);
    let mut warnings = Vec::new();
    let mut direct: Vec<Hit> = Vec::new();
    let mut recs: Vec<(Hit, String)> = Vec::new();
    let mut matched = 0;
    let mut queried = Vec::new();
    let mut with_findings = Vec::new();
    // The query is encoded once for every source.
    let cache = local.map(|l| l.path(cache::DIR)).or_else(cache::user_cache_dir);
    let lap = build::profiler("meaning");
    let encoder = opts.model.as_deref().map(|m| open.encoder(m, cache.as_deref())).transpose()?;
    if encoder.is_some() {
        lap("model loaded");
    }
    let dense = encoder.as_deref().map(|encoder| QueryVector { encoder, text: &q.text, vector: Default::default() });
    for (i, src) in sources.iter().enumerate() {
        match search_source(open, dense.as_ref(), src, i, local, q, opts, now) {
            Ok((p, report)) => {
                queried.push(src.name.clone());
                warnings.extend(report.warnings.into_iter().map(|w| format!("{}: {w}", src.name)));
                for pr in report.problems.iter().filter(|p| p.kind != "frontmatter") {
                    warnings.push(format!("{}: {}: {}", src.name, pr.path, pr.message));
                }
                if !p.direct.is_empty() {
                    with_findings.push(src.name.clone());
                }
                matched += p.matched;
                direct.extend(p.direct);
                recs.extend(p.recs);
            }
            Err(e) => errors.push(SourceError::new(&src.name, &src.lib.dir, e.to_string())),
        }
    }
    if queried.is_empty() {
        let why = errors.iter().map(|e| format!("{}: {}", e.source, e.message)).collect::<Vec<_>>().join("; ");
        return Err(Error::msg(if why.is_empty() {
            "no knowledge base available: no local library and no activated external library \
             (run 'kb-append init', or pass --source NAME=DIR)"
                .to_string()
        } else {
            format!("no usable source: {why}")
        }));
    }
    direct.sort_by(by_rank);
    direct.truncate(opts.limit);
    let before_cut = direct.len();
    if let (Some(share), Some(best)) = (opts.tail_cut, direct.first().map(|h| h.exact)) {
        direct.retain(|h| h.exact >= share * best);
    }
    let cut = before_cut - direct.len();
    let kept: std::collections::HashSet<(usize, String)> = direct.iter().map(|h| (h.order, h.path.clone())).collect();
    let mut rec_hits: Vec<Hit> = Vec::new();
    for (h, root) in recs {
        if kept.contains(&(h.order, root)) && !kept.contains(&(h.order, h.path.clone())) {
            rec_hits.push(h);
        }
    }
    rec_hits.sort_by(by_rank);
    rec_hits.truncate(formula::MAX_GRAPH_EXPAND);
    let mut hits = direct;
    hits.extend(rec_hits);
    hits.sort_by(by_rank);

    // Tier loading under the budget.
    let matcher = passage::Matcher::new(q);
    let mut used = 0usize;
    let mut out = Vec::with_capacity(hits.len());
    let total = hits.len();
    for mut h in hits {
        let lib = &sources[h.order].lib;
        if opts.tier >= Tier::Summary {
            h.summary = loading::snippet(lib, &h.path, &h.topic, &matcher);
        }
        if opts.tier >= Tier::Full {
            h.content = loading::content(lib, &h.path);
        }
        h.tokens = row_tokens(&h);
        let over = opts.budget.filter(|b| used + h.tokens > *b);
        if let Some(b) = over {
            // The last hit that fits: its content, then snippet, cut to
            // the room left; when not even its row fits, stop before it.
            if !fit(&mut h, b - used) {
                break;
            }
        }
        used += h.tokens;
        h.rank = out.len() + 1;
        h.marks = h.summary.as_deref().map(|s| matcher.marks(s)).unwrap_or_default();
        out.push(h);
        if over.is_some() {
            break;
        }
    }
    let failed: Vec<String> = errors.iter().map(|e| e.source.clone()).collect();
    let out_of_scope = matched == 0;
    let closest =
        if out_of_scope { closest_entries(open, sources, &queried, q, opts, now, &mut warnings) } else { Vec::new() };
    let did_you_mean = if out_of_scope { did_you_mean(open, sources, &queried, q, &mut warnings) } else { None };
    let summary = Summary {
        query: q.text.clone(),
        hits: out.len(),
        direct: out.iter().filter(|h| h.hop == 0).count(),
        recommended: out.iter().filter(|h| h.hop > 0).count(),
        matched,
        tier: opts.tier as u8,
        budget: opts.budget,
        tokens_used: used,
        omitted: total - out.len(),
        tail_cut: opts.tail_cut,
        cut,
        synthesis: with_findings.len() >= 2,
        sources_queried: queried,
        sources_with_findings: with_findings,
        sources_failed: failed,
        out_of_scope,
        answer: out_of_scope.then(|| nearest::answer(&closest)),
        closest,
        did_you_mean,
    };
    Ok(Outcome { hits: out, summary, errors, warnings })
}

/// The closest entries over the sources that answered (seed 001's
/// out-of-scope answer); a source whose index fails now only warns.
fn closest_entries(
    open: &mut Open,
    sources: &[Source],
    queried: &[String],
    q: &Query,
    opts: &Options,
    now: i64,
    warnings: &mut Vec<String>,
) -> Vec<nearest::Closest> {
    let local = sources.iter().find(|s| !s.external).map(|s| &s.lib);
    let mut all = Vec::new();
    for (i, src) in sources.iter().enumerate().filter(|(_, s)| queried.contains(&s.name)) {
        let found = with_source(open, src, local, false, |v| {
            let c = nearest::closest(v, q, now, &opts.filters, &src.name, i);
            let docs = c.iter().map(|c| c.doc).collect();
            (c, docs)
        });
        match found {
            Ok((c, _)) => all.extend(c),
            Err(e) => warnings.push(format!("{}: closest entries not found: {e}", src.name)),
        }
    }
    nearest::merge(all)
}

/// "Did you mean" over the sources that answered (kb::score::suggest):
/// None when any of them holds one of the query's words, or none holds a
/// word near them.
fn did_you_mean(
    open: &mut Open,
    sources: &[Source],
    queried: &[String],
    q: &Query,
    warnings: &mut Vec<String>,
) -> Option<String> {
    let local = sources.iter().find(|s| !s.external).map(|s| &s.lib);
    let mut best: Vec<Option<(usize, String)>> = Vec::new();
    for src in sources.iter().filter(|s| queried.contains(&s.name)) {
        let found = with_source(open, src, local, false, |v| {
            let near = suggest::nearest(v, q).map(|words| {
                words
                    .into_iter()
                    .map(|(_, n)| {
                        let n = n?;
                        let word = match n.stem {
                            true => suggest::written(v, &n.word, |d| loading::content(&src.lib, v.path(d)))?,
                            false => n.word,
                        };
                        Some((n.distance, word))
                    })
                    .collect::<Vec<_>>()
            });
            (near, Vec::new())
        });
        match found {
            Ok((None, _)) => return None,
            Ok((Some(words), _)) => {
                best.resize(words.len(), None);
                for (b, w) in best.iter_mut().zip(words) {
                    if w.as_ref().is_some_and(|w| b.as_ref().is_none_or(|b| w.0 < b.0)) {
                        *b = w;
                    }
                }
            }
            Err(e) => warnings.push(format!("{}: did you mean not found: {e}", src.name)),
        }
    }
    if best.iter().all(Option::is_none) {
        return None;
    }
    let lookup = q.lookup_words();
    let words: Vec<&str> = q
        .words
        .iter()
        .map(|w| match lookup.iter().position(|l| l == w).and_then(|i| best.get(i)?.as_ref()) {
            Some((_, near)) => near.as_str(),
            None => w.as_str(),
        })
        .collect();
    Some(words.join(" "))
}

/// Cuts a hit's content, then its snippet, so the whole hit costs at most
/// `room` tokens; false when its row alone does not fit or nothing of the
/// snippet and content would be left.
fn fit(h: &mut Hit, room: usize) -> bool {
    let (summary, content) = (h.summary.take(), h.content.take());
    let row = row_tokens(h);
    if row >= room || (summary.is_none() && content.is_none()) {
        return false;
    }
    let mut left = room - row;
    if let Some(sn) = summary {
        let cut = loading::clip_tokens(&sn, left);
        left -= loading::tokens(&cut);
        h.summary = (!cut.is_empty()).then_some(cut);
    }
    if let Some(c) = content.filter(|_| left > 1) {
        let cut = loading::clip_tokens(&c, left);
        h.content = (!cut.is_empty()).then_some(cut);
    }
    h.truncated = true;
    h.tokens = row_tokens(h);
    h.summary.is_some() || h.content.is_some()
}

/// Estimated tokens of a hit as loaded: its index row, snippet and content.
fn row_tokens(h: &Hit) -> usize {
    let row = format!(
        "{} {} {} {} {}",
        h.path,
        h.topic,
        h.title.as_deref().unwrap_or(""),
        h.doc_type.as_deref().unwrap_or(""),
        h.keywords.join(", ")
    );
    loading::tokens(&row)
        + h.summary.as_deref().map_or(0, loading::tokens)
        + h.content.as_deref().map_or(0, loading::tokens)
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The audit event of an outcome.
pub fn audit_event(o: &Outcome, ts: String) -> audit::Event {
    audit::Event {
        ts,
        event_type: "query",
        query: o.summary.query.clone(),
        sources_queried: o.summary.sources_queried.clone(),
        sources_with_findings: o.summary.sources_with_findings.clone(),
        sources_failed: o.summary.sources_failed.clone(),
        hits: o.summary.hits,
        direct: o.summary.direct,
        recommended: o.summary.recommended,
        matched: o.summary.matched,
    }
}
