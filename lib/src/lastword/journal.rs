//! One apply of a pending file is one group of file changes: the
//! targets it edits, the staging file of entries that failed and the
//! pending file itself (rewritten without the applied entries, or removed).
//! Done one by one, a kill -9 between them left targets edited while their
//! entries were still pending; the next apply met its own result as "a
//! section changed since the entry was planned" and staged entries that
//! had in fact applied. So the group is journaled with the one journal
//! (`fs::journal`; this module describes the apply to it as a `Kind` and
//! keeps its own record format and report):
//!
//! 1. every new file is written to a synced temp file beside its target;
//! 2. `last-word/.journal` records each change (target, temp, digest
//!    before, digest after) and is made durable;
//! 3. the temps are renamed into place in order (targets, staging, the
//!    pending file last), then the directories are synced;
//! 4. the journal is removed.
//!
//! Whoever takes the last-word lock next and finds a journal finishes the
//! group: a file whose digest is the planned one landed; one that still
//! has its old digest gets its temp renamed in (or is removed); the first
//! file that is neither (a person edited it in between) stops the roll
//! forward, and it and every later file keep their bytes, so the pending
//! file still holds their entries and the next apply checks them afresh.
//! Temp files a kill left before the journal existed are swept.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::home::Home;
use super::report::Reporter;
use crate::doc::digest::sha256_hex;
use crate::error::Result;
use crate::fs::atomic;
use crate::fs::crash::{self, Step};
use crate::fs::journal::{self, Change, Fate, Recovered};

/// The journal's name in `last-word/`.
pub const FILE: &str = ".journal";

/// The format version written and understood.
pub const VERSION: u32 = 1;

/// The intent record of one apply.
#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    version: u32,
    pid: u32,
    started: String,
    files: Vec<Planned>,
}

/// One change as journaled.
#[derive(Debug, Serialize, Deserialize)]
struct Planned {
    /// The file, absolute.
    path: PathBuf,
    /// The synced temp file renamed onto it; `None` for a removal.
    tmp: Option<PathBuf>,
    /// SHA-256 of its bytes before, `None` when it did not exist.
    before: Option<String>,
    /// SHA-256 of its bytes after, `None` when it is removed.
    after: Option<String>,
}

/// The digest of a file's bytes; `None` when it does not exist. Never
/// through a link.
fn digest(path: &Path) -> Result<Option<String>> {
    journal::digest(path, u64::MAX, sha256_hex)
}

/// The changes of one apply, staged as they are decided and put in place
/// together by [`Group::commit`].
#[derive(Debug, Default)]
pub struct Group {
    files: Vec<Planned>,
}

impl Group {
    /// Writes `bytes` to a synced temp file beside `path`, to replace it at
    /// commit. An error (the directory cannot be written) leaves nothing.
    pub fn replace(&mut self, path: &Path, bytes: &[u8]) -> Result<()> {
        let before = digest(path)?;
        let s = atomic::stage(path, bytes, true)?;
        crash::at(Step::LastwordTemp);
        self.files.push(Planned { path: path.to_path_buf(), tmp: Some(s.tmp), before, after: Some(sha256_hex(bytes)) });
        Ok(())
    }

    /// Removes `path` at commit.
    pub fn remove(&mut self, path: &Path) -> Result<()> {
        let before = digest(path)?;
        self.files.push(Planned { path: path.to_path_buf(), tmp: None, before, after: None });
        Ok(())
    }

    /// Puts the group in place so that a kill at any instant is finished
    /// by the next [`recover`]: journal, renames in the order staged, sync
    /// of the directories, journal removed. Callers hold the last-word
    /// lock and stage the pending file last.
    pub fn commit(self, home: &Home) -> Result<()> {
        if self.files.is_empty() {
            return Ok(());
        }
        let j = Journal {
            version: VERSION,
            pid: std::process::id(),
            started: crate::clock::format(crate::clock::now()?),
            files: self.files,
        };
        let files: Vec<_> = j.files.iter().map(|f| (f.path.clone(), f.tmp.clone())).collect();
        let (journaled, each) = (|| crash::at(Step::LastwordJournal), |_| crash::at(Step::LastwordRename));
        journal::land(&home.lastword.join(FILE), &j, &files, journaled, each)?;
        crash::at(Step::LastwordRenamed);
        end(home)
    }

