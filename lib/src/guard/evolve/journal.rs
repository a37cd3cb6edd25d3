//! INTEGRATE's write-ahead journal `.core-rule-proposals/.journal`. One
//! run of `kb-guard rules integrate` changes several files: the rule files
//! (an extended rule's own file, the library core file) and each proposal,
//! marked `integrated`; then it owes the audit lines and one commit. Done
//! one by one, a kill -9 between them left a rule in force whose proposal
//! still said `approved` (every rerun then refused it: "already exists"),
//! or a proposal `integrated` with no audit line and nothing committed.
//! So the run is journaled as kb-memgate's apply is (the file primitives
//! are `fs::journal`'s; the library's batch journal is bound to the
//! changelog, which integrate does not write):
//!
//! 1. every new text is checked as the loader will see it (before a byte
//!    is written, see `Engine::load_with`) and written to a synced temp;
//! 2. the journal records each file (path, temp, digest before and after,
//!    the bytes after),
//!    the audit lines owed (each with the files that must land for it),
//!    where the audit log ended and the commit message, made durable;
//! 3. the temps are renamed in, rule files first, then the proposals;
//! 4. the audit lines are appended, the commit is made, the journal goes.
//!
//! The next `kb-guard rules integrate` (or sync, or `kb-lock sweep`),
//! under the library lock, finishes a run a kill left: a file with its
//! planned digest landed; one still with its old digest gets its planned
//! bytes (kept in the journal, as `kb-lock sweep` may have removed the
//! dead run's temps); the first that is neither (edited by hand since)
//! stops the roll forward, and it and every later file keep their bytes.
//! Then the audit lines whose files all landed are appended unless the
//! log already has them after the recorded end, and what landed is
//! committed. Every step is idempotent, so a kill
//! during recovery is finished by the next one.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::audit::{self, Line};
use crate::clock;
use crate::doc::digest::sha256_hex;
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::fs::crash::{self, Step};
use crate::fs::journal::{self as on_disk, Fate, RollForward};
use crate::library::{git, git_state, Library};

/// The journal, library-relative.
pub const FILE: &str = ".core-rule-proposals/.journal";

/// The format version written and understood.
pub const VERSION: u32 = 1;

/// One file the run puts in place.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Planned {
    /// Library-relative path.
    path: String,
    /// Library-relative synced temp renamed onto it.
    tmp: String,
    /// SHA-256 of its bytes before, `None` when it did not exist.
    before: Option<String>,
    /// SHA-256 of its bytes after.
    after: String,
    /// The bytes after (a rule file or a proposal: a few KB). Recovery
    /// writes them when the temp is gone: `kb-lock sweep` removes a dead
    /// writer's temps, and a roll forward must not depend on them.
    text: String,
}

/// An audit line the run owes, and the files that must land for it (none
/// for a proposal that failed its check: its line is owed regardless).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Owed {
    line: String,
    files: Vec<String>,
}

/// The intent record of one integrate run.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "record", rename = "evolve_journal")]
struct Journal {
    version: u32,
    pid: u32,
    started: String,
    /// Length of the audit log's complete lines before the run: its lines
    /// are looked for after this offset only.
    audit_offset: u64,
    files: Vec<Planned>,
    audit: Vec<Owed>,
    /// The commit message, when the run commits.
    message: Option<String>,
}

/// What recovering a killed run did.
#[derive(Debug)]
pub struct Recovered {
    /// When the killed run started.
    pub started: String,
    /// Its process id.
    pub pid: u32,
    /// Files that landed (put in place now or before the kill).
    pub landed: Vec<String>,
    /// Files that keep their bytes (changed by someone else since).
    pub rolled_back: Vec<String>,
    /// Audit lines appended now.
    pub audit_added: usize,
    /// Whether a commit was made now.
    pub committed: bool,
}

/// The changes of one run: staged as they are planned, then journaled and
/// put in place by [`Group::land`].
#[derive(Debug, Default)]
pub struct Group {
    files: Vec<(Planned, atomic::Staged)>,
    audit: Vec<Owed>,
}

