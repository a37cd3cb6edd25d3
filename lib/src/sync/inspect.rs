//! Files above the library that change how it merges, for
//! the one case where sync merges paths outside the library: the user's
//! own `--merge-outside` (`sync::admit` refuses them otherwise). Outside
//! the library, a `.gitattributes` that speaks about the library or
//! kb-tools' merge drivers or adds a line that sets a content or merge
//! attribute on library files (`attributes::reaching`), or `.gitignore`
//! lines added about the library, are refused all the same.

use serde::Serialize;

use crate::error::Result;
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

/// The refused files outside the library among what `to` adds or
/// changes since `from`.
pub fn inspect_outside(repo: &Repo, from: &str, to: &str) -> Result<Vec<Rejected>> {
    let raw = repo.run(&["diff-tree", "-r", "-z", "--no-renames", "--raw", from, to, "--"], "git diff-tree")?;
    let mut fields = raw.split('\0');
    let mut out = Vec::new();
    let mut library_files: Option<Vec<String>> = None;
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        let meta: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let [_, _, old_sha, new_sha, status] = meta.as_slice() else { continue };
        if status.starts_with('D') {
            continue;
        }
        let mut reject = |reason: String| out.push(Rejected { path: shown(repo, path), reason });
        if repo.in_library(path).is_some() {
            continue;
        }
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

/// Whether `text` holds only comments, blank lines and lines of `ours`.
pub fn own_lines(text: &str, ours: &str) -> bool {
    text.lines().map(str::trim).all(|l| l.is_empty() || l.starts_with('#') || ours.lines().any(|o| o.trim() == l))
}
