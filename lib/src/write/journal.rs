//! The write-ahead journal `.library/.journal` (DESIGN.md "Crash
//! guarantees"). Before a batch renames its first file into place it makes
//! one durable record of everything it is about to do: each file's final
//! SHA-256 and temp name, the changelog lines it will append, where the
//! changelog ended, and whether it commits. A batch that finishes removes
//! the journal. Whoever takes the lock next (a writer, compaction, sync,
//! `kb-lock sweep`) and finds one left by a killed batch recovers it:
//! a file whose bytes are the planned ones landed and keeps them (its
//! changelog lines are appended if missing); any other file kept its old
//! bytes and its lines are dropped (rolled back); then every derived file
//! is rebuilt and, when the batch was committing, one commit holds it all.
//! A directory move (`kb-append skill promote`) is the one thing recovery
//! finishes rather than rolls back: a move is a unit (half a skill in each
//! stage is no state to leave), so a journaled move is completed — its
//! staged files renamed in at the old place, then the directory renamed —
//! and its files then count as landed like any other.
//! Schema: `schemas/journal.schema.json`.

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;

use crate::doc::digest;
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::fs::journal::{self as on_disk, Change, Fate};
use crate::library::changelog::{self, Event};
use crate::library::Library;

// The record and how it is started, read and ended live one layer down
// (a rebuild's mark clearing writes one too); recovery lives here.
pub use crate::fs::journal::Recovered;
pub use crate::library::journal::{
    begin, changelog_offset, end, new, pending, read, set_field, Journal, Move, Planned, Replay, FILE, REPLAY_LIMIT,
    VERSION,
};

/// The SHA-256 of a file's bytes, `None` when it does not exist.
fn sha256_of(path: &std::path::Path) -> Result<Option<String>> {
    on_disk::digest(path, crate::fs::read::LIMIT, digest::sha256_hex)
}

/// Finishes or rolls back a batch a killed writer left (see the module
/// doc). `message` builds the commit message from the kept events.
/// Callers hold the library lock. A journal naming a path no writer
/// journals is refused before anything is touched
/// (`library::journal::check`): the error names it and it stays in
/// place. Returns `None` when there was nothing to recover.
pub fn recover(lib: &Library, message: impl Fn(&[Event]) -> String) -> Result<Option<Recovered>> {
    on_disk::recover(&mut Batch { lib, message })
}

/// A batch as recovery sees it (see the module doc).
struct Batch<'a, F> {
    lib: &'a Library,
    message: F,
}

