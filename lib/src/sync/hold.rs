//! What a peer sent that does not enter the live library:
//! content the guard calls dangerous (quarantine), and changes that wait
//! for local review (a rule that failed the local gates, a rule in force
//! removed, a proposal's status, a skill placed straight into
//! `.skills/.active/`, a raised `trust_tier`).
//!
//! A held path stays in the shared history exactly as the peer sent it,
//! so sync never commits or pushes its absence as a deletion, and the next
//! range no longer holds it, so it is never reported as new again. Only
//! this machine's work tree keeps it out: the path is excluded by git's
//! sparse checkout (a block of `!/<path>` lines in the clone's own
//! `info/sparse-checkout`, which no peer can write), written before the
//! merge, so git never puts the peer's bytes on disk; this machine's
//! former bytes (if it had the file) are written back in its place.
//! Readers (search, MCP, the guard's backtest) then only ever see what
//! was there before. The list is `.quarantine/held.jsonl`, local state
//! (`library::kind::Kind::Local`), never in git.
//!
//! `kb-append quarantine` lists what is held; `release PATH` lets the
//! peer's version in; `drop PATH` keeps this machine's (a commit that puts
//! it back, or deletes a file that was new).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::library::changelog::{self, Event};
use crate::library::kind::{self, Kind};
use crate::library::Library;
use crate::sync::admit::Change;
use crate::sync::gitcmd::Repo;

/// The list of held paths, inside the library's local quarantine folder.
pub const MANIFEST: &str = ".quarantine/held.jsonl";

/// The lines sync owns in the clone's `info/sparse-checkout`.
const BEGIN: &str = "# kb-tools quarantine: begin (kb-append quarantine)";
const END: &str = "# kb-tools quarantine: end";

/// Why a path is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Why {
    /// The guard refuses the content, as `kb-append write` would.
    Dangerous,
    /// A change a person on this machine must accept first.
    Review,
}

/// One held path (`schemas/held.schema.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "record", rename = "held")]
pub struct Held {
    /// Library-relative.
    pub path: String,
    /// Quarantined as dangerous, or waiting for review.
    pub why: Why,
    /// What the gate said.
    pub reason: String,
    /// The blob the peer sent (`None`: the peer deleted the file).
    pub theirs: Option<String>,
    /// The blob this machine keeps in its place (`None`: it had none).
    pub ours: Option<String>,
    /// The fetched commit it came with.
    pub commit: String,
    /// When it was held.
    pub since: String,
    /// The peer's version met an edit of ours: the merge kept ours, so the
    /// work tree needs no exclusion (`release` stages the peer's).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kept_ours: bool,
}

/// A gate: given an admitted change with its bytes here (HEAD: what is in
/// force on this machine) and at the peer's tip, says whether it is held
/// and why.
pub type Gate<'a> = dyn Fn(&Change, Option<&[u8]>, Option<&[u8]>) -> Judged + 'a;

/// A gate's answer: held (why, reason) or not.
pub type Judged = Result<Option<(Why, String)>>;

/// Decides which admitted changes are held, before anything is merged.
/// A path already held keeps its first entry's `ours` (what this machine
/// had before any peer version).
pub fn decide(
    repo: &Repo,
    lib: &Library,
    blobs: &mut crate::sync::gitcmd::Blobs,
    changes: &[Change],
    theirs_tip: &str,
    gate: &Gate,
) -> Result<Vec<Held>> {
    let held_before = read(lib)?;
    let now = crate::clock::now()?.to_string();
    let mut out = Vec::new();
    // HEAD as it is now (the reader outlives merges that move it).
    let head = repo.rev("HEAD").unwrap_or_else(|| "HEAD".into());
    for c in changes.iter().filter(|c| c.kind != Kind::Log && c.kind != Kind::Derived) {
        let (here, here_bytes) = match blobs.blob(&format!("{head}:{}", repo.top_path(&c.path)))? {
            Some((id, bytes)) => (Some(id), Some(bytes)),
            None => (None, None),
        };
        let theirs = match c.theirs.as_deref() {
            Some(sha) => Some(blobs.get(sha)?.ok_or_else(|| Error::msg(format!("git has no object {sha}")))?),
            None => None,
        };
        let Some((why, reason)) = gate(c, here_bytes.as_deref(), theirs.as_deref())? else { continue };
        let ours = match held_before.iter().find(|h| h.path == c.path) {
            Some(h) => h.ours.clone(),
            None => here,
        };
        out.push(Held {
            path: c.path.clone(),
            why,
            reason,
            theirs: c.theirs.clone(),
            ours,
            commit: theirs_tip.to_string(),
            since: now.clone(),
            kept_ours: false,
        });
    }
    Ok(out)
}

