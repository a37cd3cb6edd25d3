//! One apply is one group of changes to the memory directory: the
//! survivor note written, each note a merge or replace removes copied to
//! `archive/` and dropped from `notes/`, its INDEX.md row, the search
//! index and the audit lines. Done one by one, a kill -9 between them left
//! a note with no INDEX.md row and no audit line, or an archived note
//! whose row stayed and whose delete was never audited (a retried
//! decision finds it archived and writes no line for it). So the group is
//! journaled with the one journal (`fs::journal`; this module describes
//! the apply to it as a `Kind` and keeps its record format and what the
//! group owes: INDEX.md, the search index, the audit lines):
//!
//! 1. the note and the archive copies are written to synced temp files
//!    beside their targets;
//! 2. `<memory>/.journal` records each file change (path, temp, digest
//!    before and after), the audit line each change owes, the note whose
//!    INDEX.md row is upserted and INDEX.md's digest before, and is made
//!    durable;
//! 3. the temps are renamed into place and the removed notes unlinked, in
//!    order (note, then each archive copy before its note's removal);
//! 4. INDEX.md, the search index and the audit log are updated (apply's
//!    fast paths: one appended row, the side segment);
//! 5. the journal is removed.
//!
//! The next apply or `reindex`, under the memory lock, finishes a group a
//! kill left: a file with its planned digest landed; one still with its
//! old digest gets its temp renamed in (or is removed); the first that is
//! neither (edited by hand since) stops the roll forward and it and every
//! later change keep their bytes. Then INDEX.md's rows are brought in line
//! with the notes on disk, the search index is written whole, and the
//! audit lines of the changes that landed (and of INDEX.md, its digest
//! before the group to its digest now) are appended unless the log
//! already ends with them. Every step is idempotent, so a kill during
//! recovery is finished by the next one. Temp files a kill left before the
//! journal existed are named for no note (scans skip them); `reindex`
//! sweeps them, and so does a recovery.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::audit::{self, Line};
use super::index_digest::{self, Known};
use super::index_md;
use super::note::file_digest;
use super::store::{self, Loaded, Paths};
use crate::error::Result;
use crate::fs::atomic;
use crate::fs::crash::{self, Step};
use crate::fs::journal::Recovered;
use crate::fs::journal::{self, Change, Fate};

/// The journal's name in the memory directory.
pub const FILE: &str = ".journal";

/// The format version written and understood.
pub const VERSION: u32 = 1;

/// What one file change is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    /// The survivor note written.
    Note,
    /// A removed note's copy in `archive/`.
    Archive,
    /// A removed note unlinked from `notes/`.
    Remove,
}

/// One file change as journaled.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Planned {
    kind: Kind,
    /// The file, relative to the memory directory (`notes/MEM-….md`).
    path: String,
    /// The synced temp file renamed onto it, relative too; `None` for a removal.
    tmp: Option<String>,
    /// SHA-256 of its bytes before, `None` when it did not exist.
    before: Option<String>,
    /// SHA-256 of its bytes after, `None` when it is removed.
    after: Option<String>,
    /// The audit line the change owes (the archive copy owes none: its
    /// note's delete line names it).
    line: Option<Line>,
    /// The note whose INDEX.md row goes (a removal).
    removes: Option<String>,
}

/// The intent record of one apply.
#[derive(Debug, Serialize, Deserialize)]
pub struct Journal {
    version: u32,
    pid: u32,
    started: String,
    files: Vec<Planned>,
    /// The note whose INDEX.md row is upserted.
    put: Option<String>,
    /// INDEX.md's SHA-256 before the group (`None` when empty or missing).
    index_before: Option<String>,
    /// The INDEX.md audit line, its digests filled when written.
    index_line: Line,
}

/// The digest of a file's bytes; `None` when it does not exist. Never
/// through a link.
fn digest(path: &Path) -> Result<Option<String>> {
    journal::digest(path, crate::library::scan::MAX_DOC_BYTES, file_digest)
}

