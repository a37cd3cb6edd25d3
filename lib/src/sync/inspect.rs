//! What a peer's commits may bring (issue 21): sync looks at the tree
//! change from the merge base to the fetched head before merging, and
//! refuses the whole fetch when it adds, inside the library, a symlink
//! (`.lock` pointing at a victim file), a gitlink, a name `library::kind`
//! refuses (`.git`, `HEAD`/`config`/`objects`/`refs` at the root, any
//! `.gitattributes` or `.gitmodules`, `.lock`, control characters…), a tool
//! file no peer shares (`.lock`, `.cache/`), a name that collides by case
//! with another, or a library `.gitattributes` or `.gitignore` other than
//! kb-tools' own; and, outside the library, a `.gitattributes` that speaks
//! about the library or kb-tools' merge drivers or adds a line that sets a
//! content or merge attribute on library files (`attributes::reaching`),
//! or `.gitignore` lines added about the library. Nothing is merged then; the sync
//! record lists each path and why.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::Result;
use crate::library::kind::{self, Kind};
use crate::library::names;
use crate::sync::attributes;
use crate::sync::gitcmd::Repo;

/// One path of a fetched commit that sync refused to merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rejected {
    /// The path, relative to the library when inside it, else to the
    /// repository top.
    pub path: String,
    /// Why it is refused.
    pub reason: String,
}

/// The library's files as paths relative to the directory of `path` (a
/// `.gitattributes` or `.gitignore` outside the library) when that
/// directory holds the library, else none: only a file above the library
/// reaches it. Documents a later write adds (`x.md`, `notes/x.md`) count
/// too. The library's listing at `to` is read once per inspection.
fn under(repo: &Repo, to: &str, path: &str, library_files: &mut Option<Vec<String>>) -> Result<Vec<String>> {
    let dir = path.rfind('/').map_or("", |i| &path[..=i]);
    let mut under = Vec::new();
    if repo.prefix.starts_with(dir) {
        if library_files.is_none() {
            let spec = repo.library_pathspec();
            *library_files = Some(repo.list(&["ls-tree", "-r", "-z", "--name-only", to, "--", &spec], "git ls-tree")?);
        }
        under.extend(library_files.iter().flatten().filter_map(|f| f.strip_prefix(dir)).map(str::to_string));
        let lib_rel = &repo.prefix[dir.len()..];
        under.extend([format!("{lib_rel}x.md"), format!("{lib_rel}notes/x.md")]);
    }
    Ok(under)
}

