//! The delta file of seed 004 §3: `version`, `source`, `entries`, each
//! entry a `key` (`path` or `url`, exact `heading`, optional `level`), an
//! `operation` and its `content`, optional `meta`. Parsing is strict and
//! every problem names its place (`entries[2].key.level`), so a bad delta
//! is reported precisely and staged, never half-applied.

use serde_json::{json, Map, Value};

/// The protocol version written into every file this tool writes.
pub const VERSION: &str = "1.0.0";

/// What an entry asks for (seed 004 §1 table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// Considered, deliberately unchanged.
    NoOp,
    /// Replace the section body, or create the heading.
    Update,
    /// Keep the heading, empty its body.
    Clear,
    /// Remove heading and body.
    Delete,
}

impl Op {
    /// All operations in the order status reports them.
    pub const ALL: [Op; 4] = [Op::NoOp, Op::Update, Op::Clear, Op::Delete];

    /// The name used in files and records.
    pub fn name(self) -> &'static str {
        match self {
            Op::NoOp => "no-op",
            Op::Update => "update",
            Op::Clear => "clear",
            Op::Delete => "delete",
        }
    }

    fn parse(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.name() == s)
    }
}

/// Where an entry applies: a local Markdown file or (later) a remote one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// A path as written (`~` and relative paths resolved by `home`).
    Path(String),
    /// A remote knowledge base (seed 004 §7): validated, kept pending.
    Url(String),
}

/// One declared change.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The target file.
    pub target: Target,
    /// The exact heading text.
    pub heading: String,
    /// The heading level, when the entry pins it.
    pub level: Option<u8>,
    /// The operation.
    pub op: Op,
    /// The new body for `update`.
    pub content: Option<String>,
    /// `meta` as given (confidence, reason and anything else).
    pub meta: Option<Map<String, Value>>,
    /// The session that declared it.
    pub source: Option<String>,
    /// Digest of the section's own bytes when planned (`sha256:…` or
    /// `absent`, see `check::base_of`), so apply can tell a change made in
    /// between by someone else from its own.
    pub base: Option<String>,
    /// Why this entry was staged (staging files only).
    pub error: Option<String>,
}

/// A whole delta file.
#[derive(Debug, Clone, Default)]
pub struct File {
    /// The session of the file (entries may carry their own).
    pub source: Option<String>,
    /// Top-level fields this tool adds to staging files (`error`,
    /// `staged_at`, `queue`), kept as read.
    pub extra: Map<String, Value>,
    /// The entries in order.
    pub entries: Vec<Entry>,
}

/// A problem with a delta, placed by entry index and field path.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// 0-based index in `entries`, when the problem is in one.
    pub entry: Option<usize>,
    /// Field path, e.g. `entries[2].key.level`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

/// An entry that did not parse: kept raw so it can be staged, not lost.
#[derive(Debug, Clone)]
pub struct Bad {
    /// 0-based index in `entries`.
    pub index: usize,
    /// The entry as written.
    pub raw: Value,
    /// What is wrong with it.
    pub problem: Problem,
}

fn problem(entry: Option<usize>, field: String, message: impl Into<String>) -> Problem {
    Problem { entry, field, message: message.into() }
}

const FILE_FIELDS: &[&str] = &["version", "source", "entries", "error", "staged_at", "queue", "raw"];
const ENTRY_FIELDS: &[&str] =
    &["key", "operation", "content", "meta", "source", "base", "error", "path", "url", "heading", "level"];

/// Parses a delta document (YAML or JSON text already turned into a value):
/// the seed's mapping with `entries`, or a bare list of entries. Returns the
/// entries that parsed and the problems of those that did not, by index.
pub fn parse_file(doc: &Value) -> (File, Vec<Bad>, Vec<Problem>) {
    let mut file = File::default();
    let mut file_problems = Vec::new();
    let list = match doc {
        Value::Array(a) => a.clone(),
        Value::Object(m) => {
            for k in m.keys() {
                if !FILE_FIELDS.contains(&k.as_str()) {
                    file_problems.push(problem(None, k.clone(), "unknown field (expected version, source, entries)"));
                }
            }
            match m.get("version") {
                None | Some(Value::Null) => {}
                Some(Value::String(v)) if v.split('.').next() == Some("1") => {}
                Some(Value::String(v)) => file_problems.push(problem(
                    None,
                    "version".into(),
                    format!("unsupported protocol version '{v}' (this tool reads 1.x)"),
                )),
                Some(_) => file_problems.push(problem(None, "version".into(), "must be a string such as \"1.0.0\"")),
            }
            match m.get("source") {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => file.source = Some(s.clone()),
                Some(_) => file_problems.push(problem(None, "source".into(), "must be a string")),
            }
            for k in ["error", "staged_at", "queue", "raw"] {
                if let Some(v) = m.get(k) {
                    file.extra.insert(k.into(), v.clone());
                }
            }
            match m.get("entries") {
                Some(Value::Array(a)) => a.clone(),
                None | Some(Value::Null) => Vec::new(),
                Some(_) => {
                    file_problems.push(problem(None, "entries".into(), "must be a list of entries"));
                    Vec::new()
                }
            }
        }
        Value::Null => Vec::new(),
        _ => {
            file_problems.push(problem(None, String::new(), "a delta file is a mapping with 'entries' (or a list)"));
            Vec::new()
        }
    };
    let mut bad = Vec::new();
    for (i, v) in list.iter().enumerate() {
        match parse_entry(v, &format!("entries[{i}]")) {
            Ok(e) => file.entries.push(e),
            Err(p) => bad.push(Bad { index: i, raw: v.clone(), problem: Problem { entry: Some(i), ..p } }),
        }
    }
    (file, bad, file_problems)
}

