//! Seed 002 `skill_manage` (create, edit, patch, delete, write_file,
//! remove_file) through the SkillWriter's steps, made crash-safe:
//!
//! 1. validate the request (name, frontmatter, limits, subdirectories)
//!    before anything is written;
//! 2. under the library lock, work out the one file the operation changes;
//! 3. write its new bytes to a synced temp file beside it and let the
//!    guard judge the whole skill as it will be (structure and content,
//!    core and evolved rules: kb::guard::target::skill_overlaid);
//! 4. a `dangerous` verdict drops the temp (and the directories it
//!    needed) and reports the findings: nothing was ever in place, so no
//!    kill can leave it there (the seed writes first and restores the
//!    previous bytes after the scan; a kill between the two kept the
//!    dangerous bytes). `caution` goes on with the warning in the record
//!    and the changelog;
//! 5. as a batch does (kb::write::journal): the journal, the rename (or
//!    removal), the changelog line, index and relations of SKILL.md, and a
//!    git commit `task-ai(library):skill <action> <name>`; a kill after
//!    the journal is finished by the next writer, one before it changed
//!    nothing.
//!
//! Removals (delete, remove-file) cannot add a threat, so they are never
//! refused; delete renames the directory aside before removing it, so a
//! crash never leaves half a skill under its name, and its journal names
//! the directory aside so recovery removes what is left of it.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::guard_scan;
use super::stage::{self, Stage};
use super::validate;
use crate::clock;
use crate::doc::digest;
use crate::error::{Error, Result};
use crate::fs::crash::{self, Step};
use crate::fs::{atomic, walk};
use crate::guard::{verdict, Finding, Verdict};
use crate::library::changelog::Event;
use crate::library::entry::Entry;
use crate::library::relations;
use crate::library::Library;
use crate::lock;
use crate::write;

/// What a skill operation does (the seed's `action` and its arguments).
#[derive(Debug, Clone)]
pub enum Op {
    /// A new skill with this SKILL.md, in this stage (candidates by default).
    Create {
        /// The SKILL.md text.
        content: String,
        /// Where the new skill starts.
        stage: Stage,
    },
    /// Replace SKILL.md.
    Edit {
        /// The new SKILL.md text.
        content: String,
    },
    /// Replace `old` by `new` in SKILL.md or a supporting file.
    Patch {
        /// Text to find (must occur once unless `replace_all`).
        old: String,
        /// Its replacement.
        new: String,
        /// A supporting file instead of SKILL.md.
        file: Option<String>,
        /// Replace every occurrence.
        replace_all: bool,
    },
    /// Remove the whole skill.
    Delete,
    /// Write a supporting file under references/, templates/, scripts/ or assets/.
    WriteFile {
        /// Path inside the skill.
        file: String,
        /// Its bytes: text, or an asset such as an image (the guard sniffs
        /// the type and scans what is text).
        content: Vec<u8>,
    },
    /// Remove a supporting file.
    RemoveFile {
        /// Path inside the skill.
        file: String,
    },
}

impl Op {
    /// The action's name in records, the changelog and commit messages.
    pub fn action(&self) -> &'static str {
        match self {
            Op::Create { .. } => "create",
            Op::Edit { .. } => "edit",
            Op::Patch { .. } => "patch",
            Op::Delete => "delete",
            Op::WriteFile { .. } => "write-file",
            Op::RemoveFile { .. } => "remove-file",
        }
    }
}

/// One skill operation.
#[derive(Debug, Clone)]
pub struct Request {
    /// The skill's name (its directory).
    pub name: String,
    /// What to do.
    pub op: Op,
    /// The notebook (agent session) asking.
    pub notebook: Option<String>,
}

/// The `skill_write` record of an operation that landed.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "skill_write")]
pub struct Written {
    /// The skill.
    pub name: String,
    /// create, edit, patch, delete, write-file, remove-file or promote.
    pub action: &'static str,
    /// The skill's stage after the operation.
    pub stage: &'static str,
    /// The library-relative file changed (SKILL.md for create/edit/delete).
    pub path: String,
    /// Size of the file after the write (absent for removals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// SHA-256 of the file after the write (absent for removals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Occurrences replaced by a patch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced: Option<usize>,
    /// Promotion: the stage the skill left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<&'static str>,
    /// The skill's trust tier after the operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust_tier: Option<String>,
    /// The guard's verdict on the resulting skill: safe or caution (dangerous
    /// only after a removal, which is never rolled back).
    pub verdict: Verdict,
    /// The guard's findings behind a caution, in one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Findings that count.
    pub findings: usize,
    /// Whether a git commit was made.
    pub committed: bool,
    /// When.
    pub ts: String,
}