/// A path relative to the memory directory, for the journal.
fn rel(paths: &Paths, p: &Path) -> String {
    p.strip_prefix(&paths.dir).unwrap_or(p).to_string_lossy().replace('\\', "/")
}

/// A journaled path made absolute again, once [`check`] passed.
fn abs(paths: &Paths, r: &str) -> Result<PathBuf> {
    journal::inside(&paths.dir, r).map_err(|why| journal::refused(&paths.dir.join(FILE), "path", r, &why))
}

/// Refuses a journal naming anything an apply never journals, before
/// recovery touches a file (recovery renamed, unlinked and read
/// what a journal named, and a journal is a file anyone who can write
/// the store can plant). Every path is inside the memory directory in
/// plain parts with no symlink on the way (`fs::journal::inside`); a
/// note or a removal is `notes/<file>`, an archive copy `archive/<file>`;
/// a temp is the writer's own, beside its target; note ids are note ids.
fn check(paths: &Paths, j: &Journal) -> Result<()> {
    let journal = paths.dir.join(FILE);
    let files = j.files.iter().map(|f| (f.path.as_str(), f.tmp.as_deref()));
    journal::check_files(&paths.dir, &journal, files, |_| None)?;
    for (i, f) in j.files.iter().enumerate() {
        let dir = if f.kind == Kind::Archive { "archive" } else { "notes" };
        if f.path.split_once('/').is_none_or(|(d, name)| d != dir || name.contains('/')) {
            let why = format!("is not a file in {dir}/");
            return Err(journal::refused(&journal, &format!("files[{i}].path"), &f.path, &why));
        }
        if let Some(id) = &f.removes {
            super::note::check_id(id).map_err(|why| journal::refused(&journal, "removes", id, &why))?;
        }
    }
    if let Some(id) = &j.put {
        super::note::check_id(id).map_err(|why| journal::refused(&journal, "put", id, &why))?;
    }
    Ok(())
}

/// The changes of one apply, staged as they are decided, then journaled
/// and put in place by [`Group::commit`].
#[derive(Debug, Default)]
pub struct Group {
    files: Vec<Planned>,
}

impl Group {
    fn stage(&mut self, paths: &Paths, kind: Kind, target: &Path, bytes: &[u8], line: Option<Line>) -> Result<()> {
        let before = digest(target)?;
        let s = atomic::stage(target, bytes, true)?;
        crash::at(Step::MemgateTemp);
        self.files.push(Planned {
            kind,
            path: rel(paths, target),
            tmp: Some(rel(paths, &s.tmp)),
            before,
            after: Some(file_digest(bytes)),
            line,
            removes: None,
        });
        Ok(())
    }

    /// Stages the survivor note's new bytes, with its audit line.
    pub fn note(&mut self, paths: &Paths, id: &str, bytes: &[u8], line: Line) -> Result<()> {
        self.stage(paths, Kind::Note, &paths.note(id), bytes, Some(line))
    }

    /// Stages a removed note's copy in `archive/` under `name`, then its
    /// removal from `notes/` with its delete line.
    pub fn archive(&mut self, paths: &Paths, old: &Loaded, name: &str, line: Line) -> Result<()> {
        self.stage(paths, Kind::Archive, &paths.archive.join(name), &old.bytes, None)?;
        self.files.push(Planned {
            kind: Kind::Remove,
            path: rel(paths, &paths.note(&old.note.id)),
            tmp: None,
            before: Some(file_digest(&old.bytes)),
            after: None,
            line: Some(line),
            removes: Some(old.note.id.clone()),
        });
        Ok(())
    }

    /// Whether nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Drops the staged temp files (an error before commit).
    pub fn discard(self, paths: &Paths) {
        let temps: Vec<PathBuf> =
            self.files.iter().filter_map(|f| f.tmp.as_deref()).map(|t| paths.dir.join(t)).collect();
        journal::discard(temps.iter().map(PathBuf::as_path));
    }