/// Parses one entry, in the seed's nested form (`key: {path, heading,
/// level}`) or the flat form of `last_word.plan({path, heading, ...})`.
/// `at` prefixes field paths in errors.
pub fn parse_entry(v: &Value, at: &str) -> Result<Entry, Problem> {
    let err = |field: &str, msg: String| problem(None, format!("{at}.{field}"), msg);
    let Value::Object(m) = v else {
        return Err(problem(None, at.to_string(), "an entry must be a mapping"));
    };
    for k in m.keys() {
        if !ENTRY_FIELDS.contains(&k.as_str()) {
            return Err(err(k, "unknown field (expected key, operation, content, meta)".into()));
        }
    }
    let (key, kp): (&Map<String, Value>, &str) = match m.get("key") {
        Some(Value::Object(k)) => {
            if let Some(f) = ["path", "url", "heading", "level"].iter().find(|f| m.contains_key(**f)) {
                return Err(err(f, "given both inside 'key' and beside it".into()));
            }
            for f in k.keys() {
                if !["path", "url", "heading", "level"].contains(&f.as_str()) {
                    return Err(err(&format!("key.{f}"), "unknown field (expected path, url, heading, level)".into()));
                }
            }
            (k, "key.")
        }
        Some(_) => return Err(err("key", "must be a mapping with path or url, heading and level".into())),
        None => (m, ""),
    };
    let text = |f: &str| -> Result<Option<String>, Problem> {
        match key.get(f) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(err(&format!("{kp}{f}"), format!("must be a string, not {}", kind(other)))),
        }
    };
    let target = match (text("path")?, text("url")?) {
        (Some(_), Some(_)) => return Err(err(&format!("{kp}path"), "give path or url, not both".into())),
        (None, None) => return Err(err(&format!("{kp}path"), "missing: one of path or url is required".into())),
        (Some(p), None) if p.trim().is_empty() => return Err(err(&format!("{kp}path"), "is empty".into())),
        (Some(p), None) => Target::Path(p),
        (None, Some(u)) if !(u.starts_with("https://") || u.starts_with("http://")) => {
            return Err(err(&format!("{kp}url"), format!("'{u}' is not an http(s) URL")))
        }
        (None, Some(u)) => Target::Url(u),
    };
    let heading = text("heading")?.ok_or_else(|| err(&format!("{kp}heading"), "missing".into()))?;
    if heading.trim().is_empty() {
        return Err(err(&format!("{kp}heading"), "is empty".into()));
    }
    if heading.contains(['\n', '\r']) {
        return Err(err(&format!("{kp}heading"), "must be one line".into()));
    }
    if heading.trim() != heading {
        return Err(err(&format!("{kp}heading"), "has leading or trailing spaces (matching is exact)".into()));
    }
    let level = match key.get("level") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(l @ 1..=6) => Some(l as u8),
            _ => return Err(err(&format!("{kp}level"), format!("must be 1 to 6, not {n}"))),
        },
        Some(other) => return Err(err(&format!("{kp}level"), format!("must be an integer 1-6, not {}", kind(other)))),
    };
    let content = match m.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => return Err(err("content", format!("must be a string or null, not {}", kind(other)))),
    };
    let op = match m.get("operation") {
        None | Some(Value::Null) => match content.as_deref() {
            None => Op::NoOp,
            Some("") => Op::Clear,
            Some(_) => Op::Update,
        },
        Some(Value::String(s)) => Op::parse(s).ok_or_else(|| {
            err("operation", format!("unknown operation '{s}' (expected no-op, update, clear or delete)"))
        })?,
        Some(other) => return Err(err("operation", format!("must be a string, not {}", kind(other)))),
    };
    match (op, content.as_deref()) {
        (Op::NoOp | Op::Delete, Some(_)) => {
            return Err(err("content", format!("must be null for {} (content would be ignored)", op.name())))
        }
        (Op::Update, None) => return Err(err("content", "update needs content (null means no-op)".into())),
        (Op::Update, Some(c)) if c.trim().is_empty() => {
            return Err(err("content", "update with empty content: use operation clear".into()))
        }
        (Op::Clear, Some(c)) if !c.is_empty() => {
            return Err(err("content", "clear takes \"\" or null; use update to set content".into()))
        }
        _ => {}
    }
    let meta = match m.get("meta") {
        None | Some(Value::Null) => None,
        Some(Value::Object(meta)) => {
            match meta.get("confidence") {
                None | Some(Value::Null) => {}
                Some(Value::Number(n)) if n.as_f64().is_some_and(|c| (0.0..=1.0).contains(&c)) => {}
                Some(other) => {
                    return Err(err("meta.confidence", format!("must be a number from 0 to 1, not {other}")))
                }
            }
            match meta.get("reason") {
                None | Some(Value::Null) | Some(Value::String(_)) => {}
                Some(other) => return Err(err("meta.reason", format!("must be a string, not {}", kind(other)))),
            }
            Some(meta.clone())
        }
        Some(other) => return Err(err("meta", format!("must be a mapping, not {}", kind(other)))),
    };
    let opt_str = |f: &str| -> Result<Option<String>, Problem> {
        match m.get(f) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(err(f, format!("must be a string, not {}", kind(other)))),
        }
    };
    let base = opt_str("base")?;
    if let Some(b) = &base {
        if b != "absent" && b.strip_prefix("sha256:").is_none_or(|h| h.len() != 64) {
            return Err(err("base", "must be 'absent' or 'sha256:<64 hex>'".into()));
        }
    }
    Ok(Entry { target, heading, level, op, content, meta, source: opt_str("source")?, base, error: opt_str("error")? })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

