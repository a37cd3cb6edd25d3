//! Documents edited on two machines where the edits overlap: nothing is lost. The document keeps the side with the newer
//! `last_verified_at` (then the later commit), the other side goes to
//! `.library/.conflicts/<path>/<short-sha>.md`, and a changelog `conflict`
//! event records it until `kb-append resolve` ends it. [`list`] is what
//! `kb-index status` reports as findings.

use std::cmp::Ordering;
use std::fs;

use serde::Serialize;

use crate::clock;
use crate::doc::digest;
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::library::changelog::Event;
use crate::library::entry::{self, Category, Entry};
use crate::library::Library;
use crate::sync::gitcmd::Repo;

/// The directory under the library that holds kept sides.
pub const DIR: &str = ".conflicts";

/// One kept side of a conflicting edit.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "record", rename = "conflict")]
pub struct Conflict {
    /// The document (library-relative).
    pub path: String,
    /// Where the other side is kept (library-relative).
    pub kept: String,
    /// The short sha of the commit the kept side came from.
    pub sha: String,
}

/// Every kept conflict in the library, sorted by document then copy.
/// `kb-index status` reports each as a finding.
pub fn list(lib: &Library) -> Vec<Conflict> {
    let root = lib.path(DIR);
    let mut out = Vec::new();
    for e in crate::fs::walk::entries(&root, |_| true) {
        if e.depth < 2 || e.kind != crate::fs::walk::Kind::File || !e.utf8 {
            continue;
        }
        let rel = e.rel;
        let Some((path, file)) = rel.rsplit_once('/') else { continue };
        let Some(sha) = file.strip_suffix(".md") else { continue };
        if crate::fs::atomic::temp_owner(file).is_some() {
            continue;
        }
        out.push(Conflict { path: path.to_string(), kept: format!("{DIR}/{rel}"), sha: sha.to_string() });
    }
    out.sort();
    out
}

/// The kept copies of one document.
pub fn of(lib: &Library, path: &str) -> Vec<Conflict> {
    list(lib).into_iter().filter(|c| c.path == path).collect()
}

/// One side of a conflicted path: its bytes (absent when that side deleted
/// it) and the commit it came from.
pub struct Side {
    /// The file's bytes on this side.
    pub bytes: Option<Vec<u8>>,
    /// The side's commit (`HEAD` or the merged commit).
    pub commit: String,
}

/// How sync settled one conflicted document.
#[derive(Debug, Clone)]
pub struct Settled {
    /// The changelog `conflict` event.
    pub event: Event,
    /// The kept copy, when both sides had content.
    pub kept: Option<String>,
}

/// Settles a conflicted document in the work tree: writes the winning
/// side in place and the other into `.conflicts/`. `rel` is
/// library-relative, `top_rel` the same path from the repository top.
pub fn settle(lib: &Library, repo: &Repo, rel: &str, top_rel: &str, ours: Side, theirs: Side) -> Result<Settled> {
    let full = lib.path(rel);
    let (winner, loser, action) = match (&ours.bytes, &theirs.bytes) {
        (Some(_), None) => (&ours, None, "kept-ours-modified"),
        (None, Some(_)) => (&theirs, None, "kept-theirs-modified"),
        (None, None) => return Err(Error::msg(format!("'{rel}' has no content on either side"))),
        (Some(a), Some(b)) => match newer(repo, rel, top_rel, a, &ours.commit, b, &theirs.commit)? {
            Ordering::Less => (&theirs, Some(&ours), "kept-theirs"),
            _ => (&ours, Some(&theirs), "kept-ours"),
        },
    };
    // The winner is a side with bytes (the match above); a deleted side never wins.
    let bytes = winner.bytes.as_deref().unwrap_or_default();
    atomic::write(&full, bytes)?;
    let mut kept = None;
    if let Some(loser) = loser {
        let sha = last_commit(repo, &loser.commit, top_rel)?.map(|(_, h)| h).unwrap_or_else(|| short(&loser.commit));
        let copy = format!("{DIR}/{rel}/{sha}.md");
        atomic::write(&lib.path(&copy), loser.bytes.as_deref().unwrap_or_default())?;
        kept = Some(copy);
    }
    let text = String::from_utf8_lossy(bytes);
    let info = entry::classify(rel);
    let event = Event {
        ts: clock::format(clock::now()?),
        event: "conflict".into(),
        path: rel.to_string(),
        action: Some(action.into()),
        category: Some(info.and_then(|i| i.category).map_or("file", Category::as_str).to_string()),
        topic: Entry::from_text(rel, &text).map(|e| e.topic),
        sha256: Some(digest::sha256_hex(bytes)),
        bytes: Some(bytes.len() as u64),
        reason: Some(match &kept {
            Some(k) => format!("overlapping edits; the other side is kept in {k}"),
            None => "edited on one side, deleted on the other; the edit is kept".into(),
        }),
        ..Event::default()
    };
    Ok(Settled { event, kept })
}

/// Orders two sides: newer `last_verified_at` wins, then the later commit
/// touching the path, then the larger bytes (so the choice never depends
/// on which side is "ours").
fn newer(repo: &Repo, rel: &str, top_rel: &str, a: &[u8], ca: &str, b: &[u8], cb: &str) -> Result<Ordering> {
    let verified = |bytes: &[u8]| {
        Entry::from_text(rel, &String::from_utf8_lossy(bytes))
            .and_then(|e| e.last_verified_at)
            .and_then(|s| clock::parse_instant(&s))
    };
    let (ta, tb) = (last_commit(repo, ca, top_rel)?.map(|(t, _)| t), last_commit(repo, cb, top_rel)?.map(|(t, _)| t));
    Ok(verified(a).cmp(&verified(b)).then_with(|| ta.cmp(&tb)).then_with(|| a.cmp(b)))
}

/// The committer time and short sha of the last commit on `commit`'s
/// history that touched `top_rel`; `None` when none did. A failing `git
/// log` is an error: read as "no commit", it would change which side wins.
fn last_commit(repo: &Repo, commit: &str, top_rel: &str) -> Result<Option<(i64, String)>> {
    let out = repo.run(&["log", "-1", "--format=%ct %h", commit, "--", top_rel], "git log")?;
    let Some((t, h)) = out.trim().split_once(' ') else { return Ok(None) };
    let t = t.parse().map_err(|_| Error::msg(format!("git log: not a commit time: {t:?}")))?;
    Ok(Some((t, h.to_string())))
}

fn short(sha: &str) -> String {
    sha.chars().take(7).collect()
}

/// Reads a blob's bytes (for the stages of a conflicted path).
pub fn blob(repo: &Repo, sha: &str) -> Result<Vec<u8>> {
    let out = repo.output(&["cat-file", "blob", sha])?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(Error::msg(format!("git cat-file {sha} failed: {}", crate::sync::gitcmd::stderr_of(&out))))
    }
}

/// Removes the kept copies of a document and the directories they leave
/// empty. Returns the removed copies.
pub fn remove(lib: &Library, copies: &[Conflict]) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for c in copies {
        let p = lib.path(&c.kept);
        match fs::remove_file(&p) {
            Ok(()) => removed.push(c.kept.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(format!("removing {}", p.display()), e)),
        }
        let root = lib.path(DIR);
        let mut dir = p.parent().map(std::path::Path::to_path_buf);
        while let Some(d) = dir {
            if !d.starts_with(&root) || fs::remove_dir(&d).is_err() || d == root {
                break;
            }
            dir = d.parent().map(std::path::Path::to_path_buf);
        }
    }
    Ok(removed)
}
