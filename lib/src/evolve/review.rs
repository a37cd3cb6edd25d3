//! Seed 000 evolve step 5, REVIEW: a composite score of four components,
//! each in 0..=1, with fixed weights; a proposal is `approved` only at a
//! score ≥ 0.95, else `rejected` with the reasons points were lost.
//!
//! | component | weight | 1.0 means |
//! |---|---|---|
//! | examples | 0.40 | every example behaves (halved when there is no clean example) |
//! | backtest | 0.30 | nothing that was safe is newly flagged: `max(0, 1 − 10 × fp_rate)` |
//! | overlap  | 0.15 | no positive example is already caught: `1 − overlap_fraction` |
//! | severity | 0.15 | the severity is justified (see [`severity_justified`]) |
//!
//! One false positive in ten safe files already costs the whole backtest
//! component, so a rule that flags ordinary content cannot be approved;
//! a rule that duplicates rules in force loses up to 0.15 and fails too.

use serde_json::json;

use super::audit::Line;
use super::proposal::{self, Components, Proposal, Review, Status};
use super::select::{self, Item, Selection};
use super::validate::into_rec;
use super::Rec;
use crate::clock;
use crate::error::Result;
use crate::guard::rules::Severity;
use crate::library::Library;
use crate::lock;
use crate::write::integrate::Group;

/// Weight of the examples component.
pub const W_EXAMPLES: f64 = 0.40;
/// Weight of the backtest component.
pub const W_BACKTEST: f64 = 0.30;
/// Weight of the overlap component.
pub const W_OVERLAP: f64 = 0.15;
/// Weight of the severity component.
pub const W_SEVERITY: f64 = 0.15;
/// Seed: the composite score a proposal needs.
pub const APPROVE_AT: f64 = 0.95;
/// A false-positive rate this high zeroes the backtest component.
pub const FP_ZERO_AT: f64 = 0.10;

/// Whether the severity is justified, and why not: `medium` always;
/// `high` with a rationale; `critical` with a rationale, at least two
/// positive examples, a reference, and nothing newly flagged.
pub fn severity_justified(p: &Proposal) -> std::result::Result<(), String> {
    let rationale = !p.rationale.trim().is_empty();
    let newly = p.validation.as_ref().and_then(|v| v.backtest.as_ref()).map_or(0, |b| b.newly_flagged);
    match p.severity {
        Severity::Medium => Ok(()),
        Severity::High if rationale => Ok(()),
        Severity::High => Err("high severity without a rationale".into()),
        Severity::Critical => {
            let mut why = Vec::new();
            if !rationale {
                why.push("no rationale");
            }
            if p.matches.len() < 2 {
                why.push("fewer than 2 positive examples");
            }
            if p.references.is_empty() {
                why.push("no reference");
            }
            if newly > 0 {
                why.push("flags content that was safe");
            }
            if why.is_empty() {
                Ok(())
            } else {
                Err(format!("critical severity not justified: {}", why.join(", ")))
            }
        }
    }
}

/// Scores a validated proposal.
pub fn score(p: &Proposal, ts: &str) -> Review {
    let mut reasons = Vec::new();
    let v = p.validation.as_ref();
    let total = v.map_or(0, |v| v.examples);
    let mut examples = if total == 0 { 0.0 } else { v.map_or(0, |v| v.examples_passed) as f64 / total as f64 };
    if examples < 1.0 {
        reasons.push(format!("{} of {total} examples misbehave", total - v.map_or(0, |v| v.examples_passed)));
    }
    if p.clean.is_empty() {
        examples *= 0.5;
        reasons.push("no clean (negative) example".into());
    }
    let bt = v.and_then(|v| v.backtest.as_ref());
    let backtest = match bt {
        Some(b) => (1.0 - b.fp_rate / FP_ZERO_AT).max(0.0),
        None => {
            reasons.push("no backtest".into());
            0.0
        }
    };
    if let Some(b) = bt.filter(|b| b.newly_flagged > 0) {
        reasons
            .push(format!("newly flags {} of {} safe files (fp rate {})", b.newly_flagged, b.safe_before, b.fp_rate));
    }
    let fraction = v.map_or(1.0, |v| v.overlap_fraction);
    if fraction > 0.0 {
        reasons.push(format!(
            "{:.0}% of positive examples already caught by {}",
            fraction * 100.0,
            v.map(|v| v.overlap.join(", ")).unwrap_or_default()
        ));
    }
    let severity = match severity_justified(p) {
        Ok(()) => 1.0,
        Err(e) => {
            reasons.push(e);
            0.0
        }
    };
    let c = Components {
        examples: super::round4(examples),
        backtest: super::round4(backtest),
        overlap: super::round4(1.0 - fraction),
        severity,
    };
    let total = super::round4(
        W_EXAMPLES * c.examples + W_BACKTEST * c.backtest + W_OVERLAP * c.overlap + W_SEVERITY * c.severity,
    );
    Review { ts: ts.to_string(), score: total, approved: total >= APPROVE_AT, components: c, reasons }
}

/// REVIEW over a selection (default: every validated proposal).
pub fn review(lib: &Library, sel: Selection, commit: bool, lock_opts: &lock::Options) -> Result<Vec<Rec>> {
    let ts = clock::format(clock::now()?);
    lock::with_lock(lib, lock_opts, || {
        crate::write::recover_noted(lib)?;
        let mut items = select::resolve(lib, sel, &[Status::Validated]);
        let mut group = Group::default();
        let mut landed = 0;
        for item in items.iter_mut() {
            let Item::Work(l) = item else { continue };
            let r = score(&l.proposal, &ts);
            l.proposal.status = if r.approved { Status::Approved } else { Status::Rejected };
            let detail = json!({"score": r.score, "reasons": r.reasons});
            l.proposal.review = Some(r);
            group.stage(lib, &l.path, &proposal::render(l)?)?;
            let line = Line::new(&ts, "review", Some(&l.proposal.id), l.proposal.status.as_str(), detail);
            group.owe(&line, vec![l.path.clone()])?;
            landed += 1;
        }
        // One journaled group: the proposals, their audit lines and the
        // commit land together or are finished by the next writer.
        group.land(lib, commit.then(|| format!("task-ai(library):evolve review {landed} proposals")))?;
        Ok(items.into_iter().map(into_rec).collect())
    })
}