impl<F: Fn(&[Event]) -> String> on_disk::Kind for Batch<'_, F> {
    type Record = Journal;
    type Done = Recovered;
    const FORMAT: on_disk::Format = on_disk::Format {
        tool: "kb-tools",
        version: VERSION,
        hash: digest::sha256_hex,
        limit: crate::fs::read::LIMIT,
        durable_end: true,
    };

    fn path(&self) -> PathBuf {
        self.lib.path(FILE)
    }

    fn check(&mut self, j: &Journal) -> Result<()> {
        crate::library::journal::check(self.lib, j)
    }

    /// The moves are finished, then every temp removed: a removal may
    /// name the directory it moved aside (a skill's delete); any other
    /// temp is a file (`check` allowed both).
    fn prepare(&mut self, j: &Journal) -> Result<()> {
        let lib = self.lib;
        for m in &j.moves {
            finish_move(lib, m, &j.files)?;
        }
        for f in j.files.iter().filter(|f| !f.tmp.is_empty()) {
            let tmp = lib.path(&f.tmp);
            let aside = crate::library::journal::aside_of(&f.tmp).is_some();
            let gone = match fs::symlink_metadata(&tmp) {
                Ok(m) if m.is_dir() && aside => fs::remove_dir_all(&tmp),
                _ => fs::remove_file(&tmp),
            };
            match gone {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(format!("removing {}", tmp.display()), e)),
            }
        }
        Ok(())
    }

    /// A file that carries its text ([`Replay`]) is rolled forward from
    /// it: written only when it still holds its bytes from before the
    /// batch (or is still absent when it had none), never over anything
    /// else, which is someone's change made after the kill. In another
    /// boot than the batch's, a power cut may have emptied or cut short a
    /// file it renamed in unsynced ([`on_disk::cut_short`]): that file is
    /// written too. A file without its text (its temps are gone) has
    /// landed or keeps its old bytes: the roll forward puts nothing.
    fn changes<'a>(&self, j: &'a Journal) -> Result<Vec<Change<'a>>> {
        let rebooted = j.boot.as_ref().is_some_and(|b| atomic::boot_id().as_ref() != Some(b));
        j.files
            .iter()
            .map(|f| {
                let path = self.lib.path(&f.path);
                let after = (!f.sha256.is_empty()).then(|| f.sha256.clone());
                let Some(r) = &f.replay else {
                    return Ok(Change { path, tmp: None, before: None, after, bytes: None, damaged: false });
                };
                let text = r.text.as_bytes();
                let damaged = rebooted && after.is_some() && {
                    match crate::fs::nofollow::read(&path, crate::fs::read::LIMIT) {
                        Ok(now) => now != text && on_disk::cut_short(&now, text),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                        Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
                    }
                };
                let before = (!r.before.is_empty()).then(|| r.before.clone());
                Ok(Change { path, tmp: None, before, after, bytes: Some(text), damaged })
            })
            .collect()
    }

    /// A file kept with bytes that are neither its old nor its planned
    /// ones was changed after the kill: said on stderr (the `recovered`
    /// record lists it as rolled back, and its changelog line is
    /// dropped). The files that had landed unsynced are checkpointed
    /// first: the journal holding their bytes goes once this is done.
    fn finish(&mut self, j: &Journal, fates: &[Fate]) -> Result<Recovered> {
        let mut landed = Vec::new();
        for (f, fate) in j.files.iter().zip(fates) {
            let Some(r) = &f.replay else { continue };
            let path = self.lib.path(&f.path);
            match fate {
                Fate::Kept => {
                    let now = sha256_of(&path)?.unwrap_or_default();
                    if now != r.before && now != f.sha256 {
                        crate::out::warn(
                            "kb",
                            &format!(
                                "{} was changed after the batch started at {} (pid {}) was killed: it keeps \
                                 those bytes, and the batch's text for it was not written",
                                f.path, j.started, j.pid
                            ),
                        );
                    }
                }
                Fate::Landed => landed.push(path),
                Fate::Put => {}
            }
        }
        atomic::checkpoint(&landed.iter().map(PathBuf::as_path).collect::<Vec<_>>())?;
        finish(self.lib, j, fates, &self.message)
    }
}

