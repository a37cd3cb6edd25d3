//! Seed 002 `determineVerdict`: no findings → safe, any critical →
//! dangerous, otherwise caution; and the `verdict` record that closes each
//! target's findings. Suppressed findings do not count.

use std::fmt;

use serde::Serialize;

use super::finding::Finding;
use super::rules::Severity;
use crate::error::{Error, Result};

/// The seed's three verdicts, ordered safe < caution < dangerous.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Nothing found.
    Safe,
    /// Findings, none critical.
    Caution,
    /// At least one critical finding.
    Dangerous,
}

impl Verdict {
    /// Parses `--fail-on` values.
    pub fn parse(s: &str) -> Result<Verdict> {
        match s {
            "safe" => Ok(Verdict::Safe),
            "caution" => Ok(Verdict::Caution),
            "dangerous" => Ok(Verdict::Dangerous),
            other => Err(Error::usage(format!("unknown verdict '{other}' (expected caution or dangerous)"))),
        }
    }

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Safe => "safe",
            Verdict::Caution => "caution",
            Verdict::Dangerous => "dangerous",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The seed's `determineVerdict` over the findings that count.
pub fn determine(findings: &[Finding]) -> Verdict {
    let mut counted = findings.iter().filter(|f| f.counts()).peekable();
    if counted.peek().is_none() {
        return Verdict::Safe;
    }
    if counted.any(|f| f.severity == Severity::Critical) {
        Verdict::Dangerous
    } else {
        Verdict::Caution
    }
}

/// The `verdict` record: one per target, after its findings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "record", rename = "verdict")]
pub struct Record {
    /// The target as given or found.
    pub target: String,
    /// skill, file, stdin or text.
    pub kind: &'static str,
    /// safe, caution or dangerous.
    pub verdict: Verdict,
    /// Findings that count.
    pub findings: usize,
    /// Of which critical.
    pub critical: usize,
    /// Of which high.
    pub high: usize,
    /// Of which medium.
    pub medium: usize,
    /// Findings a policy suppressed (not counted).
    pub suppressed: usize,
    /// Matches beyond the per-rule limit (not listed, verdict unchanged).
    pub omitted: usize,
    /// Files scanned.
    pub files: usize,
    /// The seed's summary line.
    pub summary: String,
}

impl Record {
    /// Builds the record for `findings`.
    pub fn new(target: &str, kind: &'static str, findings: &[Finding], omitted: usize, files: usize) -> Record {
        let count = |s: Severity| findings.iter().filter(|f| f.counts() && f.severity == s).count();
        let (critical, high, medium) = (count(Severity::Critical), count(Severity::High), count(Severity::Medium));
        let counted = critical + high + medium;
        let summary = if counted == 0 {
            "No threats detected.".to_string()
        } else {
            format!("Found {counted} issue(s): {critical} critical, {high} high, {medium} medium.")
        };
        Record {
            target: target.to_string(),
            kind,
            verdict: determine(findings),
            findings: counted,
            critical,
            high,
            medium,
            suppressed: findings.len() - counted,
            omitted,
            files,
            summary,
        }
    }
}
