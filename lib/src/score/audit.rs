//! The audit event of every query (seed 001 "Audit logging"): one JSON
//! line in the local library's `.audit.log`, appended under the library
//! lock, naming the query, the sources queried, those with findings and
//! those that failed. External libraries are never written.

use serde::Serialize;

use crate::error::Result;
use crate::fs::atomic;
use crate::library::Library;
use crate::lock;

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

/// Appends the event to the local library's audit log under the lock.
pub fn append(lib: &Library, event: &Event) -> Result<()> {
    let line = serde_json::to_string(event).map_err(|e| crate::Error::msg(format!("encoding audit event: {e}")))?;
    let opts = lock::Options { timeout: std::time::Duration::from_secs(5), cmd: "kb-score (audit)".into() };
    lock::with_lock(lib, &opts, || atomic::append_lines(&lib.path(FILE), &format!("{line}\n")))
}
