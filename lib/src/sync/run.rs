//! `kb-append sync` (issue 11 item 1): under the library lock, commit the
//! library's pending changes, fetch, merge the remote branch with a real
//! git merge (fast-forward when possible, never a rebase or force-push),
//! settle conflicts in files kb-tools owns, rebuild the derived files the
//! merge touched, commit `task-ai(library):sync <remote>/<branch>`, push,
//! and on a rejected push fetch and merge again with backoff and jitter.
//! Any failure puts the library back as it was; a sync killed mid-merge is
//! undone and redone by the next one.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::library::changelog::{self, Event};
use crate::library::entry;
use crate::library::kind::{self, Kind};
use crate::library::Library;
use crate::lock;
use crate::sync::admit::{self, Limits, Moved};
use crate::sync::attributes;
use crate::sync::conflicts::{self, Side};
use crate::sync::drivers::{self, REBUILD_MARKER};
use crate::sync::gitcmd::{stderr_of, Repo};
use crate::sync::hold::{self, Held, Why};
use crate::sync::inspect::Rejected;
use crate::sync::{merge_log, refresh};

/// The marker (in the git directory) naming the commit a sync is merging,
/// so the next sync knows an unfinished merge is its own to undo.
pub const MERGE_MARKER: &str = "kb-sync-merge";

/// Git's empty tree, the "before" of an unborn branch.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// How a sync runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The remote (default: the branch's configured remote, else `origin`).
    pub remote: Option<String>,
    /// The branch on both sides (default: the current branch).
    pub branch: Option<String>,
    /// Push the result (`--no-push` turns it off).
    pub push: bool,
    /// How many merge-and-push rounds before giving up on rejected pushes.
    pub attempts: u32,
    /// Lock timeout and holder command.
    pub lock: lock::Options,
    /// The boundary's caps and the user's choices (issue 32).
    pub limits: Limits,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            remote: None,
            branch: None,
            push: true,
            attempts: 8,
            lock: lock::Options::default(),
            limits: Limits::default(),
        }
    }
}

/// The one `sync` record.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "record", rename = "sync")]
pub struct Report {
    /// The remote synced with.
    pub remote: String,
    /// The branch synced.
    pub branch: String,
    /// Commits fetched from the remote and merged.
    pub fetched: usize,
    /// Library documents the merged commits changed (what came in).
    pub merged: usize,
    /// Kept sides of overlapping edits (`.conflicts/...`).
    pub conflicts: Vec<String>,
    /// Derived files rebuilt.
    pub rebuilt: Vec<String>,
    /// Whether local commits were pushed.
    pub pushed: bool,
    /// Merge-and-push rounds (more than 1 when a push was rejected).
    pub attempts: u32,
    /// HEAD afterwards.
    pub head: String,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Paths of fetched commits refused before merging (issue 21); when
    /// any, nothing was merged or pushed and the exit status is 2.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<Rejected>,
    /// Documents and skill files the merged commits deleted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<String>,
    /// Documents and skill files they moved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<Moved>,
    /// What this sync kept out of the live library: quarantined as
    /// dangerous, or waiting for review (`kb-append quarantine`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<HeldShown>,
    /// How many paths wait in quarantine or for review in all.
    pub waiting: usize,
}

/// A held path as the sync record shows it.
#[derive(Debug, Clone, Serialize)]
pub struct HeldShown {
    pub path: String,
    pub why: Why,
    pub reason: String,
}

impl From<&Held> for HeldShown {
    fn from(h: &Held) -> HeldShown {
        HeldShown { path: h.path.clone(), why: h.why, reason: h.reason.clone() }
    }
}

/// What one merge round did.
#[derive(Debug, Default)]
struct Step {
    rejected: Vec<Rejected>,
    fetched: usize,
    merged: usize,
    conflicts: Vec<String>,
    rebuilt: Vec<String>,
    deleted: Vec<String>,
    moved: Vec<Moved>,
    held: Vec<Held>,
}

/// Where a failed sync rolls back to.
#[derive(Debug, Default)]
struct Start {
    /// HEAD before the sync.
    head: Option<String>,
    /// The commit of the library's pending changes, when sync made one.
    local: Option<String>,
    /// Whether merging began (only then is there anything to roll back).
    merging: bool,
}

