//! When a document was last written, for freshness when its frontmatter
//! has no `last_verified_at`: its newest `write` line in `.changelog`,
//! else the time of the newest git commit that touched it, else unknown
//! (freshness 0). Never the file's mtime: a fresh clone or a `touch`
//! would make every such note look new and outrank verified ones.

use std::collections::HashMap;
use std::process::{Command, Stdio};

use crate::library::changelog;
use crate::library::Library;

/// Newest write instant (epoch seconds) per library-relative path, from
/// the changelog (compacted lines are old enough to give freshness 0).
/// An unreadable changelog is an error, not "never written" (issue 22).
pub fn from_changelog(lib: &Library) -> crate::Result<HashMap<String, i64>> {
    let mut out: HashMap<String, i64> = HashMap::new();
    let log = changelog::read(lib)?;
    for (_, e) in log.events.iter().filter(|(_, e)| e.event == "write") {
        if let Some(ts) = e.instant() {
            let s = out.entry(e.path.clone()).or_insert(i64::MIN);
            *s = (*s).max(ts.as_second());
        }
    }
    Ok(out)
}

/// Newest commit time (epoch seconds) of each of `paths` in the git work
/// tree holding the library; empty when there is none. One `git log`
/// over the library, run only when some document has no other date.
pub fn from_git(lib: &Library, paths: &[&str]) -> HashMap<String, i64> {
    let mut out = HashMap::new();
    if paths.is_empty() {
        return out;
    }
    let Ok(o) = Command::new("git")
        .arg("-C")
        .arg(&lib.dir)
        .args([
            "-c",
            "core.quotePath=false",
            "log",
            "--no-renames",
            "--relative",
            "--format=@%ct",
            "--name-only",
            "--",
            ".",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
    else {
        // No git (or no repository): the dates fall back to unknown, as
        // for a library outside git.
        return out;
    };
    if !o.status.success() {
        return out;
    }
    let wanted: std::collections::HashSet<&str> = paths.iter().copied().collect();
    let mut when = None;
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        if let Some(t) = line.strip_prefix('@') {
            when = t.trim().parse::<i64>().ok();
        } else if let (Some(t), true) = (when, wanted.contains(line)) {
            // Newest first: the first commit naming a path is its last write.
            out.entry(line.to_string()).or_insert(t);
        }
    }
    out
}
