//! Seed 003 "记忆审计": after every note created, updated or deleted and
//! every INDEX update, one NDJSON line in `<store>/workspace/
//! audit.log` — silent new writes included. Fields: event, ts,
//! conversation_id, generation_id, note_id, operation, source, file,
//! reason, and the digests of the file before and after (nothing is lost
//! without a trace).

use serde::{Deserialize, Serialize};

use super::store::Paths;
use crate::error::{Error, Result};

/// One audit line (schemas/memory_audit.schema.json).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Line {
    /// memory_note_created | memory_note_updated | memory_note_deleted | memory_index_updated.
    pub event: String,
    /// RFC 3339.
    pub ts: String,
    /// The conversation the change came from.
    pub conversation_id: Option<String>,
    /// The turn the change came from.
    pub generation_id: Option<String>,
    /// The note (absent for index updates).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note_id: Option<String>,
    /// create | update | delete | index.
    pub operation: String,
    /// user | auto | user-confirmed | reindex.
    pub source: String,
    /// `memory/notes/MEM-….md`, or `memory/INDEX.md`.
    pub file: String,
    /// Why.
    pub reason: String,
    /// SHA-256 of the file before (absent when created).
    pub digest_before: Option<String>,
    /// SHA-256 of the file after (absent when deleted).
    pub digest_after: Option<String>,
    /// Where a deleted note was moved (`memory/archive/…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived_to: Option<String>,
}

fn render(lines: &[Line]) -> Result<String> {
    let mut text = String::new();
    for l in lines {
        text.push_str(&serde_json::to_string(l).map_err(|e| Error::msg(format!("cannot encode audit line: {e}")))?);
        text.push('\n');
    }
    Ok(text)
}

/// Appends lines whole, under the caller's lock.
pub fn append(paths: &Paths, lines: &[Line]) -> Result<()> {
    crate::fs::atomic::append_lines(&paths.audit, &render(lines)?)
}

/// Whether the log ends with exactly these lines (an apply killed after
/// its audit append and before its journal went: recovery must not
/// append them twice). Reads only the log's tail.
pub fn ends_with(paths: &Paths, lines: &[Line]) -> Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let text = render(lines)?;
    if text.is_empty() {
        return Ok(true);
    }
    let mut f = match crate::fs::nofollow::open_read(&paths.audit) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(format!("opening {}", paths.audit.display()), e)),
    };
    let n = text.len() as u64;
    let len = f.metadata().map_err(|e| Error::io(format!("reading {}", paths.audit.display()), e))?.len();
    if len < n {
        return Ok(false);
    }
    let mut tail = Vec::with_capacity(text.len());
    f.seek(SeekFrom::Start(len - n))
        .and_then(|_| f.take(n).read_to_end(&mut tail))
        .map_err(|e| Error::io(format!("reading {}", paths.audit.display()), e))?;
    Ok(tail == text.as_bytes())
}
