//! Many machines on one hub with no race on a shared branch.
//!
//! Each machine pushes only a ref it owns, `refs/heads/kb/<machine>`,
//! which always fast-forwards (it only ever holds this clone's own
//! history), so a sync never fails because someone else pushed first.
//! In the same `git push` (two refspecs, not atomic) it offers the shared
//! branch a fast-forward: the hub takes it only when the branch is still
//! what this clone merged, a compare-and-swap done by git's own ref
//! update. Losing that race is not a failure: the work is safe in the
//! machine's ref, and the next sync of any machine folds it in.
//!
//! A sync fetches the shared branch and the machine refs with one `git
//! fetch` (protocol v2 asks the hub only for refs under those two
//! prefixes; only the objects of refs that moved travel), then merges the
//! tips it has not merged yet. Which those are is kept per remote in the
//! clone's git directory (`kb-fleet/<remote>.<branch>.json`: the last tip
//! folded in per ref, and the time of the last push), never in the
//! library, so a sync's git work grows with the refs that moved, not with
//! the size of the fleet. Machine refs for a branch other than `main`
//! live under `refs/heads/kb/<branch>/`, so two shared branches never
//! merge into each other.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::sync::gitcmd::{stderr_of, Repo};

/// The shared branch and the machine refs of one remote.
#[derive(Debug, Clone)]
pub struct Fleet {
    pub remote: String,
    pub branch: String,
    /// Where machine refs live under `refs/heads/` (no trailing `/`).
    pub ns: String,
}

/// A fetched ref that may bring something new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tip {
    /// Its short name on the hub: the branch, or `kb/<machine>`.
    pub name: String,
    /// The commit it points at.
    pub sha: String,
    /// No other pending tip contains it (only these are merged; the
    /// others come with them).
    pub independent: bool,
    /// Left for a later sync (`--max-refs`).
    pub deferred: bool,
}

/// How many of the new refs one sync merges, and whose order picks them.
#[derive(Debug, Clone, Copy)]
pub struct Pick<'a> {
    /// This machine (machines order the crowd differently).
    pub machine: &'a str,
    /// At most this many tips besides the shared branch.
    pub max: usize,
}

/// The refs one fetch left: the shared branch and each machine's.
#[derive(Debug, Default, Clone)]
pub struct Heads {
    /// The shared branch's tip, when the hub has it.
    pub main: Option<String>,
    /// Each machine ref's tip, by machine identity.
    pub machines: BTreeMap<String, String>,
}

impl Heads {
    /// Every ref as a tip (the shared branch first).
    pub fn tips(&self, fleet: &Fleet) -> Vec<Tip> {
        let mut out: Vec<Tip> = self
            .main
            .iter()
            .map(|sha| Tip { name: fleet.branch.clone(), sha: sha.clone(), independent: false, deferred: false })
            .collect();
        out.extend(self.machines.iter().map(|(id, sha)| Tip {
            name: fleet.short(id),
            sha: sha.clone(),
            independent: false,
            deferred: false,
        }));
        out
    }
}

/// What the clone remembers between syncs, per remote and branch.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct State {
    /// HEAD when the state was written: a history rewritten since (a
    /// reset) makes every ref new again.
    #[serde(default)]
    pub head: Option<String>,
    /// The last tip of each ref (short name) that HEAD contains.
    #[serde(default)]
    pub refs: BTreeMap<String, String>,
    /// When this clone last pushed (RFC 3339), for `--min-interval`.
    #[serde(default)]
    pub last_push: Option<String>,
}

impl Fleet {
    pub fn new(remote: &str, branch: &str) -> Fleet {
        let ns = if branch == "main" { "kb".to_string() } else { format!("kb/{branch}") };
        Fleet { remote: remote.into(), branch: branch.into(), ns }
    }

    /// The hub's ref a machine pushes.
    pub fn own_ref(&self, id: &str) -> String {
        format!("refs/heads/{}/{id}", self.ns)
    }

    /// A machine ref's short name, as records show it.
    pub fn short(&self, id: &str) -> String {
        format!("{}/{id}", self.ns)
    }

    /// The local tracking ref of the shared branch.
    pub fn tracking(&self) -> String {
        format!("refs/remotes/{}/{}", self.remote, self.branch)
    }

    /// The local tracking ref of a hub ref given by its short name.
    pub fn tracking_of(&self, short: &str) -> String {
        format!("refs/remotes/{}/{short}", self.remote)
    }