impl Entry {
    /// The entry in the seed's nested form, fields in a fixed order.
    pub fn to_value(&self) -> Value {
        let mut key = Map::new();
        match &self.target {
            Target::Path(p) => key.insert("path".into(), json!(p)),
            Target::Url(u) => key.insert("url".into(), json!(u)),
        };
        key.insert("heading".into(), json!(self.heading));
        if let Some(l) = self.level {
            key.insert("level".into(), json!(l));
        }
        let mut m = Map::new();
        m.insert("key".into(), Value::Object(key));
        m.insert("operation".into(), json!(self.op.name()));
        m.insert("content".into(), json!(self.content));
        if let Some(meta) = &self.meta {
            m.insert("meta".into(), Value::Object(meta.clone()));
        }
        for (k, v) in [("source", &self.source), ("base", &self.base), ("error", &self.error)] {
            if let Some(v) = v {
                m.insert(k.into(), json!(v));
            }
        }
        Value::Object(m)
    }

    /// The target as text for records and messages.
    pub fn target_text(&self) -> &str {
        match &self.target {
            Target::Path(p) | Target::Url(p) => p,
        }
    }
}

impl File {
    /// The file as the seed's mapping, ready to render as YAML.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("version".into(), json!(VERSION));
        if let Some(s) = &self.source {
            m.insert("source".into(), json!(s));
        }
        for (k, v) in &self.extra {
            m.insert(k.clone(), v.clone());
        }
        m.insert("entries".into(), Value::Array(self.entries.iter().map(Entry::to_value).collect()));
        Value::Object(m)
    }

    /// The file as YAML text.
    pub fn to_yaml(&self) -> crate::Result<String> {
        crate::doc::yaml::to_string(&self.to_value())
    }
}

/// A delta input's text: FILE (`None`: stdin), read like every named
/// input (a FIFO or device is an error, never a hang) and up to the queue's
/// size limit, so an endless stream is refused rather than held.
pub fn read_input(file: Option<&std::path::Path>) -> crate::Result<String> {
    use crate::error::Context;
    let limit = super::queue::MAX_BYTES;
    let (bytes, what) = match file {
        None => (crate::fs::nofollow::read_capped(std::io::stdin().lock(), limit, "stdin"), "stdin".to_string()),
        Some(f) => (crate::fs::nofollow::read_input(f, limit), f.display().to_string()),
    };
    let bytes = bytes.ctx(|| format!("reading {what}"))?;
    String::from_utf8(bytes).map_err(|e| {
        crate::Error::msg(format!("reading {what}: not UTF-8 text (byte {})", e.utf8_error().valid_up_to()))
    })
}

/// Parses YAML (or JSON) text into a delta file; a text that is not YAML is
/// one file-level problem.
pub fn parse_text(text: &str) -> (File, Vec<Bad>, Vec<Problem>) {
    match crate::doc::yaml::to_value(text) {
        Ok(v) => parse_file(&v),
        Err(e) => (File::default(), Vec::new(), vec![problem(None, String::new(), e.to_string())]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precise_errors() {
        let text = "version: '1.0.0'\nentries:\n  - key: {path: U.md, heading: A, level: 7}\n    operation: update\n    content: x\n  - key: {path: U.md, heading: B}\n    operation: delete\n    content: x\n  - {path: U.md, heading: C, content: hi}\n";
        let (f, bad, top) = parse_text(text);
        assert!(top.is_empty());
        assert_eq!(bad[0].problem.to_string(), "entries[0].key.level: must be 1 to 6, not 7");
        assert_eq!(bad[1].problem.field, "entries[1].content");
        assert_eq!(f.entries.len(), 1);
        assert_eq!(f.entries[0].op, Op::Update);
        let again = parse_text(&f.to_yaml().unwrap()).0;
        assert_eq!(again.entries, f.entries);
    }
}