    /// Drops the staged temp files (a dry run, an error before commit).
    pub fn discard(self) {
        journal::discard(self.files.iter().filter_map(|f| f.tmp.as_deref()));
    }
}

/// Removes the journal. Not synced on purpose: a journal that comes back
/// after a power cut describes a group that is wholly in place, and
/// finishing it again finds every file landed and changes nothing.
fn end(home: &Home) -> Result<()> {
    journal::end(&home.lastword.join(FILE), false)
}

/// Finishes the group a killed apply left (see the module doc) and sweeps
/// what a kill before its journal left: temp files beside the knowledge
/// files and in kb-lastword's own directories, reserved staging names.
/// Prints a `recovered` record when there was a journal. Callers hold the
/// last-word lock.
pub fn recover(home: &Home, rep: &mut Reporter) -> Result<()> {
    if let Some(r) = finish(home)? {
        rep.record(&r)?;
    }
    Ok(())
}

/// The journaled group and the sweep of [`recover`], returning the
/// `recovered` record instead of printing it.
fn finish(home: &Home) -> Result<Option<Recovered>> {
    let r = journal::recover(&mut Apply { home })?;
    sweep(home)?;
    Ok(r)
}

/// [`recover`] under the last-word lock, for `kb-lock sweep`: only when
/// a killed apply left its journal. Returns the `recovered` record.
pub fn finish_pending(home: &Home) -> Result<Option<Recovered>> {
    if !home.lastword.join(FILE).exists() {
        return Ok(None);
    }
    home.with_lock(|| finish(home))
}

/// An apply as recovery sees it (see the module doc).
struct Apply<'a> {
    home: &'a Home,
}

impl journal::Kind for Apply<'_> {
    type Record = Journal;
    type Done = Recovered;
    const FORMAT: journal::Format = journal::Format {
        tool: "kb-lastword",
        version: VERSION,
        hash: sha256_hex,
        limit: u64::MAX,
        durable_end: false,
    };

    fn path(&self) -> PathBuf {
        self.home.lastword.join(FILE)
    }

    fn check(&mut self, j: &Journal) -> Result<()> {
        check(self.home, j)
    }

    fn changes<'a>(&self, j: &'a Journal) -> Result<Vec<Change<'a>>> {
        Ok(j.files
            .iter()
            .map(|f| Change {
                path: f.path.clone(),
                tmp: f.tmp.clone(),
                before: f.before.clone(),
                after: f.after.clone(),
                bytes: None,
                damaged: false,
            })
            .collect())
    }

    /// A file changed by someone else since keeps its bytes, and so does
    /// every later one: their entries are still pending.
    fn finish(&mut self, j: &Journal, fates: &[Fate]) -> Result<Recovered> {
        let r = Recovered::of(&j.started, j.pid, j.files.iter().map(|f| self.home.show(&f.path)), fates);
        eprintln!(
            "kb-lastword: recovered an apply interrupted at {} (pid {}): {} files in place, {} kept their bytes",
            j.started,
            j.pid,
            r.landed.len(),
            r.rolled_back.len()
        );
        // kb-append's record: a lastword recovery appends no changelog
        // line, rebuilds nothing and never commits.
        Ok(r)
    }
}