/// What an operation came to.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// It landed.
    Done {
        /// The record.
        written: Written,
        /// Evolved rule files that could not be loaded (the scan ran without them).
        guard_errors: Vec<String>,
        /// A commit that failed after the write landed.
        commit_error: Option<String>,
    },
    /// The guard judged the result dangerous: the previous bytes are back.
    RolledBack {
        /// What happened, naming the worst findings.
        message: String,
        /// The findings.
        findings: Vec<Finding>,
        /// The verdict record of the rejected state.
        verdict: verdict::Record,
    },
}

/// How operations are carried out.
#[derive(Debug, Clone)]
pub struct Options {
    /// Commit when the library is a git repository.
    pub commit: bool,
    /// Lock timeout and holder command.
    pub lock: lock::Options,
    /// Seed 002's allowedEditSkills and allowCreateNew.
    pub permissions: super::permissions::Permissions,
}

impl Default for Options {
    fn default() -> Options {
        Options { commit: true, lock: lock::Options::default(), permissions: Default::default() }
    }
}

/// The one file an operation changes.
struct Change {
    /// Library-relative path.
    rel: String,
    /// The new bytes (None: removal).
    new: Option<Vec<u8>>,
    /// Directories the write creates, outermost first.
    created: Vec<PathBuf>,
}

