//! `kb-guard filter`: the guard in front of kb-append.
//! Each write request (`{"path","content","mode","notebook"}`) is scanned
//! as the document it would become; the request passes through unchanged
//! but for an added `verdict`, and a dangerous one is refused, unless it
//! carries `allow_risky` with a reason (which kb-append records in the
//! changelog), so `kb-guard filter | kb-append batch` is the guarded write.

use jiff::Timestamp;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::{Map, Value};

use super::engine::Engine;
use super::policy::Policy;
use super::rules::Severity;
use super::verdict::{self, Verdict};
use crate::out::jsonl::ErrorRecord;

/// What happened to one request line.
pub enum Outcome {
    /// Passes on, with `verdict` added.
    Pass(Map<String, Value>),
    /// Dangerous: refused with a message and the findings behind it.
    Refused(String, Refusal),
    /// Not a usable request (missing or wrong fields).
    Invalid(String),
}

/// What a refusal's `error` record carries after its message: the path,
/// and for a dangerous verdict the verdict and the findings that count.
#[derive(Debug, Serialize)]
pub struct Refusal {
    /// The request's path.
    pub path: String,
    /// `dangerous` (absent when the path itself was refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The findings behind the verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findings: Option<Vec<Cited>>,
}

/// One finding as a refusal cites it.
#[derive(Debug, Serialize)]
pub struct Cited {
    /// The rule id.
    pub rule: String,
    /// Its severity (after policy and context).
    pub severity: Severity,
    /// 1-based line.
    pub line: usize,
    /// The matched text.
    pub matched: String,
}

/// One input line: its number and the parsed object or why it did not parse.
pub type Line = (usize, Result<Map<String, Value>, String>);

/// Filters parsed request lines, in parallel, keeping their order.
pub fn filter(engine: &Engine, policy: Option<&Policy>, now: Timestamp, lines: Vec<Line>) -> Vec<(usize, Outcome)> {
    lines
        .into_par_iter()
        .map(|(line, obj)| {
            let outcome = match obj {
                Ok(obj) => one(engine, policy, now, obj),
                Err(msg) => Outcome::Invalid(msg),
            };
            (line, outcome)
        })
        .collect()
}

fn one(engine: &Engine, policy: Option<&Policy>, now: Timestamp, mut obj: Map<String, Value>) -> Outcome {
    let (path, content) = match (obj.get("path"), obj.get("content")) {
        (Some(Value::String(p)), Some(Value::String(c))) => (p.clone(), c.clone()),
        (None, _) => return Outcome::Invalid("missing field 'path'".into()),
        (_, None) => return Outcome::Invalid("missing field 'content'".into()),
        _ => return Outcome::Invalid("'path' and 'content' must be strings".into()),
    };
    // The path rules kb-append applies: a request for a name git
    // or kb-tools gives a meaning to is refused here too, never rated safe.
    if let Some(why) = crate::library::names::refusal(&path) {
        let msg = format!("{}: {why}", crate::library::names::shown(&path));
        return Outcome::Refused(msg, Refusal { path, verdict: None, findings: None });
    }
    let mut findings = engine.scan_text(&path, &content).findings;
    if let Some(p) = policy {
        p.apply(&mut findings, now);
    }
    let v = verdict::determine(&findings);
    let risky_ok = matches!(obj.get("allow_risky"), Some(Value::String(r)) if !r.trim().is_empty());
    if v == Verdict::Dangerous && !risky_ok {
        let report = super::scan::Report { verdict: v, findings: findings.clone() };
        let cited: Vec<Cited> = findings
            .iter()
            .filter(|f| f.counts())
            .map(|f| Cited { rule: f.rule.clone(), severity: f.severity, line: f.line, matched: f.matched.clone() })
            .collect();
        let msg = format!("{path}: refused, {}", report.reason());
        return Outcome::Refused(msg, Refusal { path, verdict: Some(v), findings: Some(cited) });
    }
    obj.insert("verdict".into(), Value::String(v.as_str().into()));
    Outcome::Pass(obj)
}

/// `kb-guard filter`'s output: passed requests as they came, refusals as
/// error records (with the verdict's fields) and a line on stderr, exit 1.
pub fn print(outcomes: Vec<(usize, Outcome)>, out: &mut crate::out::jsonl::Out) -> crate::Result<()> {
    for (line, outcome) in outcomes {
        match outcome {
            Outcome::Pass(obj) => out.record(&obj)?,
            Outcome::Invalid(msg) => out.line_error(line, &msg, None)?,
            Outcome::Refused(msg, refusal) => {
                crate::out::warn("kb-guard", &format!("<stdin>:{line}: {msg}"));
                out.record(&ErrorRecord { line: Some(line), message: &msg, about: refusal })?;
                out.raise(crate::Exit::Negative);
            }
        }
    }
    Ok(())
}