fn digest(path: &Path) -> Result<Option<String>> {
    on_disk::digest(path, crate::fs::read::LIMIT, sha256_hex)
}

/// A journaled path made absolute again: only a relative path of normal
/// parts, so a hand-made journal cannot make recovery rename outside the
/// library.
fn abs(lib: &Library, r: &str) -> Result<PathBuf> {
    if r.is_empty() || !Path::new(r).components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(Error::msg(format!(
            "{FILE}: '{}' is not a path inside the library; move the journal away to go on",
            crate::library::names::shown(r)
        )));
    }
    Ok(lib.path(r))
}

fn encode(line: &Line) -> Result<String> {
    serde_json::to_string(line).map_err(|e| Error::msg(format!("encoding audit line: {e}")))
}

impl Group {
    /// Writes `text` for `rel` to a synced temp beside it.
    pub fn stage(&mut self, lib: &Library, rel: &str, text: &str) -> Result<()> {
        let target = lib.path(rel);
        let before = digest(&target)?;
        let s = atomic::stage(&target, text.as_bytes(), true)?;
        crash::at(Step::EvolveTemp);
        let tmp = s.tmp.strip_prefix(&lib.dir).unwrap_or(&s.tmp).to_string_lossy().replace('\\', "/");
        let after = sha256_hex(text.as_bytes());
        let planned = Planned { path: rel.to_string(), tmp, before, after, text: text.to_string() };
        self.files.push((planned, s));
        Ok(())
    }

    /// Owes `line`, appended once `files` (library-relative) have landed.
    pub fn owe(&mut self, line: &Line, files: Vec<String>) -> Result<()> {
        self.audit.push(Owed { line: encode(line)?, files });
        Ok(())
    }

    /// Removes the staged temps (the run failed before its journal).
    pub fn discard(&self) {
        for (_, s) in &self.files {
            let _ = std::fs::remove_file(&s.tmp);
        }
    }

    /// Steps 2 to 4 (see the module doc): the journal, the renames in
    /// order, the audit lines, the commit (with `message`, when given and
    /// a file changed), then the journal's removal. Callers hold the
    /// library lock. Returns whether a commit was made.
    pub fn land(self, lib: &Library, message: Option<String>) -> Result<bool> {
        if self.files.is_empty() {
            let lines: String = self.audit.iter().map(|o| format!("{}\n", o.line)).collect();
            atomic::append_lines(&lib.path(audit::FILE), &lines)?;
            return Ok(false);
        }
        let journal = Journal {
            version: VERSION,
            pid: std::process::id(),
            started: clock::format(clock::now()?),
            audit_offset: audit_end(lib)?,
            files: self.files.iter().map(|(p, _)| p.clone()).collect(),
            audit: self.audit.clone(),
            message,
        };
        if let Err(e) = on_disk::write(&lib.path(FILE), &journal) {
            self.discard();
            return Err(e);
        }
        crash::at(Step::EvolveJournal);
        // From here a failure leaves the journal for the next run.
        let staged: Vec<atomic::Staged> = self.files.into_iter().map(|(_, s)| s).collect();
        atomic::put_in_place(&staged, || crash::at(Step::EvolveRename))?;
        crash::at(Step::EvolveRenamed);
        let landed: Vec<String> = journal.files.iter().map(|f| f.path.clone()).collect();
        finish(lib, &journal, &landed).map(|(_, committed)| committed)
    }
}

/// The length of the audit log up to its last newline.
fn audit_end(lib: &Library) -> Result<u64> {
    let b = crate::fs::read::optional(&lib.path(audit::FILE))?.unwrap_or_default();
    Ok(b.iter().rposition(|&c| c == b'\n').map_or(0, |i| i as u64 + 1))
}

