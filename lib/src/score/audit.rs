//! Seed 001's audit events ("Audit logging": failed sources): one JSON
//! line in the local library's `.audit.log` for a query where a source
//! failed, naming the query, the sources queried, those with findings and
//! those that failed. A search is read-only otherwise: an ordinary query
//! writes nothing, takes no library lock and leaves the git tree as it
//! was. The one line is a single `O_APPEND` write, so it never waits for
//! a writer holding the lock and never interleaves with another line
//! (kb-append merge-log orders the log by `ts` on sync). External
//! libraries are never written.

use std::io::Write;

use serde::Serialize;

use crate::error::Result;
use crate::library::Library;

/// The audit log's name under the library.
pub const FILE: &str = ".audit.log";

/// One `query` audit event (`schemas/audit-query.schema.json`).
#[derive(Debug, Clone, Serialize)]
pub struct Event {
    /// When (RFC 3339).
    pub ts: String,
    /// Always `query`.
    pub event_type: &'static str,
    /// The query text.
    pub query: String,
    /// Sources queried, in order.
    pub sources_queried: Vec<String>,
    /// Sources that had findings.
    pub sources_with_findings: Vec<String>,
    /// Sources that failed.
    pub sources_failed: Vec<String>,
    /// Hits returned.
    pub hits: usize,
    /// Of which direct.
    pub direct: usize,
    /// Of which graph recommendations.
    pub recommended: usize,
    /// Documents matching directly, over all sources.
    pub matched: usize,
}

/// Whether a query's outcome is an audit event: some source failed.
pub fn is_event(event: &Event) -> bool {
    !event.sources_failed.is_empty()
}

/// Appends the event to the local library's audit log: one line, one
/// `O_APPEND` write, no lock.
pub fn append(lib: &Library, event: &Event) -> Result<()> {
    let mut line = serde_json::to_string(event).map_err(|e| crate::Error::msg(format!("encoding audit event: {e}")))?;
    line.push('\n');
    let path = lib.path(FILE);
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(|e| crate::Error::io(format!("appending to {}", path.display()), e))
}
