//! The proposal file `.core-rule-proposals/CORE-XXX.md` (seed 000 evolve
//! step 2): YAML frontmatter holding the rule to be (id, title, layer,
//! category, severity, pattern, positive `match` and negative `clean`
//! examples, rationale, status, source intel id and references) and what
//! each later step found (validation, review, integration); the Markdown
//! body describes the threat for people. Frontmatter is the ground truth.

use std::fs;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::DIR;
use crate::doc::frontmatter;
use crate::doc::yaml;
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::guard::rules::{Rule, Severity};
use crate::library::Library;

/// Which rule set a proposal is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// The library's core rule file (weekly scan).
    Core,
    /// A hot-loaded file in `.evolving-rules/security/active/` (daily sync).
    Extended,
}

impl Layer {
    /// `core` or `extended`.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Core => "core",
            Layer::Extended => "extended",
        }
    }
}

/// Where a proposal is in the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Lacks something only an agent can supply (pattern, category,
    /// rationale or clean examples): waiting for ELABORATE.
    Draft,
    /// Complete, waiting for VALIDATE.
    Proposed,
    /// VALIDATE found problems (listed in `validation.problems`).
    Invalid,
    /// Passed VALIDATE, waiting for REVIEW.
    Validated,
    /// REVIEW scored it below 0.95.
    Rejected,
    /// REVIEW scored it at or above 0.95, waiting for INTEGRATE.
    Approved,
    /// In the rule set in force.
    Integrated,
}

/// Every status, in loop order.
pub const STATUSES: [Status; 7] = [
    Status::Draft,
    Status::Proposed,
    Status::Invalid,
    Status::Validated,
    Status::Rejected,
    Status::Approved,
    Status::Integrated,
];

impl Status {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Draft => "draft",
            Status::Proposed => "proposed",
            Status::Invalid => "invalid",
            Status::Validated => "validated",
            Status::Rejected => "rejected",
            Status::Approved => "approved",
            Status::Integrated => "integrated",
        }
    }
}

/// A line the new rule flags in the backtest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hit {
    /// Library-relative path (or corpus path as given).
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// The matched text (at most 80 characters).
    pub matched: String,
}

/// The historical backtest of one rule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backtest {
    /// Targets scanned (files; a skill directory counts once).
    pub files: usize,
    /// Of which safe under the rules in force.
    pub safe_before: usize,
    /// Targets the new rule flags.
    pub flagged: usize,
    /// Of which were safe before: what the rule would newly flag.
    pub newly_flagged: usize,
    /// newly_flagged / safe_before (0 when nothing was safe).
    pub fp_rate: f64,
    /// Extra corpus directories scanned besides the library.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub corpus: Vec<String>,
    /// The newly flagged lines (at most 20).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hits: Vec<Hit>,
}

/// What VALIDATE found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Validation {
    /// When.
    pub ts: String,
    /// Every check passed.
    pub valid: bool,
    /// What is wrong, one line each.
    #[serde(default)]
    pub problems: Vec<String>,
    /// Examples run (match + clean).
    pub examples: usize,
    /// Examples that behaved.
    pub examples_passed: usize,
    /// Rules in force that already raise on the match examples.
    #[serde(default)]
    pub overlap: Vec<String>,
    /// Fraction of match examples already raised by rules in force.
    pub overlap_fraction: f64,
    /// The backtest, when the pattern compiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backtest: Option<Backtest>,
}

/// The review's four components, each in 0..=1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Components {
    /// Examples that behave (halved without a clean example).
    pub examples: f64,
    /// 1 − 10 × the backtest false-positive rate, floored at 0.
    pub backtest: f64,
    /// 1 − the overlap with rules in force.
    pub overlap: f64,
    /// The severity is justified (1) or not (0).
    pub severity: f64,
}

/// What REVIEW decided.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Review {
    /// When.
    pub ts: String,
    /// The weighted sum of the components.
    pub score: f64,
    /// score ≥ 0.95.
    pub approved: bool,
    /// The components.
    pub components: Components,
    /// Why points were lost.
    #[serde(default)]
    pub reasons: Vec<String>,
}

/// Where INTEGRATE put the rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Integrated {
    /// When.
    pub ts: String,
    /// The rule file, library-relative.
    pub file: String,
}

/// A proposal's frontmatter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Proposal {
    /// `CORE-001`, the file's name.
    pub id: String,
    /// One line.
    pub title: String,
    /// core or extended.
    pub layer: Layer,
    /// The id the rule gets (`core-001`).
    pub rule_id: String,
    /// One of the guard's categories (absent: needs elaborating).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// critical, high or medium.
    pub severity: Severity,
    /// The regex (absent: needs elaborating).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Positive examples: lines the rule must raise.
    #[serde(default, rename = "match")]
    pub matches: Vec<String>,
    /// Negative examples: lines it must leave alone.
    #[serde(default)]
    pub clean: Vec<String>,
    /// Why the rule and its severity are right.
    #[serde(default)]
    pub rationale: String,
    /// Where it is in the loop.
    pub status: Status,
    /// The intel record's id.
    pub source: String,
    /// Advisories, CVEs, write-ups.
    #[serde(default)]
    pub references: Vec<String>,
    /// When it was proposed.
    pub created: String,
    /// VALIDATE's findings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<Validation>,
    /// REVIEW's decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<Review>,
    /// INTEGRATE's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrated: Option<Integrated>,
}