/// Runs one skill operation (see the module doc for the steps).
pub fn run(lib: &Library, req: &Request, opts: &Options) -> Result<Outcome> {
    opts.permissions.check(req.op.action(), &req.name).map_err(|r| Error::msg(r.message))?;
    validate::name(&req.name).map_err(Error::msg)?;
    precheck(&req.name, &req.op).map_err(Error::msg)?;
    let (engine, guard_errors) = super::engine(lib)?;
    lock::with_lock(lib, &opts.lock, || {
        crate::write::journal::note(crate::write::recover(lib)?);
        if let Op::Delete = req.op {
            return delete(lib, req, opts);
        }
        let stage = match (&req.op, stage::find(lib, &req.name)?) {
            (Op::Create { .. }, Some(s)) => {
                return Err(Error::msg(format!("skill '{}' already exists in {s}; use edit or patch", req.name)))
            }
            (Op::Create { stage, .. }, None) => *stage,
            (_, Some(s)) => s,
            (_, None) => return Err(Error::msg(format!("skill '{}' does not exist", req.name))),
        };
        let dir = stage::skill_dir(stage, &req.name);
        let (change, replaced) = plan(lib, &dir, req)?;
        // Step 3: the new bytes staged beside their file, and the skill
        // judged as it will be, before anything is in place.
        let staged = match &change.new {
            Some(bytes) => {
                let s = atomic::stage(&lib.path(&change.rel), bytes, true)?;
                crash::at(Step::WriteTemp);
                Some(s)
            }
            None => None,
        };
        let in_skill = change.rel.strip_prefix(&format!("{dir}/")).unwrap_or(&change.rel).to_string();
        let over = [(in_skill, staged.as_ref().map(|s| s.tmp.clone()))];
        let judged = match guard_scan::skill_as(lib, &engine, &dir, &over) {
            Ok(j) => j,
            Err(e) => {
                discard(&change, staged.as_ref());
                return Err(e);
            }
        };
        let v = &judged.verdict;
        if v.verdict == Verdict::Dangerous && change.new.is_some() {
            discard(&change, staged.as_ref());
            let report = crate::guard::Report { verdict: v.verdict, findings: judged.findings.clone() };
            let message = format!(
                "refused: {} {} of skill '{}' rolled back ({})",
                req.op.action(),
                change.rel,
                req.name,
                report.reason()
            );
            return Ok(Outcome::RolledBack { message, findings: judged.findings, verdict: judged.verdict });
        }
        let flagged = v.verdict != Verdict::Safe;
        let warning =
            flagged.then(|| crate::guard::Report { verdict: v.verdict, findings: judged.findings.clone() }.reason());
        let ts = clock::format(clock::now()?);
        let text = change.new.clone();
        let sha = text.as_ref().map(|t| digest::sha256_hex(t));
        let event = Event {
            ts: ts.clone(),
            event: "skill".into(),
            path: change.rel.clone(),
            action: Some(req.op.action().into()),
            notebook: req.notebook.clone(),
            category: Some("skill".into()),
            topic: Some(req.name.clone()),
            sha256: sha.clone(),
            bytes: text.as_ref().map(|t| t.len() as u64),
            reason: warning.clone(),
            machine: None,
        };
        // Steps 4-5 as a batch's: the journal, then the file lands, then
        // its changelog line, index, relations and commit; a kill anywhere
        // after the journal is finished by the next writer.
        let mut j = write::journal::new(lib, opts.commit)?;
        j.files.push(write::journal::Planned {
            path: change.rel.clone(),
            tmp: staged.as_ref().map(|s| rel_to(lib, &s.tmp)).unwrap_or_default(),
            sha256: sha.clone().unwrap_or_default(),
            replay: None,
        });
        j.events.push(event.clone());
        if let Err(e) = write::journal::begin(lib, &j) {
            discard(&change, staged.as_ref());
            return Err(e);
        }
        land(lib, &change, staged)?;
        let skill_md = format!("{dir}/SKILL.md");
        // Deleted with the skill: no SKILL.md is no entry; unreadable is an error.
        let md_text = crate::fs::read::optional_text(&lib.path(&skill_md))?.unwrap_or_default();
        let entry = Entry::from_text(&skill_md, &md_text);
        let (changed, edges) = if change.rel == skill_md {
            let edges = entry.as_ref().map(|e| relations::doc_edges(e, &md_text)).unwrap_or_default();
            (vec![(skill_md.clone(), entry.clone())], vec![(skill_md.clone(), edges)])
        } else {
            (Vec::new(), Vec::new())
        };
        let message = format!("task-ai(library):skill {} {}", req.op.action(), req.name);
        let (committed, commit_error) = write::record(
            lib,
            std::slice::from_ref(&event),
            &changed,
            edges,
            vec![change.rel.clone()],
            opts.commit.then_some(message.as_str()),
        )?;
        write::journal::end(lib)?;
        let written = Written {
            name: req.name.clone(),
            action: req.op.action(),
            stage: stage.as_str(),
            path: change.rel.clone(),
            bytes: text.as_ref().map(|t| t.len() as u64),
            sha256: sha,
            replaced,
            from: None,
            trust_tier: entry.and_then(|e| e.trust_tier),
            verdict: v.verdict,
            warning,
            findings: v.findings,
            committed,
            ts,
        };
        Ok(Outcome::Done { written, guard_errors: guard_errors.clone(), commit_error })
    })
}

/// Step 1: what can be checked without the disk.
fn precheck(name: &str, op: &Op) -> std::result::Result<(), String> {
    match op {
        Op::Create { content, .. } | Op::Edit { content } => validate::skill_md(content, name),
        Op::Patch { old, file, .. } => {
            if old.is_empty() {
                return Err("patch needs a non-empty old_string".into());
            }
            match file.as_deref() {
                None | Some("SKILL.md") => Ok(()),
                Some(f) => validate::file_path(f).map(drop),
            }
        }
        Op::WriteFile { file, content } => {
            let f = validate::file_path(file)?;
            validate::file_size(&f, content.len())
        }
        Op::RemoveFile { file } => validate::file_path(file).map(drop),
        Op::Delete => Ok(()),
    }
}