/// Runs a sync of the library with its remote.
pub fn sync(lib: &Library, opts: &Options) -> Result<Report> {
    let started = Instant::now();
    let repo = Repo::open(lib)?;
    let branch = match &opts.branch {
        Some(b) => b.clone(),
        None => repo.current_branch().ok_or_else(|| Error::msg("HEAD is detached; give --branch B"))?,
    };
    let remote = match &opts.remote {
        Some(r) => r.clone(),
        None => repo.config(&format!("branch.{branch}.remote")).unwrap_or_else(|| "origin".into()),
    };
    if repo.config(&format!("remote.{remote}.url")).is_none() {
        return Err(Error::msg(format!("unknown remote '{remote}' ('git remote -v' lists this clone's remotes)")));
    }
    let tracking = format!("refs/remotes/{remote}/{branch}");
    lock::with_lock(lib, &opts.lock, || {
        drivers::register(&repo)?;
        crate::library::git_state::note(&crate::library::git_state::clear(lib, Duration::from_secs(10))?);
        crate::write::journal::note(crate::write::recover(lib)?);
        // A killed integrate's journal, before `git add --all` could commit it.
        if let Some(r) = crate::guard::evolve::journal::recover(lib)? {
            crate::guard::evolve::journal::note(&r);
        }
        recover(&repo)?;
        hold::reinstate(lib, &repo)?;
        clean_outside(&repo)?;
        fetch(&repo, &remote, &branch, &tracking)?;
        crate::fs::crash::at(crate::fs::crash::Step::SyncFetched);
        let mut start = Start { head: repo.rev("HEAD"), ..Start::default() };
        let result = rounds(lib, &repo, opts, &remote, &branch, &tracking, &mut start);
        if result.is_err() {
            rollback(&repo, &start);
        }
        let (step, pushed, attempts) = result?;
        Ok(Report {
            remote: remote.clone(),
            branch: branch.clone(),
            fetched: step.fetched,
            merged: step.merged,
            conflicts: step.conflicts,
            rebuilt: step.rebuilt,
            pushed,
            attempts,
            // An unborn branch has no HEAD commit: the empty string.
            head: repo.rev("HEAD").unwrap_or_default(),
            seconds: crate::out::round(started.elapsed().as_secs_f64(), 3),
            rejected: step.rejected,
            deleted: step.deleted,
            moved: step.moved,
            held: step.held.iter().map(HeldShown::from).collect(),
            waiting: hold::read(lib)?.len(),
        })
    })
}

/// Local changes, then merge-and-push rounds until the push lands.
fn rounds(
    lib: &Library,
    repo: &Repo,
    opts: &Options,
    remote: &str,
    branch: &str,
    tracking: &str,
    start: &mut Start,
) -> Result<(Step, bool, u32)> {
    let mut total = Step { rebuilt: commit_local(lib, repo, start)?, ..Step::default() };
    start.merging = true;
    let mut attempts = 0;
    loop {
        attempts += 1;
        let step = merge(lib, repo, opts, remote, branch, tracking)?;
        if !step.rejected.is_empty() {
            return Ok((Step { rejected: step.rejected, ..total }, false, attempts));
        }
        total.fetched += step.fetched;
        total.merged += step.merged;
        total.conflicts.extend(step.conflicts);
        total.rebuilt.extend(step.rebuilt);
        total.deleted.extend(step.deleted);
        total.moved.extend(step.moved);
        total.held.extend(step.held);
        let head = repo.rev("HEAD");
        if !opts.push || head.is_none() || head == repo.rev(tracking) {
            total.rebuilt = total.rebuilt.into_iter().collect::<BTreeSet<_>>().into_iter().collect();
            return Ok((total, false, attempts));
        }
        if push(repo, remote, branch)? {
            total.rebuilt = total.rebuilt.into_iter().collect::<BTreeSet<_>>().into_iter().collect();
            return Ok((total, true, attempts));
        }
        if attempts >= opts.attempts {
            return Err(Error::msg(format!(
                "push to '{remote}' still rejected after {attempts} attempts (others keep pushing); run sync again"
            )));
        }
        std::thread::sleep(crate::lock::backoff::delay(attempts, 100, 3000));
        fetch(repo, remote, branch, tracking)?;
    }
}

