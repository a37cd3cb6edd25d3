//! Seed 002 `scanSkill`, for many targets at once: structure checks, then
//! every file scanned in parallel (indexed rayon map, so the output is the
//! same bytes at any thread count), the policy applied, one verdict per
//! target. Also the in-process entry point `scan_text` that kb-append uses.

use jiff::Timestamp;
use rayon::prelude::*;

use super::engine::{Engine, Scanned};
use super::finding::{Context, Finding};
use super::policy::Policy;
use super::structure;
use super::target::{self, EntryKind, Target, TargetKind};
use super::verdict::{self, Record, Verdict};
use crate::error::Result;
use crate::out::jsonl;

/// One target's findings (structure first, then files in path order) and
/// its verdict.
#[derive(Debug, Clone)]
pub struct TargetResult {
    /// The findings, suppressed ones included (marked).
    pub findings: Vec<Finding>,
    /// The verdict record.
    pub verdict: Record,
}

/// What `kb::guard::scan_text` returns: the verdict and the findings behind it.
#[derive(Debug, Clone)]
pub struct Report {
    /// safe, caution or dangerous.
    pub verdict: Verdict,
    /// Everything found, in line order.
    pub findings: Vec<Finding>,
}

impl Report {
    /// A one-line reason naming the worst findings, for refusals.
    pub fn reason(&self) -> String {
        let mut worst: Vec<&Finding> = self.findings.iter().filter(|f| f.counts()).collect();
        worst.sort_by_key(|f| std::cmp::Reverse(f.severity));
        let names: Vec<String> = worst
            .iter()
            .take(3)
            .map(|f| format!("{} {} line {}: {:?}", f.severity, f.rule, f.line, f.matched))
            .collect();
        format!("guard verdict {}: {}", self.verdict, names.join("; "))
    }
}

/// Scans text in memory with the core rules: the call kb-append makes
/// before it writes (`path` decides Markdown/code context).
pub fn scan_text(path: &str, text: &str) -> Result<Report> {
    Ok(scan_text_with(Engine::core()?, path, text))
}

/// [`scan_text`] with a given engine (core plus extended rules).
pub fn scan_text_with(engine: &Engine, path: &str, text: &str) -> Report {
    let findings = engine.scan_text(path, text).findings;
    Report { verdict: verdict::determine(&findings), findings }
}

enum Job<'a> {
    File { target: usize, path: &'a std::path::Path, display: &'a str },
    Stdin { target: usize },
}

/// Scans every target; `stdin` is the content for a `-` target.
pub fn scan_targets(
    engine: &Engine,
    targets: &[Target],
    stdin: &[u8],
    policy: Option<&Policy>,
    now: Timestamp,
) -> Vec<TargetResult> {
    let mut jobs = Vec::new();
    for (ti, t) in targets.iter().enumerate() {
        if t.kind == TargetKind::Stdin {
            jobs.push(Job::Stdin { target: ti });
        }
        for e in &t.entries {
            if e.kind == EntryKind::File {
                jobs.push(Job::File { target: ti, path: &e.fs, display: &e.display });
            }
        }
    }
    let progress = crate::out::progress::Progress::new("kb-guard: scanning", jobs.len());
    let scanned: Vec<(usize, Scanned)> = jobs
        .par_iter()
        .inspect(|_| progress.count())
        .map(|job| match job {
            Job::Stdin { target } => (*target, engine.scan_bytes("-", stdin)),
            Job::File { target, path, display } => match target::read(path) {
                Ok(data) => (*target, engine.scan_bytes(display, &data)),
                Err(e) => {
                    let f = engine.builtin("unreadable", display, 0, 0, &e.to_string(), Context::File);
                    (*target, Scanned { findings: vec![f], omitted: 0 })
                }
            },
        })
        .collect();
    let mut per_target: Vec<(Vec<Finding>, usize, usize)> = targets
        .par_iter()
        .map(|t| match t.kind {
            TargetKind::Skill => (structure::check(engine, t), 0, 0),
            _ => (loose_entry_findings(engine, t), 0, 0),
        })
        .collect();
    for (ti, s) in scanned {
        let slot = &mut per_target[ti];
        // Most targets are one file: its findings are taken, not copied.
        if slot.0.is_empty() {
            slot.0 = s.findings;
        } else {
            slot.0.extend(s.findings);
        }
        slot.1 += s.omitted;
        slot.2 += 1;
    }
    targets
        .iter()
        .zip(per_target)
        .map(|(t, (mut findings, omitted, files))| {
            if let Some(p) = policy {
                p.apply(&mut findings, now);
            }
            let verdict = Record::new(&t.display, t.kind.as_str(), &findings, omitted, files);
            TargetResult { findings, verdict }
        })
        .collect()
}

/// A single file target that is not a regular file: a FIFO, a device, a
/// broken or looping link, or something that cannot be stat'ed.
fn loose_entry_findings(engine: &Engine, t: &Target) -> Vec<Finding> {
    let mut out = Vec::new();
    for e in &t.entries {
        match &e.kind {
            EntryKind::Special(what) => out.push(engine.builtin("special_file", &e.display, 0, 0, what, Context::File)),
            EntryKind::Unreadable(why) => {
                let link = e.fs.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink());
                let id = if link { "broken_symlink" } else { "unreadable" };
                out.push(engine.builtin(id, &e.display, 0, 0, why, Context::File));
            }
            _ => {}
        }
    }
    out
}

/// The findings and verdicts as aligned tables for people.
pub fn table(results: &[TargetResult]) -> String {
    let mut rows = Vec::new();
    for r in results {
        for f in &r.findings {
            let mut sev = f.severity.to_string();
            if f.suppressed.is_some() {
                sev = format!("({sev})");
            }
            rows.push(vec![
                sev,
                f.rule.clone(),
                format!("{}:{}:{}", f.path, f.line, f.column),
                format!("{:?}", f.context).to_lowercase(),
                f.matched.replace(['\t', '\r'], " "),
            ]);
        }
    }
    let mut out = String::new();
    if !rows.is_empty() {
        out.push_str(&jsonl::table(&["SEVERITY", "RULE", "LOCATION", "CONTEXT", "MATCH"], &rows));
        out.push('\n');
    }
    let vrows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let v = &r.verdict;
            vec![v.verdict.to_string(), v.kind.to_string(), v.target.clone(), v.summary.clone()]
        })
        .collect();
    out.push_str(&jsonl::table(&["VERDICT", "KIND", "TARGET", "SUMMARY"], &vrows));
    out
}