/// Step 2: the file to change, its new bytes, and the patch count.
fn plan(lib: &Library, dir: &str, req: &Request) -> Result<(Change, Option<usize>)> {
    let in_skill = |f: &str| format!("{dir}/{f}");
    let (rel, new, replaced) = match &req.op {
        Op::Create { content, .. } | Op::Edit { content } => {
            (in_skill("SKILL.md"), Some(content.clone().into_bytes()), None)
        }
        Op::Patch { old, new, file, replace_all } => {
            let f = match file.as_deref() {
                None | Some("SKILL.md") => "SKILL.md".to_string(),
                Some(f) => validate::file_path(f).map_err(Error::msg)?,
            };
            let rel = in_skill(&f);
            lib.check_inside(&rel)?;
            let text = match read_existing(&lib.path(&rel)) {
                Ok(b) => String::from_utf8(b).map_err(|_| Error::msg(format!("patch: {f} is not UTF-8 text")))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(Error::msg(format!("patch: skill '{}' has no file {f}", req.name)))
                }
                Err(e) => return Err(Error::io(format!("reading {rel}"), e)),
            };
            let count = text.matches(old.as_str()).count();
            if count == 0 {
                return Err(Error::msg(format!("patch: old_string not found in {f} of skill '{}'", req.name)));
            }
            if count > 1 && !replace_all {
                return Err(Error::msg(format!(
                    "patch: old_string occurs {count} times in {f} of skill '{}'; add context to make it unique or pass --replace-all",
                    req.name
                )));
            }
            let patched =
                if *replace_all { text.replace(old.as_str(), new) } else { text.replacen(old.as_str(), new, 1) };
            if f == "SKILL.md" {
                validate::skill_md(&patched, &req.name).map_err(|e| Error::msg(format!("patch: {e}")))?;
            } else {
                validate::file_size(&f, patched.len()).map_err(Error::msg)?;
            }
            (rel, Some(patched.into_bytes()), Some(if *replace_all { count } else { 1 }))
        }
        Op::WriteFile { file, content } => {
            (in_skill(&validate::file_path(file).map_err(Error::msg)?), Some(content.clone()), None)
        }
        Op::RemoveFile { file } => {
            let rel = in_skill(&validate::file_path(file).map_err(Error::msg)?);
            if !lib.path(&rel).is_file() {
                return Err(Error::msg(format!("remove-file: skill '{}' has no file {file}", req.name)));
            }
            (rel, None, None)
        }
        Op::Delete => return Err(Error::msg("delete has no single file to plan")),
    };
    // What is written follows the writer's name rules (control and
    // invisible characters, trailing dots, case twins): a name they refuse
    // here would make every peer's sync refuse the commit.
    if new.is_some() {
        lib.writable(&rel)?;
    } else {
        lib.check_inside(&rel)?;
    }
    let full = lib.path(&rel);
    if full.is_dir() {
        return Err(Error::msg(format!("'{rel}' is a directory")));
    }
    let old = match read_existing(&full) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(format!("reading {rel}"), e)),
    };
    if let Some(n) = &new {
        let (files, bytes) = sizes(&lib.path(dir))?;
        let old_len = old.as_ref().map_or(0, |o| o.len() as u64);
        let files = files + usize::from(old.is_none());
        validate::totals(files, bytes - old_len.min(bytes) + n.len() as u64).map_err(Error::msg)?;
    }
    let mut created = Vec::new();
    let mut p = full.parent();
    while let Some(d) = p.filter(|d| !d.exists()) {
        created.insert(0, d.to_path_buf());
        p = d.parent();
    }
    Ok((Change { rel, new, created }, replaced))
}

/// A skill file's bytes as every library read takes them: never through a
/// link (one to `/dev/zero` would never end), never blocking on a FIFO, at
/// most a whole skill's size.
fn read_existing(path: &Path) -> std::io::Result<Vec<u8>> {
    crate::fs::nofollow::read(path, crate::guard::structure::LIMITS.max_total_size)
}

/// Files and bytes under a skill directory (links not followed). A walk
/// or stat error is an error: uncounted, a file would slip past the limits.
fn sizes(dir: &Path) -> Result<(usize, u64)> {
    let mut total = (0, 0);
    for e in files_under(dir)? {
        let len =
            fs::symlink_metadata(&e.path).map_err(|e| Error::msg(format!("reading {}: {e}", dir.display())))?.len();
        total = (total.0 + 1, total.1 + len);
    }
    Ok(total)
}

/// Every non-directory entry under `dir` (links not followed); an entry
/// that cannot be read is an error, so a commit never misses a path (nor
/// a size limit a file).
pub(crate) fn files_under(dir: &Path) -> Result<Vec<walk::Item>> {
    // A skill not created yet has no files.
    if matches!(fs::symlink_metadata(dir), Err(e) if e.kind() == std::io::ErrorKind::NotFound) {
        return Ok(Vec::new());
    }
    let all = walk::entries(dir, |_| true);
    if let Some(e) = all.iter().find_map(|i| i.error.as_ref()) {
        return Err(Error::msg(format!("listing {}: {e}", dir.display())));
    }
    // The root is listed only when it is not a directory (then it is the one file).
    Ok(all.into_iter().filter(|i| i.kind != walk::Kind::Dir).collect())
}

