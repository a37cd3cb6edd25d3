//! `kb-append sync`: under the library lock,
//! commit the library's pending changes, fetch the shared branch and the
//! machine refs that moved (`sync::fleet`), admit each new tip's range at
//! the boundary (`sync::admit`), merge every new tip with real
//! git merges (fast-forward when possible, never a rebase or force-push)
//! into one result, settle conflicts in files kb-tools owns, rebuild the
//! derived files the merge touched, seal the result as one commit, and
//! push this machine's own ref with a compare-and-swap of the shared
//! branch in the same push. Any failure puts the library back as it was;
//! a sync killed mid-merge is undone and redone by the next one.

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
use crate::sync::admit::{self, Admission, Limits, Moved};
use crate::sync::attributes;
use crate::sync::conflicts::{self, Side};
use crate::sync::drivers::{self, REBUILD_MARKER};
use crate::sync::fleet::{self, Fleet, Outcome, Tip};
use crate::sync::gitcmd::{stderr_of, Blobs, Repo};
use crate::sync::hold::{self, Held, Why};
use crate::sync::identity;
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
    /// How many pushes one sync may make: the second only when a copy of
    /// this clone raced it for its own ref (then under a new identity).
    pub attempts: u32,
    /// Lock timeout and holder command.
    pub lock: lock::Options,
    /// The boundary's caps and the user's choices.
    pub limits: Limits,
    /// `--min-interval`: no push sooner than this after the last one
    /// (jittered by up to a quarter per machine); the sync still fetches,
    /// merges and commits.
    pub min_interval: Option<Duration>,
    /// `--prune-idle`: delete machine refs the shared branch contains
    /// whose last commit is older than this, in the same push.
    pub prune_idle: Option<Duration>,
    /// `--max-refs`: machine refs one sync merges at most (besides the
    /// shared branch); the rest wait for the next sync, so one sync's work
    /// stays bounded however many machines pushed since.
    pub max_refs: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            remote: None,
            branch: None,
            push: true,
            attempts: 2,
            lock: lock::Options::default(),
            limits: Limits::default(),
            min_interval: None,
            prune_idle: None,
            max_refs: 16,
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
    /// This clone's machine identity (`kb.machine` in its git config);
    /// its ref on the hub is `kb/<machine>`.
    pub machine: String,
    /// The identity was renewed: a copy of this clone (same config) had
    /// pushed under the old one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub identity_renewed: bool,
    /// Commits fetched from the remote and merged.
    pub fetched: usize,
    /// Library documents the merged commits changed (what came in).
    pub merged: usize,
    /// The hub refs whose new commits this sync merged (the shared
    /// branch, `kb/<machine>`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub merged_refs: Vec<String>,
    /// New machine refs left for the next sync (`--max-refs`).
    #[serde(skip_serializing_if = "is_zero")]
    pub deferred: usize,
    /// Kept sides of overlapping edits (`.conflicts/...`).
    pub conflicts: Vec<String>,
    /// Derived files rebuilt.
    pub rebuilt: Vec<String>,
    /// Whether this sync pushed (its own ref, the shared branch, or both).
    pub pushed: bool,
    /// Whether the push moved the shared branch to this clone's HEAD.
    pub main_advanced: bool,
    /// Another machine moved the shared branch first: not a failure (the
    /// work is in this machine's ref; the next sync of anyone folds it in).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub main_race_lost: bool,
    /// Why the push was skipped (`--min-interval`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_skipped: Option<String>,
    /// Idle machine refs this sync deleted from the hub (`--prune-idle`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pruned: Vec<String>,
    /// Pushes made (2 only when the identity was renewed mid-push).
    pub attempts: u32,
    /// HEAD afterwards.
    pub head: String,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Paths of fetched commits refused before merging; when
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

