//! The boundary between a peer and this machine (DESIGN.md
//! "Trust"): before anything is merged or checked out, sync reads the
//! fetched change from git's objects (merge base → fetched tip, modes
//! and renames) and admits it only when every entry is a regular,
//! non-executable file inside the library whose kind, in the one table
//! (`library::kind`), a peer may change, with a name the writer would
//! write, within size caps counted per peer commit. It is an allowlist:
//! what the table does not know is refused, so a new kind of file is
//! closed until someone decides what it is.
//!
//! What passes is sorted for the gates after it: documents, skill files
//! and kept conflicts for the guard, rules and proposals for the evolve
//! gate (`sync::hold` decides, before the merge, what waits); derived
//! files are dropped and rebuilt; logs must keep every line of the
//! common base (compaction only moves lines into the archive);
//! deletions and moves are listed, and more than a threshold of deleted
//! documents stops the sync unless the user accepts them.
//!
//! Paths outside the library are never merged unattended: they are
//! listed and the sync stops, so the user reviews and merges those
//! commits with git; then they are in the local history and the next
//! range no longer holds them. Only the user's own flag
//! (`--merge-outside`) lets them through, and then the old checks of
//! `.gitattributes` and `.gitignore` above the library still apply
//! (`sync::inspect`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::library::kind::{self, Kind};
use crate::library::names;
use crate::sync::gitcmd::{Blobs, Repo};
use crate::sync::inspect::{self, Rejected};

/// The caps and choices the user sets for one sync (flags; never read
/// from a file a peer can write).
#[derive(Debug, Clone)]
pub struct Limits {
    /// Files one peer commit may add (`--max-files`).
    pub max_files: usize,
    /// Bytes the files one peer commit adds or changes may hold in all
    /// (`--max-bytes`).
    pub max_bytes: u64,
    /// The largest file one peer commit may add or change
    /// (`--max-file-bytes`).
    pub max_file_bytes: u64,
    /// Documents the fetched range may delete before the sync stops
    /// (`--max-deletes`); a quarter of the library stops it too.
    pub max_deletes: usize,
    /// Deletions over the threshold go ahead (`--accept-deletes`).
    pub accept_deletes: bool,
    /// Paths outside the library are merged (`--merge-outside`).
    pub merge_outside: bool,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_files: 10_000,
            max_bytes: 256 << 20,
            max_file_bytes: 64 << 20,
            max_deletes: 50,
            accept_deletes: false,
            merge_outside: false,
        }
    }
}

/// One admitted change inside the library, with the blobs each side
/// holds, for the gates after admission.
#[derive(Debug, Clone)]
pub struct Change {
    /// The library-relative path it has after the change.
    pub path: String,
    /// Its kind in the table.
    pub kind: Kind,
    /// The blob at the merge base (the peer changed it from this).
    pub base: Option<String>,
    /// The blob the peer's tip holds (`None`: deleted).
    pub theirs: Option<String>,
}

/// A moved document (a rename git detected, a skill promotion).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Moved {
    pub from: String,
    pub to: String,
}

/// What the boundary found in a fetched range.
#[derive(Debug, Default)]
pub struct Admission {
    /// Refused paths: when any, nothing is merged.
    pub rejected: Vec<Rejected>,
    /// Admitted changes to content, logs, rules and proposals.
    pub changes: Vec<Change>,
    /// Documents and skill files the peer deleted.
    pub deleted: Vec<String>,
    /// Documents and skill files the peer moved.
    pub moved: Vec<Moved>,
    /// Derived files the peer's commits touched (dropped and rebuilt).
    pub derived: Vec<String>,
}

/// One entry of `git diff-tree --raw -z`.
struct Entry {
    new_mode: String,
    old_sha: String,
    new_sha: String,
    status: char,
    /// The source of a rename or copy.
    from: Option<String>,
    path: String,
}

const ZERO: &str = "0000000000000000000000000000000000000000";

/// One range to judge: what `theirs` changes since `base` (the merge
/// base, or HEAD for a fast-forward, or the empty tree for an unborn
/// branch). `ours` is HEAD (for the deletion share), `None` when unborn.
pub struct Range<'a> {
    pub base: &'a str,
    pub ours: Option<&'a str>,
    pub theirs: &'a str,
}

