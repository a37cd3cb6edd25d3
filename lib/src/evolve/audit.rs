//! Seed 000 `.core-rule-proposals/.audit.log`: the JSON Lines audit trail
//! of the evolve loop, one line per proposal per step (and one per stamp),
//! appended whole-line under the library lock.

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::library::Library;

/// The audit log, library-relative.
pub const FILE: &str = crate::write::integrate::AUDIT_LOG;

/// One audit line.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "record", rename = "evolve_audit")]
pub struct Line {
    /// When.
    pub ts: String,
    /// propose, validate, review, integrate or scan.
    pub step: &'static str,
    /// The proposal (absent for scan stamps and intel duplicates).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal: Option<String>,
    /// The proposal's status after the step (or duplicate, deferred, core, extended).
    pub status: String,
    /// What the step saw (score, problems, file, ...).
    #[serde(skip_serializing_if = "Value::is_null")]
    pub detail: Value,
}

impl Line {
    /// A line for `step` at `ts`.
    pub fn new(ts: &str, step: &'static str, proposal: Option<&str>, status: &str, detail: Value) -> Line {
        Line { ts: ts.to_string(), step, proposal: proposal.map(str::to_string), status: status.to_string(), detail }
    }
}

/// Appends lines. Callers hold the library lock.
pub fn append(lib: &Library, lines: &[Line]) -> Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut text = String::new();
    for l in lines {
        text.push_str(&serde_json::to_string(l).map_err(|e| Error::msg(format!("encoding audit line: {e}")))?);
        text.push('\n');
    }
    atomic::append_lines(&lib.path(FILE), &text)
}
