//! A scan policy: a YAML file the operator owns that
//! disables rules, changes severities, and suppresses findings by path glob
//! and rule id, each suppression with a reason and an expiry date. An
//! expired suppression stops suppressing and says so on the finding. The
//! scanned content has no say: there are no inline suppression comments.
//!
//! ```yaml
//! disable: [net-06]
//! severity: {exf-17: medium}
//! suppress:
//!   - {path: "docs/security/**", rule: des-01, reason: "explains rm -rf", expires: 2026-12-31}
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use jiff::Timestamp;
use serde::Deserialize;

use super::engine::Engine;
use super::finding::Finding;
use super::rules::Severity;
use crate::clock;
use crate::doc::yaml;
use crate::error::{Error, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    #[serde(default)]
    disable: Vec<String>,
    #[serde(default)]
    severity: BTreeMap<String, String>,
    #[serde(default)]
    suppress: Vec<RawSuppression>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuppression {
    path: String,
    rule: String,
    reason: String,
    expires: String,
}

struct Suppression {
    glob: GlobMatcher,
    rule: String,
    reason: String,
    expires: Timestamp,
    expires_text: String,
}

/// A loaded, checked policy.
pub struct Policy {
    disable: Vec<String>,
    severity: BTreeMap<String, Severity>,
    suppress: Vec<Suppression>,
}

impl Policy {
    /// Reads and checks a policy file: every rule id must exist (`*` is
    /// allowed in suppressions), globs must compile, reasons must be given,
    /// expiry dates must parse.
    pub fn load(path: &Path, engine: &Engine) -> Result<Policy> {
        let text = super::rules::read_named(path)?;
        Policy::parse(&text, engine).map_err(|e| Error::msg(format!("policy {}: {e}", path.display())))
    }

    /// Parses policy text (see [`Policy::load`]).
    pub fn parse(text: &str, engine: &Engine) -> Result<Policy> {
        let raw: RawPolicy = yaml::from_str(text)?;
        let known = |id: &str| -> Result<()> {
            match engine.rule(id) {
                Some(_) => Ok(()),
                None => Err(Error::msg(format!("unknown rule id '{id}'"))),
            }
        };
        for id in &raw.disable {
            known(id)?;
        }
        let mut severity = BTreeMap::new();
        for (id, s) in raw.severity {
            known(&id)?;
            severity.insert(id, Severity::parse(&s)?);
        }
        let mut suppress = Vec::new();
        for s in raw.suppress {
            if s.rule != "*" {
                known(&s.rule)?;
            }
            if s.reason.trim().is_empty() {
                return Err(Error::msg(format!("suppression of {} on {} has no reason", s.rule, s.path)));
            }
            let glob = GlobBuilder::new(&s.path)
                .literal_separator(true)
                .build()
                .map_err(|e| Error::msg(format!("bad path glob '{}': {e}", s.path)))?
                .compile_matcher();
            let expires = clock::parse_instant(&s.expires)
                .ok_or_else(|| Error::msg(format!("bad expiry date '{}' (expected YYYY-MM-DD)", s.expires)))?;
            suppress.push(Suppression { glob, rule: s.rule, reason: s.reason, expires, expires_text: s.expires });
        }
        Ok(Policy { disable: raw.disable, severity, suppress })
    }

    /// Applies the policy to one target's findings at instant `now`.
    pub fn apply(&self, findings: &mut Vec<Finding>, now: Timestamp) {
        findings.retain(|f| !self.disable.contains(&f.rule));
        for f in findings.iter_mut() {
            if let Some(&s) = self.severity.get(&f.rule) {
                f.severity = s;
                f.lowered = None;
            }
            let path = f.path.trim_start_matches("./");
            let hit = self.suppress.iter().find(|s| (s.rule == "*" || s.rule == f.rule) && s.glob.is_match(path));
            if let Some(s) = hit {
                if now >= s.expires {
                    f.expired_suppression = Some(format!("{} (expired {})", s.reason, s.expires_text));
                } else {
                    f.suppressed = Some(format!("{} (until {})", s.reason, s.expires_text));
                }
            }
        }
    }
}