/// Judges one range. `caps`: count its commits against the size caps
/// here (a sync judging many machine refs counts them all at once first,
/// with [`caps`]). Objects are read through `blobs`, one reader for every
/// range a sync judges.
pub fn judge(repo: &Repo, blobs: &mut Blobs, range: &Range, limits: &Limits, caps: bool) -> Result<Admission> {
    let Range { base, ours, theirs } = *range;
    let mut adm = Admission::default();
    let reject = |adm: &mut Admission, path: &str, reason: String| {
        adm.rejected.push(Rejected { path: names::shown(path), reason })
    };
    // The library itself, and every folder on the way to it, stay folders.
    for (path, what) in library_chain(repo, blobs, theirs)? {
        reject(
            &mut adm,
            &path,
            format!(
                "the peer's commit turns the library's folder (or one on the way to it) into {what}; \
             kb-tools never follows a library through a link"
            ),
        );
    }
    if !adm.rejected.is_empty() {
        return Ok(adm);
    }
    if caps {
        if let Some(r) = self::caps(repo, blobs, &[base], &[theirs], limits)? {
            adm.rejected.push(r);
            return Ok(adm);
        }
    }
    let raw = repo.run(&["diff-tree", "-r", "-z", "--raw", "-M", base, theirs, "--"], "git diff-tree")?;
    let entries = parse_raw(&raw);
    let mut outside = Vec::new();
    let mut added = Vec::new();
    let mut archives: Option<Vec<String>> = None;
    for e in &entries {
        let Some(rel) = repo.in_library(&e.path) else {
            outside.push(e.path.clone());
            continue;
        };
        let from_rel = e.from.as_deref().map(|f| repo.in_library(f));
        if let Some(None) = from_rel {
            // Moved in from outside the library: the source is outside.
            outside.push(e.from.clone().unwrap_or_default());
            continue;
        }
        let k = kind::kind(rel);
        if e.status == 'D' {
            match k {
                Kind::Document | Kind::Skill => adm.deleted.push(rel.to_string()),
                Kind::Derived | Kind::Conflict => {}
                Kind::Log if rel.contains('/') && !rel.starts_with(kind::ARCHIVE_DIR) => {}
                Kind::Log => reject(&mut adm, rel, "a peer deleted a shared log; logs are append-only".into()),
                Kind::Rule | Kind::Proposal => adm.changes.push(Change {
                    path: rel.to_string(),
                    kind: k,
                    base: Some(e.old_sha.clone()),
                    theirs: None,
                }),
                // A local or unknown file in the base: nothing of this
                // machine's (its local state is not in git).
                _ => {}
            }
            continue;
        }
        if let Some(why) = names::refusal(rel) {
            reject(&mut adm, rel, why);
            continue;
        }
        if !k.peer() {
            reject(&mut adm, rel, refusal(k));
            continue;
        }
        match e.new_mode.as_str() {
            "100644" => {}
            "100755" => {
                reject(&mut adm, rel, "an executable file; a library holds only plain files (mode 100644)".into());
                continue;
            }
            "120000" => {
                reject(&mut adm, rel, "a symlink; kb-tools never follows or accepts links in a library".into());
                continue;
            }
            "160000" => {
                reject(&mut adm, rel, "a gitlink (submodule); a library holds only files".into());
                continue;
            }
            m => {
                reject(&mut adm, rel, format!("an entry of mode {m}; a library holds only plain files"));
                continue;
            }
        }
        if e.status == 'A' || e.status == 'R' || e.status == 'C' {
            added.push(rel.to_string());
        }
        if let Some(Some(from)) = from_rel.filter(|_| e.status == 'R') {
            match kind::kind(from) {
                k if k.is_content() => adm.moved.push(Moved { from: from.to_string(), to: rel.to_string() }),
                Kind::Log => reject(&mut adm, from, "a peer moved a shared log; logs are append-only".into()),
                // A rule or proposal moved away is removed where it was:
                // that removal passes the gates like any other.
                k @ (Kind::Rule | Kind::Proposal) => adm.changes.push(Change {
                    path: from.to_string(),
                    kind: k,
                    base: Some(e.old_sha.clone()),
                    theirs: None,
                }),
                _ => {}
            }
        }
        let base_blob = (e.status == 'M' || e.status == 'T').then(|| e.old_sha.clone()).filter(|s| s != ZERO);
        match k {
            Kind::Derived => {
                if rel == ".gitattributes" || rel == ".gitignore" {
                    let text = blob(blobs, &e.new_sha)?;
                    let ours = if rel == ".gitattributes" {
                        crate::sync::attributes::gitattributes()
                    } else {
                        crate::sync::attributes::GITIGNORE.to_string()
                    };
                    if !inspect::own_lines(&text, &ours) {
                        reject(
                            &mut adm,
                            rel,
                            format!(
                                "the library's {rel} differs from the one kb-tools writes (it would change how the \
                             library merges or hide documents from git)"
                            ),
                        );
                        continue;
                    }
                }
                adm.derived.push(rel.to_string());
            }
            Kind::Log => {
                if let Some(old) = &base_blob {
                    if let Some(why) = appended_only(repo, blobs, rel, old, &e.new_sha, theirs, &mut archives)? {
                        reject(&mut adm, rel, why);
                        continue;
                    }
                }
                adm.changes.push(Change {
                    path: rel.to_string(),
                    kind: k,
                    base: base_blob,
                    theirs: Some(e.new_sha.clone()),
                });
            }
            _ => adm.changes.push(Change {
                path: rel.to_string(),
                kind: k,
                base: base_blob,
                theirs: Some(e.new_sha.clone()),
            }),
        }
    }
    // A rename's source is gone from this side: it is a move, not a deletion.
    if !outside.is_empty() && !limits.merge_outside {
        outside.sort();
        outside.dedup();
        for p in &outside {
            reject(
                &mut adm,
                p,
                "outside the library: sync never merges it unattended; review and merge these \
                                  commits with git (git log/diff HEAD..FETCH_HEAD, git merge), then sync again"
                    .into(),
            );
        }
    } else if !outside.is_empty() {
        adm.rejected.extend(inspect::inspect_outside(repo, base, theirs)?);
    }
    collisions(repo, theirs, &added, &mut adm)?;
    deletions(repo, ours, limits, &mut adm)?;
    adm.rejected.sort_by(|a, b| a.path.cmp(&b.path));
    adm.rejected.dedup();
    Ok(adm)
}