/// Records new holds and excludes their paths from the work tree, before
/// the merge: the list first (a crash after it only over-holds), then the
/// sparse-checkout block.
pub fn prepare(lib: &Library, repo: &Repo, new: &[Held]) -> Result<()> {
    if new.is_empty() {
        return Ok(());
    }
    let mut all = read(lib)?;
    all.retain(|h| !new.iter().any(|n| n.path == h.path));
    all.extend(new.iter().cloned());
    write(lib, &all)?;
    exclude(repo, &all)
}

/// After the merge: this machine's bytes back in place of each new hold
/// (git left the path alone or removed it), so readers see what they saw
/// before. A path whose file was new stays absent.
pub fn restore(lib: &Library, repo: &Repo, new: &[Held]) -> Result<()> {
    for h in new {
        match &h.ours {
            Some(sha) => {
                let path = lib.path(&h.path);
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
                }
                atomic::write(&path, &bytes(repo, sha)?)?;
            }
            None => {
                let _ = std::fs::remove_file(lib.path(&h.path));
            }
        }
    }
    Ok(())
}

/// Puts every hold back in force at the start of a sync: the
/// sparse-checkout block and this machine's bytes in place. A sync killed
/// between its merge and [`restore`] (or a hand-edited block) is mended
/// before anything else is merged.
pub fn reinstate(lib: &Library, repo: &Repo) -> Result<()> {
    let all = read(lib)?;
    if all.is_empty() {
        return Ok(());
    }
    exclude(repo, &all)?;
    let missing: Vec<Held> =
        all.into_iter().filter(|h| h.ours.is_some() && std::fs::symlink_metadata(lib.path(&h.path)).is_err()).collect();
    restore(lib, repo, &missing)
}

/// Marks a hold whose conflict the merge settled with ours, and takes
/// its path out of the sparse exclusion (the index holds ours now).
pub fn kept_ours(lib: &Library, repo: &Repo, path: &str) -> Result<()> {
    let mut all = read(lib)?;
    for h in all.iter_mut().filter(|h| h.path == path) {
        h.kept_ours = true;
    }
    write(lib, &all)?;
    exclude(repo, &all)?;
    let _ = repo.output(&["update-index", "--no-skip-worktree", "--", &repo.top_path(path)]);
    Ok(())
}

/// The held paths (empty when none).
pub fn read(lib: &Library) -> Result<Vec<Held>> {
    let Some(text) = crate::fs::read::optional_text(&lib.path(MANIFEST))? else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for line in crate::fs::atomic::complete_lines(&text).filter(|l| !l.trim().is_empty()) {
        let h: Held = serde_json::from_str(line).map_err(|e| {
            Error::msg(format!("{}: a line that is not a held record ({e}); fix or remove it", MANIFEST))
        })?;
        // The list is local, but checked as any path read from disk.
        if kind::kind(&h.path) == Kind::Local || crate::library::normalise(&h.path).ok().as_deref() != Some(&h.path) {
            return Err(Error::msg(format!(
                "{MANIFEST}: '{}' is not a library path",
                crate::library::names::shown(&h.path)
            )));
        }
        out.push(h);
    }
    Ok(out)
}

/// The paths held, for writers that stage the whole library.
pub fn paths(lib: &Library) -> Result<BTreeSet<String>> {
    Ok(read(lib)?.into_iter().map(|h| h.path).collect())
}

