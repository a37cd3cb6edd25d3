//! The library's write-ahead journal `.library/.journal` as a record: its
//! format (schemas/journal.schema.json) and how one is started, read and
//! ended. Here, below `derived`, so that a rebuild's effectiveness_mark
//! clearing journals its documents like any batch; how a killed batch is
//! recovered (its changelog lines, a rebuild of every derived file, the
//! commit) is `kb::write::journal`, the layer that can do all of that.

use serde::{Deserialize, Serialize};

use crate::clock;
use crate::doc::{digest, frontmatter};
use crate::error::{Context, Result};
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
    /// The boot the batch ran in (`fs::atomic::boot_id`), when its files
    /// carry a [`Replay`]: recovery in another boot knows a power cut may
    /// have emptied or torn a file renamed before it, and replays it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<String>,
}

/// The most text bytes one journal replays ([`Replay`]): a batch whose
/// new texts are larger syncs each staged file instead (the journal is
/// read whole by recovery, so what it holds stays bounded); a journal
/// holding more is refused.
pub const REPLAY_LIMIT: usize = 16 << 20;

/// A planned file's new text and its digest before the batch, carried in
/// the journal so that the journal alone is the batch's commit point: its
/// temps are renamed in without an fsync each, and recovery writes any
/// file that does not hold its planned bytes from here (rolled forward),
/// never trusting a renamed file a power cut may have left empty.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Replay {
    /// SHA-256 of the file before the batch; empty when it did not exist.
    pub before: String,
    /// The new text (its SHA-256 is the file's `sha256`, checked before use).
    pub text: String,
}

impl Journal {
    /// Whether its files carry their texts ([`Replay`]): then they were
    /// renamed in unsynced and are checkpointed before the journal ends.
    pub fn replays(&self) -> bool {
        self.files.iter().any(|f| f.replay.is_some())
    }
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
    /// Its text, for recovery to write (a batch's files within
    /// [`REPLAY_LIMIT`]); absent otherwise: its temp was synced instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<Replay>,
}

/// The length of `.changelog` up to its last newline: where this batch's
/// lines will start.
pub fn changelog_offset(lib: &Library) -> Result<u64> {
    on_disk::log_end(&lib.path(changelog::FILE))
}

/// Whether a batch left a journal (only then does `kb-lock sweep` take the
/// lock to recover it).
pub fn pending(lib: &Library) -> bool {
    lib.path(FILE).exists()
}

/// Makes the intent record durable (`fs::journal::write`, an atomic
/// write). Callers hold the library lock.
pub fn begin(lib: &Library, journal: &Journal) -> Result<()> {
    on_disk::write(&lib.path(FILE), journal)?;
    crash::at(Step::Journal);
    Ok(())
}

/// Removes the journal once the batch is wholly recorded.
pub fn end(lib: &Library) -> Result<()> {
    on_disk::end(&lib.path(FILE), true)
}

/// Reads the journal, if any. A journal that does not parse is an error:
/// it is written atomically, so it is never torn, and guessing would lose
/// or invent changelog lines. So is one naming a path no writer journals
/// ([`check`]): nothing reads a journal but to act on it.
pub fn read(lib: &Library) -> Result<Option<Journal>> {
    let j = on_disk::read::<Journal>(&lib.path(FILE), "kb-tools", VERSION)?;
    if let Some(j) = &j {
        check(lib, j)?;
    }
    Ok(j)
}

/// Refuses a journal that names anything a writer of this library never
/// journals (a peer committed a `.journal` whose recovery moved
/// `~/.ssh` into the library, deleted the project directory, and deleted
/// any file given as a temp with a wrong hash). Every path must be inside
/// the library in plain parts with no symlink on the way
/// (`fs::journal::inside`), and:
/// - a move (`kb-append skill promote`) goes from one skill's directory in
///   a stage to one in another (`.skills/.<stage>/<name>`), the only
///   directories a batch moves; the place under `from` where a file under
///   `to` is staged is checked too;
/// - a temp is the writer's own for its target: beside it and named as
///   `fs::atomic` names temps, or beside the same file under a move's
///   `from` (a promote stages SKILL.md in the old place);
/// - the one directory a removal may name as its temp is the one
///   `kb-append skill delete` moves a skill into,
///   `.skills/.<stage>/.<name>.deleting.<pid>`, and only for files of
///   that skill (see [`aside_of`]).
pub fn check(lib: &Library, j: &Journal) -> Result<()> {
    let journal = lib.path(FILE);
    let replayed: usize = j.files.iter().filter_map(|f| f.replay.as_ref()).map(|r| r.text.len()).sum();
    if replayed > REPLAY_LIMIT {
        let why = format!("holds {replayed} bytes of text to replay, over the {REPLAY_LIMIT} a writer journals");
        return Err(on_disk::refused(&journal, "files[].replay", "", &why));
    }
    let inside = |field: &str, rel: &str| {
        on_disk::inside(&lib.dir, rel).map_err(|why| on_disk::refused(&journal, field, rel, &why))
    };
    for (i, m) in j.moves.iter().enumerate() {
        for (field, rel) in [("from", &m.from), ("to", &m.to)] {
            let field = format!("moves[{i}].{field}");
            inside(&field, rel)?;
            if !skill_dir(rel) {
                return Err(on_disk::refused(&journal, &field, rel, "is not a skill's directory in a stage"));
            }
        }
    }
    for (i, f) in j.files.iter().enumerate() {
        inside(&format!("files[{i}].path"), &f.path)?;
        // Where a file under a move's `to` is staged before the move.
        let before_move = j.moves.iter().find_map(|m| {
            let inner = f.path.strip_prefix(&m.to)?.strip_prefix('/')?;
            Some(format!("{}/{inner}", m.from))
        });
        if let Some(old) = &before_move {
            inside(&format!("files[{i}].path (before its move)"), old)?;
        }
        if f.tmp.is_empty() {
            continue;
        }
        let field = format!("files[{i}].tmp");
        inside(&field, &f.tmp)?;
        let own = on_disk::temp_beside(&f.path, &f.tmp)
            || before_move.as_deref().is_some_and(|old| on_disk::temp_beside(old, &f.tmp))
            || (f.sha256.is_empty() && aside_of(&f.tmp).is_some_and(|skill| f.path.starts_with(&format!("{skill}/"))));
        if !own {
            return Err(on_disk::refused(
                &journal,
                &field,
                &f.tmp,
                &format!("is not a temp kb-tools writes for '{}'", f.path),
            ));
        }
    }
    Ok(())
}

