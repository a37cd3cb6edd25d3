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
/// An unreadable changelog is an error, not "never written".
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

/// [`from_changelog`] for a few paths only, without parsing the whole
/// log: only the lines naming one of them (as a JSON string) are parsed,
/// so a side index after one write costs a scan of the log, not a parse.
pub fn for_paths(lib: &Library, paths: &[String]) -> HashMap<String, i64> {
    let mut out: HashMap<String, i64> = HashMap::new();
    if paths.is_empty() {
        return out;
    }
    let Ok(bytes) = std::fs::read(lib.path(changelog::FILE)) else { return out };
    let text = String::from_utf8_lossy(&bytes);
    // Complete lines only (a torn last line is not an event yet).
    let text = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    let wanted: std::collections::HashSet<&str> = paths.iter().map(String::as_str).collect();
    let mut starts = std::collections::BTreeSet::new();
    for p in paths {
        let needle = serde_json::to_string(p).unwrap_or_default();
        for (at, _) in text.match_indices(needle.as_str()) {
            starts.insert(text[..at].rfind('\n').map_or(0, |i| i + 1));
        }
    }
    for s in starts {
        let line = text[s..].split('\n').next().unwrap_or("").trim();
        if line.starts_with('#') {
            continue;
        }
        let Ok(e) = serde_json::from_str::<changelog::Event>(line) else { continue };
        if e.event != "write" || !wanted.contains(e.path.as_str()) {
            continue;
        }
        if let Some(ts) = e.instant() {
            let s = out.entry(e.path.clone()).or_insert(i64::MIN);
            *s = (*s).max(ts.as_second());
        }
    }
    out
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
