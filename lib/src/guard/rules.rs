//! Seed 002 `guard_patterns.ts`: the threat rules (id, category, severity,
//! pattern, description) kept as data in `rules/core.yaml`, compiled into
//! the binary, plus the extended rules hot-loaded from
//! `.library/.evolving-rules/security/active/*.yaml` (seed 000 `evolve`).
//! Every rule is checked on load: known category, a pattern that compiles to
//! a finite automaton and cannot match the empty string, and its own
//! examples. A broken file is an error, never a silently weaker scan.

use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::doc::yaml;
use crate::error::{Error, Result};

/// The library's evolved core rules, next to the extended `active/`
/// directory (`.evolving-rules/security/core.yaml`): `kb-guard rules
/// integrate` appends approved Core proposals here, and every scanner of
/// the library loads it right after the compiled-in core rules.
pub const LIBRARY_CORE_FILE: &str = "core.yaml";

/// The core rules, compiled in.
pub const CORE_YAML: &str = include_str!("../../../rules/core.yaml");

/// The seed's 13 categories; a rule outside them is refused.
pub const CATEGORIES: [&str; 13] = [
    "exfiltration",
    "prompt_injection",
    "destructive",
    "persistence",
    "network",
    "obfuscation",
    "execution",
    "supply_chain",
    "privilege_escalation",
    "credential_exposure",
    "path_traversal",
    "crypto_mining",
    "structure",
];

/// Seed 000's ten injection categories that `kb-guard sanitize` neutralises
/// in external content before it is stored.
pub const INJECTION_CATEGORIES: [&str; 10] = [
    "instruction_override",
    "role_hijack",
    "prompt_extraction",
    "template_markers",
    "jailbreak",
    "safety_bypass",
    "hidden_text",
    "exfiltration_link",
    "tool_invocation",
    "encoded_payload",
];

/// How bad a finding is; the seed's `Severity`. Ordered: medium < high < critical.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth a look.
    Medium,
    /// Suspicious; makes a verdict `caution`.
    High,
    /// Makes a verdict `dangerous`.
    Critical,
}

impl Severity {
    /// One level lower (medium stays medium): used when the context shows
    /// the match is talked about rather than done.
    pub fn lower(self) -> Severity {
        match self {
            Severity::Critical => Severity::High,
            _ => Severity::Medium,
        }
    }

    /// Parses `critical`, `high` or `medium`.
    pub fn parse(s: &str) -> Result<Severity> {
        match s {
            "critical" => Ok(Severity::Critical),
            "high" => Ok(Severity::High),
            "medium" => Ok(Severity::Medium),
            other => Err(Error::msg(format!("unknown severity '{other}' (expected critical, high or medium)"))),
        }
    }

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::High => "high",
            Severity::Medium => "medium",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One rule as written in a rules file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Stable id (`exf-01`, `pi-x01`, `blocked_extension`).
    pub id: String,
    /// One of [`CATEGORIES`].
    pub category: String,
    /// Severity before any lowering or policy.
    pub severity: Severity,
    /// What the rule catches, for people.
    pub description: String,
    /// The regex (absent for built-in checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Checked by code rather than by a pattern.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub builtin: bool,
    /// Shapes of ordinary use: a match at the same place lowers to medium.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub benign: Vec<String>,
    /// Shapes that make a match no threat at all (a sample config's
    /// placeholder, a loopback address): a match where one matches, at the
    /// same start, is no finding. The look-ahead a pattern cannot hold
    /// (the engine has none, to stay linear), kept beside it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub harmless: Vec<String>,
    /// The injection category `sanitize` neutralises, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inject: Option<String>,
    /// The seed's original pattern where ours fixes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
    /// Lines that must raise this rule.
    #[serde(default, rename = "match", skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<String>,
    /// Lines that must not raise it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clean: Vec<String>,
    /// Where the rule came from (`core` or a file path).
    #[serde(default, skip_deserializing)]
    pub source: String,
}

/// A `rule` record of `kb-guard rules list` (the rule without its examples).
#[derive(Serialize)]
#[serde(tag = "record", rename = "rule")]
pub struct Listed<'a> {
    /// Rule id.
    pub id: &'a str,
    /// Category.
    pub category: &'a str,
    /// Severity.
    pub severity: Severity,
    /// What it catches.
    pub description: &'a str,
    /// The regex, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<&'a str>,
    /// Checked by code.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub builtin: bool,
    /// Injection category for sanitize.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inject: Option<&'a str>,
    /// `core` or the extended file.
    pub source: &'a str,
}