/// Whether `rel` is a skill's directory in a stage: `.skills/<stage>/<name>`
/// (the file-kind table's `SKILLS_DIR` and `SKILL_STAGES`).
fn skill_dir(rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    matches!(parts.as_slice(), [top, stage, name]
        if *top == super::kind::SKILLS_DIR && super::kind::SKILL_STAGES.contains(stage) && !name.starts_with('.'))
}

/// The skill directory whose aside directory `tmp` is: `kb-append skill
/// delete` renames `.skills/.<stage>/<name>` to
/// `.skills/.<stage>/.<name>.deleting.<pid>` before removing it, and
/// journals that as the temp of the skill's first file, for recovery to
/// remove what is left. `None` for any other path.
pub fn aside_of(tmp: &str) -> Option<String> {
    let (stage, name) = tmp.rsplit_once('/')?;
    let (skill, pid) = name.strip_prefix('.')?.rsplit_once(".deleting.")?;
    let ok = !skill.is_empty() && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    let dir = format!("{stage}/{skill}");
    (ok && skill_dir(&dir)).then_some(dir)
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
        boot: None,
    })
}

/// Sets frontmatter field `key` of each document to its value as one
/// journaled group, the way a batch lands: every new text staged and
/// synced, the journal (carrying `message`, as there is no changelog line)
/// made durable, then the documents renamed in. A document that already
/// holds the value is left out. Returns each changed path with its new
/// text; with any, the journal is in place and the caller ends it after
/// indexing and committing (a kill from the journal on is finished by the
/// next writer). Shared by `kb-relate lifecycle --write`, skill promotion
/// and a rebuild's effectiveness-mark clearing.
pub fn set_field(
    lib: &Library,
    changes: &[(&str, &str)],
    key: &str,
    commit: bool,
    message: &str,
) -> Result<Vec<(String, String)>> {
    let mut staged: Vec<atomic::Staged> = Vec::new();
    let mut planned: Vec<(String, String)> = Vec::new();
    let staging = (|| {
        for (path, value) in changes {
            let full = lib.path(path);
            let text = std::fs::read_to_string(&full).ctx(|| format!("reading {path}"))?;
            if let Some(new) = frontmatter::set_field(&text, key, value) {
                staged.push(atomic::stage(&full, new.as_bytes(), true)?);
                crash::at(Step::WriteTemp);
                planned.push((path.to_string(), new));
            }
        }
        if staged.is_empty() {
            return Ok(());
        }
        let mut j = new(lib, commit)?;
        j.message = Some(message.to_string());
        for ((path, new), s) in planned.iter().zip(&staged) {
            let tmp = s.tmp.strip_prefix(&lib.dir).unwrap_or(&s.tmp).to_string_lossy().replace('\\', "/");
            let sha256 = digest::sha256_hex(new.as_bytes());
            j.files.push(Planned { path: path.clone(), tmp, sha256, replay: None });
        }
        begin(lib, &j)
    })();
    if let Err(e) = staging {
        for s in &staged {
            let _ = std::fs::remove_file(&s.tmp);
        }
        return Err(e);
    }
    if staged.is_empty() {
        return Ok(Vec::new());
    }
    // From here a failure leaves the journal for the next writer.
    atomic::put_in_place(&staged, || crash::at(Step::Rename))?;
    crash::at(Step::Renamed);
    Ok(planned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_dirs_and_asides() {
        assert!(skill_dir(".skills/.drafts/x"));
        for bad in
            [".skills/.drafts", ".skills/.drafts/x/y", ".skills/drafts/x", "notes/.drafts/x", ".skills/.drafts/.x"]
        {
            assert!(!skill_dir(bad), "{bad}");
        }
        assert_eq!(aside_of(".skills/.active/x/../.y.deleting.1"), None);
        assert_eq!(aside_of(".skills/.active/.x.deleting.42").as_deref(), Some(".skills/.active/x"));
        for bad in
            [".skills/.active/x.deleting.42", ".skills/.active/.x.deleting.", "notes/.x.deleting.1", ".x.deleting.1"]
        {
            assert_eq!(aside_of(bad), None, "{bad}");
        }
    }
}