/// A path under the library as the journal names it.
pub(crate) fn rel_to(lib: &Library, p: &Path) -> String {
    p.strip_prefix(&lib.dir).unwrap_or(p).to_string_lossy().replace('\\', "/")
}

/// Puts a judged, journaled change in place: the staged temp renamed onto
/// its file, or the file removed.
fn land(lib: &Library, c: &Change, staged: Option<atomic::Staged>) -> Result<()> {
    let full = lib.path(&c.rel);
    match staged {
        Some(s) => atomic::put_in_place(std::slice::from_ref(&s), || crash::at(Step::Rename))?,
        None => {
            fs::remove_file(&full).map_err(|e| Error::io(format!("removing {}", c.rel), e))?;
            crash::at(Step::Rename);
            if let Some(parent) = full.parent() {
                atomic::sync_dir(parent)?;
            }
        }
    }
    crash::at(Step::Renamed);
    Ok(())
}

/// Drops a change the guard refused (or could not judge) before it
/// landed: the staged temp and the directories staging created.
fn discard(c: &Change, staged: Option<&atomic::Staged>) {
    if let Some(s) = staged {
        let _ = fs::remove_file(&s.tmp);
    }
    for d in c.created.iter().rev() {
        let _ = fs::remove_dir(d);
    }
}

/// `delete`: rename the skill aside (atomic), remove it, record it.
fn delete(lib: &Library, req: &Request, opts: &Options) -> Result<Outcome> {
    let stage = stage::require(lib, &req.name)?;
    let dir = stage::skill_dir(stage, &req.name);
    lib.check_inside(&dir)?;
    let full = lib.path(&dir);
    let files: Vec<String> = files_under(&full)?
        .iter()
        // Everything walked is under the library (lib.dir is its prefix).
        .filter_map(|e| e.path.strip_prefix(&lib.dir).ok().map(|p| p.to_string_lossy().replace('\\', "/")))
        .collect();
    let aside_rel = format!("{}/.{}.deleting.{}", stage.dir(), req.name, std::process::id());
    let aside = lib.path(&aside_rel);
    let ts = clock::format(clock::now()?);
    let skill_md = format!("{dir}/SKILL.md");
    let event = Event {
        ts: ts.clone(),
        event: "skill".into(),
        path: skill_md.clone(),
        action: Some("delete".into()),
        notebook: req.notebook.clone(),
        category: Some("skill".into()),
        topic: Some(req.name.clone()),
        ..Event::default()
    };
    // Journaled as a batch of removals whose first names the directory
    // moved aside: a kill before the rename leaves the skill whole, one
    // after it is finished by the next writer (the rest removed, the line,
    // indexes and commit made).
    let mut j = write::journal::new(lib, opts.commit)?;
    for (i, f) in files.iter().enumerate() {
        let tmp = if i == 0 { aside_rel.clone() } else { String::new() };
        j.files.push(write::journal::Planned { path: f.clone(), tmp, sha256: String::new(), replay: None });
    }
    j.events.push(event.clone());
    write::journal::begin(lib, &j)?;
    atomic::rename_onto(&full, &aside, true).map_err(|e| Error::io(format!("moving {dir} aside"), e))?;
    crash::at(Step::Rename);
    fs::remove_dir_all(&aside).map_err(|e| Error::io(format!("removing {}", aside.display()), e))?;
    crash::at(Step::Renamed);
    let message = format!("task-ai(library):skill delete {}", req.name);
    let (committed, commit_error) = write::record(
        lib,
        std::slice::from_ref(&event),
        &[(skill_md.clone(), None)],
        vec![(skill_md.clone(), Vec::new())],
        files,
        opts.commit.then_some(message.as_str()),
    )?;
    write::journal::end(lib)?;
    let written = Written {
        name: req.name.clone(),
        action: "delete",
        stage: stage.as_str(),
        path: skill_md,
        bytes: None,
        sha256: None,
        replaced: None,
        from: None,
        trust_tier: None,
        verdict: Verdict::Safe,
        warning: None,
        findings: 0,
        committed,
        ts,
    };
    Ok(Outcome::Done { written, guard_errors: Vec::new(), commit_error })
}