    /// Journals the group (durably), then puts its files in place in
    /// order and syncs their directories. `put` is the note whose INDEX.md
    /// row the group upserts, `index_before` INDEX.md's digest now, and
    /// `index_line` the INDEX.md audit line to fill. Callers hold the
    /// memory lock and finish with [`Journal::lines`], the audit append
    /// and [`end`].
    pub fn commit(
        self,
        paths: &Paths,
        started: &str,
        put: Option<String>,
        index_before: Option<String>,
        index_line: Line,
    ) -> Result<Journal> {
        let j = Journal {
            version: VERSION,
            pid: std::process::id(),
            started: started.to_string(),
            files: self.files,
            put,
            index_before,
            index_line,
        };
        let files: Vec<_> =
            j.files.iter().map(|f| (paths.dir.join(&f.path), f.tmp.as_ref().map(|t| paths.dir.join(t)))).collect();
        let each = |i: usize| {
            crash::at(match j.files[i].kind {
                Kind::Note => Step::MemgateNote,
                Kind::Archive => Step::MemgateArchive,
                Kind::Remove => Step::MemgateRemove,
            })
        };
        journal::land(&paths.dir.join(FILE), &j, &files, || crash::at(Step::MemgateJournal), each)?;
        Ok(j)
    }
}

impl Journal {
    /// The audit lines the group owes when every change landed: each
    /// change's, then INDEX.md's when it changed (`index`: its digest
    /// before and after).
    pub fn lines(&self, index: Option<(Option<String>, String)>) -> Vec<Line> {
        let mut out: Vec<Line> = self.files.iter().filter_map(|f| f.line.clone()).collect();
        out.extend(index.map(|(before, after)| self.index_line(before, after)));
        out
    }

    fn index_line(&self, before: Option<String>, after: String) -> Line {
        let mut l = self.index_line.clone();
        l.digest_before = before;
        l.digest_after = Some(after);
        l
    }
}

/// Removes the journal once the group is wholly recorded. Not synced on
/// purpose (a directory sync per apply): a journal that comes back after a power
/// cut describes a group wholly in place, and finishing it again finds
/// every file landed, INDEX.md in line and the audit log ending with its
/// lines, and changes nothing.
pub fn end(paths: &Paths) -> Result<()> {
    journal::end(&paths.dir.join(FILE), false)
}

/// Finishes the group a killed apply left (see the module doc) and sweeps
/// the temp files of dead writers. Returns the `recovered` record when
/// there was a journal. Callers hold the memory lock.
pub fn recover(paths: &Paths) -> Result<Option<Recovered>> {
    let Some(rec) = journal::recover(&mut Apply(paths))? else { return Ok(None) };
    sweep(paths)?;
    eprintln!(
        "kb-memgate: recovered an apply interrupted at {} (pid {}): {} changes in place, {} kept their bytes",
        rec.started,
        rec.pid,
        rec.landed.len(),
        rec.rolled_back.len()
    );
    Ok(Some(rec))
}

/// [`recover`] under the memory lock, for `kb-lock sweep`: only when a
/// killed apply left its journal, so a sweep takes no lock it need not.
pub fn finish_pending(paths: &Paths) -> Result<Option<Recovered>> {
    if !paths.dir.join(FILE).exists() {
        return Ok(None);
    }
    crate::lock::with_lock(&paths.dir, &crate::lock::Options::default(), || recover(paths))
}

/// An apply as recovery sees it (see the module doc).
struct Apply<'a>(&'a Paths);