impl Proposal {
    /// The guard rule the proposal describes (when it has a pattern and a
    /// category).
    pub fn rule(&self) -> Option<Rule> {
        Some(Rule {
            id: self.rule_id.clone(),
            category: self.category.clone()?,
            severity: self.severity,
            description: format!("{} ({})", self.title, self.id),
            pattern: Some(self.pattern.clone()?),
            builtin: false,
            benign: Vec::new(),
            harmless: Vec::new(),
            inject: None,
            seed: None,
            matches: self.matches.clone(),
            clean: self.clean.clone(),
            source: String::new(),
        })
    }

    /// The status PROPOSE gives a new proposal: `draft` while something
    /// needs an agent, else `proposed`. Every later status is given by a
    /// local step (validate, review, integrate), so a peer's new proposal
    /// arriving in any other status waits for review (`super::peer`).
    pub fn initial_status(&self) -> Status {
        if self.missing().is_empty() {
            Status::Proposed
        } else {
            Status::Draft
        }
    }

    /// What still needs an agent (empty: complete).
    pub fn missing(&self) -> Vec<&'static str> {
        let mut m = Vec::new();
        if self.pattern.as_deref().is_none_or(|p| p.trim().is_empty()) {
            m.push("pattern");
        }
        if self.category.is_none() {
            m.push("category");
        }
        if self.rationale.trim().is_empty() {
            m.push("rationale");
        }
        if self.matches.is_empty() {
            m.push("match examples");
        }
        if self.clean.is_empty() {
            m.push("clean examples");
        }
        m
    }
}

/// A proposal read from disk, with its body.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The frontmatter.
    pub proposal: Proposal,
    /// The Markdown body, kept as it is.
    pub body: String,
    /// Library-relative path.
    pub path: String,
}

impl Loaded {
    /// The `proposal` record: `record`, `path`, then every field.
    pub fn record(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("record".into(), Value::String("proposal".into()));
        m.insert("path".into(), Value::String(self.path.clone()));
        if let Ok(Value::Object(fields)) = serde_json::to_value(&self.proposal) {
            m.extend(fields);
        }
        Value::Object(m)
    }
}

/// The path of proposal `id`.
pub fn path_of(id: &str) -> String {
    format!("{DIR}/{id}.md")
}

/// Whether `s` is a proposal id (`CORE-` and digits).
pub fn is_id(s: &str) -> bool {
    s.strip_prefix("CORE-").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Parses a proposal file's text; a malformed one is an error naming why.
pub fn parse(text: &str, path: &str) -> Result<Loaded> {
    let fm = frontmatter::parse(text);
    if let Some(e) = fm.error {
        return Err(Error::msg(format!("{path}: frontmatter does not parse: {e}")));
    }
    if !fm.present {
        return Err(Error::msg(format!("{path}: no YAML frontmatter")));
    }
    let proposal: Proposal = serde_json::from_value(Value::Object(fm.fields))
        .map_err(|e| Error::msg(format!("{path}: not a proposal: {e}")))?;
    let expected = path.rsplit('/').next().and_then(|n| n.strip_suffix(".md")).unwrap_or_default();
    if proposal.id != expected {
        return Err(Error::msg(format!("{path}: id {} does not match the file name", proposal.id)));
    }
    Ok(Loaded { proposal, body: text[fm.body_start..].to_string(), path: path.to_string() })
}

/// Reads proposal `id`.
pub fn load(lib: &Library, id: &str) -> Result<Loaded> {
    if !is_id(id) {
        return Err(Error::msg(format!("'{id}' is not a proposal id (CORE-NNN)")));
    }
    let path = path_of(id);
    let text = match fs::read_to_string(lib.path(&path)) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::msg(format!("no proposal {id} ({path})")))
        }
        Err(e) => return Err(Error::io(format!("reading {path}"), e)),
    };
    parse(&text, &path)
}

/// Every `CORE-*.md` file, by number: each parsed or the reason it is not.
pub fn all(lib: &Library) -> Vec<(String, Result<Loaded>)> {
    let mut ids: Vec<(u64, String)> = fs::read_dir(lib.path(DIR))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".md").filter(|id| is_id(id)).map(str::to_string))
        .filter_map(|id| id[5..].parse::<u64>().ok().map(|n| (n, id)))
        .collect();
    ids.sort();
    ids.into_iter().map(|(_, id)| (id.clone(), load(lib, &id))).collect()
}

/// The next free number (one past the highest file, malformed ones too).
pub fn next_number(lib: &Library) -> u64 {
    all(lib).iter().filter_map(|(id, _)| id[5..].parse::<u64>().ok()).max().unwrap_or(0) + 1
}

/// The file text of a proposal.
pub fn render(l: &Loaded) -> Result<String> {
    let yaml = yaml::to_string(&l.proposal)?;
    Ok(format!("---\n{}---\n{}", yaml.trim_start_matches("---\n"), l.body))
}

/// Writes a proposal atomically. Callers hold the library lock.
pub fn save(lib: &Library, l: &Loaded) -> Result<()> {
    atomic::write(&lib.path(&l.path), render(l)?.as_bytes())
}

/// The body a new proposal gets.
pub fn body(id: &str, title: &str, description: &str) -> String {
    let mut b = format!("# {id}: {title}\n");
    if !description.trim().is_empty() {
        b.push('\n');
        b.push_str(description.trim());
        b.push('\n');
    }
    b
}
