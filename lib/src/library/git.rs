//! Git commits of exactly the paths a writer touched (seed 000 step 8),
//! with the seed's messages. A library outside any git work tree is fine.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::library::Library;

/// Whether the library lives inside a git work tree.
pub fn is_repo(lib: &Library) -> bool {
    git(&lib.dir)
        .args(["rev-parse", "--is-inside-work-tree"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Commits the given library-relative paths (and nothing else that may be
/// staged) with `message`. Returns `false` when the library is not in a git
/// repository or nothing changed. A missing identity falls back to
/// `kb-tools <kb-tools@localhost>`.
pub fn commit(lib: &Library, paths: &[String], message: &str) -> Result<bool> {
    if paths.is_empty() || !is_repo(lib) {
        return Ok(false);
    }
    // A path that is gone and was never committed (a cleared log) is no
    // change; naming it would make `git add` fail.
    // A path git ignores (the lock, caches) is never committed; naming it
    // would make `git add` refuse the whole commit.
    let tracked = tracked(lib, paths)?;
    let ignored = ignored(lib, paths)?;
    let paths: Vec<&String> = paths
        .iter()
        .filter(|p| p.starts_with(':') || lib.path(p).exists() || tracked.contains(p.as_str()))
        .filter(|p| !ignored.contains(p.as_str()))
        .collect();
    if paths.is_empty() {
        return Ok(false);
    }
    let mut add = git(&lib.dir);
    add.args(["add", "--all", "--"]).args(&paths);
    run(add, "git add")?;
    crate::fs::crash::at(crate::fs::crash::Step::GitAdd);
    let mut diff = git(&lib.dir);
    diff.args(["diff", "--cached", "--quiet", "--"]).args(&paths);
    if diff.status().map_err(|e| Error::io("running git diff", e))?.success() {
        return Ok(false);
    }
    let mut c = git(&lib.dir);
    c.args(identity_args(&lib.dir));
    c.args(["commit", "--quiet", "--no-verify", "-m", message, "--"]).args(&paths);
    run(c, "git commit")?;
    Ok(true)
}

/// Unstages `paths` (their index entries back to HEAD's), so a recovery
/// commits them afresh: a deletion a killed commit staged is otherwise
/// neither on disk nor in the index, and `git add` refuses to name it.
/// Best effort: with no HEAD yet (the first commit) there is nothing to
/// reset to, and the commit that follows reports any real trouble.
pub fn unstage(lib: &Library, paths: &[String]) {
    if paths.is_empty() || !is_repo(lib) {
        return;
    }
    let mut c = git(&lib.dir);
    c.args(["reset", "-q", "--"]).args(paths.iter().filter(|p| !p.starts_with(':')));
    let _ = c.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).status();
}

/// The given paths that git tracks. A failing `git ls-files` is an error,
/// not "nothing tracked": that would leave a deletion out of the commit.
fn tracked(lib: &Library, paths: &[String]) -> Result<std::collections::BTreeSet<String>> {
    let mut c = git(&lib.dir);
    c.args(["ls-files", "-z", "--full-name", "--"]).args(paths.iter().filter(|p| !p.starts_with(':')));
    let prefix = show_prefix(lib)?;
    let out = output(c, "git ls-files", |code| code == 0)?;
    Ok(out
        .split(|b| *b == 0)
        // Our own paths are UTF-8 (library::normalise refuses others); a
        // name that is not cannot be one of `paths`.
        .filter_map(|b| std::str::from_utf8(b).ok())
        .filter_map(|p| p.strip_prefix(prefix.as_str()).map(str::to_string))
        .collect())
}

/// The given paths that git ignores (and does not track). `git
/// check-ignore` exits 1 when none is ignored; anything else is an error.
fn ignored(lib: &Library, paths: &[String]) -> Result<std::collections::BTreeSet<String>> {
    let mut c = git(&lib.dir);
    c.args(["check-ignore", "--"]).args(paths.iter().filter(|p| !p.starts_with(':')));
    let out = output(c, "git check-ignore", |code| code <= 1)?;
    Ok(String::from_utf8_lossy(&out).lines().map(str::to_string).collect())
}

/// The library directory's path inside the work tree, with a trailing `/`
/// (empty when the library is the work tree's root).
fn show_prefix(lib: &Library) -> Result<String> {
    let mut c = git(&lib.dir);
    c.args(["rev-parse", "--show-prefix"]);
    Ok(String::from_utf8_lossy(&output(c, "git rev-parse", |code| code == 0)?).trim().to_string())
}

/// Runs `c` and returns its stdout when its exit code passes `ok`; a
/// failure names the command and carries git's stderr.
fn output(mut c: Command, what: &str, ok: impl Fn(i32) -> bool) -> Result<Vec<u8>> {
    let out = c.output().map_err(|e| Error::io(format!("running {what}"), e))?;
    if out.status.code().is_some_and(ok) {
        Ok(out.stdout)
    } else {
        Err(Error::msg(format!("{what} failed: {}", String::from_utf8_lossy(&out.stderr).trim())))
    }
}

/// A git command run in `dir` with no stdin: the one place kb-tools builds
/// git invocations (sync adds its own environment on top).
///
/// Library content is untrusted, so git is never left to
/// discover a repository from inside `.library`, where a planted `.git`
/// file could point it at a fake repository whose config runs commands.
/// The repository is the workspace's (the directory holding `.library`),
/// named with `--git-dir`/`--work-tree`; and hooks and fsmonitor, the
/// config-driven commands plain git operations start, are switched off.
/// A `GIT_DIR` already in the environment (the user's choice, or git's own
/// when it runs a merge driver) is honoured.
pub fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.args(SAFE_CONFIG).stdin(Stdio::null());
    if std::env::var_os("GIT_DIR").is_none() {
        match workspace_repo(dir) {
            Some((git_dir, top)) => {
                c.arg("--git-dir").arg(git_dir).arg("--work-tree").arg(top);
            }
            // No repository: make every command fail as "not a git
            // repository" instead of searching below the workspace.
            None => {
                c.env("GIT_DIR", workspace_of(dir).join(".git"));
            }
        }
    }
    c.arg("-C").arg(dir);
    c
}

/// Config that would run commands, overridden for every git kb-tools runs.
pub const SAFE_CONFIG: &[&str] = &["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"];

/// The workspace a path belongs to: the parent of the nearest enclosing
/// `.library` directory, else the path itself.
pub fn workspace_of(dir: &Path) -> PathBuf {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    abs.ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == crate::library::DIR_NAME))
        .and_then(Path::parent)
        .map_or_else(|| abs.clone(), Path::to_path_buf)
}

