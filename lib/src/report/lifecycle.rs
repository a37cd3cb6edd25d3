//! The thinking-pattern lifecycle (seed 000 "Thinking CoT patterns" and
//! `status` dimension 5): draft → active (referenced by ≥ 1 later task) →
//! validated (referenced by ≥ 3 tasks that each reached an ACCEPT) →
//! deprecated (≥ 2 failures, i.e. REPLANs after citing it, or superseded by
//! a newer pattern, which its frontmatter `superseded_by` names). States
//! are computed from the changelog here; `--write` records them in frontmatter
//! through the writer ([`crate::write::fields`]).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::Result;
use crate::library::entry::{Category, Entry};
use crate::library::scan;
use crate::library::Library;
use crate::lock;
use crate::report::usage::{self, Usage};

/// Seed: validated after this many accepted tasks.
pub const VALIDATED_MIN_ACCEPTED: usize = 3;
/// Seed: deprecated after this many failures.
pub const DEPRECATED_MIN_FAILURES: usize = 2;
/// The four states in lifecycle order.
pub const STATES: &[&str] = &["draft", "active", "validated", "deprecated"];

/// One pattern's computed state.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "lifecycle")]
pub struct Pattern {
    /// Library-relative path.
    pub path: String,
    /// The pattern's topic.
    pub topic: String,
    /// The computed state.
    pub state: String,
    /// The state its frontmatter records (`state`/`lifecycle`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<String>,
    /// `referenced` lines.
    pub usage_count: usize,
    /// References followed by a REPLAN within 24 h.
    pub failures: usize,
    /// Tasks that referenced it and reached ACCEPT.
    pub accepted_tasks: usize,
    /// The pattern that supersedes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// Deprecated patterns need a human review (seed `status`).
    pub needs_review: bool,
}

/// The state the seed's rules give a pattern.
pub fn state(u: &Usage, superseded: bool) -> &'static str {
    if superseded || u.failures >= DEPRECATED_MIN_FAILURES {
        "deprecated"
    } else if u.accepted_tasks >= VALIDATED_MIN_ACCEPTED {
        "validated"
    } else if u.usage_count >= 1 {
        "active"
    } else {
        "draft"
    }
}

/// Computes every thinking pattern's state, sorted by path.
pub fn compute(entries: &[Entry], usage: &BTreeMap<String, Usage>) -> Vec<Pattern> {
    entries
        .iter()
        .filter(|e| e.category == Category::ThinkingPattern)
        .map(|e| {
            let u = usage::of(usage, &e.path);
            let s = state(&u, e.superseded_by.is_some());
            Pattern {
                path: e.path.clone(),
                topic: e.topic.clone(),
                state: s.to_string(),
                recorded: e.lifecycle.clone(),
                usage_count: u.usage_count,
                failures: u.failures,
                accepted_tasks: u.accepted_tasks,
                superseded_by: e.superseded_by.clone(),
                needs_review: s == "deprecated",
            }
        })
        .collect()
}

/// Counts per state as a JSON object in lifecycle order (every state present).
pub fn counts(patterns: &[Pattern]) -> serde_json::Map<String, serde_json::Value> {
    STATES
        .iter()
        .map(|s| (s.to_string(), serde_json::Value::from(patterns.iter().filter(|p| p.state == *s).count())))
        .collect()
}

/// The closing `lifecycle-summary` record: patterns per state and how
/// many need review.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "record", rename = "lifecycle-summary")]
pub struct Summary {
    /// Patterns per state.
    pub counts: serde_json::Map<String, serde_json::Value>,
    /// Patterns that need review.
    pub needs_review: usize,
}

/// The summary of `patterns`.
pub fn summary(patterns: &[Pattern]) -> Summary {
    Summary { counts: counts(patterns), needs_review: patterns.iter().filter(|p| p.needs_review).count() }
}

/// Loads the library's patterns with their computed states.
pub fn load(lib: &Library) -> Result<Vec<Pattern>> {
    let scan = scan::library(lib);
    let entries: Vec<Entry> = scan.docs.into_iter().map(|d| d.entry).collect();
    Ok(compute(&entries, &usage::load(lib)?))
}

/// `--write`: records each computed state in its pattern's frontmatter
/// (`state: <state>`) under the lock, updates the indexes and commits
/// `task-ai(library):thinking-pattern lifecycle`. Patterns whose frontmatter
/// is broken are left alone. Returns the paths written.
pub fn write(lib: &Library, patterns: &[Pattern], commit: bool, opts: &lock::Options) -> Result<Vec<String>> {
    let changes: Vec<(&str, &str)> = patterns
        .iter()
        .filter(|p| p.recorded.as_deref() != Some(p.state.as_str()))
        .map(|p| (p.path.as_str(), p.state.as_str()))
        .collect();
    crate::write::fields::set(lib, &changes, "state", commit, "task-ai(library):thinking-pattern lifecycle", opts)
}

/// `kb-relate lifecycle`: the patterns as a table, or as records (each
/// saying whether `--write` recorded its state) followed by the summary.
pub fn print(
    patterns: &[Pattern],
    written: &[String],
    table: bool,
    out: &mut crate::out::jsonl::Out,
) -> crate::Result<()> {
    if table {
        let rows: Vec<Vec<String>> = patterns
            .iter()
            .map(|p| {
                let review = if p.needs_review { "review" } else { "" };
                let w = if written.contains(&p.path) { "written" } else { "" };
                vec![
                    p.path.clone(),
                    p.state.clone(),
                    p.usage_count.to_string(),
                    p.failures.to_string(),
                    review.into(),
                    w.into(),
                ]
            })
            .collect();
        out.text(&crate::out::jsonl::table(&["Path", "State", "Used", "Failures", "Review", "Written"], &rows))?;
        return Ok(());
    }
    for p in patterns {
        let mut rec = serde_json::to_value(p).map_err(|e| crate::Error::msg(e.to_string()))?;
        rec["written"] = serde_json::json!(written.contains(&p.path));
        out.record(&rec)?;
    }
    out.record(&summary(patterns))?;
    Ok(())
}