/// What a batch owes once its files are settled: the changelog lines of
/// the files that landed, a rebuild of every derived file, the commit.
fn finish(lib: &Library, j: &Journal, fates: &[Fate], message: impl Fn(&[Event]) -> String) -> Result<Recovered> {
    let mut r = Recovered::of(&j.started, j.pid, j.files.iter().map(|f| f.path.clone()), fates);
    r.landed.sort();
    r.landed.dedup();
    let landed: BTreeSet<String> = r.landed.iter().cloned().collect();
    // An event about no planned file (`kb-append event`) is kept as is.
    let planned: BTreeSet<&str> = j.files.iter().map(|f| f.path.as_str()).collect();
    let kept: Vec<Event> =
        j.events.iter().filter(|e| landed.contains(&e.path) || !planned.contains(e.path.as_str())).cloned().collect();
    r.changelog_added = append_missing(lib, j.changelog_offset, &kept)?;
    r.rebuilt = crate::derived::rebuild_all::rebuild(lib)?.touched;
    // A batch with no changelog line commits what landed (set_fields).
    if j.commit && (!kept.is_empty() || (j.events.is_empty() && !landed.is_empty())) {
        let mut paths: Vec<String> = landed.iter().cloned().collect();
        paths.push(changelog::FILE.to_string());
        paths.push(crate::library::relations::FILE.to_string());
        paths.extend(crate::derived::index::generated_indexes(lib));
        // The master index too: a killed writer may have updated it
        // already, so the rebuild leaves it as it is and names it nowhere.
        paths.push(crate::derived::index::MASTER.to_string());
        // An index removed with its directory's last document (by the
        // killed writer or the rebuild) is gone from the list above; its
        // deletion is committed too (git::commit skips untracked ones).
        let mut gone: BTreeSet<String> = r.rebuilt.iter().cloned().collect();
        for p in &landed {
            let mut dir = p.as_str();
            while let Some((parent, _)) = dir.rsplit_once('/') {
                gone.insert(format!("{parent}/.index.md"));
                dir = parent;
            }
        }
        paths.extend(gone.into_iter().filter(|p| !paths.contains(p)).collect::<Vec<_>>());
        // Stale git state a killed commit left is cleared first; a live
        // git that outlasts the wait makes the commit fail, reported below.
        let commit = crate::library::git_state::clear(lib, crate::library::git_state::WAIT).and_then(|c| {
            crate::library::git_state::note(&c);
            crate::library::git::unstage(lib, &paths);
            let text = j.message.clone().unwrap_or_else(|| message(&kept));
            crate::library::git::commit(lib, &paths, &text)
        });
        match commit {
            Ok(c) => r.committed = c,
            Err(e) => r.commit_error = Some(e.to_string()),
        }
    }
    Ok(r)
}

/// Finishes a journaled directory move (see [`Move`]). A move already
/// made, or whose source is gone, is left as it is; a target that exists
/// beside its source (made by hand meanwhile) is not overwritten, so the
/// move's files count as rolled back and the stray copy is the person's.
fn finish_move(lib: &Library, m: &Move, files: &[Planned]) -> Result<()> {
    let (from, to) = (lib.path(&m.from), lib.path(&m.to));
    if !from.is_dir() || fs::symlink_metadata(&to).is_ok() {
        return Ok(());
    }
    let (under_from, under_to) = (format!("{}/", m.from), format!("{}/", m.to));
    for f in files.iter().filter(|f| !f.sha256.is_empty() && f.tmp.starts_with(&under_from)) {
        let Some(inner) = f.path.strip_prefix(&under_to) else { continue };
        let tmp = lib.path(&f.tmp);
        // Only a temp with the planned bytes lands (it was synced before the journal).
        if sha256_of(&tmp)?.as_deref() != Some(f.sha256.as_str()) {
            continue;
        }
        let dest = from.join(inner);
        atomic::rename_onto(&tmp, &dest, true)
            .map_err(|e| Error::io(format!("renaming {} into place", tmp.display()), e))?;
    }
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent).map_err(|e| Error::io(format!("creating {}", parent.display()), e))?;
    }
    atomic::rename_onto(&from, &to, true).map_err(|e| Error::io(format!("moving {} to {}", m.from, m.to), e))?;
    Ok(())
}

/// Appends the events whose exact line is not among the changelog's
/// complete lines after `offset`. Returns how many it appended.
fn append_missing(lib: &Library, offset: u64, events: &[Event]) -> Result<usize> {
    // Compared as `append` wrote them: with this clone's machine stamped.
    // Only whole lines count: a torn tail is cut by the append below.
    let stamped = changelog::stamped(lib, events);
    let lines = stamped
        .iter()
        .map(|e| serde_json::to_string(e).map_err(|e| Error::msg(format!("cannot encode event: {e}"))))
        .collect::<Result<Vec<String>>>()?;
    let missing: Vec<Event> = on_disk::missing_lines(&lib.path(changelog::FILE), offset, &lines)?
        .into_iter()
        .map(|i| stamped[i].clone())
        .collect();
    changelog::append(lib, &missing)?;
    Ok(missing.len())
}

/// Tells the user on stderr that a writer recovered a killed batch, for
/// commands whose stdout has no place for a `recovered` record.
pub fn note(recovered: Option<Recovered>) {
    if let Some(r) = recovered {
        r.tell("kb", "a batch", "changelog lines");
    }
}
