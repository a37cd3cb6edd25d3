//! Seed 000's changelog consumption protocol as a reader: a notebook asks
//! what was written, referenced or archived since its last read and gets
//! one `change` record per changelog line after its cursor, then its new
//! `cursor` record (`library::cursors`). When the cursor cannot be trusted
//! — first read, its line archived by compaction, lines merged in or
//! archived before it — the reader takes the seed's cold-start path: a
//! `cold_start` record naming why, one `change` record (`event:
//! "indexed"`) per row of `.master-index.md` (the full match), and a
//! cursor reset to the end of the log.
//!
//! The whole read runs under the library lock, so no writer appends and no
//! compaction rewrites the log between the read and the cursor's store:
//! nothing is lost or reported twice, whatever runs at the same time.

use serde::Serialize;

use crate::clock;
use crate::derived::index;
use crate::doc::digest;
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::library::changelog::{self, Event};
use crate::library::cursors::{self, Cursor};
use crate::library::Library;
use crate::lock;

/// Why the reader went to the cold start (`schemas/cold_start.schema.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// The notebook has no cursor yet.
    FirstRead,
    /// Its last line is no longer in `.changelog` (compaction archived it).
    CursorArchived,
    /// Its line is there, but the history before it changed (a sync merge
    /// brought older lines, or compaction archived lines it had not read).
    HistoryChanged,
}

/// The `cold_start` record.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "cold_start")]
pub struct ColdStart {
    /// The notebook.
    pub notebook: String,
    /// Why.
    pub reason: Reason,
    /// The file matched in full.
    pub index: &'static str,
    /// Its rows (one `change` record each follows).
    pub entries: usize,
}

/// One `change` record (`schemas/change.schema.json`, the changelog branch).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "change")]
pub struct Change {
    /// The notebook reading.
    pub notebook: String,
    /// The changelog line's event (`write`, `referenced`, `skill`, ...), or
    /// `indexed` for a master-index row on the cold start.
    pub event: String,
    /// Library-relative path.
    pub path: String,
    /// When it happened (absent for `indexed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// created, updated, appended, ... (write and skill events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The notebook that caused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Category.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Topic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// Its 1-based line in `.changelog` (absent for `indexed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

/// What one read printed, in order.
#[derive(Debug, Clone, Default)]
pub struct Read {
    /// Set when the read took the cold start.
    pub cold_start: Option<ColdStart>,
    /// The changes.
    pub changes: Vec<Change>,
    /// Changelog lines after the cursor that are not events (reported as
    /// warnings, counted in the cursor so they are not met again).
    pub skipped: Vec<usize>,
    /// The stored cursor.
    pub cursor: Cursor,
}

impl Read {
    /// Prints the read in order: the cold start, the changes, the cursor;
    /// skipped lines as warnings on stderr.
    pub fn print(&self, out: &mut crate::out::jsonl::Out) -> Result<()> {
        if let Some(c) = &self.cold_start {
            out.record(c)?;
        }
        for c in &self.changes {
            out.record(c)?;
        }
        for line in &self.skipped {
            eprintln!("kb-index: warning: .changelog:{line}: not a changelog event; skipped");
        }
        out.record(&self.cursor)
    }
}

/// The log as the reader sees it: lines archived so far (the sum of the
/// `# COMPACT ... archived N lines` markers) and the event lines in order
/// with their 1-based line numbers.
struct History<'a> {
    archived: u64,
    lines: Vec<(usize, &'a str)>,
}

fn history(text: &str) -> History<'_> {
    let mut h = History { archived: 0, lines: Vec::new() };
    for (i, line) in atomic::complete_lines(text).enumerate() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(rest) = t.strip_prefix('#') {
            h.archived += archived_count(rest).unwrap_or(0);
            continue;
        }
        h.lines.push((i + 1, t));
    }
    h
}

/// `N` of a ` COMPACT <day>: archived N lines -> <file>` marker.
fn archived_count(marker: &str) -> Option<u64> {
    let rest = marker.trim().strip_prefix("COMPACT ")?;
    let after = rest.split_once(": archived ")?.1;
    after.split_whitespace().next()?.parse().ok()
}

