//! The git merge drivers kb-append provides. Git does
//! not carry driver configuration through a clone, so `init` and every
//! `sync` write it into the clone's own config:
//! `merge.kb-log.driver = kb-append merge-log %O %A %B` and
//! `merge.kb-derived.driver = kb-append merge-derived %O %A %B %P`.

use std::fs;

use crate::error::{Error, Result};
use crate::library::Library;
use crate::sync::gitcmd::Repo;
use crate::sync::{attributes, merge_log};

/// The marker a derived-file merge leaves in the git directory: the paths
/// whose merged bytes are one side's, to be rebuilt by the next sync.
pub const REBUILD_MARKER: &str = "kb-rebuild";

/// The shell command git runs for a driver: this very binary, quoted, so
/// it works whatever PATH the user's git runs with.
fn driver_command(sub: &str, placeholders: &str) -> String {
    // Not knowing our own path: the driver is found on PATH by name.
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.to_str().map(str::to_string))
        .unwrap_or_else(|| "kb-append".to_string());
    format!("'{}' {sub} {placeholders}", exe.replace('\'', r"'\''"))
}

/// The `(key, value)` pairs of both drivers' git config.
pub fn config() -> Vec<(&'static str, String)> {
    vec![
        ("merge.kb-log.name", "kb-tools append-only log union".to_string()),
        ("merge.kb-log.driver", driver_command("merge-log", "%O %A %B")),
        ("merge.kb-derived.name", "kb-tools derived file: keep one side, rebuild".to_string()),
        ("merge.kb-derived.driver", driver_command("merge-derived", "%O %A %B %P")),
    ]
}

/// Registers both drivers in the clone's config (only what differs).
pub fn register(repo: &Repo) -> Result<()> {
    let out = repo.output(&["config", "--local", "--get-regexp", r"^merge\.kb-"])?;
    let current = String::from_utf8_lossy(&out.stdout);
    for (k, v) in config() {
        if !current.lines().any(|l| l.split_once(' ') == Some((k, v.as_str()))) {
            repo.set_config(k, &v)?;
        }
    }
    Ok(())
}

/// What `init` adds for sync: the attributes and ignore files, and the
/// drivers when the library is already in a git repository. Returns the
/// files it wrote.
pub fn install(lib: &Library) -> Result<Vec<String>> {
    let written = attributes::write(lib)?;
    if crate::library::git::is_repo(lib) {
        register(&Repo::open(lib)?)?;
    }
    Ok(written)
}

/// `kb-append merge-log BASE OURS THEIRS`: git's `%O %A %B`; the union is
/// written over OURS.
pub fn merge_log_files(base: &str, ours: &str, theirs: &str) -> Result<()> {
    let read = |p: &str| fs::read(p).map_err(|e| Error::io(format!("reading {p}"), e));
    let merged = merge_log::merge(&read(base)?, &read(ours)?, &read(theirs)?);
    let target = std::path::absolute(ours).map_err(|e| Error::io(format!("resolving {ours}"), e))?;
    crate::fs::atomic::write(&target, &merged)
}

/// `kb-append merge-derived BASE OURS THEIRS PATH`: keeps OURS as it is
/// and records PATH in the git directory's rebuild marker, so the merge
/// never stops on a generated file and the next sync rebuilds it.
pub fn merge_derived(path: &str) -> Result<()> {
    let out = crate::library::git::git(std::path::Path::new("."))
        .args(["rev-parse", "--absolute-git-dir"])
        .output()
        .map_err(|e| Error::io("running git rev-parse", e))?;
    if !out.status.success() {
        return Err(Error::msg("merge-derived runs as a git merge driver, inside a repository"));
    }
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    crate::fs::atomic::append_lines(&std::path::Path::new(&dir).join(REBUILD_MARKER), &format!("{path}\n"))
}