/// Refuses a journal naming a file an apply never writes, before
/// recovery touches anything (recovery renamed and removed
/// whatever a journal named, so a planted one could remove any file or
/// rename one onto a knowledge file). The journal keeps absolute paths
/// (version 1), so each is taken only as one of the places an apply
/// writes, each checked with `fs::journal::inside` from its own root (no
/// `..` or `.`, no symlink on the way):
/// - a knowledge file: one this run's configuration names (and
///   `Home::check_writable` allows), or a project knowledge file
///   (`auto_detect`) of another project: the apply may have been killed
///   in another working directory;
/// - a pending or staging file: directly in `last-word/`,
///   `last-word/staging/`, or a project's `.agents/` (`*.yaml` there);
/// - a temp: the writer's own for its target, beside it.
fn check(home: &Home, j: &Journal) -> Result<()> {
    let journal = home.lastword.join(FILE);
    for (i, f) in j.files.iter().enumerate() {
        let field = format!("files[{i}].path");
        let shown = f.path.to_string_lossy();
        let (root, rel) = place(home, &f.path).map_err(|why| journal::refused(&journal, &field, &shown, &why))?;
        journal::inside(&root, &rel).map_err(|why| journal::refused(&journal, &field, &shown, &why))?;
        let Some(tmp) = &f.tmp else { continue };
        let field = format!("files[{i}].tmp");
        let tmp_shown = tmp.to_string_lossy();
        let tmp_rel = tmp
            .strip_prefix(&root)
            .ok()
            .and_then(|t| t.to_str())
            .ok_or_else(|| journal::refused(&journal, &field, &tmp_shown, "is not beside its target"))?;
        journal::inside(&root, tmp_rel).map_err(|why| journal::refused(&journal, &field, &tmp_shown, &why))?;
        if !journal::temp_beside(&rel, tmp_rel) {
            let why = format!("is not a temp kb-lastword writes for {shown}");
            return Err(journal::refused(&journal, &field, &tmp_shown, &why));
        }
    }
    Ok(())
}

/// The root a journaled file is checked from, and its path below it
/// (see [`check`]), or why it is no file an apply writes.
fn place(home: &Home, path: &Path) -> std::result::Result<(PathBuf, String), String> {
    use std::path::Component;
    if !path.is_absolute() || !path.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_))) {
        return Err("is not an absolute path in plain parts".into());
    }
    let name = path.file_name().and_then(|n| n.to_str()).ok_or("has no file name")?;
    let parent = path.parent().ok_or("has no parent directory")?;
    if home.knowledge_files().iter().any(|k| k == path) {
        home.check_writable(path)?;
        return Ok((parent.to_path_buf(), name.to_string()));
    }
    // Another project's knowledge file: `<project>/<auto_detect entry>`.
    for a in &home.config.auto_detect {
        let rel = super::home::lexical(Path::new(a));
        if rel.is_relative() && rel.components().all(|c| matches!(c, Component::Normal(_))) {
            if let (Some(project), Some(rel)) = (path.ancestors().nth(rel.components().count()), rel.to_str()) {
                if project.join(rel) == path {
                    return Ok((project.to_path_buf(), rel.to_string()));
                }
            }
        }
    }
    if parent == home.lastword || parent == home.staging() {
        return Ok((
            home.lastword.clone(),
            path.strip_prefix(&home.lastword).map_err(|e| e.to_string())?.to_string_lossy().into_owned(),
        ));
    }
    if parent.file_name().is_some_and(|n| n == ".agents") && name.ends_with(".yaml") {
        if let Some(project) = parent.parent() {
            return Ok((project.to_path_buf(), format!(".agents/{name}")));
        }
    }
    Err("is not a knowledge, pending or staging file kb-lastword writes".into())
}

/// Removes temp files (`.<name>.tmp.<pid>.…`, see `fs::atomic`) whose
/// writer died: beside each knowledge file (only that file's temps: the
/// project directory is the user's), and any in `last-word/`,
/// `last-word/staging/` and `./.agents/`; and reserved staging names of
/// dead processes.
fn sweep(home: &Home) -> Result<()> {
    let mut places: Vec<(PathBuf, Option<String>)> = home
        .knowledge_files()
        .into_iter()
        .filter_map(|f| Some((f.parent()?.to_path_buf(), Some(f.file_name()?.to_string_lossy().into_owned()))))
        .collect();
    places.extend([home.lastword.clone(), home.staging(), home.project_dir()].into_iter().map(|d| (d, None)));
    for (dir, only) in places {
        atomic::remove_dead_temps(&dir, only.as_deref(), crate::lock::pid_alive)?;
    }
    super::staging::sweep(home)
}