/// The git directory and top level of the repository holding the
/// workspace of `dir`, discovered from the workspace (never from inside
/// the library) once per process.
fn workspace_repo(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    static CACHE: Mutex<BTreeMap<PathBuf, Option<(PathBuf, PathBuf)>>> = Mutex::new(BTreeMap::new());
    let ws = workspace_of(dir);
    // A poisoned cache (a panic elsewhere) only costs a fresh lookup.
    if let Some(hit) = CACHE.lock().ok().and_then(|m| m.get(&ws).cloned()) {
        return hit;
    }
    let out = Command::new("git")
        .args(SAFE_CONFIG)
        .arg("-C")
        .arg(&ws)
        .args(["rev-parse", "--absolute-git-dir", "--show-toplevel"])
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        // git missing or failing here means "no repository": a library
        // outside git is fine (commits are skipped), per DESIGN.md.
        .ok();
    let found = out.filter(|o| o.status.success()).and_then(|o| {
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let mut lines = text.lines();
        Some((PathBuf::from(lines.next()?), PathBuf::from(lines.next()?)))
    });
    if let Ok(mut m) = CACHE.lock() {
        m.insert(ws, found.clone());
    }
    found
}

/// `-c user.name=... -c user.email=...` when the repository has no
/// identity, so commits never fail for want of one.
pub fn identity_args(dir: &Path) -> Vec<&'static str> {
    if has_identity(dir) {
        Vec::new()
    } else {
        vec!["-c", "user.name=kb-tools", "-c", "user.email=kb-tools@localhost"]
    }
}

fn has_identity(dir: &Path) -> bool {
    ["user.name", "user.email"].iter().all(|k| {
        git(dir).args(["config", k]).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
    })
}

fn run(mut c: Command, what: &str) -> Result<()> {
    let out = c.stdout(Stdio::null()).output().map_err(|e| Error::io(format!("running {what}"), e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::msg(format!("{what} failed: {}", String::from_utf8_lossy(&out.stderr).trim())))
    }
}
