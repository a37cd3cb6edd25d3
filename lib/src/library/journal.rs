//! The library's write-ahead journal `.library/.journal` as a record: its
//! format (schemas/journal.schema.json) and how one is started, read and
//! ended. Here, below `derived`, so that a rebuild's effectiveness_mark
//! clearing journals its documents like any batch; how a killed batch is
//! recovered (its changelog lines, a rebuild of every derived file, the
//! commit) is `kb::write::journal`, the layer that can do all of that.

use serde::{Deserialize, Serialize};

use crate::clock;
use crate::error::Result;
use crate::fs::atomic;
use crate::fs::crash::{self, Step};
use crate::fs::journal as on_disk;
use crate::library::changelog::{self, Event};
use crate::library::Library;

/// The journal's file name under the library.
pub const FILE: &str = ".journal";

/// The format version written and understood.
pub const VERSION: u32 = 1;

/// The intent record of one batch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "record", rename = "journal")]
pub struct Journal {
    /// Format version ([`VERSION`]).
    pub version: u32,
    /// The writer's process id.
    pub pid: u32,
    /// When the batch started.
    pub started: String,
    /// Length of `.changelog`'s complete lines before the batch: its lines
    /// are looked for after this offset only.
    pub changelog_offset: u64,
    /// Whether the batch commits to git.
    pub commit: bool,
    /// The files it is about to put in place.
    pub files: Vec<Planned>,
    /// The changelog lines it is about to append, in order.
    pub events: Vec<Event>,
    /// Directories it is about to rename, finished by recovery (absent in
    /// a journal without any, so older journals read the same).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moves: Vec<Move>,
    /// The commit message, for a batch with no changelog line to build it
    /// from (`kb-relate lifecycle --write` setting frontmatter fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A directory a batch is about to rename. Recovery finishes it: every
/// planned file under `to` whose synced temp (`tmp`, under `from`) is still
/// there and holds the planned bytes is renamed onto its place under
/// `from`, then `from` is renamed to `to`, so the files land as planned.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Move {
    /// Library-relative directory as it is before the move.
    pub from: String,
    /// Library-relative directory it becomes.
    pub to: String,
}

/// One file a batch is about to rename into place (or remove).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Planned {
    /// Library-relative path of the target.
    pub path: String,
    /// Library-relative path of the synced temp file renamed onto it; for
    /// a removal empty, or the directory its skill was moved aside into
    /// (removed by recovery).
    pub tmp: String,
    /// SHA-256 of the final bytes; empty for a removal (landed when the
    /// file is gone).
    pub sha256: String,
}

/// The length of `.changelog` up to its last newline: where this batch's
/// lines will start.
pub fn changelog_offset(lib: &Library) -> Result<u64> {
    let p = lib.path(changelog::FILE);
    let b = crate::fs::read::optional(&p)?.unwrap_or_default();
    Ok(b.iter().rposition(|&c| c == b'\n').map_or(0, |i| i as u64 + 1))
}

/// Whether a batch left a journal (only then does `kb-lock sweep` take the
/// lock to recover it).
pub fn pending(lib: &Library) -> bool {
    lib.path(FILE).exists()
}

/// Makes the intent record durable (atomic write: temp, fsync, rename,
/// fsync the directory). Callers hold the library lock.
pub fn begin(lib: &Library, journal: &Journal) -> Result<()> {
    on_disk::write(&lib.path(FILE), journal)?;
    crash::at(Step::Journal);
    Ok(())
}

/// Removes the journal once the batch is wholly recorded.
pub fn end(lib: &Library) -> Result<()> {
    if on_disk::remove(&lib.path(FILE))? {
        atomic::sync_dir(&lib.dir)?;
    }
    Ok(())
}

/// Reads the journal, if any. A journal that does not parse is an error:
/// it is written atomically, so it is never torn, and guessing would lose
/// or invent changelog lines.
pub fn read(lib: &Library) -> Result<Option<Journal>> {
    on_disk::read(&lib.path(FILE), "kb-tools", |j: &Journal| j.version, VERSION)
}

/// A new journal for a batch started now.
pub fn new(lib: &Library, commit: bool) -> Result<Journal> {
    Ok(Journal {
        version: VERSION,
        pid: std::process::id(),
        started: clock::format(clock::now()?),
        changelog_offset: changelog_offset(lib)?,
        commit,
        files: Vec::new(),
        events: Vec::new(),
        moves: Vec::new(),
        message: None,
    })
}
