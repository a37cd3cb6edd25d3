//! The incremental rebuild after a merge: each side's
//! derived files were right for that side, and a merge keeps one side's
//! bytes, so re-deriving the rows and edges of every document either side
//! changed since the merge base, plus the edges of every logged event,
//! gives what a full rebuild ([`crate::derived::rebuild_all::rebuild`]) gives, at the
//! cost of the touched documents only.

use std::collections::HashSet;

use crate::derived::index;
use crate::derived::rebuild_all;
use crate::error::Result;
use crate::library::changelog::{self, Event};
use crate::library::entry;
use crate::library::relations;
use crate::library::scan;
use crate::library::Library;
use crate::sync::gitcmd::Repo;

/// Re-derives the index rows and relation edges of the library-relative
/// `paths` (documents that changed; missing ones were deleted) and adds
/// the edges of `events` (`None`: the whole history). Callers hold the
/// library lock. Returns the derived files that changed on disk.
pub fn documents(lib: &Library, paths: &[String], events: Option<&[Event]>) -> Result<Vec<String>> {
    let mut entries = Vec::new();
    let mut edges = Vec::new();
    for p in paths.iter().filter(|p| entry::classify(p).is_some()) {
        match scan::read_present(lib, p)? {
            Some(doc) => {
                edges.push((p.clone(), doc.edges));
                entries.push((p.clone(), Some(doc.entry)));
            }
            None => {
                edges.push((p.clone(), Vec::new()));
                entries.push((p.clone(), None));
            }
        }
    }
    let mut touched = if entries.is_empty() { Vec::new() } else { index::update(lib, &entries)? };
    let history;
    let events = match events {
        Some(e) => e,
        None => {
            history = relations::history(lib)?;
            &history
        }
    };
    if relations::update(lib, &edges, events, || rebuild_all::rebuilt_edges(lib))? {
        touched.push(relations::FILE.to_string());
    }
    touched.sort();
    Ok(touched)
}

/// The events logged since commit `base`: the lines of the library's
/// logs (`.changelog` and its archives) that `base` did not have. A merge
/// adds the edges of these and no others.
pub fn events_since(lib: &Library, repo: &Repo, base: &str) -> Result<Vec<Event>> {
    let mut logs = vec![changelog::FILE.to_string()];
    let archives = repo.top_path(".changelog-archive/");
    for p in repo.list(&["diff", "--name-only", "-z", base, "--", &archives], "git diff")? {
        logs.extend(repo.in_library(&p).map(str::to_string));
    }
    let mut events = Vec::new();
    for rel in logs {
        let old = repo.output(&["show", &format!("{base}:{}", repo.top_path(&rel))])?;
        let old = if old.status.success() { String::from_utf8_lossy(&old.stdout).into_owned() } else { String::new() };
        let seen: HashSet<&str> = old.lines().collect();
        // A log the merge removed has no new lines; an unreadable one is an error.
        let now = crate::fs::read::optional(&lib.path(&rel))?
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let fresh: String = now.lines().filter(|l| !seen.contains(l)).map(|l| format!("{l}\n")).collect();
        events.extend(changelog::parse(&fresh).events.into_iter().map(|(_, e)| e));
    }
    Ok(events)
}

/// The full rebuild, for when a plain `git merge` left derived files of
/// one side behind (the rebuild marker) and which documents changed is not
/// known.
pub fn all(lib: &Library) -> Result<Vec<String>> {
    Ok(rebuild_all::rebuild(lib)?.touched)
}