    fn machine_refspec(&self) -> String {
        format!("+refs/heads/{ns}/*:refs/remotes/{r}/{ns}/*", ns = self.ns, r = self.remote)
    }

    /// Fetches the shared branch and every machine ref that moved, and
    /// drops the tracking refs of machine refs the hub no longer has. A
    /// hub without the branch is fine when it holds no other branch (the
    /// push creates it); elsewhere that is an error.
    pub fn fetch(&self, repo: &Repo) -> Result<()> {
        let main = format!("+refs/heads/{}:{}", self.branch, self.tracking());
        let machines = self.machine_refspec();
        let out = repo.output(&["fetch", "--quiet", "--no-tags", "--prune", &self.remote, &main, &machines])?;
        if out.status.success() {
            return Ok(());
        }
        let msg = stderr_of(&out);
        if msg.contains("couldn't find remote ref") {
            let heads = repo.run(&["ls-remote", "--heads", &self.remote], "git ls-remote")?;
            let ours = format!("refs/heads/{}/", self.ns);
            let names: Vec<&str> = heads.lines().filter_map(|l| l.split('\t').nth(1)).collect();
            if names.iter().all(|n| n.starts_with(&ours)) {
                if names.is_empty() {
                    return Ok(());
                }
                let out = repo.output(&["fetch", "--quiet", "--no-tags", "--prune", &self.remote, &machines])?;
                if out.status.success() {
                    return Ok(());
                }
                return Err(self.fetch_error(repo, &stderr_of(&out)));
            }
            return Err(Error::msg(format!("branch '{}' does not exist on remote '{}'", self.branch, self.remote)));
        }
        Err(self.fetch_error(repo, &msg))
    }

    fn fetch_error(&self, repo: &Repo, msg: &str) -> Error {
        // For the message only: an unset url shows as empty.
        let url = repo.config(&format!("remote.{}.url", self.remote)).unwrap_or_default();
        Error::msg(format!("cannot fetch from remote '{}' ({url}): {msg}", self.remote))
    }

    /// The tracking refs the last fetch left (one `git for-each-ref`).
    /// A ref under the machine prefix whose name is not an identity sync
    /// writes (a nested branch, a hand-made name) is no machine's and is
    /// left alone.
    pub fn heads(&self, repo: &Repo) -> Result<Heads> {
        let main = self.tracking();
        let prefix = format!("refs/remotes/{}/{}/", self.remote, self.ns);
        let text = repo.run(
            &["for-each-ref", "--format=%(objectname) %(refname)", &main, prefix.trim_end_matches('/')],
            "git for-each-ref",
        )?;
        let mut heads = Heads::default();
        for line in text.lines() {
            let Some((sha, name)) = line.split_once(' ') else { continue };
            if name == main {
                heads.main = Some(sha.to_string());
            } else if let Some(id) = name.strip_prefix(&prefix).filter(|id| crate::library::machine::valid(id)) {
                heads.machines.insert(id.to_string(), sha.to_string());
            }
        }
        Ok(heads)
    }

    fn state_path(&self, repo: &Repo) -> std::path::PathBuf {
        let clean = |s: &str| -> String {
            s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
        };
        repo.git_path("kb-fleet").join(format!("{}.{}.json", clean(&self.remote), clean(&self.branch)))
    }

    /// The state the last sync left; an unreadable one is none (it is a
    /// cache of what HEAD already holds: losing it costs one check per
    /// ref, never a merge).
    pub fn read_state(&self, repo: &Repo) -> State {
        std::fs::read(self.state_path(repo)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
    }

    /// Saves the state (atomically: a kill leaves the old or the new).
    pub fn write_state(&self, repo: &Repo, state: &State) -> Result<()> {
        let path = self.state_path(repo);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        }
        let bytes = serde_json::to_vec_pretty(state).map_err(|e| Error::msg(format!("encoding {e}")))?;
        crate::fs::atomic::write(&path, &bytes)
    }