/// Where the cursor's line is now, or why the cold start.
fn resume(h: &History, c: &Cursor) -> std::result::Result<usize, Reason> {
    let Some(hash) = &c.last_hash else {
        // Nothing was read yet: valid while nothing has been archived since.
        return if h.archived == 0 && c.position == 0 { Ok(0) } else { Err(Reason::CursorArchived) };
    };
    let found = h.lines.iter().position(|(_, l)| digest::sha256_hex(l.as_bytes()) == *hash);
    match found {
        None => Err(Reason::CursorArchived),
        Some(k) if h.archived + k as u64 + 1 == c.position => Ok(k + 1),
        Some(_) => Err(Reason::HistoryChanged),
    }
}

/// Validates a notebook name given on the command line.
pub fn check_notebook(nb: &str) -> Result<()> {
    match crate::library::cursors::notebook_refusal(nb) {
        Some(why) => Err(Error::usage(format!("--notebook: {why}"))),
        None => Ok(()),
    }
}

/// Reads what changed since `notebook`'s cursor and moves the cursor to
/// the end of the log (see the module doc).
pub fn read(lib: &Library, notebook: &str, lock_opts: &lock::Options) -> Result<Read> {
    check_notebook(notebook)?;
    lock::with_lock(lib, lock_opts, || {
        let path = lib.path(changelog::FILE);
        let text = crate::fs::read::optional_text(&path)?.unwrap_or_default();
        let h = history(&text);
        let previous = cursors::read_all(lib)?.remove(notebook);
        let start = match &previous {
            None => Err(Reason::FirstRead),
            Some(c) => resume(&h, c),
        };
        let mut out = Read::default();
        match start {
            Ok(k) => {
                for &(line, t) in &h.lines[k..] {
                    match serde_json::from_str::<Event>(t) {
                        Ok(e) => out.changes.push(from_event(notebook, e, line)),
                        Err(_) => out.skipped.push(line),
                    }
                }
            }
            Err(reason) => {
                let rows = cold_rows(lib, notebook)?;
                out.cold_start =
                    Some(ColdStart { notebook: notebook.into(), reason, index: index::MASTER, entries: rows.len() });
                out.changes = rows;
            }
        }
        let last = h.lines.last();
        out.cursor = Cursor {
            notebook: notebook.to_string(),
            ts: clock::format(clock::now()?),
            position: h.archived + h.lines.len() as u64,
            last_hash: last.map(|(_, l)| digest::sha256_hex(l.as_bytes())),
            last_ts: last.and_then(|(_, l)| serde_json::from_str::<Event>(l).ok()).map(|e| e.ts),
            line: last.map_or(0, |(n, _)| *n),
        };
        cursors::store(lib, &out.cursor)?;
        Ok(out)
    })
}

fn from_event(notebook: &str, e: Event, line: usize) -> Change {
    Change {
        notebook: notebook.to_string(),
        event: e.event,
        path: e.path,
        ts: Some(e.ts),
        action: e.action,
        by: e.notebook,
        category: e.category,
        topic: e.topic,
        line: Some(line),
    }
}

/// The cold start's full match: every row of `.master-index.md` (path,
/// category, topic). A missing master index is an error naming the fix.
fn cold_rows(lib: &Library, notebook: &str) -> Result<Vec<Change>> {
    let text = crate::fs::read::optional_text(&lib.path(index::MASTER))?.ok_or_else(|| {
        Error::msg(format!("{} is missing: run 'kb-index rebuild' so a cold start can read it", index::MASTER))
    })?;
    Ok(index::table_rows(&text)
        .into_iter()
        .map(|(path, row)| {
            let cells = cells(&row);
            Change {
                notebook: notebook.to_string(),
                event: "indexed".into(),
                path,
                ts: None,
                action: None,
                by: None,
                category: cells.get(1).filter(|c| !c.is_empty()).cloned(),
                topic: cells.get(2).filter(|c| !c.is_empty()).cloned(),
                line: None,
            }
        })
        .collect())
}

/// The cells of a `| a | b |` row; `\|` is a pipe inside a cell.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut out = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                if let Some(s) = out.last_mut() {
                    s.push('|');
                }
            }
            '|' => out.push(String::new()),
            c => {
                if let Some(s) = out.last_mut() {
                    s.push(c)
                }
            }
        }
    }
    out.into_iter().map(|s| s.trim().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_count_archived_lines_and_cells_split() {
        assert_eq!(
            archived_count(" COMPACT 2026-02-21: archived 847 lines -> .changelog-archive/2026-01.md"),
            Some(847)
        );
        assert_eq!(archived_count(" something else"), None);
        assert_eq!(cells("| a.md | reference | x \\| y |\n"), vec!["a.md", "reference", "x | y"]);
    }
}