fn is_zero(n: &usize) -> bool {
    *n == 0
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

/// What merging did.
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

impl Step {
    fn add(&mut self, s: Step) {
        self.fetched += s.fetched;
        self.merged += s.merged;
        self.conflicts.extend(s.conflicts);
        self.rebuilt.extend(s.rebuilt);
        self.deleted.extend(s.deleted);
        self.moved.extend(s.moved);
        self.held.extend(s.held);
    }
}

/// What a whole sync did, for the record.
#[derive(Debug, Default)]
struct Done {
    step: Step,
    merged_refs: Vec<String>,
    deferred: usize,
    pushed: bool,
    pushes: u32,
    main_advanced: bool,
    main_race_lost: bool,
    renewed: bool,
    push_skipped: Option<String>,
    pruned: Vec<String>,
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
    let fleet = Fleet::new(&remote, &branch);
    // The rate a fleet pushes at is the user's choice: the flag, else the
    // clone's (or the user's) git config, never a file a peer can write.
    let min_interval = match (opts.min_interval, repo.config("kb.syncMinInterval")) {
        (Some(d), _) => Some(d),
        (None, Some(v)) => Some(crate::clock::parse_duration(&v)?),
        (None, None) => None,
    };
    let opts = &Options { min_interval, ..opts.clone() };
    lock::with_lock(lib, &opts.lock, || {
        drivers::register(&repo)?;
        crate::library::git_state::note(&crate::library::git_state::clear(lib, Duration::from_secs(10))?);
        // A killed batch's or integrate's journal, before `git add --all` could commit it.
        crate::write::journal::note(crate::write::recover(lib)?);
        recover(&repo)?;
        hold::reinstate(lib, &repo)?;
        clean_outside(&repo)?;
        let (mut machine, _) = identity::ensure(lib, &repo)?;
        fleet.fetch(&repo)?;
        crate::fs::crash::at(crate::fs::crash::Step::SyncFetched);
        let mut start = Start { head: repo.rev("HEAD"), ..Start::default() };
        let result = rounds(lib, &repo, opts, &fleet, &mut machine, &mut start);
        if result.is_err() {
            rollback(&repo, &start);
        }
        let done = result?;
        Ok(Report {
            remote: remote.clone(),
            branch: branch.clone(),
            machine,
            identity_renewed: done.renewed,
            fetched: done.step.fetched,
            merged: done.step.merged,
            merged_refs: done.merged_refs,
            deferred: done.deferred,
            conflicts: done.step.conflicts,
            rebuilt: done.step.rebuilt.into_iter().collect::<BTreeSet<_>>().into_iter().collect(),
            pushed: done.pushed,
            main_advanced: done.main_advanced,
            main_race_lost: done.main_race_lost,
            push_skipped: done.push_skipped,
            pruned: done.pruned,
            attempts: done.pushes.max(1),
            // An unborn branch has no HEAD commit: the empty string.
            head: repo.rev("HEAD").unwrap_or_default(),
            seconds: crate::out::round(started.elapsed().as_secs_f64(), 3),
            rejected: done.step.rejected,
            deleted: done.step.deleted,
            moved: done.step.moved,
            held: done.step.held.iter().map(HeldShown::from).collect(),
            waiting: hold::read(lib)?.len(),
        })
    })
}

/// Syncs with several remotes in one run (a relay machine joins
/// a team hub to an organisation hub): with each in the order given, then
/// once more with each earlier one whose hub has not seen what a later
/// one brought. Each is an ordinary sync (the same boundary, the same
/// merge, this machine's own ref on every hub), so no server of our own
/// is needed. Stops at the first failure or refusal; one report (or
/// error) per sync made.
pub fn relay(lib: &Library, opts: &Options, remotes: &[String]) -> Vec<Result<Report>> {
    let mut out = Vec::new();
    let mut seen = Vec::new();
    let each = |remote: &String| Options { remote: Some(remote.clone()), ..opts.clone() };
    for remote in remotes {
        let result = sync(lib, &each(remote));
        let stop = result.as_ref().map_or(true, |r| !r.rejected.is_empty());
        seen.push(result.as_ref().map(|r| r.head.clone()).unwrap_or_default());
        out.push(result);
        if stop {
            return out;
        }
    }
    let last = seen.last().cloned().unwrap_or_default();
    for (remote, head) in remotes.iter().zip(&seen).take(remotes.len().saturating_sub(1)) {
        if *head != last && opts.push {
            let result = sync(lib, &each(remote));
            let stop = result.as_ref().map_or(true, |r| !r.rejected.is_empty());
            out.push(result);
            if stop {
                break;
            }
        }
    }
    out
}

/// Local changes, one merge of every new tip, one push.
fn rounds(
    lib: &Library,
    repo: &Repo,
    opts: &Options,
    fleet: &Fleet,
    machine: &mut String,
    start: &mut Start,
) -> Result<Done> {
    let mut done =
        Done { step: Step { rebuilt: commit_local(lib, repo, start)?, ..Step::default() }, ..Done::default() };
    start.merging = true;
    let mut state = fleet.read_state(repo);
    let heads = fleet.heads(repo)?;
    let before = repo.rev("HEAD");
    // Our own ref holds commits this clone never had: a copy of this
    // clone (same config) pushed under our name. Take a new one; its
    // ref is then a peer's like any other, merged below.
    if let Some(own) = heads.machines.get(machine.as_str()) {
        if !before.as_deref().is_some_and(|h| h == own || repo.is_ancestor(own, h)) {
            renew(lib, repo, fleet, machine, &mut done)?;
        }
    }
    let pick = fleet::Pick { machine, max: opts.max_refs };
    let tips = fleet.pending(repo, &heads, &state, before.as_deref(), pick)?;
    let step = merge_all(lib, repo, opts, fleet, &tips)?;
    if !step.rejected.is_empty() {
        // Refused: nothing of the fetched refs is merged. A refusal found
        // only after an earlier tip merged undoes that merge too.
        if repo.rev("HEAD") != before {
            rollback(repo, start);
        }
        done.step.rejected = step.rejected;
        return Ok(done);
    }
    done.merged_refs = tips.iter().filter(|t| t.independent).map(|t| t.name.clone()).collect();
    done.step.add(step);
    // Every fetched tip is in HEAD now, but those left for later (and
    // the ones only they contain).
    let head = repo.rev("HEAD");
    let mut later = BTreeSet::new();
    if tips.iter().any(|t| t.deferred) {
        let names: Vec<String> = tips.iter().map(|t| fleet.tracking_of(&t.name)).collect();
        let mut args = vec!["for-each-ref", "--no-merged=HEAD", "--format=%(refname)"];
        args.extend(names.iter().map(String::as_str));
        let left = repo.run(&args, "git for-each-ref --no-merged")?;
        later = tips
            .iter()
            .filter(|t| left.lines().any(|l| l == fleet.tracking_of(&t.name)))
            .map(|t| t.name.clone())
            .collect();
        done.deferred = tips.iter().filter(|t| t.deferred).count();
    }
    state.head.clone_from(&head);
    let old = std::mem::take(&mut state.refs);
    state.refs = heads
        .tips(fleet)
        .into_iter()
        .filter_map(|t| {
            if later.contains(&t.name) {
                old.get(&t.name).map(|s| (t.name, s.clone()))
            } else {
                Some((t.name, t.sha))
            }
        })
        .collect();
    if let (true, Some(h)) = (opts.push, &head) {
        push_all(lib, repo, opts, fleet, machine, &heads, h, &mut state, &mut done)?;
    }
    crate::fs::crash::at(crate::fs::crash::Step::SyncPushed);
    fleet.write_state(repo, &state)?;
    Ok(done)
}

/// Takes a new identity and says so on stderr.
fn renew(lib: &Library, repo: &Repo, fleet: &Fleet, machine: &mut String, done: &mut Done) -> Result<()> {
    let old = machine.clone();
    *machine = identity::renew(lib, repo, &old)?;
    done.renewed = true;
    crate::out::warn(
        "kb-append",
        &format!(
            "this clone shared the machine identity '{old}' with a copy of it (the hub's {} holds commits this \
             clone never had); it is now '{machine}' and pushes {}",
            fleet.short(&old),
            fleet.short(machine)
        ),
    );
    Ok(())
}

/// One push: this machine's ref (a fast-forward of its own history), the
/// shared branch by compare-and-swap, and the idle refs `--prune-idle`
/// deletes, each under a lease. Losing the shared branch is no failure;
/// a refusal of our own ref by the hub is (the sync rolls back).
#[allow(clippy::too_many_arguments)]
fn push_all(
    lib: &Library,
    repo: &Repo,
    opts: &Options,
    fleet: &Fleet,
    machine: &mut String,
    heads: &fleet::Heads,
    head: &str,
    state: &mut fleet::State,
    done: &mut Done,
) -> Result<()> {
    let now = crate::clock::now()?;
    let main_ref = format!("refs/heads/{}", fleet.branch);
    let mut own_ref = fleet.own_ref(machine);
    let mut refspecs = Vec::new();
    if heads.machines.get(machine.as_str()).map(String::as_str) != Some(head) {
        refspecs.push(format!("HEAD:{own_ref}"));
    }
    // Every fetched tip is merged, so the shared branch fast-forwards to
    // HEAD unless someone moved it since the fetch: then the hub refuses.
    if heads.main.as_deref() != Some(head) {
        refspecs.push(format!("HEAD:{main_ref}"));
    }
    let mut leases = Vec::new();
    if let Some(idle) = opts.prune_idle {
        let before = now.as_second().saturating_sub(i64::try_from(idle.as_secs()).unwrap_or(i64::MAX));
        for t in fleet.prunable(repo, heads, machine, before)? {
            let r = format!("refs/heads/{}", t.name);
            refspecs.push(format!(":{r}"));
            leases.push((r, t.sha));
        }
    }
    if refspecs.is_empty() {
        return Ok(());
    }
    if let Some(wait) = opts.min_interval.and_then(|iv| fleet::interval_wait(state, machine, iv, now)) {
        done.push_skipped = Some(wait);
        return Ok(());
    }
    let ended = fleet::push(repo, &fleet.remote, &refspecs, &leases)?;
    done.pushes += 1;
    let refused = |o: Option<&Outcome>| match o {
        Some(Outcome::Refused(why)) => Some(why.clone()),
        _ => None,
    };
    match ended.get(&own_ref) {
        None | Some(Outcome::Done) => {}
        Some(Outcome::Behind) => {
            // A copy of this clone pushed under our name since the fetch.
            renew(lib, repo, fleet, machine, done)?;
            own_ref = fleet.own_ref(machine);
            let again = fleet::push(repo, &fleet.remote, &[format!("HEAD:{own_ref}")], &[])?;
            done.pushes += 1;
            if let Some(why) = refused(again.get(&own_ref))
                .or_else(|| (again.get(&own_ref) == Some(&Outcome::Behind)).then(|| format!("{own_ref} moved on")))
            {
                return Err(Error::msg(format!("push to '{}' was refused: {why}", fleet.remote)));
            }
        }
        Some(Outcome::Refused(why)) => {
            return Err(Error::msg(format!("push to '{}' was refused: {why}", fleet.remote)));
        }
    }
    match ended.get(&main_ref) {
        Some(Outcome::Done) => {
            done.main_advanced = true;
            state.refs.insert(fleet.branch.clone(), head.to_string());
        }
        Some(Outcome::Behind) => done.main_race_lost = true,
        Some(Outcome::Refused(why)) => {
            // The hub guards the shared branch (a protected branch, a
            // hook) but took this machine's ref: the work is safe there.
            crate::out::warn(
                "kb-append",
                &format!("the hub refused to move {main_ref} ({why}); this machine's work is in {own_ref}"),
            );
        }
        None => {}
    }
    done.pruned = leases
        .iter()
        .filter(|(r, _)| ended.get(r) == Some(&Outcome::Done))
        .filter_map(|(r, _)| r.strip_prefix("refs/heads/").map(str::to_string))
        .collect();
    for p in &done.pruned {
        state.refs.remove(p);
    }
    done.pushed = true;
    state.refs.insert(fleet.short(machine), head.to_string());
    state.last_push = Some(crate::clock::format(now));
    Ok(())
}

/// Merges every new tip into HEAD as one result. Each tip's range is
/// admitted first (all before any merge, so a refusal changes nothing):
/// the shared branch's from HEAD, each machine ref's from the shared
/// branch's new tip when there is one (what a machine ref brings beyond
/// it is its own work; judged from an old HEAD, every ref would carry
/// the whole catch-up again). Then the shared branch is merged with
/// git's own merge, and the machine refs are folded into one tree in one
/// pass (`sync::fold`; a ref that overlaps an edit here is merged the
/// ordinary way). The result is sealed as one commit whose parents are
/// HEAD and the tips (`seal`).
fn merge_all(lib: &Library, repo: &Repo, opts: &Options, fleet: &Fleet, tips: &[Tip]) -> Result<Step> {
    let tips: Vec<&Tip> = tips.iter().filter(|t| t.independent).collect();
    if tips.is_empty() {
        return Ok(Step::default());
    }
    let start = repo.rev("HEAD");
    let main = tips.iter().find(|t| t.name == fleet.branch).copied();
    let pivot = main.map(|t| t.sha.clone()).or_else(|| start.clone());
    let mut judged = Vec::new();
    let mut rejected = Vec::new();
    let mut blobs = Blobs::open(repo)?;
    // The machine refs' commits are counted against the size caps all at
    // once: what is new beyond the shared branch's tip.
    let refs: Vec<&str> = tips.iter().filter(|t| Some(**t) != main).map(|t| t.sha.as_str()).collect();
    let bases: Vec<&str> = pivot.as_deref().into_iter().collect();
    if let Some(mut r) = admit::caps(repo, &mut blobs, &bases, &refs, &opts.limits)? {
        let from: Vec<&str> = tips
            .iter()
            .filter(|t| Some(**t) != main && repo.is_ancestor(&r.path, &t.sha))
            .map(|t| t.name.as_str())
            .collect();
        r.reason = format!("{} (from {})", r.reason, from.join(", "));
        return Ok(Step { rejected: vec![r], ..Step::default() });
    }
    for tip in &tips {
        let is_main = Some(*tip) == main;
        let against = if is_main { start.as_deref() } else { pivot.as_deref() };
        let (adm, _) = judge(repo, &mut blobs, opts, against, &tip.sha, is_main)?;
        for mut r in adm.rejected.iter().cloned() {
            if tip.name != fleet.branch {
                r.reason = format!("{} (from {})", r.reason, tip.name);
            }
            rejected.push(r);
        }
        judged.push(adm);
    }
    if !rejected.is_empty() {
        return Ok(Step { rejected, ..Step::default() });
    }
    let gate = gate(lib)?;
    let mut total = Step::default();
    let mut others: Vec<(&Tip, Admission)> = Vec::new();
    for (tip, adm) in tips.iter().zip(judged) {
        if Some(*tip) == main {
            // Admitted against this very HEAD.
            let step = merge(lib, repo, &mut blobs, opts, fleet, tip, Some(adm), gate.as_ref())?;
            if !step.rejected.is_empty() {
                return Ok(step);
            }
            total.add(step);
        } else {
            others.push((tip, adm));
        }
    }
    let head = repo.rev("HEAD");
    let mut left: Vec<(&Tip, Option<Admission>)> = Vec::new();
    match &head {
        Some(h) if others.len() > 1 => {
            let (folded, rest) = fold_tips(lib, repo, &mut blobs, fleet, h, others, gate.as_ref())?;
            total.add(folded);
            left = rest.into_iter().map(|t| (t, None)).collect();
        }
        _ => {
            // One ref, or an unborn branch: git's merge, one at a time;
            // an admission holds only while HEAD is what it was made
            // against.
            for (tip, adm) in others {
                let fresh = left.is_empty() && head == pivot;
                left.push((tip, fresh.then_some(adm)));
            }
        }
    }
    for (tip, pre) in left {
        let step = merge(lib, repo, &mut blobs, opts, fleet, tip, pre, gate.as_ref())?;
        if !step.rejected.is_empty() {
            return Ok(step);
        }
        total.add(step);
    }
    seal(repo, fleet, start.as_deref(), &tips)?;
    Ok(total)
}

/// Folds the tips that merge without a person into HEAD in one pass
/// (`sync::fold`) and commits the result; returns what it did and the
/// tips left for an ordinary merge. Holds, deletions, the rebuild of
/// derived files and the crash marker work as for one merge (`merge`).
fn fold_tips<'t>(
    lib: &Library,
    repo: &Repo,
    blobs: &mut Blobs,
    fleet: &Fleet,
    head: &str,
    judged: Vec<(&'t Tip, Admission)>,
    gate: &hold::Gate,
) -> Result<(Step, Vec<&'t Tip>)> {
    // Each tip's base with HEAD as it is now (after the shared branch's
    // merge): the fold applies what each brings beyond it.
    let mut pairs = Vec::new();
    for (t, _) in &judged {
        let base = repo.run(&["merge-base", head, &t.sha], "git merge-base")?.trim().to_string();
        pairs.push((t.sha.clone(), base));
    }
    let plan = crate::sync::fold::plan(repo, head, &pairs)?;
    let tips: Vec<&Tip> = judged.iter().map(|(t, _)| *t).collect();
    let left: Vec<&Tip> = plan.left.iter().map(|&i| tips[i]).collect();
    let mut step = Step::default();
    if plan.folded.is_empty() {
        return Ok((step, left));
    }
    let mut judged: Vec<Option<Admission>> = judged.into_iter().map(|(_, adm)| Some(adm)).collect();
    let mut held = Vec::new();
    let mut deleted = Vec::new();
    let mut moved = Vec::new();
    for &i in &plan.folded {
        let Some(adm) = judged[i].take() else { continue };
        held.extend(hold::decide(repo, lib, blobs, &adm.changes, &tips[i].sha, gate)?);
        deleted.push((adm.deleted, tips[i].sha.clone()));
        moved.extend(adm.moved);
    }
    hold::prepare(lib, repo, &held)?;
    let mut range = vec!["rev-list".to_string(), "--count".into()];
    range.extend(plan.folded.iter().map(|&i| tips[i].sha.clone()));
    range.push(format!("^{head}"));
    let range: Vec<&str> = range.iter().map(String::as_str).collect();
    step.fetched = repo.run(&range, "git rev-list")?.trim().parse().unwrap_or(0);
    // A kill from here to the commit leaves the work tree between two
    // states: the marker tells the next sync to put HEAD's back.
    crate::fs::atomic::write(&repo.git_path(MERGE_MARKER), format!("fold {head}\n").as_bytes())?;
    repo.run(&["read-tree", "-m", "-u", head, &plan.tree], "git read-tree (the folded heads)")?;
    crate::fs::crash::at(crate::fs::crash::Step::SyncMerging);
    hold::restore(lib, repo, &held)?;
    // The folded tree keeps this side's derived files: they are right for
    // HEAD, so re-deriving what the tips changed brings them in step.
    let changed: Vec<String> = plan.changed.iter().cloned().collect();
    let incoming = library_docs(repo, &changed);
    step.merged = incoming.len();
    let mut touched = Vec::new();
    let mut gone = Vec::new();
    for (paths, tip) in &deleted {
        gone.extend(deletion_events(lib, repo, paths, tip)?);
    }
    if !gone.is_empty() {
        changelog::append(lib, &gone)?;
        touched.push(changelog::FILE.to_string());
    }
    let events = refresh::events_since(lib, repo, head)?;
    step.rebuilt = refresh::documents(lib, &incoming, Some(&events))?;
    touched.extend(step.rebuilt.iter().cloned());
    add_paths(repo, &touched)?;
    let tree = repo.run(&["write-tree"], "git write-tree")?.trim().to_string();
    let message = format!("task-ai(library):sync {}/{} ({} heads)", fleet.remote, fleet.branch, plan.folded.len());
    let mut args: Vec<&str> = crate::library::git::identity_args(&repo.top);
    args.extend(["commit-tree", &tree, "-p", head, "-m", &message]);
    for &i in &plan.folded {
        args.extend(["-p", tips[i].sha.as_str()]);
    }
    let commit = repo.run(&args, "git commit-tree")?.trim().to_string();
    repo.run(&["update-ref", "-m", &message, "HEAD", &commit, head], "git update-ref")?;
    crate::fs::crash::at(crate::fs::crash::Step::SyncMerged);
    remove_marker(repo, MERGE_MARKER)?;
    step.deleted = deleted.into_iter().flat_map(|(d, _)| d).collect();
    step.moved = moved;
    step.held = held;
    Ok((step, left))
}

/// The boundary's verdict on what `theirs` brings to `ours` (HEAD), and
/// the merge base when the merge is not a fast-forward. `caps`: count
/// the range's commits against the size caps here (not done already).
fn judge(
    repo: &Repo,
    blobs: &mut Blobs,
    opts: &Options,
    ours: Option<&str>,
    theirs: &str,
    caps: bool,
) -> Result<(Admission, Option<String>)> {
    // One `merge-base`: HEAD itself when the tip fast-forwards it.
    let base = match ours {
        Some(o) => {
            let b = repo.run(&["merge-base", o, theirs], "git merge-base")?.trim().to_string();
            (b != o).then_some(b)
        }
        None => None,
    };
    let from = base.as_deref().or(ours).unwrap_or(EMPTY_TREE);
    // Nothing a peer sends is merged before it is admitted.
    let range = admit::Range { base: from, ours, theirs };
    Ok((admit::judge(repo, blobs, &range, &opts.limits, caps)?, base))
}

/// Replaces the commits the merges made with one: the merged tree, with
/// HEAD before the merges and every tip as parents (those no other
/// contains, sorted), by a fixed author at the newest parent's time. Two
/// machines folding the same heads into the same tree so make the same
/// commit, and a fleet that merges each other's refs settles instead of
/// merging merges forever. A pure fast-forward is left as it is.
fn seal(repo: &Repo, fleet: &Fleet, start: Option<&str>, tips: &[&Tip]) -> Result<()> {
    let Some(head) = repo.rev("HEAD") else { return Ok(()) };
    if Some(head.as_str()) == start {
        return Ok(());
    }
    let mut candidates: BTreeSet<String> = tips.iter().map(|t| t.sha.clone()).collect();
    candidates.extend(start.map(str::to_string));
    let parents: BTreeSet<String> = if candidates.len() > 1 {
        let mut args = vec!["merge-base", "--independent"];
        args.extend(candidates.iter().map(String::as_str));
        repo.run(&args, "git merge-base --independent")?.lines().map(str::to_string).collect()
    } else {
        candidates
    };
    if parents.len() == 1 && parents.contains(&head) {
        return Ok(());
    }
    let tree = repo.run(&["rev-parse", "HEAD^{tree}"], "git rev-parse")?.trim().to_string();
    let mut show = vec!["show", "-s", "--format=%ct"];
    show.extend(parents.iter().map(String::as_str));
    let newest = repo.run(&show, "git show")?.lines().filter_map(|l| l.trim().parse::<i64>().ok()).max().unwrap_or(0);
    let message = match parents.len() {
        1 => format!("task-ai(library):sync {}/{} rebuild derived", fleet.remote, fleet.branch),
        2 => format!("task-ai(library):sync {}/{}", fleet.remote, fleet.branch),
        n => format!("task-ai(library):sync {}/{} ({n} heads)", fleet.remote, fleet.branch),
    };
    let mut c = repo.cmd();
    let date = format!("@{newest} +0000");
    c.env("GIT_AUTHOR_NAME", "kb-tools sync")
        .env("GIT_AUTHOR_EMAIL", "kb-tools@localhost")
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_NAME", "kb-tools sync")
        .env("GIT_COMMITTER_EMAIL", "kb-tools@localhost")
        .env("GIT_COMMITTER_DATE", &date);
    // Unsigned: a signature would make two machines' seals differ.
    c.args(["commit-tree", "--no-gpg-sign", &tree, "-m", &message]);
    for p in &parents {
        c.args(["-p", p]);
    }
    let out = c.output().map_err(|e| Error::io("running git commit-tree", e))?;
    if !out.status.success() {
        return Err(Error::msg(format!("git commit-tree failed: {}", stderr_of(&out))));
    }
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_string();
    repo.run(&["update-ref", "-m", &message, "HEAD", &commit, &head], "git update-ref")?;
    crate::fs::crash::at(crate::fs::crash::Step::SyncSealed);
    Ok(())
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
    // A fold (many heads at once, no `git merge`) killed before its
    // commit: the index and work tree are between HEAD and the folded
    // tree, and everything of the library was committed before it began.
    let marker = std::fs::read_to_string(repo.git_path(MERGE_MARKER)).unwrap_or_default();
    if let Some(head) = marker.trim().strip_prefix("fold ") {
        if !merging && repo.rev("HEAD").as_deref() == Some(head) {
            repo.run(&["reset", "--hard", "--quiet", head], "git reset (undoing an interrupted sync)")?;
        }
    }
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
    // the allowlist (the lock, `.changelog-cursors`) stops tracking it.
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

/// One merge of a fetched tip into HEAD, judged at the boundary first
/// (`pre`: the admission already made against this HEAD).
#[allow(clippy::too_many_arguments)]
fn merge(
    lib: &Library,
    repo: &Repo,
    blobs: &mut Blobs,
    opts: &Options,
    fleet: &Fleet,
    tip: &Tip,
    pre: Option<Admission>,
    gate: &hold::Gate,
) -> Result<Step> {
    let theirs = tip.sha.clone();
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
    let (adm, base) = match pre {
        Some(adm) => {
            let base = match &ours {
                Some(o) if !repo.is_ancestor(o, &theirs) => {
                    Some(repo.run(&["merge-base", o, &theirs], "git merge-base")?.trim().to_string())
                }
                _ => None,
            };
            (adm, base)
        }
        None => judge(repo, blobs, opts, ours.as_deref(), &theirs, true)?,
    };
    if !adm.rejected.is_empty() {
        return Ok(Step { rejected: adm.rejected, ..Step::default() });
    }
    let held = hold::decide(repo, lib, blobs, &adm.changes, &theirs, gate)?;
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
        repo.commit_merge(&theirs, &format!("task-ai(library):sync {}/{}", fleet.remote, tip.name))?;
    } else if !touched.is_empty() && !repo.ok(&["diff", "--cached", "--quiet"]) {
        // A peer's derived bytes put back to ours and rebuilt are often
        // the very bytes it sent: then there is nothing to commit.
        repo.commit(&format!("task-ai(library):sync {}/{} rebuild derived", fleet.remote, tip.name))?;
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
/// library: content the writer's guard refuses is quarantined
/// (`guard::gate`, the same judgement as `kb-append write`, skill files as
/// the skill writer judges them); a skill placed in `.skills/.active/` or
/// a raised `trust_tier` waits for review (`library::trust`); a rule or
/// proposal change takes effect only through the local evolve gates
/// (`evolve::peer`).
fn gate(lib: &Library) -> Result<Box<hold::Gate<'static>>> {
    let (engine, _) = crate::guard::library_engine(lib)?;
    let lib = lib.clone();
    Ok(Box::new(move |c: &admit::Change, ours: Option<&[u8]>, theirs: Option<&[u8]>| -> hold::Judged {
        match c.kind {
            Kind::Rule | Kind::Proposal => {
                Ok(crate::evolve::peer::judge_rule_change(&lib, &c.path, ours, theirs)?.map(|why| (Why::Review, why)))
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
            machine: None,
        })
        .collect())
}