impl journal::Kind for Apply<'_> {
    type Record = Journal;
    type Done = Recovered;
    const FORMAT: journal::Format = journal::Format {
        tool: "kb-memgate",
        version: VERSION,
        hash: file_digest,
        limit: crate::library::scan::MAX_DOC_BYTES,
        durable_end: false,
    };

    fn path(&self) -> PathBuf {
        self.0.dir.join(FILE)
    }

    fn check(&mut self, j: &Journal) -> Result<()> {
        check(self.0, j)
    }

    /// A temp must hold the planned bytes (it was synced before the
    /// journal was written; the roll forward checks, for a hand-made one).
    fn changes<'a>(&self, j: &'a Journal) -> Result<Vec<Change<'a>>> {
        let mut changes = Vec::with_capacity(j.files.len());
        for f in &j.files {
            let tmp = f.tmp.as_deref().map(|t| abs(self.0, t)).transpose()?;
            let (before, after) = (f.before.clone(), f.after.clone());
            changes.push(Change { path: abs(self.0, &f.path)?, tmp, before, after, bytes: None, damaged: false });
        }
        Ok(changes)
    }

    fn finish(&mut self, j: &Journal, fates: &[Fate]) -> Result<Recovered> {
        finish(self.0, j, fates)
    }
}

/// What a group owes once its files are settled: INDEX.md's rows, the
/// search index, the audit lines of the changes that landed (a change
/// someone else made since keeps its bytes, and so does every later one).
fn finish(paths: &Paths, j: &Journal, fates: &[Fate]) -> Result<Recovered> {
    let mut rec = Recovered::of(&j.started, j.pid, j.files.iter().map(|f| format!("memory/{}", f.path)), fates);
    let (mut lines, mut removed) = (Vec::new(), Vec::new());
    for (f, fate) in j.files.iter().zip(fates) {
        if *fate != Fate::Kept {
            lines.extend(f.line.clone());
            removed.extend(f.removes.clone());
        }
    }
    let rebuilt = &mut rec.rebuilt;
    // INDEX.md: the rows of the removed notes go, the survivor's row is
    // its note's as on disk. A table that cannot be read is left to
    // `reindex`, which rebuilds it whole (and audits that).
    let text = store::read_index_md(paths)?;
    if let Ok(mut rows) = index_md::parse(&text) {
        let survivor = match &j.put {
            Some(id) => store::read_note(paths, &super::note::file_name(id))?,
            None => None,
        };
        index_md::update(&mut rows, &removed, &survivor.iter().map(|l| &l.note).collect::<Vec<_>>());
        let new = index_md::render(&rows);
        if new != text {
            atomic::write(&paths.index_md, new.as_bytes())?;
            index_digest::save(paths, &Known::of_text(&new, index_md::appendable(&new)));
            rebuilt.push("memory/INDEX.md".to_string());
        }
    }
    let cur = store::read_index_md(paths)?;
    let after = (!cur.is_empty()).then(|| file_digest(cur.as_bytes()));
    if let Some(after) = after.filter(|d| Some(d) != j.index_before.as_ref()) {
        lines.push(j.index_line(j.index_before.clone(), after));
    }
    // The search index, whole (it is derived; recovery is rare).
    let (notes, problems) = store::scan(paths)?;
    if let Some(e) = problems.into_iter().next() {
        return Err(e);
    }
    store::write_index(paths, &notes.iter().map(Loaded::entry).collect::<Vec<_>>())?;
    rebuilt.push("memory/.search.idx".to_string());
    // The audit lines, unless the killed apply appended them already.
    let added = if audit::ends_with(paths, &lines)? { 0 } else { lines.len() };
    if added > 0 {
        audit::append(paths, &lines)?;
    }
    rec.changelog_added = added;
    Ok(rec)
}

/// Removes temp files (`.<name>.tmp.<pid>.…`, see `fs::atomic`) whose
/// writer died from the memory directory, `notes/` and `archive/`.
pub fn sweep(paths: &Paths) -> Result<()> {
    for dir in [&paths.dir, &paths.notes, &paths.archive] {
        atomic::remove_dead_temps(dir, None, crate::lock::pid_alive)?;
    }
    Ok(())
}
