//! `.changelog-cursors`: where each notebook stopped reading the changelog
//! (seed 000's `changelog_offset`, one per notebook). A byte offset means
//! nothing once compaction rewrites `.changelog`, so a cursor names the
//! last line read by its SHA-256 and its position in the whole history
//! (lines archived by every `# COMPACT` marker plus the line's rank among
//! the log's event lines): compaction of older lines keeps both true, so
//! the line is found again; anything else (the line archived, lines merged
//! in before it) is detected and sends the reader to the cold start.
//!
//! A log kind for sync (`library::kind::LOGS`): one JSON line per
//! notebook, rewritten whole under the library lock. Merged as a union of
//! lines, a file may hold two lines for a notebook; the latest read wins.

use std::collections::BTreeMap;

/// The longest notebook name accepted.
pub const MAX_NOTEBOOK: usize = 200;

/// Why a notebook name is refused, or `None`: 1 to [`MAX_NOTEBOOK`] bytes
/// without control characters. Writers and readers share the rule, so a
/// notebook a write records can always be asked for (`kb-index changes`),
/// and a name cannot break a changelog reader's terminal or a commit.
pub fn notebook_refusal(nb: &str) -> Option<String> {
    (nb.trim().is_empty() || nb.len() > MAX_NOTEBOOK || nb.chars().any(char::is_control))
        .then(|| format!("a notebook must be a name of 1 to {MAX_NOTEBOOK} bytes without control characters"))
}

use serde::{Deserialize, Serialize};

use crate::clock;
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::library::Library;

/// The state file's name at the library root.
pub const FILE: &str = ".changelog-cursors";

/// One notebook's cursor (`schemas/cursor.schema.json`): a line of the
/// state file, and the record `kb-index changes` ends with.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(tag = "record", rename = "cursor")]
pub struct Cursor {
    /// The notebook.
    pub notebook: String,
    /// When it read (RFC 3339, UTC): the latest read wins a merge.
    pub ts: String,
    /// Lines of history read: archived lines plus the log's event lines
    /// up to and including the last one read.
    pub position: u64,
    /// SHA-256 of the last line read (absent when the history was empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_hash: Option<String>,
    /// That line's `ts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_ts: Option<String>,
    /// That line's 1-based line number in `.changelog` when read (a hint;
    /// the hash decides).
    #[serde(default)]
    pub line: usize,
}

impl Cursor {
    /// Merge order: the read time, then the position.
    fn key(&self) -> (Option<jiff::Timestamp>, u64) {
        (clock::parse_instant(&self.ts), self.position)
    }
}

/// Every notebook's latest cursor. A missing file has none; lines that do
/// not parse are skipped (their notebook starts cold, which loses nothing).
pub fn read_all(lib: &Library) -> Result<BTreeMap<String, Cursor>> {
    let text = crate::fs::read::optional_text(&lib.path(FILE))?.unwrap_or_default();
    let mut out: BTreeMap<String, Cursor> = BTreeMap::new();
    for line in atomic::complete_lines(&text) {
        let Ok(c) = serde_json::from_str::<Cursor>(line.trim()) else { continue };
        match out.get(&c.notebook) {
            Some(old) if old.key() >= c.key() => {}
            _ => {
                out.insert(c.notebook.clone(), c);
            }
        }
    }
    Ok(out)
}

/// Stores one notebook's cursor, keeping the others (one line each,
/// sorted by notebook). Callers hold the library lock.
pub fn store(lib: &Library, cursor: &Cursor) -> Result<()> {
    let mut all = read_all(lib)?;
    all.insert(cursor.notebook.clone(), cursor.clone());
    let mut text = String::new();
    for c in all.values() {
        text.push_str(&serde_json::to_string(c).map_err(|e| Error::msg(format!("cannot encode cursor: {e}")))?);
        text.push('\n');
    }
    atomic::write(&lib.path(FILE), text.as_bytes())
}
