//! Seed 000 evolve step 2, PROPOSE: each threat-intel record becomes a
//! numbered `.core-rule-proposals/CORE-XXX.md`, unless it is a duplicate —
//! an intel id already proposed, a pattern a rule or proposal already has,
//! or samples the rules in force already catch every one of. `--scheduled`
//! proposes only for the layers whose scan is due (Core 7 d, Extended 1 d);
//! each layer that ran gets its `.last-scan-*` stamp. All under the lock,
//! one audit line per record, one commit.

use std::collections::BTreeSet;
use std::fs;

use serde::Serialize;
use serde_json::json;

use super::audit::{self, Line};
use super::intel::{self, Intel};
use super::proposal::{self, Layer, Loaded, Proposal, Status};
use super::{Rec, CORE_INTERVAL_SECS, EXTENDED_INTERVAL_SECS, LAST_SCAN_CORE, LAST_SCAN_EXTENDED};
use crate::clock;
use crate::error::Result;
use crate::fs::atomic;
use crate::guard::rules::Severity;
use crate::library::git;
use crate::library::Library;
use crate::lock;

/// How PROPOSE runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only the layers whose scan interval has passed.
    pub scheduled: bool,
    /// With `scheduled`: ignore the intervals.
    pub force: bool,
    /// Commit when the library is a git repository.
    pub commit: bool,
    /// Lock timeout and holder.
    pub lock: lock::Options,
}

/// The stamp file of a layer.
pub fn stamp_file(layer: Layer) -> &'static str {
    match layer {
        Layer::Core => LAST_SCAN_CORE,
        Layer::Extended => LAST_SCAN_EXTENDED,
    }
}

/// The interval of a layer, in seconds.
pub fn interval(layer: Layer) -> i64 {
    match layer {
        Layer::Core => CORE_INTERVAL_SECS,
        Layer::Extended => EXTENDED_INTERVAL_SECS,
    }
}

/// A layer's last scan (epoch seconds), if stamped. Missing, unreadable or
/// not a number is "never": the scan runs again, which only re-proposes
/// (proposals are deduplicated), so nothing is lost.
pub fn last_scan(lib: &Library, layer: Layer) -> Option<i64> {
    fs::read_to_string(lib.path(stamp_file(layer))).ok()?.trim().parse().ok()
}

/// Whether a layer's scan is due at `now` (epoch seconds).
pub fn due(lib: &Library, layer: Layer, now: i64) -> bool {
    last_scan(lib, layer).is_none_or(|t| now - t >= interval(layer))
}

/// Runs PROPOSE over parsed intel lines.
pub fn propose(lib: &Library, lines: super::Lines, opts: &Options) -> Result<Vec<Rec>> {
    let now = clock::now()?;
    let ts = clock::format(now);
    let (engine, _) = super::engine(lib)?;
    lock::with_lock(lib, &opts.lock, || {
        crate::write::recover_noted(lib)?;
        let run = |l: Layer| !opts.scheduled || opts.force || due(lib, l, now.as_second());
        let existing: Vec<Loaded> = proposal::all(lib).into_iter().filter_map(|(_, r)| r.ok()).collect();
        let mut next = proposal::next_number(lib);
        let mut seen: Vec<(String, usize)> = Vec::new();
        let mut new: Vec<Loaded> = Vec::new();
        let mut out = Vec::new();
        let mut audits = Vec::new();
        for (line, obj) in lines {
            let intel = match obj.and_then(intel::parse) {
                Ok(i) => i,
                Err(e) => {
                    out.push(Rec::LineError(line, e));
                    continue;
                }
            };
            if let Some((_, first)) = seen.iter().find(|(id, _)| *id == intel.id) {
                out.push(Rec::LineError(line, format!("duplicate intel id {} (first on line {first})", intel.id)));
                continue;
            }
            seen.push((intel.id.clone(), line));
            let layer = intel.layer.unwrap_or(Layer::Extended);
            if !run(layer) {
                let next_due = last_scan(lib, layer).map(|t| t + interval(layer));
                let next_due = next_due.and_then(|t| jiff::Timestamp::from_second(t).ok()).map(clock::format);
                out.push(Rec::of(&Deferred { source: &intel.id, layer: layer.as_str(), next_due }));
                audits.push(Line::new(
                    &ts,
                    "propose",
                    None,
                    "deferred",
                    json!({"source": intel.id, "layer": layer.as_str()}),
                ));
                continue;
            }
            let all = existing.iter().chain(new.iter());
            if let Some(dups) = duplicate_of(&intel, all, &engine) {
                let reason = dups.1;
                out.push(Rec::of(&Duplicate { source: &intel.id, duplicate_of: &dups.0, reason: &reason }));
                audits.push(Line::new(
                    &ts,
                    "propose",
                    None,
                    "duplicate",
                    json!({"source": intel.id, "duplicate_of": dups.0}),
                ));
                continue;
            }
            let id = format!("CORE-{next:03}");
            next += 1;
            let p = from_intel(&id, &intel, layer, &ts);
            let l = Loaded {
                body: proposal::body(&id, &intel.title, &intel.description),
                path: proposal::path_of(&id),
                proposal: p,
            };
            proposal::save(lib, &l)?;
            let missing = l.proposal.missing();
            audits.push(Line::new(
                &ts,
                "propose",
                Some(&id),
                l.proposal.status.as_str(),
                json!({"source": intel.id, "missing": missing}),
            ));
            out.push(Rec::Record(l.record()));
            new.push(l);
        }
        let mut paths: Vec<String> = new.iter().map(|l| l.path.clone()).collect();
        for layer in [Layer::Core, Layer::Extended] {
            if run(layer) {
                atomic::write(&lib.path(stamp_file(layer)), format!("{}\n", now.as_second()).as_bytes())?;
                audits.push(Line::new(&ts, "scan", None, layer.as_str(), json!({"stamp": now.as_second()})));
                paths.push(stamp_file(layer).into());
            }
        }
        audit::append(lib, &audits)?;
        if opts.commit && !audits.is_empty() {
            paths.push(audit::FILE.into());
            let message = match (new.first(), new.last()) {
                (Some(a), Some(b)) if a.proposal.id != b.proposal.id => {
                    format!("task-ai(library):evolve propose {}..{}", a.proposal.id, b.proposal.id)
                }
                (Some(a), _) => format!("task-ai(library):evolve propose {}", a.proposal.id),
                _ => "task-ai(library):evolve scan".to_string(),
            };
            git::commit(lib, &paths, &message)?;
        }
        Ok(out)
    })
}