/// Why a kind no peer may change is refused.
fn refusal(k: Kind) -> String {
    match k {
        Kind::Local => "local state (lock, journal, lock queue, caches, cursors, temps, quarantine): each machine's \
                        own, never taken from a peer"
            .into(),
        Kind::Refused => "a name git or kb-tools gives a meaning to".into(),
        _ => "not a kind a library holds (documents are Markdown, text or images under .memory/ or a user \
              folder; scripts belong in a skill under .skills/); kb-append would not write it either"
            .into(),
    }
}

/// The folders from the top of the work tree to the library that the
/// peer's tip holds as something other than a folder, with what it is:
/// each folder's entry read from its parent tree.
fn library_chain(repo: &Repo, blobs: &mut Blobs, theirs: &str) -> Result<Vec<(String, &'static str)>> {
    let mut out = Vec::new();
    let prefix = repo.prefix.trim_end_matches('/');
    if prefix.is_empty() {
        return Ok(out);
    }
    let mut parent = format!("{theirs}^{{tree}}");
    let mut path = String::new();
    for part in prefix.split('/') {
        // Absent (deleted) is the deletion check's business; anything but
        // a tree is refused.
        let Some((_, kind, tree)) = blobs.object(&parent)? else { break };
        if kind != "tree" {
            break;
        }
        let Some(mode) = tree_entry_mode(&tree, part.as_bytes()) else { break };
        if !path.is_empty() {
            path.push('/');
        }
        path.push_str(part);
        let what = match mode.as_slice() {
            b"40000" => {
                parent = format!("{theirs}:{path}");
                continue;
            }
            b"120000" => "a symlink",
            b"160000" => "a gitlink (submodule)",
            _ => "a file",
        };
        out.push((path.clone(), what));
        break;
    }
    Ok(out)
}

/// The mode of `name` in a raw tree object (`<mode> <name>\0<20-byte
/// id>` entries), `None` when absent.
fn tree_entry_mode(tree: &[u8], name: &[u8]) -> Option<Vec<u8>> {
    let mut rest = tree;
    while let Some(nul) = rest.iter().position(|&b| b == 0) {
        let (head, tail) = rest.split_at(nul);
        let (mode, entry) = head.split_at(head.iter().position(|&b| b == b' ')?);
        if &entry[1..] == name {
            return Some(mode.to_vec());
        }
        rest = tail.get(21..)?;
    }
    None
}

