//! The records kb-lastword prints (DESIGN.md "Streams"), one serde-tagged
//! struct each, so a record's fields and their order are written down once
//! (`schemas/<record>.schema.json` describes the same fields). Optional
//! fields a record only carries in some states are left out when absent,
//! never printed as `null`.

use serde::Serialize;

use super::delta::{Entry, Op};

/// A file's entry, as every per-entry record names it (owned: `apply`
/// prints its records after the queue it read them from is gone).
#[derive(Debug, Clone, Serialize)]
pub struct Key {
    /// The target path or URL.
    pub path: String,
    /// The section heading.
    pub heading: String,
    /// The heading level, when the entry gave one.
    pub level: Option<u8>,
    /// `no-op`, `update`, `clear` or `delete`.
    pub operation: &'static str,
}

impl Key {
    /// The key of `e`.
    pub fn of(e: &Entry) -> Key {
        Key { path: e.target_text().to_string(), heading: e.heading.clone(), level: e.level, operation: e.op.name() }
    }
}

/// `delta`: what `plan` did with one declared entry.
#[derive(Debug, Serialize)]
#[serde(tag = "record", rename = "delta")]
pub struct Delta<'a> {
    /// Where the entry came from (`<stdin>:3`, `file.yaml entries[2]`).
    pub origin: &'a str,
    /// The entry's target, heading, level and operation.
    #[serde(flatten)]
    pub key: Key,
    /// `pending` or `staged`.
    pub status: &'static str,
    /// The queue it joined (pending).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Why it was staged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The staging file that holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staging: Option<String>,
}

/// `result`: what `apply` did with one queued entry.
#[derive(Debug, Serialize)]
#[serde(tag = "record", rename = "result")]
pub struct Applied {
    /// The queue file.
    pub queue: String,
    /// 0-based index of the entry in the queue.
    pub entry: usize,
    /// The entry's target, heading, level and operation.
    #[serde(flatten)]
    pub key: Key,
    /// `applied`, `no-op`, `staged`, `would-stage`, ...
    pub status: &'static str,
    /// Why it was staged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The staging file that holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staging: Option<String>,
    /// What applying it noticed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `error` about a file (a queue or staging file) or one of its entries.
#[derive(Debug, Serialize)]
#[serde(tag = "record", rename = "error")]
pub struct FileError {
    /// The file.
    pub file: String,
    /// 0-based entry index, when the problem is in one (else `null`).
    pub entry: Option<usize>,
    /// Field path, e.g. `entries[2].key.level`.
    pub field: String,
    /// What is wrong.
    pub message: String,
    /// The staging file the entries went to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staging: Option<String>,
}

/// `error` about declared input that did not parse into an entry.
#[derive(Debug, Serialize)]
#[serde(tag = "record", rename = "error")]
pub struct InputError<'a> {
    /// 1-based input line, when it came from a stream.
    pub line: Option<usize>,
    /// Where it came from.
    pub origin: &'a str,
    /// Field path of the problem.
    pub field: &'a str,
    /// What is wrong.
    pub message: &'a str,
    /// The staging file the input went to.
    pub staging: String,
}

/// `validation`: the verdict on one file of `validate`.
#[derive(Debug, Serialize)]
#[serde(tag = "record", rename = "validation")]
pub struct Validation<'a> {
    /// The file.
    pub file: &'a str,
    /// Entries in it, good and bad.
    pub entries: usize,
    /// Problems found.
    pub problems: usize,
    /// No problems.
    pub valid: bool,
}

/// `resolved`: a staging file's entries moved back to a queue.
#[derive(Debug, Serialize)]
#[serde(tag = "record", rename = "resolved")]
pub struct Resolved<'a> {
    /// The staging file.
    pub file: &'a str,
    /// The queue its entries joined.
    pub queue: String,
    /// How many.
    pub entries: usize,
}

/// `conflict`: a staged entry that cannot be resolved as it stands.
#[derive(Debug, Serialize)]
#[serde(tag = "record", rename = "conflict")]
pub struct Conflict<'a> {
    /// The staging file.
    pub file: &'a str,
    /// 0-based entry index.
    pub entry: usize,
    /// The entry's target, heading, level and operation.
    #[serde(flatten)]
    pub key: Key,
    /// Why it conflicts.
    pub message: &'a str,
    /// The section as it is now, when it exists.
    pub current: Option<String>,
    /// The entry's content.
    pub content: Option<&'a str>,
}

/// `pending`: one queue file and its entries by operation.
#[derive(Debug, Serialize)]
#[serde(tag = "record", rename = "pending")]
pub struct Pending {
    /// The queue file.
    pub file: String,
    /// Entries in it.
    pub entries: usize,
    /// `no-op` entries.
    #[serde(rename = "no-op")]
    pub no_op: usize,
    /// `update` entries.
    pub update: usize,
    /// `clear` entries.
    pub clear: usize,
    /// `delete` entries.
    pub delete: usize,
    /// Entries whose target is a URL.
    pub url: usize,
    /// Entries (and a whole-file problem) that do not validate.
    pub invalid: usize,
}

impl Pending {
    /// The counts of `entries` in queue `file`.
    pub fn of(file: String, entries: &[Entry], invalid: usize) -> Pending {
        let n = |op: Op| entries.iter().filter(|e| e.op == op).count();
        Pending {
            file,
            entries: entries.len(),
            no_op: n(Op::NoOp),
            update: n(Op::Update),
            clear: n(Op::Clear),
            delete: n(Op::Delete),
            url: entries.iter().filter(|e| matches!(e.target, super::delta::Target::Url(_))).count(),
            invalid,
        }
    }
}

/// `status`: the totals over every queue.
#[derive(Debug, Serialize)]
#[serde(tag = "record", rename = "status")]
pub struct Status<'a> {
    /// Always `(total)`.
    pub file: &'static str,
    /// Queue files.
    pub pending_files: usize,
    /// Entries in them.
    pub entries: usize,
    /// Staging files.
    pub staging: usize,
    /// The knowledge bases of `config.yaml`.
    pub knowledge_bases: Vec<Base<'a>>,
    /// The project files found (when project knowledge is on).
    pub project: Vec<&'a String>,
}

/// One knowledge base of `config.yaml`, and whether its file exists.
#[derive(Debug, Serialize)]
pub struct Base<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its file, as configured.
    pub file: &'a str,
    /// Whether the file exists.
    pub exists: bool,
}
