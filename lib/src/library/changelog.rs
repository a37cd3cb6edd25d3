//! The append-only event log `.library/.changelog` (seed 000 step 4): one
//! JSON object per line, `#` marker lines left by compaction. Effectiveness,
//! lifecycle, promotion and the notebook relations are computed from it.

use std::collections::BTreeMap;
use std::fs;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::clock;
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::library::Library;

/// The log's file name under the library.
pub const FILE: &str = ".changelog";

/// One changelog line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Event {
    /// When it happened (RFC 3339, UTC).
    pub ts: String,
    /// `write`, `referenced`, `replan`, `accept`, or a skill/maintenance event.
    pub event: String,
    /// Library-relative path of the document.
    pub path: String,
    /// For writes: `created`, `updated` or `appended`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The notebook (agent session) that caused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notebook: Option<String>,
    /// The document's category (reference, experience, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The document's topic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// SHA-256 of the content after the write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Size in bytes after the write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Why a risky write was allowed, or other free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The machine that wrote the event (`kb.machine` in the
    /// clone's git config, set by sync), stamped by [`append`]; absent
    /// outside git and before a clone's first sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

impl Event {
    /// The event's instant, if its `ts` parses.
    pub fn instant(&self) -> Option<Timestamp> {
        clock::parse_instant(&self.ts)
    }
}

/// A changelog line that is neither an event nor a marker.
#[derive(Debug, Clone, Serialize)]
pub struct BadLine {
    /// 1-based line number.
    pub line: usize,
    /// Why it did not parse.
    pub message: String,
}

/// What reading the log found.
#[derive(Debug, Default)]
pub struct Log {
    /// Events in file order with their 1-based line numbers.
    pub events: Vec<(usize, Event)>,
    /// Lines that did not parse (reported by `status`, never dropped).
    pub bad: Vec<BadLine>,
    /// Whether the last line was torn (no final newline) and ignored.
    pub torn: bool,
}

/// Appends events as whole lines, each stamped with this clone's machine
/// identity when it has one. Callers hold the library lock.
pub fn append(lib: &Library, events: &[Event]) -> Result<()> {
    let mut text = String::new();
    for e in &stamped(lib, events) {
        text.push_str(&serde_json::to_string(e).map_err(|e| Error::msg(format!("cannot encode event: {e}")))?);
        text.push('\n');
    }
    atomic::append_lines(&lib.path(FILE), &text)
}

/// The events as [`append`] writes them: this clone's machine identity
/// on each that carries none (a recovery compares lines in this form).
pub fn stamped(lib: &Library, events: &[Event]) -> Vec<Event> {
    let mut events = events.to_vec();
    crate::library::machine::stamp(lib, &mut events);
    events
}

/// Reads the log; a missing file is an empty log and a torn last line is
/// ignored.
pub fn read(lib: &Library) -> Result<Log> {
    let p = lib.path(FILE);
    let Some(bytes) = crate::fs::read::optional(&p)? else { return Ok(Log::default()) };
    let text = String::from_utf8_lossy(&bytes);
    Ok(parse(&text))
}

/// Parses log text (see [`read`]).
pub fn parse(text: &str) -> Log {
    let mut log = Log { torn: !text.is_empty() && !text.ends_with('\n'), ..Log::default() };
    for (i, line) in atomic::complete_lines(text).enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        match serde_json::from_str::<Event>(t) {
            Ok(e) => log.events.push((i + 1, e)),
            Err(e) => log.bad.push(BadLine { line: i + 1, message: format!("not a changelog event: {e}") }),
        }
    }
    log
}

/// Reads one `.changelog-archive/YYYY-MM.md`: an unreadable or non-UTF-8
/// archive is an error, never an empty history.
pub fn read_archive(path: &std::path::Path) -> Result<String> {
    let bytes = fs::read(path).map_err(|e| Error::io(format!("reading the archive {}", path.display()), e))?;
    String::from_utf8(bytes).map_err(|e| {
        Error::msg(format!(
            "the archive {} is not UTF-8 (byte {}); fix or restore it before compacting or reading history",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

/// What a compaction did.
#[derive(Debug, Clone, Serialize)]
pub struct Compaction {
    /// Archive files written (library-relative) with the lines each got.
    pub archives: BTreeMap<String, usize>,
    /// Lines moved out of `.changelog` in all.
    pub archived: usize,
}

/// Seed 000 `--compact`: moves event lines older than `cutoff` into
/// `.changelog-archive/YYYY-MM.md` (by each line's month), leaves one
/// `# COMPACT <date>: archived N lines -> <file>` marker per archive file,
/// keeps markers, recent lines and unparseable lines. Idempotent; the
/// archive is written before the log so a crash duplicates nothing.
/// Callers hold the library lock.
pub fn compact(lib: &Library, cutoff: Timestamp, now: Timestamp) -> Result<Compaction> {
    let p = lib.path(FILE);
    let text = crate::fs::read::optional_text(&p)?.unwrap_or_default();
    let mut keep: Vec<&str> = Vec::new();
    let mut moved: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for line in atomic::complete_lines(&text) {
        // A line without a parseable time (a '#' marker, a foreign line)
        // stays in the log: kept, never lost.
        let old = serde_json::from_str::<Event>(line.trim()).ok().and_then(|e| e.instant()).filter(|ts| *ts < cutoff);
        match old {
            Some(ts) => moved.entry(ts.strftime("%Y-%m").to_string()).or_default().push(line),
            None => keep.push(line),
        }
    }
    let mut result = Compaction { archives: BTreeMap::new(), archived: 0 };
    if moved.is_empty() {
        return Ok(result);
    }
    let day = clock::day(now);
    let mut markers = Vec::new();
    // Every archive is read before any is written, so a bad one stops the
    // compaction with nothing changed.
    let mut existing = Vec::new();
    for month in moved.keys() {
        let ap = lib.path(&format!(".changelog-archive/{month}.md"));
        // An archive that cannot be read would look empty and get its
        // lines appended again: refuse (exit 2) before touching anything.
        existing.push(if ap.exists() { read_archive(&ap)? } else { String::new() });
    }
    for ((month, lines), existing) in moved.iter().zip(&existing) {
        let rel = format!(".changelog-archive/{month}.md");
        let ap = lib.path(&rel);
        let present: std::collections::HashSet<&str> = existing.lines().collect();
        let mut add = String::new();
        for l in lines.iter().filter(|l| !present.contains(*l)) {
            add.push_str(l);
            add.push('\n');
        }
        atomic::append_lines(&ap, &add)?;
        crate::fs::crash::at(crate::fs::crash::Step::CompactArchive);
        markers.push(format!("# COMPACT {day}: archived {} lines -> {rel}", lines.len()));
        result.archived += lines.len();
        result.archives.insert(rel, lines.len());
    }
    let mut out = String::new();
    let (old_markers, rest): (Vec<&str>, Vec<&str>) = keep.into_iter().partition(|l| l.starts_with('#'));
    for l in old_markers.iter().copied().chain(markers.iter().map(String::as_str)).chain(rest) {
        out.push_str(l);
        out.push('\n');
    }
    atomic::write(&p, out.as_bytes())?;
    crate::fs::crash::at(crate::fs::crash::Step::CompactLog);
    Ok(result)
}