/// Appends the owed lines whose files all landed and that the log does
/// not hold after the journal's offset, commits what landed, and removes
/// the journal. Returns the lines appended and whether it committed.
fn finish(lib: &Library, j: &Journal, landed: &[String]) -> Result<(usize, bool)> {
    let bytes = crate::fs::read::optional(&lib.path(audit::FILE))?.unwrap_or_default();
    let tail = String::from_utf8_lossy(bytes.get(j.audit_offset as usize..).unwrap_or_default()).into_owned();
    let mut present: HashMap<&str, usize> = HashMap::new();
    for l in atomic::complete_lines(&tail) {
        *present.entry(l).or_default() += 1;
    }
    let mut missing = String::new();
    let mut added = 0;
    for o in j.audit.iter().filter(|o| o.files.iter().all(|f| landed.contains(f))) {
        match present.get_mut(o.line.as_str()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => {
                missing.push_str(&o.line);
                missing.push('\n');
                added += 1;
            }
        }
    }
    atomic::append_lines(&lib.path(audit::FILE), &missing)?;
    crash::at(Step::EvolveAudit);
    let committed = match &j.message {
        Some(message) if !landed.is_empty() => {
            let mut paths = landed.to_vec();
            paths.push(audit::FILE.to_string());
            paths.sort();
            paths.dedup();
            // Stale git state a killed commit left is cleared first.
            git_state::clear(lib, git_state::WAIT).and_then(|c| {
                git_state::note(&c);
                git::unstage(lib, &paths);
                git::commit(lib, &paths, message)
            })
        }
        _ => Ok(false),
    };
    if on_disk::remove(&lib.path(FILE))? {
        if let Some(dir) = lib.path(FILE).parent() {
            atomic::sync_dir(dir)?;
        }
    }
    Ok((added, committed?))
}

/// Finishes a run a kill left (see the module doc); `None` when there was
/// none. Callers hold the library lock.
pub fn recover(lib: &Library) -> Result<Option<Recovered>> {
    let Some(j) = on_disk::read::<Journal>(&lib.path(FILE), "kb-guard integrate", |j| j.version, VERSION)? else {
        return Ok(None);
    };
    // Issue 32: nothing is acted on before every file is checked: a rule
    // file or a proposal, inside the library with no link on the way, its
    // temp the writer's own (fs::journal::check_files).
    let files = j.files.iter().map(|f| (f.path.as_str(), Some(f.tmp.as_str())));
    on_disk::check_files(&lib.dir, &lib.path(FILE), files, |p| {
        use crate::library::kind::{kind, Kind};
        (!matches!(kind(p), Kind::Rule | Kind::Proposal)).then(|| "is not a guard rule file or a proposal".into())
    })?;
    let mut roll = RollForward::default();
    let (mut landed, mut rolled_back) = (Vec::new(), Vec::new());
    for f in &j.files {
        let (path, tmp) = (abs(lib, &f.path)?, abs(lib, &f.tmp)?);
        let now = digest(&path)?;
        let after = Some(f.after.clone());
        // The journal carries the bytes, checked against their digest.
        let bytes_ok = sha256_hex(f.text.as_bytes()) == f.after;
        let fate = roll.next(&now, &f.before, &after, bytes_ok);
        if fate == Fate::Put {
            atomic::write(&path, f.text.as_bytes())?;
        }
        on_disk::remove(&tmp)?;
        match fate {
            Fate::Kept => rolled_back.push(f.path.clone()),
            _ => landed.push(f.path.clone()),
        }
    }
    let (audit_added, committed) = finish(lib, &j, &landed)?;
    Ok(Some(Recovered { started: j.started, pid: j.pid, landed, rolled_back, audit_added, committed }))
}

/// Tells on stderr that a killed run was finished.
pub fn note(r: &Recovered) {
    eprintln!(
        "kb-guard: recovered an integrate interrupted at {} (pid {}): {} files landed, {} rolled back, {} audit lines added{}",
        r.started,
        r.pid,
        r.landed.len(),
        r.rolled_back.len(),
        r.audit_added,
        if r.committed { ", committed" } else { "" }
    );
}

/// Finishes a run a kill left, if any, saying so on stderr: every command
/// that writes proposals or rules calls it under the lock first, so none
/// of them writes over a proposal the killed run still owes.
pub fn finish_pending(lib: &Library) -> Result<()> {
    if let Some(r) = recover(lib)? {
        note(&r);
    }
    Ok(())
}