fn write(lib: &Library, all: &[Held]) -> Result<()> {
    let dir = lib.path(kind::QUARANTINE_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    let mut text = String::new();
    for h in all {
        text.push_str(&serde_json::to_string(h).map_err(|e| Error::msg(format!("cannot encode a held record: {e}")))?);
        text.push('\n');
    }
    atomic::write(&lib.path(MANIFEST), text.as_bytes())
}

/// Writes the sparse-checkout block for `held` (removes it, and turns
/// sparse checkout off when sync turned it on, when none is left).
fn exclude(repo: &Repo, held: &[Held]) -> Result<()> {
    let file = repo.git_path("info/sparse-checkout");
    let existing = crate::fs::read::optional_text(&file)?.unwrap_or_default();
    let mut kept: Vec<&str> = Vec::new();
    let mut inside = false;
    for line in existing.lines() {
        match line {
            BEGIN => inside = true,
            END => inside = false,
            _ if !inside => kept.push(line),
            _ => {}
        }
    }
    let others = kept.iter().any(|l| !l.trim().is_empty() && *l != "/*");
    let mut text = String::new();
    if !others {
        text.push_str("/*\n");
    }
    for l in kept.iter().filter(|l| others || (!l.trim().is_empty() && **l != "/*")) {
        text.push_str(l);
        text.push('\n');
    }
    if !held.is_empty() {
        text.push_str(BEGIN);
        text.push('\n');
        for h in held.iter().filter(|h| !h.kept_ours) {
            text.push_str(&format!("!/{}\n", glob_escape(&repo.top_path(&h.path))));
        }
        text.push_str(END);
        text.push('\n');
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    }
    atomic::write(&file, text.as_bytes())?;
    ignore(repo, held)?;
    if held.is_empty() && !others {
        repo.run(&["sparse-checkout", "disable"], "git sparse-checkout disable")?;
        return Ok(());
    }
    repo.set_config("core.sparseCheckout", "true")?;
    repo.set_config("core.sparseCheckoutCone", "false")?;
    Ok(())
}

/// The same block in the clone's `info/exclude`: this machine's copy of a
/// rule a peer removed stays in place untracked, and `git status` should
/// not offer it for a commit that would undo the peer's change unreviewed.
fn ignore(repo: &Repo, held: &[Held]) -> Result<()> {
    let file = repo.git_path("info/exclude");
    let existing = crate::fs::read::optional_text(&file)?.unwrap_or_default();
    let mut text = String::new();
    let mut inside = false;
    for line in existing.lines() {
        match line {
            BEGIN => inside = true,
            END => inside = false,
            _ if !inside => {
                text.push_str(line);
                text.push('\n');
            }
            _ => {}
        }
    }
    if !held.is_empty() {
        text.push_str(BEGIN);
        text.push('\n');
        for h in held {
            text.push_str(&format!("/{}\n", glob_escape(&repo.top_path(&h.path))));
        }
        text.push_str(END);
        text.push('\n');
    }
    if text != existing {
        atomic::write(&file, text.as_bytes())?;
    }
    Ok(())
}

/// A path as a literal sparse-checkout (gitignore-style) pattern.
fn glob_escape(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for c in p.chars() {
        if matches!(c, '*' | '?' | '[' | '\\' | '!' | '#' | ' ') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A blob's raw bytes.
pub fn bytes(repo: &Repo, sha: &str) -> Result<Vec<u8>> {
    let out = repo.output(&["cat-file", "blob", sha])?;
    if !out.status.success() {
        return Err(Error::msg(format!("git cat-file blob {sha} failed: {}", crate::sync::gitcmd::stderr_of(&out))));
    }
    Ok(out.stdout)
}

/// What `release` and `drop` report.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "record", rename = "quarantine")]
pub struct Settled {
    /// `released` or `dropped`.
    pub action: String,
    pub path: String,
    /// Whether a commit was made.
    pub committed: bool,
}

/// Ends the hold of `path`: `release` puts the peer's version in the work
/// tree; `drop` keeps this machine's and commits it (or the deletion of a
/// file that was new), with a changelog event. Derived files follow.
pub fn settle(lib: &Library, path: &str, release: bool, commit: bool) -> Result<Settled> {
    let repo = Repo::open(lib)?;
    let mut all = read(lib)?;
    let Some(i) = all.iter().position(|h| h.path == path) else {
        return Err(Error::msg(format!(
            "'{}' is not held (kb-append quarantine lists what is)",
            crate::library::names::shown(path)
        )));
    };
    let h = all.remove(i);
    let top = repo.top_path(&h.path);
    let file = lib.path(&h.path);
    write(lib, &all)?;
    exclude(&repo, &all)?;
    let _ = repo.output(&["update-index", "--no-skip-worktree", "--", &top]);
    let mut events = Vec::new();
    let ts = crate::clock::now()?.to_string();
    let event = |action: &str| Event {
        ts: ts.clone(),
        event: "quarantine".into(),
        path: h.path.clone(),
        action: Some(action.into()),
        notebook: None,
        category: None,
        topic: None,
        sha256: None,
        bytes: None,
        reason: Some(h.reason.clone()),
        machine: None,
    };
    if release {
        // The peer's version, whether the index holds it (a quarantine) or
        // ours (a conflict the merge settled with ours).
        match &h.theirs {
            Some(sha) => {
                if let Some(dir) = file.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
                }
                atomic::write(&file, &bytes(&repo, sha)?)?;
            }
            None => {
                let _ = std::fs::remove_file(&file);
            }
        }
        events.push(event("released"));
    } else {
        match &h.ours {
            Some(sha) => atomic::write(&file, &bytes(&repo, sha)?)?,
            None => {
                let _ = std::fs::remove_file(&file);
                if kind::kind(&h.path).is_content() {
                    events.push(Event { action: Some("deleted".into()), event: "write".into(), ..event("deleted") });
                }
            }
        }
        events.push(event("dropped"));
    }
    changelog::append(lib, &events)?;
    let mut touched = vec![h.path.clone(), changelog::FILE.to_string()];
    touched.extend(crate::sync::refresh::documents(lib, std::slice::from_ref(&h.path), Some(&events))?);
    let message = format!("task-ai(library):quarantine {} {}", if release { "release" } else { "drop" }, h.path);
    let committed = commit && crate::library::git::commit(lib, &touched, &message)?;
    Ok(Settled { action: if release { "released" } else { "dropped" }.into(), path: h.path, committed })
}
