//! INTEGRATE's write-ahead journal `.core-rule-proposals/.journal`, the
//! writer's second journaled group beside the batch (`journal`): the
//! evolve loop sits above the writer and lands its runs here, so every
//! writer's [`super::recover`] finishes either kind. One
//! run of `kb-guard rules integrate` changes several files: the rule files
//! (an extended rule's own file, the library core file) and each proposal,
//! marked `integrated`; then it owes the audit lines and one commit. Done
//! one by one, a kill -9 between them left a rule in force whose proposal
//! still said `approved` (every rerun then refused it: "already exists"),
//! or a proposal `integrated` with no audit line and nothing committed.
//! So the run is journaled with the one journal (`fs::journal`; this
//! module describes the run to it as a `Kind` and keeps its record format
//! and what the run owes: the audit lines and the commit):
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

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::clock;
use crate::doc::digest::sha256_hex;
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::fs::crash::{self, Step};
use crate::fs::journal::{self as on_disk, Change, Fate, Recovered};
use crate::library::{git, git_state, Library};

/// The journal, library-relative.
pub const FILE: &str = ".core-rule-proposals/.journal";
/// The evolve loop's audit log (`evolve::audit`), library-relative: the
/// log an integrate run owes lines to.
pub const AUDIT_LOG: &str = ".core-rule-proposals/.audit.log";

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

fn encode(line: &impl Serialize) -> Result<String> {
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
    pub fn owe(&mut self, line: &impl Serialize, files: Vec<String>) -> Result<()> {
        self.audit.push(Owed { line: encode(line)?, files });
        Ok(())
    }

    /// How many files are staged (a commit message counts them).
    pub fn staged(&self) -> usize {
        self.files.len()
    }

    /// Removes the staged temps (the run failed before its journal).
    pub fn discard(&self) {
        on_disk::discard(self.files.iter().map(|(_, s)| s.tmp.as_path()));
    }

    /// Steps 2 to 4 (see the module doc): the journal, the renames in
    /// order, the audit lines, the commit (with `message`, when given and
    /// a file changed), then the journal's removal. Callers hold the
    /// library lock. Returns whether a commit was made.
    pub fn land(self, lib: &Library, message: Option<String>) -> Result<bool> {
        if self.files.is_empty() {
            let lines: String = self.audit.iter().map(|o| format!("{}\n", o.line)).collect();
            atomic::append_lines(&lib.path(AUDIT_LOG), &lines)?;
            return Ok(false);
        }
        let journal = Journal {
            version: VERSION,
            pid: std::process::id(),
            started: clock::format(clock::now()?),
            audit_offset: on_disk::log_end(&lib.path(AUDIT_LOG))?,
            files: self.files.iter().map(|(p, _)| p.clone()).collect(),
            audit: self.audit.clone(),
            message,
        };
        let files: Vec<_> = self.files.into_iter().map(|(_, s)| (s.target, Some(s.tmp))).collect();
        let (journaled, each) = (|| crash::at(Step::EvolveJournal), |_| crash::at(Step::EvolveRename));
        on_disk::land(&lib.path(FILE), &journal, &files, journaled, each)?;
        crash::at(Step::EvolveRenamed);
        let landed: Vec<String> = journal.files.iter().map(|f| f.path.clone()).collect();
        finish(lib, &journal, &landed).map(|(_, committed)| committed)
    }
}

/// Appends the owed lines whose files all landed and that the log does
/// not hold after the journal's offset, commits what landed, and removes
/// the journal. Returns the lines appended and whether it committed.
fn finish(lib: &Library, j: &Journal, landed: &[String]) -> Result<(usize, bool)> {
    let owed: Vec<&str> =
        j.audit.iter().filter(|o| o.files.iter().all(|f| landed.contains(f))).map(|o| o.line.as_str()).collect();
    let missing = on_disk::missing_lines(&lib.path(AUDIT_LOG), j.audit_offset, &owed)?;
    let added = missing.len();
    let text: String = missing.into_iter().map(|i| format!("{}\n", owed[i])).collect();
    atomic::append_lines(&lib.path(AUDIT_LOG), &text)?;
    crash::at(Step::EvolveAudit);
    let committed = match &j.message {
        Some(message) if !landed.is_empty() => {
            let mut paths = landed.to_vec();
            paths.push(AUDIT_LOG.to_string());
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
    on_disk::end(&lib.path(FILE), true)?;
    Ok((added, committed?))
}

/// An integrate run as recovery sees it (see the module doc).
struct Integrate<'a>(&'a Library);

impl on_disk::Kind for Integrate<'_> {
    type Record = Journal;
    type Done = Recovered;
    const FORMAT: on_disk::Format = on_disk::Format {
        tool: "kb-guard integrate",
        version: VERSION,
        hash: sha256_hex,
        limit: crate::fs::read::LIMIT,
        durable_end: true,
    };

    fn path(&self) -> PathBuf {
        self.0.path(FILE)
    }

    /// nothing is acted on before every file is checked: a rule
    /// file or a proposal, inside the library with no link on the way, its
    /// temp the writer's own (fs::journal::check_files).
    fn check(&mut self, j: &Journal) -> Result<()> {
        let files = j.files.iter().map(|f| (f.path.as_str(), Some(f.tmp.as_str())));
        on_disk::check_files(&self.0.dir, &self.0.path(FILE), files, |p| {
            use crate::library::kind::{kind, Kind};
            (!matches!(kind(p), Kind::Rule | Kind::Proposal)).then(|| "is not a guard rule file or a proposal".into())
        })
    }

    /// The journal carries the bytes (checked against their digest).
    fn changes<'a>(&self, j: &'a Journal) -> Result<Vec<Change<'a>>> {
        Ok(j.files
            .iter()
            .map(|f| Change {
                path: self.0.path(&f.path),
                tmp: Some(self.0.path(&f.tmp)),
                before: f.before.clone(),
                after: Some(f.after.clone()),
                bytes: Some(f.text.as_bytes()),
                damaged: false,
            })
            .collect())
    }

    fn finish(&mut self, j: &Journal, fates: &[Fate]) -> Result<Recovered> {
        let mut r = Recovered::of(&j.started, j.pid, j.files.iter().map(|f| f.path.clone()), fates);
        (r.changelog_added, r.committed) = finish(self.0, j, &r.landed)?;
        Ok(r)
    }
}

/// Finishes a run a kill left (see the module doc); `None` when there was
/// none. Callers hold the library lock.
pub fn recover(lib: &Library) -> Result<Option<Recovered>> {
    on_disk::recover(&mut Integrate(lib))
}

/// Tells on stderr that a killed run was finished.
pub fn note(r: &Recovered) {
    r.tell("kb-guard", "an integrate", "audit lines");
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
