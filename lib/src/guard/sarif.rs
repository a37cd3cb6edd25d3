//! SARIF 2.1.0 output (issue 6 "Interface"), in the shape GitHub code
//! scanning accepts: every rule in `tool.driver.rules` with a
//! `security-severity`, one result per finding with a physical location
//! (line ≥ 1), policy suppressions as SARIF `suppressions`, and the
//! verdicts in the run's property bag.

use serde_json::{json, Value};

use super::engine::Engine;
use super::rules::Severity;
use super::scan::TargetResult;

/// The schema URI written into the log.
pub const SCHEMA: &str = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Critical => "error",
        Severity::High => "warning",
        Severity::Medium => "note",
    }
}

fn security_severity(s: Severity) -> &'static str {
    match s {
        Severity::Critical => "9.5",
        Severity::High => "7.5",
        Severity::Medium => "5.0",
    }
}

/// The whole SARIF log for a scan.
pub fn log(engine: &Engine, results: &[TargetResult]) -> Value {
    let rules: Vec<Value> = engine
        .rules()
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "name": r.id.replace(['-', '.'], "_"),
                "shortDescription": {"text": r.description},
                "fullDescription": {"text": format!("{} ({}, {})", r.description, r.category, r.severity)},
                "defaultConfiguration": {"level": level(r.severity)},
                "properties": {
                    "tags": ["security", r.category],
                    "security-severity": security_severity(r.severity),
                    "precision": "medium"
                }
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in results {
        for f in &t.findings {
            let index = engine.rules().iter().position(|r| r.id == f.rule);
            let mut res = json!({
                "ruleId": f.rule,
                "level": level(f.severity),
                "message": {"text": format!("{}: {}", f.description, f.matched)},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": f.path.trim_start_matches("./")},
                        "region": {"startLine": f.line.max(1), "startColumn": f.column.max(1)}
                    }
                }],
                "properties": {"severity": f.severity, "category": f.category, "context": f.context}
            });
            if let Some(i) = index {
                res["ruleIndex"] = json!(i);
            }
            if let Some(reason) = &f.suppressed {
                res["suppressions"] = json!([{"kind": "external", "justification": reason}]);
            }
            out.push(res);
        }
    }
    let verdicts: Vec<Value> = results.iter().map(|t| json!(t.verdict)).collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "kb-guard", "version": env!("CARGO_PKG_VERSION"), "rules": rules}},
            "results": out,
            "columnKind": "unicodeCodePoints",
            "properties": {"verdicts": verdicts}
        }]
    })
}