    /// The tips HEAD does not contain yet, among the refs that moved since
    /// the state was written; the independent ones (none contained in
    /// another) first, the shared branch first among them, then by
    /// commit. The git work is one `for-each-ref --no-merged` and one
    /// `merge-base --independent` over the moved refs only.
    pub fn pending(
        &self,
        repo: &Repo,
        heads: &Heads,
        state: &State,
        head: Option<&str>,
        pick: Pick<'_>,
    ) -> Result<Vec<Tip>> {
        // A state written on a history HEAD no longer holds is void.
        let trusted = match (&state.head, head) {
            (Some(s), Some(h)) => s == h || repo.is_ancestor(s, h),
            _ => false,
        };
        let moved: Vec<Tip> = heads
            .tips(self)
            .into_iter()
            .filter(|t| !trusted || state.refs.get(&t.name) != Some(&t.sha))
            .filter(|t| Some(t.sha.as_str()) != head)
            .collect();
        if moved.is_empty() {
            return Ok(moved);
        }
        let mut out = match head {
            None => moved,
            Some(_) => {
                let names: Vec<String> = moved.iter().map(|t| self.tracking_of(&t.name)).collect();
                let mut args = vec!["for-each-ref", "--no-merged=HEAD", "--format=%(refname)"];
                args.extend(names.iter().map(String::as_str));
                let text = repo.run(&args, "git for-each-ref --no-merged")?;
                let left: BTreeSet<&str> = text.lines().collect();
                moved.into_iter().filter(|t| left.contains(self.tracking_of(&t.name).as_str())).collect()
            }
        };
        let shas: BTreeSet<&str> = out.iter().map(|t| t.sha.as_str()).collect();
        let independent: BTreeSet<String> = if shas.len() > 1 {
            let mut args = vec!["merge-base", "--independent"];
            args.extend(shas.iter().copied());
            repo.run(&args, "git merge-base --independent")?.lines().map(str::to_string).collect()
        } else {
            shas.iter().map(|s| s.to_string()).collect()
        };
        // One merge per commit: of two refs at one tip, the first stands.
        let mut claimed = BTreeSet::new();
        for t in &mut out {
            t.independent = independent.contains(&t.sha);
        }
        // The shared branch first; the machine refs in an order of this
        // machine's own, so machines that take only part of a crowd take
        // different parts and their merges spread the rest.
        let main = self.branch.clone();
        let order = |sha: &str| crate::doc::digest::sha256(format!("{}\n{sha}", pick.machine).as_bytes());
        out.sort_by_key(|t| (!t.independent, t.name != main, order(&t.sha), t.name.clone()));
        let mut taken = 0;
        for t in &mut out {
            t.independent = t.independent && claimed.insert(t.sha.clone());
            if t.independent {
                // Never the shared branch: the push must fast-forward it.
                if taken >= pick.max && t.name != main {
                    t.independent = false;
                    t.deferred = true;
                } else {
                    taken += 1;
                }
            }
        }
        Ok(out)
    }

    /// Machine refs the hub's shared branch already contains whose last
    /// commit is older than `idle_before` (unix seconds), this machine's
    /// own aside: what `--prune-idle` deletes. One `git for-each-ref`.
    pub fn prunable(&self, repo: &Repo, heads: &Heads, own: &str, idle_before: i64) -> Result<Vec<Tip>> {
        if heads.main.is_none() {
            return Ok(Vec::new());
        }
        let prefix = format!("refs/remotes/{}/{}/", self.remote, self.ns);
        let merged = format!("--merged={}", self.tracking());
        let text = repo.run(
            &[
                "for-each-ref",
                &merged,
                "--format=%(objectname) %(committerdate:unix) %(refname)",
                prefix.trim_end_matches('/'),
            ],
            "git for-each-ref --merged",
        )?;
        let mut out = Vec::new();
        for line in text.lines() {
            let mut parts = line.splitn(3, ' ');
            let (Some(sha), Some(when), Some(name)) = (parts.next(), parts.next(), parts.next()) else { continue };
            let Some(id) = name.strip_prefix(&prefix).filter(|id| crate::library::machine::valid(id)) else {
                continue;
            };
            if id != own && when.parse::<i64>().is_ok_and(|t| t < idle_before) {
                out.push(Tip { name: self.short(id), sha: sha.to_string(), independent: false, deferred: false });
            }
        }
        Ok(out)
    }
}

/// How one ref of a push ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Updated, created, deleted, or already there.
    Done,
    /// Not a fast-forward of what the hub holds (someone else moved it),
    /// a lease that no longer held, or a lost race for the ref's lock.
    Behind,
    /// Refused for another reason (a hook, permissions): git's line.
    Refused(String),
}