/// Undoes a merge a killed sync left behind (its marker names it); refuses
/// to touch a merge someone else started.
fn recover(repo: &Repo) -> Result<()> {
    let index_lock = repo.git_path("index.lock");
    let waited = Instant::now();
    while index_lock.exists() {
        if waited.elapsed() > Duration::from_secs(10) {
            return Err(Error::msg(format!(
                "{} exists: another git process is running here, or one crashed (then remove the file)",
                index_lock.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let merging = repo.git_path("MERGE_HEAD").exists();
    let ours = repo.git_path(MERGE_MARKER).exists();
    if merging && !ours {
        return Err(Error::msg(format!(
            "a merge is in progress in {} that sync did not start; finish it (git commit) or abort it (git merge --abort)",
            repo.top.display()
        )));
    }
    if merging {
        repo.run(&["merge", "--abort"], "git merge --abort (undoing an interrupted sync)")?;
        clean_conflict_copies(repo)?;
    }
    remove_marker(repo, MERGE_MARKER)
}

/// Refuses to sync over uncommitted changes to tracked files outside the
/// library: a merge or a rollback could overwrite them.
fn clean_outside(repo: &Repo) -> Result<()> {
    let entries =
        repo.list(&["status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=no"], "git status")?;
    // Porcelain v1 entries are "XY path"; a shorter one names no path.
    let outside: Vec<&str> =
        entries.iter().map(|e| e.get(3..).unwrap_or_default()).filter(|p| repo.in_library(p).is_none()).collect();
    if outside.is_empty() {
        Ok(())
    } else {
        Err(Error::msg(format!(
            "the work tree has uncommitted changes outside the library ({}); commit or stash them first",
            outside.join(", ")
        )))
    }
}

/// Fetches the remote branch into its tracking ref. A branch missing on an
/// empty remote is fine (the push creates it); elsewhere it is an error.
fn fetch(repo: &Repo, remote: &str, branch: &str, tracking: &str) -> Result<()> {
    let refspec = format!("+refs/heads/{branch}:{tracking}");
    let out = repo.output(&["fetch", "--quiet", "--no-tags", remote, &refspec])?;
    if out.status.success() {
        return Ok(());
    }
    let msg = stderr_of(&out);
    if msg.contains("couldn't find remote ref") {
        let heads = repo.run(&["ls-remote", "--heads", remote], "git ls-remote")?;
        if heads.trim().is_empty() {
            return Ok(());
        }
        return Err(Error::msg(format!("branch '{branch}' does not exist on remote '{remote}'")));
    }
    // For the message only: an unset url shows as empty.
    let url = repo.config(&format!("remote.{remote}.url")).unwrap_or_default();
    Err(Error::msg(format!("cannot fetch from remote '{remote}' ({url}): {msg}")))
}

/// Commits what the library holds uncommitted (writes made with
/// `--no-commit`, hand edits, the attributes file), after bringing the
/// derived files in step with it. Returns the derived files rebuilt.
fn commit_local(lib: &Library, repo: &Repo, start: &mut Start) -> Result<Vec<String>> {
    attributes::write(lib)?;
    let mut rebuilt = Vec::new();
    let marker = repo.git_path(REBUILD_MARKER);
    if marker.exists() {
        rebuilt.extend(refresh::all(lib)?);
    }
    // Local state is never shared: a library that committed some before
    // issue 32 (the lock, `.changelog-cursors`) stops tracking it.
    let tracked = repo.list(&["ls-files", "-z", "--", &repo.library_pathspec()], "git ls-files")?;
    let local: Vec<String> =
        tracked.iter().filter(|p| repo.in_library(p).is_some_and(|r| kind::kind(r) == Kind::Local)).cloned().collect();
    if !local.is_empty() {
        let mut args = vec!["rm", "--cached", "--quiet", "--"];
        args.extend(local.iter().map(String::as_str));
        repo.run(&args, "git rm --cached (local state is never shared)")?;
    }
    let spec = repo.library_pathspec();
    let status = ["status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all", "--", &spec];
    let entries = repo.list(&status, "git status")?;
    let pending: Vec<String> = entries
        .iter()
        // As in clean_outside: "XY path".
        .filter_map(|e| repo.in_library(e.get(3..).unwrap_or_default()))
        .filter(|p| entry::classify(p).is_some())
        .map(str::to_string)
        .collect();
    if !pending.is_empty() {
        rebuilt.extend(refresh::documents(lib, &pending, None)?);
    }
    if !entries.is_empty() || !rebuilt.is_empty() || !local.is_empty() {
        add_library(repo)?;
        if !repo.ok(&["diff", "--cached", "--quiet"]) {
            repo.commit("task-ai(library):sync local changes")?;
            start.local = repo.rev("HEAD");
        }
    }
    remove_marker(repo, REBUILD_MARKER)?;
    Ok(rebuilt)
}

/// One merge of the fetched branch into HEAD.
fn merge(lib: &Library, repo: &Repo, opts: &Options, remote: &str, branch: &str, tracking: &str) -> Result<Step> {
    let Some(theirs) = repo.rev(tracking) else { return Ok(Step::default()) };
    let ours = repo.rev("HEAD");
    if let Some(o) = &ours {
        if *o == theirs || repo.is_ancestor(&theirs, o) {
            return Ok(Step::default());
        }
    }
    let before = ours.clone().unwrap_or_else(|| EMPTY_TREE.to_string());
    let range = match &ours {
        Some(o) => format!("{o}..{theirs}"),
        None => theirs.clone(),
    };
    let fetched = repo.run(&["rev-list", "--count", &range], "git rev-list")?.trim().parse().unwrap_or(0);
    let mut step = Step { fetched, ..Step::default() };
    let base = match &ours {
        Some(o) if !repo.is_ancestor(o, &theirs) => {
            Some(repo.run(&["merge-base", o, &theirs], "git merge-base")?.trim().to_string())
        }
        _ => None,
    };
    // Nothing a peer sends is merged before it is admitted (issue 32).
    let from = base.as_deref().unwrap_or(&before);
    let adm = admit::judge(repo, from, ours.as_deref(), &theirs, &opts.limits)?;
    if !adm.rejected.is_empty() {
        return Ok(Step { rejected: adm.rejected, ..Step::default() });
    }
    let held = hold::decide(repo, lib, &adm.changes, &theirs, gate(lib)?.as_ref())?;
    hold::prepare(lib, repo, &held)?;
    // This machine's derived files, to put back over the peer's bytes.
    let derived: Vec<(String, Option<Vec<u8>>)> =
        adm.derived.iter().map(|p| Ok((p.clone(), blob_at(repo, ours.as_deref(), p)?))).collect::<Result<_>>()?;
    let (changed, since) = match &base {
        None => {
            repo.run(&["merge", "--ff-only", "--quiet", &theirs], "git merge --ff-only")?;
            let incoming = library_docs(repo, &repo.changed(&before, &theirs)?);
            step.merged = incoming.len();
            (incoming, before.clone())
        }
        Some(base) => {
            let incoming = library_docs(repo, &repo.changed(base, &theirs)?);
            step.merged = incoming.len();
            let mut both = library_docs(repo, &repo.changed(base, &before)?);
            both.extend(incoming);
            both.sort();
            both.dedup();
            crate::fs::atomic::write(&repo.git_path(MERGE_MARKER), format!("{theirs}\n").as_bytes())?;
            let mut args = crate::library::git::identity_args(&repo.top);
            args.extend(["merge", "--no-ff", "--no-commit", "--quiet", &theirs]);
            let out = repo.output(&args)?;
            if !out.status.success() && !repo.git_path("MERGE_HEAD").exists() {
                return Err(Error::msg(format!("git merge failed: {}", stderr_of(&out))));
            }
            (both, base.clone())
        }
    };
    hold::restore(lib, repo, &held)?;
    let mut touched = Vec::new();
    if base.is_some() {
        crate::fs::crash::at(crate::fs::crash::Step::SyncMerging);
        touched = settle(lib, repo, &before, &theirs)?;
        step.conflicts = touched.iter().filter(|p| p.starts_with(conflicts::DIR)).cloned().collect();
    }
    // A peer's bytes for a derived file never stay: ours back, then the
    // incremental rebuild below brings them in step with the merge.
    for (rel, bytes) in &derived {
        match bytes {
            Some(b) => crate::fs::atomic::write(&lib.path(rel), b)?,
            None => {
                let _ = fs::remove_file(lib.path(rel));
            }
        }
        touched.push(rel.clone());
    }
    let gone = deletion_events(lib, repo, &adm.deleted, &theirs)?;
    if !gone.is_empty() {
        changelog::append(lib, &gone)?;
        touched.push(changelog::FILE.to_string());
    }
    step.deleted = adm.deleted;
    step.moved = adm.moved;
    step.held = held;
    let events = refresh::events_since(lib, repo, &since)?;
    step.rebuilt = refresh::documents(lib, &changed, Some(&events))?;
    touched.extend(step.rebuilt.iter().cloned());
    remove_marker(repo, REBUILD_MARKER)?;
    add_paths(repo, &touched)?;
    if !repo.list(&["ls-files", "--unmerged", "-z"], "git ls-files")?.is_empty() {
        return Err(Error::msg("the merge left unmerged paths after sync settled them"));
    }
    if base.is_some() {
        repo.commit_merge(&theirs, &format!("task-ai(library):sync {remote}/{branch}"))?;
    } else if !touched.is_empty() && !repo.ok(&["diff", "--cached", "--quiet"]) {
        // A peer's derived bytes put back to ours and rebuilt are often
        // the very bytes it sent: then there is nothing to commit.
        repo.commit(&format!("task-ai(library):sync {remote}/{branch} rebuild derived"))?;
    }
    crate::fs::crash::at(crate::fs::crash::Step::SyncMerged);
    remove_marker(repo, MERGE_MARKER)?;
    Ok(step)
}

/// Settles every conflicted path: logs by the union merge, derived files
/// by keeping ours (they are rebuilt next), documents by keeping both
/// sides. A conflict outside the library is an error (the caller aborts).
/// Returns the library paths it wrote (kept copies among them).
fn settle(lib: &Library, repo: &Repo, ours: &str, theirs: &str) -> Result<Vec<String>> {
    let mut stages: BTreeMap<String, [Option<String>; 3]> = BTreeMap::new();
    for e in repo.list(&["ls-files", "--unmerged", "-z"], "git ls-files")? {
        let Some((meta, path)) = e.split_once('\t') else { continue };
        let parts: Vec<&str> = meta.split(' ').collect();
        if let [_, sha, stage] = parts.as_slice() {
            if let Ok(n @ 1..=3) = stage.parse::<usize>() {
                stages.entry(path.to_string()).or_default()[n - 1] = Some(sha.to_string());
            }
        }
    }
    if let Some(outside) = stages.keys().find(|p| repo.in_library(p).is_none()) {
        return Err(Error::msg(format!(
            "merge conflict in '{outside}', which kb-tools does not own; nothing was merged (merge it with git by hand)"
        )));
    }
    let mut touched = Vec::new();
    let mut events: Vec<Event> = Vec::new();
    let held = hold::paths(lib)?;
    for (top_rel, [base, a, b]) in &stages {
        let rel = repo.in_library(top_rel).unwrap_or(top_rel);
        // A held path in conflict with an edit of ours: ours stays, in the
        // work tree and in the merge (the peer's version is its commit's,
        // and `quarantine release` brings it in); nothing dangerous can be
        // checked out, so the path needs no sparse exclusion.
        if held.contains(rel) {
            match a {
                Some(sha) => {
                    let info = format!("100644,{sha},{top_rel}");
                    repo.run(&["update-index", "--add", "--cacheinfo", &info], "git update-index")?;
                    crate::fs::atomic::write(&lib.path(rel), &hold::bytes(repo, sha)?)?;
                }
                None => {
                    repo.run(&["rm", "--cached", "--quiet", "--", top_rel], "git rm --cached")?;
                    let _ = fs::remove_file(lib.path(rel));
                }
            }
            hold::kept_ours(lib, repo, rel)?;
            continue;
        }
        let read = |s: &Option<String>| s.as_deref().map(|sha| conflicts::blob(repo, sha)).transpose();
        let (base, a, b) = (read(base)?, read(a)?, read(b)?);
        touched.push(rel.to_string());
        match kind::kind(rel) {
            // A stage that is absent (added on one side only, or
            // deleted) has no lines: the empty text is that side's truth.
            Kind::Log => {
                let merged = merge_log::merge(
                    base.as_deref().unwrap_or_default(),
                    a.as_deref().unwrap_or_default(),
                    b.as_deref().unwrap_or_default(),
                );
                crate::fs::atomic::write(&lib.path(rel), &merged)?;
            }
            Kind::Derived => {
                if let Some(bytes) = a.or(b) {
                    crate::fs::atomic::write(&lib.path(rel), &bytes)?;
                }
            }
            // Everything else admitted (content, rules, proposals, kept
            // sides) merges as documents: both sides kept on a conflict.
            k => {
                // Two appends to one document merge as their union.
                let union = (k == Kind::Document && a.is_some() && b.is_some())
                    .then(|| {
                        crate::sync::append_union::merge(
                            base.as_deref().unwrap_or_default(),
                            a.as_deref().unwrap_or_default(),
                            b.as_deref().unwrap_or_default(),
                        )
                    })
                    .flatten();
                if let Some(merged) = union {
                    crate::fs::atomic::write(&lib.path(rel), &merged)?;
                    continue;
                }
                let ours = Side { bytes: a, commit: ours.to_string() };
                let theirs = Side { bytes: b, commit: theirs.to_string() };
                let settled = conflicts::settle(lib, repo, rel, top_rel, ours, theirs)?;
                touched.extend(settled.kept);
                events.push(settled.event);
            }
        }
    }
    if !events.is_empty() {
        changelog::append(lib, &events)?;
        touched.push(changelog::FILE.to_string());
    }
    Ok(touched)
}

/// Library documents among top-relative paths, library-relative.
fn library_docs(repo: &Repo, paths: &[String]) -> Vec<String> {
    paths
        .iter()
        .filter_map(|p| repo.in_library(p))
        .filter(|p| entry::classify(p).is_some())
        .map(str::to_string)
        .collect()
}

/// Stages library paths sync wrote (deleted ones included).
fn add_paths(repo: &Repo, paths: &[String]) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    let mut args = vec!["add".to_string(), "--all".into(), "--".into()];
    args.extend(paths.iter().map(|p| repo.top_path(p)));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    repo.run(&args, "git add").map(|_| ())
}

/// Stages the whole library. Never its local state (the library's
/// `.gitignore`, rewritten by `attributes::write` before, lists it) nor a
/// held path: the sparse checkout keeps a quarantined file out of the work
/// tree, and this machine's copy of a rule a peer removed is in the clone's
/// `info/exclude` (`sync::hold`). Naming either here would make git refuse
/// the whole add.
fn add_library(repo: &Repo) -> Result<()> {
    repo.run(&["add", "--all", "--", &repo.library_pathspec()], "git add").map(|_| ())
}

/// Pushes HEAD to the remote branch. `Ok(false)` when the remote moved on
/// (fetch and merge again); an error for any other refusal.
fn push(repo: &Repo, remote: &str, branch: &str) -> Result<bool> {
    let out = repo.output(&["push", "--porcelain", remote, &format!("HEAD:refs/heads/{branch}")])?;
    if out.status.success() {
        return Ok(true);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Behind: the remote moved on, or another push won the race for the ref.
    let behind = stdout.lines().any(|l| {
        l.starts_with('!')
            && ((l.contains("[rejected]") && (l.contains("fetch first") || l.contains("non-fast-forward")))
                || l.contains("(failed to update ref)"))
    });
    if behind {
        return Ok(false);
    }
    let why = stdout.lines().find(|l| l.starts_with('!')).map(|l| l.trim().to_string());
    Err(Error::msg(format!(
        "push to '{remote}' was refused: {}",
        why.map_or_else(|| stderr_of(&out), |w| format!("{w}; {}", stderr_of(&out)))
    )))
}

/// Puts the library back where the sync found it: aborts a merge, drops
/// the sync's commits, and leaves pending changes uncommitted again.
fn rollback(repo: &Repo, start: &Start) {
    if !start.merging {
        return;
    }
    if repo.git_path("MERGE_HEAD").exists() {
        let _ = repo.run(&["merge", "--abort"], "git merge --abort");
    }
    let _ = clean_conflict_copies(repo);
    if let Some(target) = start.local.as_ref().or(start.head.as_ref()) {
        let _ = repo.run(&["reset", "--hard", "--quiet", target], "git reset");
        if let (Some(_), Some(head)) = (&start.local, &start.head) {
            let _ = repo.run(&["reset", "--quiet", head], "git reset");
        }
    }
    let _ = remove_marker(repo, MERGE_MARKER);
}

/// Removes untracked kept copies an interrupted merge wrote.
fn clean_conflict_copies(repo: &Repo) -> Result<()> {
    let dir = repo.top_path(conflicts::DIR);
    repo.run(&["clean", "-f", "-d", "--quiet", "--", &dir], "git clean").map(|_| ())
}

fn remove_marker(repo: &Repo, name: &str) -> Result<()> {
    match fs::remove_file(repo.git_path(name)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::io(format!("removing {}", repo.git_path(name).display()), e))
        }
        _ => Ok(()),
    }
}

/// The gates a peer's admitted change passes before it enters the live
/// library (issue 32): content the writer's guard refuses is quarantined
/// (`guard::gate`, the same judgement as `kb-append write`, skill files as
/// the skill writer judges them); a skill placed in `.skills/.active/` or
/// a raised `trust_tier` waits for review (`library::trust`); a rule or
/// proposal change takes effect only through the local evolve gates
/// (`guard::evolve::peer`).
fn gate(lib: &Library) -> Result<Box<hold::Gate<'static>>> {
    let (engine, _) = crate::guard::library_engine(lib)?;
    let lib = lib.clone();
    Ok(Box::new(move |c: &admit::Change, ours: Option<&[u8]>, theirs: Option<&[u8]>| -> hold::Judged {
        match c.kind {
            Kind::Rule | Kind::Proposal => {
                Ok(crate::guard::evolve::peer::judge_rule_change(&lib, &c.path, ours, theirs)?
                    .map(|why| (Why::Review, why)))
            }
            Kind::Document | Kind::Skill | Kind::Conflict => {
                if let Some(bytes) = theirs {
                    if let Some(why) = crate::guard::gate::refusal_with(&engine, &c.path, bytes) {
                        return Ok(Some((Why::Dangerous, why)));
                    }
                }
                Ok(crate::library::trust::judge_skill_change(&c.path, ours, theirs).map(|why| (Why::Review, why)))
            }
            _ => Ok(None),
        }
    }))
}

/// The bytes a commit holds at a library path (`None`: no such file, or
/// no commit).
fn blob_at(repo: &Repo, commit: Option<&str>, rel: &str) -> Result<Option<Vec<u8>>> {
    let Some(commit) = commit else { return Ok(None) };
    let out = repo.output(&["cat-file", "blob", &format!("{commit}:{}", repo.top_path(rel))])?;
    Ok(out.status.success().then_some(out.stdout))
}

/// A `deleted` changelog event for each document a peer deleted whose
/// changelog (at the peer's tip) has none, so a fleet writes one, not N.
fn deletion_events(lib: &Library, repo: &Repo, deleted: &[String], theirs: &str) -> Result<Vec<Event>> {
    if deleted.is_empty() {
        return Ok(Vec::new());
    }
    let log = blob_at(repo, Some(theirs), changelog::FILE)?.unwrap_or_default();
    let logged: BTreeSet<String> = changelog::parse(&String::from_utf8_lossy(&log))
        .events
        .into_iter()
        .filter(|(_, e)| e.event == "deleted" || e.action.as_deref() == Some("deleted"))
        .map(|(_, e)| e.path)
        .collect();
    let _ = lib;
    let ts = crate::clock::now()?.to_string();
    let short = &theirs[..theirs.len().min(12)];
    Ok(deleted
        .iter()
        .filter(|p| !logged.contains(*p))
        .map(|p| Event {
            ts: ts.clone(),
            event: "deleted".into(),
            path: p.clone(),
            action: None,
            notebook: None,
            category: None,
            topic: None,
            sha256: None,
            bytes: None,
            reason: Some(format!("deleted by a peer's commits (up to {short}), merged by sync")),
        })
        .collect())
}