/// The proposal an intel record makes: given fields kept, the rest
/// derived; `draft` when something still needs an agent.
fn from_intel(id: &str, i: &Intel, layer: Layer, ts: &str) -> Proposal {
    let samples: Vec<String> = i.samples.iter().filter(|s| !s.trim().is_empty()).cloned().collect();
    let mut p = Proposal {
        id: id.to_string(),
        title: i.title.trim().to_string(),
        layer,
        rule_id: id.to_ascii_lowercase(),
        category: i.category.clone().or_else(|| intel::infer_category(i)),
        severity: i.severity.unwrap_or(Severity::High),
        pattern: i.pattern.clone().filter(|p| !p.trim().is_empty()).or_else(|| intel::derive_pattern(&samples)),
        matches: samples,
        clean: i.negatives.iter().filter(|s| !s.trim().is_empty()).cloned().collect(),
        rationale: i.rationale.clone().unwrap_or_default(),
        status: Status::Proposed,
        source: i.id.clone(),
        references: i.references.clone(),
        created: ts.to_string(),
        validation: None,
        review: None,
        integrated: None,
    };
    p.status = p.initial_status();
    p
}

/// `(ids, reason)` when the intel duplicates a proposal or a rule.
/// `deferred`: intel whose layer is not due for a scheduled run.
#[derive(Serialize)]
#[serde(tag = "record", rename = "deferred")]
struct Deferred<'a> {
    /// The intel id.
    source: &'a str,
    /// `core` or `extended`.
    layer: &'static str,
    /// When its layer runs next (unknown before the first run).
    next_due: Option<String>,
}

/// `duplicate`: intel that would add nothing to the rules.
#[derive(Serialize)]
#[serde(tag = "record", rename = "duplicate")]
struct Duplicate<'a> {
    /// The intel id.
    source: &'a str,
    /// The proposals or rules it duplicates.
    duplicate_of: &'a [String],
    /// How.
    reason: &'a str,
}

fn duplicate_of<'a>(
    i: &Intel,
    proposals: impl Iterator<Item = &'a Loaded>,
    engine: &crate::guard::Engine,
) -> Option<(Vec<String>, String)> {
    let proposals: Vec<&Loaded> = proposals.collect();
    if let Some(p) = proposals.iter().find(|p| p.proposal.source == i.id) {
        return Some((vec![p.proposal.id.clone()], format!("intel {} was already proposed", i.id)));
    }
    if let Some(pat) = i.pattern.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
        if let Some(p) = proposals.iter().find(|p| p.proposal.pattern.as_deref().map(str::trim) == Some(pat)) {
            return Some((vec![p.proposal.id.clone()], "a proposal has the same pattern".into()));
        }
        if let Some(r) = engine.rules().iter().find(|r| r.pattern.as_deref().map(str::trim) == Some(pat)) {
            return Some((vec![r.id.clone()], "a rule in force has the same pattern".into()));
        }
    }
    let mut ids = BTreeSet::new();
    for s in i.samples.iter().filter(|s| !s.trim().is_empty()) {
        let found: Vec<String> =
            engine.scan_text("sample.txt", s).findings.into_iter().filter(|f| f.counts()).map(|f| f.rule).collect();
        if found.is_empty() {
            return None;
        }
        ids.extend(found);
    }
    Some((ids.into_iter().collect(), "the rules in force already catch every sample".into()))
}