/// Pushes `refspecs` in one `git push` (not atomic: each ref lands or not
/// on its own), with a lease for each `(ref, sha)` in `leases`, and says
/// how each destination ref ended. An error when git gave no account of
/// a ref at all (no connection, no such remote).
pub fn push(
    repo: &Repo,
    remote: &str,
    refspecs: &[String],
    leases: &[(String, String)],
) -> Result<BTreeMap<String, Outcome>> {
    let mut args: Vec<String> = vec!["push".into(), "--porcelain".into()];
    args.extend(leases.iter().map(|(r, sha)| format!("--force-with-lease={r}:{sha}")));
    args.push(remote.into());
    args.extend(refspecs.iter().cloned());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = repo.output(&argv)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut ended = BTreeMap::new();
    for line in stdout.lines() {
        // "<flag>\t<from>:<to>\t<summary>"
        let mut parts = line.splitn(3, '\t');
        let (Some(flag), Some(spec), summary) = (parts.next(), parts.next(), parts.next().unwrap_or_default()) else {
            continue;
        };
        let Some((_, to)) = spec.rsplit_once(':') else { continue };
        let outcome = match flag {
            " " | "*" | "-" | "+" | "=" => Outcome::Done,
            "!" if (summary.contains("[rejected]")
                && (summary.contains("fetch first")
                    || summary.contains("non-fast-forward")
                    || summary.contains("stale info")))
                || summary.contains("failed to update ref")
                || summary.contains("failed to lock") =>
            {
                Outcome::Behind
            }
            "!" => Outcome::Refused(format!("{to} {summary}")),
            _ => continue,
        };
        ended.insert(to.to_string(), outcome);
    }
    let wanted: Vec<String> =
        refspecs.iter().filter_map(|s| s.rsplit_once(':').map(|(_, to)| to.to_string())).collect();
    if let Some(missing) = wanted.iter().find(|w| !ended.contains_key(*w)) {
        return Err(Error::msg(format!("push to '{remote}' failed ({missing}): {}", stderr_of(&out))));
    }
    Ok(ended)
}

/// When `--min-interval` holds the push back: the reason, or `None` when
/// it is due. The interval is stretched or shrunk by up to a quarter,
/// by a factor fixed per machine and last push, so a fleet started at
/// one moment spreads its pushes instead of arriving in waves.
pub fn interval_wait(state: &State, id: &str, interval: std::time::Duration, now: jiff::Timestamp) -> Option<String> {
    let last = state.last_push.as_deref().and_then(crate::clock::parse_instant)?;
    let digest = crate::doc::digest::sha256(format!("{id}\n{}", state.last_push.as_deref().unwrap_or("")).as_bytes());
    let unit = f64::from(u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])) / f64::from(u32::MAX);
    let wait = interval.as_secs_f64() * (0.75 + 0.5 * unit);
    let since = now.duration_since(last).as_secs_f64();
    (since < wait)
        .then(|| format!("min-interval: last push {} ago, the next is due after {}", human(since), human(wait)))
}

/// Seconds as people read them (`95s`, `12m`, `3.5h`).
fn human(secs: f64) -> String {
    let secs = secs.max(0.0);
    if secs < 120.0 {
        format!("{secs:.0}s")
    } else if secs < 7200.0 {
        format!("{:.0}m", secs / 60.0)
    } else {
        format!("{:.1}h", secs / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_refs_of_other_branches_live_apart() {
        assert_eq!(Fleet::new("origin", "main").own_ref("a-000000"), "refs/heads/kb/a-000000");
        assert_eq!(Fleet::new("origin", "dev").own_ref("a-000000"), "refs/heads/kb/dev/a-000000");
    }

    #[test]
    fn the_interval_is_jittered_per_machine_within_a_quarter() {
        let now = crate::clock::parse_instant("2026-03-01T12:00:00Z").unwrap();
        let state = |ago: i64| State {
            last_push: Some(crate::clock::format(now.checked_sub(jiff::SignedDuration::from_secs(ago)).unwrap())),
            ..State::default()
        };
        let ten = std::time::Duration::from_secs(600);
        for id in ["a-000001", "b-000002", "c-000003"] {
            assert!(interval_wait(&state(60), id, ten, now).is_some());
            assert!(interval_wait(&state(449), id, ten, now).is_some());
            assert!(interval_wait(&state(751), id, ten, now).is_none());
        }
        assert!(interval_wait(&State::default(), "a-000001", ten, now).is_none());
        let waits: BTreeSet<String> = ["a-000001", "b-000002", "c-000003", "d-000004"]
            .iter()
            .filter_map(|id| interval_wait(&state(1), id, ten, now))
            .collect();
        assert!(waits.len() > 1, "every machine waits the same: {waits:?}");
    }
}