impl<'a> From<&'a Rule> for Listed<'a> {
    fn from(r: &'a Rule) -> Listed<'a> {
        Listed {
            id: &r.id,
            category: &r.category,
            severity: r.severity,
            description: &r.description,
            pattern: r.pattern.as_deref(),
            builtin: r.builtin,
            inject: r.inject.as_deref(),
            source: &r.source,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    rules: Vec<Rule>,
}

/// The most bytes of one rule file: several times the largest
/// real one. Every writer compiles every rule, so a bigger file is refused
/// where it enters (integrate, a peer's commit) and, planted anyway, left
/// out with a warning, never compiled.
pub const MAX_FILE_BYTES: usize = 2 << 20;

/// The most rules of one file, and of a library's rule files together.
pub const MAX_RULES: usize = 10_000;

/// Parses a rules file's text and checks each rule's fields (not yet its
/// pattern or examples: see [`crate::guard::Engine`]).
pub fn parse(text: &str, source: &str) -> Result<Vec<Rule>> {
    if text.len() > MAX_FILE_BYTES {
        return Err(Error::msg(format!(
            "{source}: {} bytes, over the limit of {MAX_FILE_BYTES} bytes a rule file",
            text.len()
        )));
    }
    let file: RuleFile = yaml::from_str(text).map_err(|e| Error::msg(format!("{source}: {e}")))?;
    if file.rules.len() > MAX_RULES {
        return Err(Error::msg(format!(
            "{source}: {} rules, over the limit of {MAX_RULES} rules a rule file",
            file.rules.len()
        )));
    }
    let mut seen = HashSet::new();
    let mut rules = Vec::with_capacity(file.rules.len());
    for mut r in file.rules {
        r.source = source.to_string();
        check_fields(&r).map_err(|e| Error::msg(format!("{source}: rule {}: {e}", r.id)))?;
        if !seen.insert(r.id.clone()) {
            return Err(Error::msg(format!("{source}: rule id {} appears twice", r.id)));
        }
        rules.push(r);
    }
    Ok(rules)
}

/// Checks one rule's fields: id charset, known category and inject
/// category, a pattern (or builtin) and at least one `match` example.
pub fn check_fields(r: &Rule) -> std::result::Result<(), String> {
    if r.id.is_empty() || !r.id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) {
        return Err("id must be non-empty letters, digits, '-', '_' or '.'".into());
    }
    if !CATEGORIES.contains(&r.category.as_str()) {
        return Err(format!("unknown category '{}' (expected one of {})", r.category, CATEGORIES.join(", ")));
    }
    if let Some(i) = &r.inject {
        if !INJECTION_CATEGORIES.contains(&i.as_str()) {
            return Err(format!("unknown inject category '{i}' (expected one of {})", INJECTION_CATEGORIES.join(", ")));
        }
    }
    match (&r.pattern, r.builtin) {
        (None, false) => Err("needs a pattern (or builtin: true)".into()),
        (Some(_), true) => Err("a builtin rule has no pattern".into()),
        (Some(_), false) if r.matches.is_empty() => Err("needs at least one `match` example".into()),
        _ => Ok(()),
    }
}

/// The core rules (always valid: the test suite proves it).
pub fn core() -> Result<Vec<Rule>> {
    parse(CORE_YAML, "core")
}

/// The most bytes of a rule or policy file a user names: the document
/// limit, far above any real one; it only stops an endless read.
pub const MAX_NAMED_FILE: u64 = crate::library::scan::MAX_DOC_BYTES;

/// The text of a rule or policy file the user named (`rules validate
/// FILE`, `--policy FILE`): links are followed (the user chose the path),
/// but a FIFO or device is an error naming it, never a hang or an endless
/// read.
pub fn read_named(path: &Path) -> Result<String> {
    let bytes = crate::fs::nofollow::read_input(path, MAX_NAMED_FILE)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    String::from_utf8(bytes).map_err(|_| Error::msg(format!("{} is not UTF-8", path.display())))
}

/// The text of one of the library's own rule files, `None` when it does
/// not exist: never read through a link, and a FIFO or device planted in
/// its place is an error naming it, never a hang of every scan and write.
pub fn read_library(path: &Path) -> Result<Option<String>> {
    crate::fs::read::optional_text(path)
}

/// Reads every `*.yaml` file of the extended-rules directory in name order,
/// each file's text on its own so one unreadable file names itself.
pub fn extended_files(dir: &Path) -> Vec<(String, Result<String>)> {
    // No directory: no extended rules. Unlistable: an error, never "no
    // rules" (scans would silently run without them).
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => return vec![(dir.display().to_string(), Err(Error::io("listing the directory", e)))],
    };
    let mut paths: Vec<_> = rd
        // An entry that vanished while listed is gone.
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        // Listed, then removed: gone.
        .filter_map(|p| read_library(&p).transpose().map(|text| (p.display().to_string(), text)))
        .collect()
}