/// Size caps, read from the tree without checking it out, per peer
/// commit: files added, bytes added or changed, the largest file. A tree
/// bomb (a few hundred bytes of objects that check out as 100,000 files)
/// is refused after reading its trees, in seconds, with nothing written;
/// git's listing is stopped as soon as a cap is passed. Counts every
/// commit reachable from `tips` and from none of `bases` (a base that is
/// not a commit, the empty tree, excludes nothing), so one call covers
/// the ranges of many machine refs; the refusal names the commit.
pub fn caps(
    repo: &Repo,
    blobs: &mut Blobs,
    bases: &[&str],
    tips: &[&str],
    limits: &Limits,
) -> Result<Option<Rejected>> {
    let mut args = vec!["rev-list".to_string()];
    args.extend(tips.iter().map(|t| t.to_string()));
    for b in bases {
        if blobs.object(&format!("{b}^{{commit}}"))?.is_some_and(|(_, k, _)| k == "commit") {
            args.push(format!("^{b}"));
        }
    }
    args.push("--".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let commits = repo.run(&args, "git rev-list")?;
    let commits: Vec<&str> = commits.lines().filter(|c| !c.is_empty()).collect();
    if commits.is_empty() {
        return Ok(None);
    }
    let mut sizes: HashMap<String, u64> = HashMap::new();
    // One `git diff-tree --stdin` for every commit of the range (a catch-up
    // brings hundreds), each commit's entries after its id; read as a
    // stream, so a tree bomb is refused without reading it all.
    let mut child = repo
        .cmd()
        .args(["diff-tree", "--stdin", "-r", "-z", "--raw", "--no-renames", "--root", "-m", "--first-parent"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::io("running git diff-tree", e))?;
    let mut stdin = child.stdin.take().ok_or_else(|| Error::msg("git diff-tree takes no input"))?;
    let input: String = commits.iter().map(|c| format!("{c}\n")).collect();
    // Written from a thread: diff-tree's output fills its pipe while the
    // list is still going in.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let stdout = child.stdout.take().ok_or_else(|| Error::msg("git diff-tree gave no output"))?;
    let mut fields = BufReader::new(stdout).split(0);
    let (mut commit, mut files, mut bytes, mut refused) = (String::new(), 0usize, 0u64, None);
    while let Some(field) = fields.next() {
        let field = field.map_err(|e| Error::io("reading git diff-tree", e))?;
        let meta = String::from_utf8_lossy(&field);
        let Some(meta) = meta.strip_prefix(':') else {
            // "<commit>" or "<commit> (from <parent>)": the next commit.
            commit = meta.split(' ').next().unwrap_or_default().to_string();
            (files, bytes) = (0, 0);
            continue;
        };
        let path = fields.next().transpose().map_err(|e| Error::io("reading git diff-tree", e))?.unwrap_or_default();
        let parts: Vec<&str> = meta.split(' ').collect();
        let [_, new_mode, _, new_sha, status] = parts.as_slice() else { continue };
        if status.starts_with('D') || *new_mode == "160000" {
            continue;
        }
        if status.starts_with('A') {
            files += 1;
        }
        let size = match sizes.get(*new_sha) {
            Some(n) => *n,
            // An absent object counts as 0: the merge itself fails on it.
            None => {
                let n = blobs.size(new_sha)?.unwrap_or(0);
                sizes.insert(new_sha.to_string(), n);
                n
            }
        };
        bytes += size;
        let short = &commit[..commit.len().min(12)];
        if files > limits.max_files {
            refused = Some(format!(
                "commit {short} adds more than {} files; a tree that large is refused unread (raise the cap with --max-commit-files N)",
                limits.max_files
            ));
        } else if size > limits.max_file_bytes {
            refused = Some(format!(
                "commit {short} holds a file of {size} bytes, over the cap of {} (raise it with --max-file-bytes N): {}",
                limits.max_file_bytes,
                names::shown(&String::from_utf8_lossy(&path))
            ));
        } else if bytes > limits.max_bytes {
            refused = Some(format!(
                "commit {short} adds or changes more than {} bytes (raise the cap with --max-commit-bytes N)",
                limits.max_bytes
            ));
        }
        if refused.is_some() {
            break;
        }
    }
    if refused.is_none() {
        let status = child.wait().map_err(|e| Error::io("waiting for git diff-tree", e))?;
        if !status.success() {
            return Err(Error::msg(format!("git diff-tree --stdin failed ({status})")));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = writer.join();
    Ok(refused.map(|reason| Rejected { path: commit, reason }))
}

/// `git diff-tree --raw -z` output as entries (renames and copies carry
/// their source path first).
fn parse_raw(raw: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut fields = raw.split('\0');
    while let Some(meta) = fields.next() {
        let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let [_, new_mode, old_sha, new_sha, status] = parts.as_slice() else { continue };
        let status = status.chars().next().unwrap_or('M');
        let from = if status == 'R' || status == 'C' { fields.next().map(str::to_string) } else { None };
        let Some(path) = fields.next() else { break };
        out.push(Entry {
            new_mode: new_mode.to_string(),
            old_sha: old_sha.to_string(),
            new_sha: new_sha.to_string(),
            status,
            from,
            path: path.to_string(),
        });
    }
    out
}

/// A blob's text (lossy; for the checks only).
fn blob(blobs: &mut Blobs, sha: &str) -> Result<String> {
    let bytes = blobs.get(sha)?.ok_or_else(|| Error::msg(format!("git has no object {sha}")))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Why a peer's version of a log is not an append to the base's, or
/// `None`. Every complete line of the base must still be there, except
/// that compaction may move `.changelog` lines into the archive months of
/// the peer's tip (each must be found there).
fn appended_only(
    repo: &Repo,
    blobs: &mut Blobs,
    rel: &str,
    old: &str,
    new: &str,
    theirs: &str,
    archives: &mut Option<Vec<String>>,
) -> Result<Option<String>> {
    let (old, new) = (blob(blobs, old)?, blob(blobs, new)?);
    let kept: HashSet<&str> = new.lines().collect();
    let missing: Vec<&str> =
        crate::fs::atomic::complete_lines(&old).filter(|l| !l.is_empty() && !kept.contains(l)).collect();
    if missing.is_empty() {
        return Ok(None);
    }
    if rel == crate::library::changelog::FILE {
        if archives.is_none() {
            let spec = repo.top_path(&format!("{}/", kind::ARCHIVE_DIR));
            let mut texts = Vec::new();
            for line in repo.list(&["ls-tree", "-r", "-z", theirs, "--", &spec], "git ls-tree")? {
                if let Some((meta, _)) = line.split_once('\t') {
                    if let Some(sha) = meta.split(' ').nth(2) {
                        texts.push(blob(blobs, sha)?);
                    }
                }
            }
            *archives = Some(texts);
        }
        let archived: HashSet<&str> = archives.iter().flatten().flat_map(|t| t.lines()).collect();
        if missing.iter().all(|l| archived.contains(l) || l.starts_with('#')) {
            return Ok(None);
        }
    }
    let first = missing.iter().find(|l| !l.starts_with('#')).or(missing.first()).copied().unwrap_or_default();
    let head: String = first.chars().take(80).collect();
    Ok(Some(format!(
        "the peer's {rel} drops or rewrites {} line(s) of the shared history (first: '{}'); logs are append-only",
        missing.len(),
        names::shown(&head)
    )))
}

/// Case-fold collisions between what arrives and what is there (or
/// arrives alongside): the same file on a case-insensitive system.
fn collisions(repo: &Repo, theirs: &str, added: &[String], adm: &mut Admission) -> Result<()> {
    if added.is_empty() {
        return Ok(());
    }
    let spec = repo.library_pathspec();
    let existing = repo.list(&["ls-tree", "-r", "-z", "--name-only", theirs, "--", &spec], "git ls-tree")?;
    let mut by_fold: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in existing.iter().filter_map(|p| repo.in_library(p)) {
        by_fold.entry(names::fold(p)).or_default().push(p.to_string());
    }
    for a in added {
        if let Some(same) = by_fold.get(&names::fold(a)).filter(|v| v.len() > 1) {
            let others: Vec<&str> = same.iter().filter(|p| *p != a).map(String::as_str).collect();
            adm.rejected.push(Rejected {
                path: a.clone(),
                reason: format!(
                    "differs only in case or Unicode form from '{}' (the two collide on case-insensitive or normalising file systems)",
                    others.join("', '")
                ),
            });
        }
    }
    Ok(())
}

/// Stops a range that deletes more than the threshold of documents:
/// over `max_deletes`, or more than a quarter of the library's documents
/// and more than two. `--accept-deletes` lets it through.
fn deletions(repo: &Repo, ours: Option<&str>, limits: &Limits, adm: &mut Admission) -> Result<()> {
    let n = adm.deleted.len();
    if n == 0 || limits.accept_deletes {
        return Ok(());
    }
    let total = match ours {
        Some(o) => repo
            .list(&["ls-tree", "-r", "-z", "--name-only", o, "--", &repo.library_pathspec()], "git ls-tree")?
            .iter()
            .filter_map(|p| repo.in_library(p))
            .filter(|p| kind::kind(p).is_content())
            .count(),
        None => 0,
    };
    if n > limits.max_deletes || (n > 2 && n * 4 > total) {
        let shown: Vec<String> = adm.deleted.iter().take(5).map(|p| names::shown(p)).collect();
        adm.rejected.push(Rejected {
            path: adm.deleted[0].clone(),
            reason: format!(
                "the peer's commits delete {n} of {total} documents ({}{}), over the threshold ({} or a quarter \
                 of the library); run sync again with --accept-deletes if that is meant",
                shown.join(", "),
                if n > 5 { ", …" } else { "" },
                limits.max_deletes
            ),
        });
    }
    Ok(())
}
