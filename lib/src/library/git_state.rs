//! Stale git state a killed process leaves: `.git/index.lock`
//! makes every later commit fail ("the writes landed but the git commit
//! failed") and every sync wait, for ever; `.merge_file_*` temp files of a
//! merge driver litter the work tree's top. kb-tools runs git only under
//! the library lock, so a holder of the library lock that finds these and
//! no live git process working in this repository knows they are stale
//! and removes them, with a `cleared` record. A live git (a user's own,
//! or one a killed writer left running) is waited for instead.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::library::Library;

/// One piece of stale git state removed.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "cleared")]
pub struct Cleared {
    /// The file removed (absolute, it lives outside the library).
    pub path: String,
    /// Why it was stale.
    pub reason: String,
}

/// How long to wait for a live git process to finish before giving up.
pub const WAIT: Duration = Duration::from_secs(30);

/// Removes a stale `index.lock` and `.merge_file_*` leftovers of the
/// library's repository (nothing when it is not in one). Waits up to
/// `wait` while a live git process works in the repository; then fails
/// naming the file. Callers hold the library lock.
pub fn clear(lib: &Library, wait: Duration) -> Result<Vec<Cleared>> {
    if surely_clean(lib) {
        return Ok(Vec::new());
    }
    let Some((top, git_dir)) = repo_dirs(lib) else { return Ok(Vec::new()) };
    let lock = git_dir.join("index.lock");
    let mut leftovers = merge_files(&top);
    if lib.dir != top {
        leftovers.extend(merge_files(&lib.dir));
    }
    if !lock.exists() && leftovers.is_empty() {
        return Ok(Vec::new());
    }
    let started = Instant::now();
    while let Some(pid) = live_git(&top, &git_dir) {
        if started.elapsed() >= wait {
            return Err(Error::msg(format!(
                "{} exists and git (pid {pid}) is still working in {}; wait for it or stop it",
                lock.display(),
                top.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut out = Vec::new();
    if remove(&lock)? {
        out.push(Cleared {
            path: lock.display().to_string(),
            reason: "git's index lock with no live git process (left by a killed commit)".into(),
        });
    }
    for f in merge_files(&top).into_iter().chain(if lib.dir != top { merge_files(&lib.dir) } else { Vec::new() }) {
        if remove(&f)? {
            out.push(Cleared {
                path: f.display().to_string(),
                reason: "a merge driver's temp file with no live git process (left by a killed sync)".into(),
            });
        }
    }
    Ok(out)
}

/// Whether there is anything for [`clear`] to look at (no lock taken).
pub fn present(lib: &Library) -> bool {
    repo_dirs(lib).is_some_and(|(top, git_dir)| {
        git_dir.join("index.lock").exists() || !merge_files(&top).is_empty() || !merge_files(&lib.dir).is_empty()
    })
}

/// Tells the user on stderr what was cleared, for commands whose stdout
/// has no place for `cleared` records.
pub fn note(cleared: &[Cleared]) {
    for c in cleared {
        crate::out::warn("kb", &format!("removed {}: {}", c.path, c.reason));
    }
}

/// The common case without spawning git (every committing write asks):
/// the nearest `.git` above the library is a directory with no
/// `index.lock`, and no `.merge_file_*` lies around. Anything else (a
/// `.git` file of a worktree, leftovers) takes the exact path.
fn surely_clean(lib: &Library) -> bool {
    let Some(top) = lib.dir.ancestors().find(|a| a.join(".git").exists()) else {
        // Not in a repository at all (unless git is pointed elsewhere).
        return std::env::var_os("GIT_DIR").is_none();
    };
    let git = top.join(".git");
    git.is_dir() && !git.join("index.lock").exists() && merge_files(top).is_empty() && merge_files(&lib.dir).is_empty()
}

/// The work tree's top and the absolute git directory, when the library
/// is in a repository. git missing or failing is "no repository": nothing
/// to clear, and the commit step reports git's own error.
fn repo_dirs(lib: &Library) -> Option<(PathBuf, PathBuf)> {
    let out = crate::library::git::git(&lib.dir)
        .args(["rev-parse", "--show-toplevel", "--absolute-git-dir"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let mut lines = text.lines();
    Some((PathBuf::from(lines.next()?), PathBuf::from(lines.next()?)))
}

/// `.merge_file_*` files directly in `dir` (git's merge-driver temps). A
/// directory that cannot be listed has none we could remove; entries that
/// vanish while listed are gone already.
fn merge_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".merge_file_"))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Removes a file; `false` when it was already gone.
fn remove(p: &Path) -> Result<bool> {
    match fs::remove_file(p) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(format!("removing {}", p.display()), e)),
    }
}

/// A live git process working in this repository: its working directory
/// is inside the work tree or the git directory, its command line names
/// either, or it holds a file of the git directory open. Without `/proc`
/// no process can be seen; a lock older than a minute then counts as
/// stale and a younger one as live (this pid stands in for the holder).
fn live_git(top: &Path, git_dir: &Path) -> Option<u32> {
    let Ok(procs) = fs::read_dir("/proc") else {
        let lock = git_dir.join("index.lock");
        let young = fs::metadata(&lock)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().unwrap_or_default() < Duration::from_secs(60));
        return young.then(std::process::id);
    };
    // /proc entries come and go while listed: one that errors has ended.
    for p in procs.filter_map(|e| e.ok()) {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let dir = p.path();
        // A process that ended between listing and reading is not live.
        let Ok(comm) = fs::read_to_string(dir.join("comm")) else { continue };
        let comm = comm.trim();
        if comm != "git" && !comm.starts_with("git-") {
            continue;
        }
        if fs::read_link(dir.join("cwd")).is_ok_and(|cwd| cwd.starts_with(top) || cwd.starts_with(git_dir)) {
            return Some(pid);
        }
        let names_repo = |arg: &str| {
            let path = Path::new(arg.rsplit_once('=').map_or(arg, |(_, v)| v));
            path.starts_with(top) || path.starts_with(git_dir)
        };
        if fs::read(dir.join("cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).split('\0').any(names_repo)) {
            return Some(pid);
        }
        if let Ok(fds) = fs::read_dir(dir.join("fd")) {
            if fds.filter_map(|e| e.ok()).any(|e| fs::read_link(e.path()).is_ok_and(|t| t.starts_with(git_dir))) {
                return Some(pid);
            }
        }
    }
    None
}