/// The refused paths among what `to` adds or changes since `from`.
pub fn inspect(repo: &Repo, from: &str, to: &str) -> Result<Vec<Rejected>> {
    let raw = repo.run(&["diff-tree", "-r", "-z", "--no-renames", "--raw", from, to, "--"], "git diff-tree")?;
    let mut fields = raw.split('\0');
    let mut out = Vec::new();
    let mut added = Vec::new();
    let mut library_files: Option<Vec<String>> = None;
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        let meta: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let [_, new_mode, old_sha, new_sha, status] = meta.as_slice() else { continue };
        if status.starts_with('D') {
            continue;
        }
        let mut reject = |reason: String| out.push(Rejected { path: shown(repo, path), reason });
        let Some(rel) = repo.in_library(path) else {
            if is_named(path, ".gitattributes") {
                // Unreadable is an error: read as empty, it would pass the check.
                let text = repo.run(&["cat-file", "blob", new_sha], "git cat-file")?;
                if text.contains(crate::library::DIR_NAME) || text.contains("kb-") {
                    reject("a .gitattributes outside the library that changes how the library merges".into());
                } else {
                    let old = if status.starts_with('A') {
                        String::new()
                    } else {
                        repo.run(&["cat-file", "blob", old_sha], "git cat-file")?
                    };
                    let under = under(repo, to, path, &mut library_files)?;
                    if let Some(line) =
                        attributes::reaching(&text, &old, &under.iter().map(String::as_str).collect::<Vec<_>>())
                    {
                        reject(format!(
                            "a .gitattributes outside the library whose line '{}' changes how library files are \
                             checked out or merged",
                            names::shown(line)
                        ));
                    }
                }
            } else if is_named(path, ".gitignore") {
                // Only the lines the peer adds: the workspace's own file
                // may name the library already (its lock, its cache).
                let old = if status.starts_with('A') {
                    String::new()
                } else {
                    repo.run(&["cat-file", "blob", old_sha], "git cat-file")?
                };
                let text = repo.run(&["cat-file", "blob", new_sha], "git cat-file")?;
                let files = under(repo, to, path, &mut library_files)?;
                let files: Vec<&str> = files.iter().map(String::as_str).collect();
                // A line about the library, or a pattern git matches
                // against its files (`*.md`, `notes/`); `!` re-includes.
                let hides = |l: &str| {
                    let l = l.trim();
                    l.contains(crate::library::DIR_NAME)
                        || (!l.is_empty() && !l.starts_with(['#', '!']) && attributes::reaches(l, &files))
                };
                if text.lines().any(|l| hides(l) && !old.lines().any(|o| o == l)) {
                    reject("a .gitignore outside the library that hides library files from git".into());
                }
            }
            continue;
        };
        if status.starts_with('A') {
            added.push(rel.to_string());
        }
        match *new_mode {
            "120000" => {
                reject("a symlink; kb-tools never follows or accepts links in a library".into());
                continue;
            }
            "160000" => {
                reject("a gitlink (submodule); a library holds only files".into());
                continue;
            }
            _ => {}
        }
        if rel == ".gitattributes" {
            let text = repo.run(&["cat-file", "blob", new_sha], "git cat-file")?;
            if !own_attributes(&text) {
                reject("the library's .gitattributes differs from the one kb-tools writes".into());
            }
            continue;
        }
        if rel == ".gitignore" {
            let text = repo.run(&["cat-file", "blob", new_sha], "git cat-file")?;
            if !own_lines(&text, attributes::GITIGNORE) {
                reject(
                    "the library's .gitignore differs from the one kb-tools writes (it would hide documents from git)"
                        .into(),
                );
            }
            continue;
        }
        if kind::kind(rel) == Kind::Refused {
            let why = names::refusal(rel).unwrap_or_else(|| format!("refused: '{rel}' is a refused name"));
            reject(why);
        } else if rel == ".lock" || rel.starts_with(".cache/") {
            reject("a tool file that is never shared (the lock, caches)".into());
        }
    }
    // Case-fold collisions between what arrives and what is there (or
    // arrives alongside): the same file on a case-insensitive system.
    if !added.is_empty() {
        let spec = repo.library_pathspec();
        let existing = repo.list(&["ls-tree", "-r", "-z", "--name-only", to, "--", &spec], "git ls-tree")?;
        let mut by_fold: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in existing.iter().filter_map(|p| repo.in_library(p)) {
            by_fold.entry(names::fold(p)).or_default().push(p.to_string());
        }
        for a in &added {
            if let Some(same) = by_fold.get(&names::fold(a)).filter(|v| v.len() > 1) {
                let others: Vec<&str> = same.iter().filter(|p| *p != a).map(String::as_str).collect();
                out.push(Rejected {
                    path: a.clone(),
                    reason: format!(
                        "differs only in case or Unicode form from '{}' (the two collide on case-insensitive or normalising file systems)",
                        others.join("', '")
                    ),
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup();
    Ok(out)
}

fn shown(repo: &Repo, top_rel: &str) -> String {
    names::shown(repo.in_library(top_rel).unwrap_or(top_rel))
}

fn is_named(top_rel: &str, name: &str) -> bool {
    top_rel.rsplit('/').next().is_some_and(|n| names::fold(n) == name)
}

/// Whether a library `.gitattributes` holds only comments, blank lines and
/// the lines kb-tools writes.
fn own_attributes(text: &str) -> bool {
    own_lines(text, &attributes::gitattributes())
}

/// Whether `text` holds only comments, blank lines and lines of `ours`.
fn own_lines(text: &str, ours: &str) -> bool {
    text.lines().map(str::trim).all(|l| l.is_empty() || l.starts_with('#') || ours.lines().any(|o| o.trim() == l))
}
