//! SARIF 2.1.0 output, in the shape GitHub code
//! scanning accepts: every rule in `tool.driver.rules` with a
//! `security-severity`, one result per finding with a physical location
//! (line ≥ 1), policy suppressions as SARIF `suppressions`, and the
//! verdicts in the run's property bag. Artifact URIs are percent-encoded
//! URI references relative to `%SRCROOT%` (the working directory, given
//! in `originalUriBaseIds`), as code scanning resolves them (a
//! `#` or a space in a name read as a fragment or rejected).

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

/// Percent-encodes a path for a URI: every byte but the unreserved ones
/// and `/` (RFC 3986).
fn encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The `artifactLocation` of a finding's path: relative to `%SRCROOT%`
/// when it is relative or under the working directory, else a `file:` URI.
fn artifact(path: &str, cwd: Option<&std::path::Path>) -> Value {
    let p = std::path::Path::new(path);
    let rel = if p.is_absolute() { cwd.and_then(|c| p.strip_prefix(c).ok()) } else { Some(p) };
    match rel {
        Some(r) => {
            let r = r.to_string_lossy();
            json!({"uri": encode(r.trim_start_matches("./")), "uriBaseId": "%SRCROOT%"})
        }
        None => json!({"uri": format!("file://{}", encode(path))}),
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
    let cwd = std::env::current_dir().ok();
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
                        "artifactLocation": artifact(&f.path, cwd.as_deref()),
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
            "originalUriBaseIds": {"%SRCROOT%": {"uri": format!("file://{}/", encode(&cwd.as_deref().map(|p| p.display().to_string()).unwrap_or_default()).trim_end_matches('/'))}},
            "columnKind": "unicodeCodePoints",
            "properties": {"verdicts": verdicts}
        }]
    })
}
