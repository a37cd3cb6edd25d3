//! kb-append sync, merge-log, resolve: real git repositories in
//! temp directories, one bare hub and several clones.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{git, kill_when, ok_records, records, Lib, Rng};

/// A bare hub repository all clones push to.
struct Hub {
    dir: tempfile::TempDir,
}

impl Hub {
    fn new() -> Hub {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "--bare", "-b", "main", "hub.git"]);
        Hub { dir }
    }

    fn url(&self) -> PathBuf {
        self.dir.path().join("hub.git")
    }

    /// A new clone of the hub (its library comes with it, when pushed).
    fn clone(&self) -> Lib {
        let lib = Lib::empty();
        git(lib.root(), &["clone", "-q", self.url().to_str().unwrap(), "."]);
        configure(&lib);
        lib
    }

    /// The first clone: initialises the library and publishes it.
    fn first(&self) -> Lib {
        let lib = self.clone();
        lib.cmd("kb-append").arg("init").assert().success();
        sync(&lib).assert().success();
        lib
    }
}

fn configure(lib: &Lib) {
    crate::util::identity(lib.root());
}

fn sync(lib: &Lib) -> assert_cmd::Command {
    let mut c = lib.cmd("kb-append");
    c.arg("sync");
    c
}

/// Runs a sync that must succeed and returns its record.
#[track_caller]
fn synced(lib: &Lib) -> Value {
    let recs = ok_records(&mut sync(lib));
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0]["record"], "sync");
    recs[0].clone()
}

fn write(lib: &Lib, path: &str, content: &str, now: &str, notebook: &str) -> Value {
    ok_records(
        lib.cmd("kb-append").args(["write", path, "--content", content, "--notebook", notebook]).env("KB_NOW", now),
    )
    .remove(0)
}

fn head(lib: &Lib) -> String {
    lib.git(&["rev-parse", "HEAD"]).trim().to_string()
}

fn tree(lib: &Lib) -> String {
    lib.git(&["rev-parse", "HEAD^{tree}"]).trim().to_string()
}

/// Every file of the library with its bytes (the lock file aside), plus
/// HEAD and the work tree status: what "exactly as before" compares.
fn snapshot(lib: &Lib) -> (BTreeMap<String, Vec<u8>>, String, String) {
    let files = crate::util::tree(&lib.dir(), &[".lock"]);
    let head = git(lib.root(), &["rev-parse", "HEAD"]);
    let status = git(lib.root(), &["status", "--porcelain", "--untracked-files=all"]);
    (files, head, status)
}

/// The incrementally kept derived files equal a full rebuild: rebuilding
/// changes nothing git can see.
#[track_caller]
fn assert_derived_match_rebuild(lib: &Lib) {
    let library = kb::Library { dir: lib.dir() };
    kb::derived::rebuild_all::rebuild(&library).expect("rebuild");
    let status = lib.git(&["status", "--porcelain"]);
    assert_eq!(status, "", "a full rebuild changed derived files");
}

/// The error record and stderr line of a failed sync, checked for `cause`.
#[track_caller]
fn sync_fails(lib: &Lib, args: &[&str], cause: &str) {
    let out = sync(lib).args(args).assert().code(2).get_output().clone();
    let recs = records(&out.stdout);
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0]["record"], "error");
    let msg = recs[0]["message"].as_str().unwrap();
    assert!(msg.contains(cause), "message {msg:?} lacks {cause:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("kb-append: ") && stderr.contains(cause), "{stderr}");
}

fn doc(topic: &str, verified: &str, body: &str) -> String {
    format!("---\ntopic: {topic}\nkeywords: [sync]\nlast_verified_at: {verified}\n---\n# {topic}\n\nfirst line\n{body}\nlast line\n")
}

#[test]
fn four_clones_converge_after_200_random_writes_and_syncs() {
    let started = std::time::Instant::now();
    let hub = Hub::new();
    let mut clones = vec![hub.first()];
    for _ in 0..3 {
        clones.push(hub.clone());
    }
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let pool: Vec<String> = (0..40)
        .map(|i| match i % 4 {
            0 => format!(".memory/.references/topic-{i}-v1.md"),
            1 => format!(".memory/.experiences/software/case-{i}-impl.md"),
            2 => format!("team-notes/note-{i}.md"),
            _ => format!(".memory/.thinking/raw/idea-{i}.md"),
        })
        .collect();
    let mut written = Vec::new();
    for i in 0..200 {
        let c = rng.below(clones.len());
        let path = &pool[rng.below(pool.len())];
        let now = format!("2026-03-01T{:02}:{:02}:{:02}Z", i / 3600, (i / 60) % 60, i % 60);
        let related = &pool[rng.below(pool.len())];
        let content = format!(
            "---\ntopic: t{i}\nkeywords: [k{}, sync]\nrelated: [{related}]\n---\n# write {i} from clone {c}\n",
            i % 7
        );
        written.push(write(&clones[c], path, &content, &now, &format!("nb-{c}")));
        if rng.below(10) < 3 {
            synced(&clones[rng.below(clones.len())]);
        }
    }
    // All four at once: pushes race, the losers fetch, merge and retry.
    let mut children: Vec<_> = clones
        .iter()
        .map(|c| c.std_cmd("kb-append").arg("sync").stdout(std::process::Stdio::piped()).spawn().unwrap())
        .collect();
    for child in children.drain(..) {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    }
    for round in 0.. {
        assert!(round < 10, "no convergence after 10 rounds");
        let quiet = clones.iter().map(synced).all(|r| r["fetched"] == 0 && r["pushed"] == false);
        if quiet {
            break;
        }
    }
    let t0 = tree(&clones[0]);
    for c in &clones {
        assert_eq!(tree(c), t0, "clones differ");
        let log = c.read(".changelog");
        for w in &written {
            let needle = format!(
                "{{\"ts\":\"{}\",\"event\":\"write\",\"path\":\"{}\",",
                w["ts"].as_str().unwrap(),
                w["path"].as_str().unwrap()
            );
            let hits: Vec<&str> = log.lines().filter(|l| l.starts_with(&needle)).collect();
            assert_eq!(hits.len(), 1, "{needle} appears {} times", hits.len());
            assert!(hits[0].contains(w["sha256"].as_str().unwrap()));
        }
        assert_derived_match_rebuild(c);
    }
    eprintln!("four-clone convergence: {:.1} s", started.elapsed().as_secs_f64());
}

#[test]
fn overlapping_edits_keep_both_sides_until_resolved() {
    let hub = Hub::new();
    let a = hub.first();
    let b = hub.clone();
    let d = ".memory/.references/pool-sizing-v1.md";
    write(&a, d, &doc("pool-sizing", "2026-01-01", "middle"), "2026-03-01T10:00:00Z", "nb-a");
    synced(&a);
    synced(&b);
    let ours_text = doc("pool-sizing", "2026-02-01", "middle from a");
    let theirs_text = doc("pool-sizing", "2026-02-10", "middle from b");
    write(&a, d, &ours_text, "2026-03-01T11:00:00Z", "nb-a");
    write(&b, d, &theirs_text, "2026-03-01T11:00:01Z", "nb-b");
    let a_commit = a.git(&["log", "-1", "--format=%h"]).trim().to_string();
    synced(&a);
    let rec = synced(&b);
    let copy = format!(".conflicts/{d}/{a_commit}.md");
    assert_eq!(rec["conflicts"], serde_json::json!([copy]));
    // b's side is newer by last_verified_at: it stays; a's is kept aside.
    assert_eq!(b.read(d), theirs_text);
    assert_eq!(b.read(&copy), ours_text);
    let log = b.read(".changelog");
    let conflict: Vec<&str> = log.lines().filter(|l| l.contains("\"event\":\"conflict\"")).collect();
    assert_eq!(conflict.len(), 1, "{log}");
    assert!(conflict[0].contains(&format!("\"path\":\"{d}\"")) && conflict[0].contains("kept-ours"), "{}", conflict[0]);
    assert_derived_match_rebuild(&b);
    synced(&a);
    assert_eq!(tree(&a), tree(&b));
    let listed = kb::sync::conflicts::list(&kb::Library { dir: a.dir() });
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].path.as_str(), listed[0].kept.as_str()), (d, copy.as_str()));
    // kb-index status reports the kept conflict as an integrity finding.
    let out = a.cmd("kb-index").args(["status", "--format", "jsonl"]).output().unwrap();
    let integrity = records(&out.stdout).into_iter().find(|r| r["dimension"] == 6).unwrap();
    assert_eq!(integrity["attention"], true);
    assert!(
        integrity["items"].as_array().unwrap().iter().any(|i| i["kind"] == "conflict" && i["path"] == d),
        "{integrity}"
    );
    // a takes its own words back: the kept copy replaces the document.
    let recs = ok_records(a.cmd("kb-append").args(["resolve", d, "--keep", "theirs"]));
    let r = &recs[0];
    assert_eq!(r["record"], "resolve");
    assert_eq!(r["removed"], serde_json::json!([copy]));
    assert_eq!(r["committed"], true);
    assert_eq!(a.read(d), ours_text);
    assert!(!a.path(".conflicts").exists());
    assert!(kb::sync::conflicts::list(&kb::Library { dir: a.dir() }).is_empty());
    assert_eq!(a.git(&["log", "-1", "--format=%s"]).trim(), format!("task-ai(library):resolve {d}"));
    assert!(a.read(".changelog").lines().last().unwrap().contains("\"event\":\"resolve\""));
    assert_eq!(a.git(&["status", "--porcelain"]), "");
    assert_derived_match_rebuild(&a);
    synced(&a);
    synced(&b);
    assert_eq!(b.read(d), ours_text);
    assert_eq!(tree(&a), tree(&b));
    // Nothing left to resolve.
    a.cmd("kb-append").args(["resolve", d, "--keep", "ours"]).assert().code(2);
}

#[test]
fn edits_that_do_not_overlap_merge_as_text_and_drivers_are_registered() {
    let hub = Hub::new();
    let a = hub.first();
    let b = hub.clone();
    let d = "team-notes/runbook.md";
    let base = "# Runbook\n\n1. one\n2. two\n3. three\n4. four\n5. five\n";
    write(&a, d, base, "2026-03-01T10:00:00Z", "nb-a");
    synced(&a);
    synced(&b);
    write(&a, d, &base.replace("1. one", "1. ONE"), "2026-03-01T11:00:00Z", "nb-a");
    write(&b, d, &base.replace("5. five", "5. FIVE"), "2026-03-01T11:00:01Z", "nb-b");
    synced(&a);
    let rec = synced(&b);
    assert_eq!(rec["conflicts"], serde_json::json!([]));
    assert_eq!(rec["fetched"], 1);
    assert_eq!(b.read(d), base.replace("1. one", "1. ONE").replace("5. five", "5. FIVE"));
    assert_eq!(b.git(&["log", "-1", "--format=%s"]).trim(), "task-ai(library):sync origin/main");
    let driver = b.git(&["config", "merge.kb-log.driver"]);
    assert!(driver.trim_end().ends_with("merge-log %O %A %B"), "{driver}");
    assert!(b.git(&["config", "merge.kb-derived.driver"]).contains("merge-derived %O %A %B %P"));
    assert_eq!(b.git(&["check-attr", "merge", ".library/.changelog"]).trim(), ".library/.changelog: merge: kb-log");
    assert_derived_match_rebuild(&b);
    synced(&a);
    assert_eq!(tree(&a), tree(&b));
}

#[test]
fn a_plain_git_pull_uses_the_drivers_and_the_next_sync_rebuilds() {
    let hub = Hub::new();
    let a = hub.first();
    let b = hub.clone();
    synced(&b);
    write(&a, "team-notes/a.md", "# A\n", "2026-03-01T10:00:00Z", "nb-a");
    synced(&a);
    write(&b, "team-notes/b.md", "# B\n", "2026-03-01T10:00:01Z", "nb-b");
    b.git(&["pull", "-q", "--no-rebase", "--no-edit"]);
    let log = b.read(".changelog");
    assert_eq!(log.lines().count(), 2, "{log}");
    assert!(!log.contains("<<<<<<<"));
    assert!(!b.read(".master-index.md").contains("team-notes/a.md"), "the derived driver keeps one side");
    let gitdir = b.root().join(".git");
    assert!(gitdir.join("kb-rebuild").exists());
    let rec = synced(&b);
    assert!(rec["rebuilt"].as_array().unwrap().contains(&serde_json::json!(".master-index.md")), "{rec}");
    assert!(b.read(".master-index.md").contains("team-notes/a.md"));
    assert!(!gitdir.join("kb-rebuild").exists());
    assert_derived_match_rebuild(&b);
}

/// Runs the merge driver binary the way git does and returns OURS after.
fn merge_log(dir: &Path, base: &str, ours: &str, theirs: &str) -> String {
    for (name, text) in [("base", base), ("ours", ours), ("theirs", theirs)] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let mut c = assert_cmd::Command::cargo_bin("kb-append").unwrap();
    c.current_dir(dir).args(["merge-log", "base", "ours", "theirs"]).assert().success().stdout("");
    std::fs::read_to_string(dir.join("ours")).unwrap()
}

#[test]
fn merge_log_is_the_same_whichever_side_is_ours_and_keeps_torn_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let line = |i: usize| {
        format!("{{\"ts\":\"2026-03-01T10:{:02}:{:02}Z\",\"event\":\"write\",\"path\":\"d{i}.md\"}}\n", i / 60, i % 60)
    };
    let base: String = (0..5).map(line).collect();
    let mut rng = Rng(42);
    for trial in 0..40 {
        // Three sides append interleaved subsets of 30 new lines, each in its own order.
        let mut sides: Vec<String> = Vec::new();
        for _ in 0..3 {
            let mut picked: Vec<usize> = (5..35).filter(|_| rng.below(2) == 0).collect();
            for i in (1..picked.len()).rev() {
                picked.swap(i, rng.below(i + 1));
            }
            sides.push(base.clone() + &picked.into_iter().map(line).collect::<String>());
        }
        if trial % 4 == 0 {
            sides[1].push_str("{\"ts\":\"2026-03-01T1"); // torn: a killed writer's half line
        }
        if trial < 6 {
            // the binary, as git runs it
            let xy = merge_log(tmp.path(), &base, &sides[0], &sides[1]);
            let yx = merge_log(tmp.path(), &base, &sides[1], &sides[0]);
            assert_eq!(xy, yx);
            if trial % 4 == 0 {
                assert!(
                    xy.contains("\n{\"ts\":\"2026-03-01T1\n") || xy.starts_with("{\"ts\":\"2026-03-01T1\n"),
                    "{xy}"
                );
            }
        }
        let m = |a: &str, b: &str| {
            String::from_utf8(kb::sync::merge_log::merge(base.as_bytes(), a.as_bytes(), b.as_bytes())).unwrap()
        };
        let (x, y, z) = (&sides[0], &sides[1], &sides[2]);
        let all = [m(&m(x, y), z), m(x, &m(y, z)), m(&m(z, x), y), m(z, &m(y, x)), m(&m(y, z), x)];
        for r in &all[1..] {
            assert_eq!(r, &all[0], "trial {trial}");
        }
        // Every line of every side is there exactly once, new lines in time order.
        let out: Vec<&str> = all[0].lines().collect();
        for s in [x, y, z] {
            for l in s.lines() {
                assert_eq!(out.iter().filter(|o| **o == l).count(), 1, "{l}");
            }
        }
        let new: Vec<&str> = out[5..].iter().copied().filter(|l| l.ends_with('}')).collect();
        let mut sorted = new.clone();
        sorted.sort();
        assert_eq!(new, sorted);
    }
}

#[test]
fn bad_inputs_fail_with_a_clear_error_and_leave_the_library_as_it_was() {
    // Not a git repository.
    let plain = Lib::new();
    let before = std::fs::read_dir(plain.dir()).unwrap().count();
    let out = sync(&plain).assert().code(2).get_output().stdout.clone();
    assert!(records(&out)[0]["message"].as_str().unwrap().contains("is not in a git repository"));
    assert_eq!(std::fs::read_dir(plain.dir()).unwrap().count(), before);

    let hub = Hub::new();
    let a = hub.first();
    let b = hub.clone();
    synced(&b);
    // b has a write made with --no-commit: pending work that must survive.
    b.cmd("kb-append")
        .args(["write", "team-notes/pending.md", "--content", "# Pending\n", "--no-commit"])
        .assert()
        .success();
    let snap = snapshot(&b);

    sync_fails(&b, &["--remote", "nope"], "unknown remote 'nope'");
    assert_eq!(snapshot(&b), snap);

    b.git(&["remote", "add", "dead", "/nonexistent/kb-hub.git"]);
    sync_fails(&b, &["--remote", "dead"], "cannot fetch from remote 'dead'");
    assert_eq!(snapshot(&b), snap);

    sync_fails(&b, &["--branch", "no-such-branch"], "branch 'no-such-branch' does not exist on remote 'origin'");
    assert_eq!(snapshot(&b), snap);

    // A dirty tracked file outside the library.
    std::fs::write(a.root().join("README.txt"), "base\n").unwrap();
    git(a.root(), &["add", "README.txt"]);
    git(a.root(), &["commit", "-qm", "readme"]);
    git(a.root(), &["push", "-q", "origin", "main"]);
    git(b.root(), &["pull", "-q", "--no-rebase", "--no-edit"]);
    let snap = snapshot(&b);
    std::fs::write(b.root().join("README.txt"), "local edit\n").unwrap();
    sync_fails(&b, &[], "uncommitted changes outside the library (README.txt)");
    std::fs::write(b.root().join("README.txt"), "base\n").unwrap();
    assert_eq!(snapshot(&b), snap);

    // A conflict in a file kb-tools does not own: the merge is aborted.
    std::fs::write(a.root().join("README.txt"), "from a\n").unwrap();
    git(a.root(), &["commit", "-qam", "a readme"]);
    write(&a, "team-notes/from-a.md", "# From a\n", "2026-03-01T10:00:00Z", "nb-a");
    synced(&a);
    std::fs::write(b.root().join("README.txt"), "from b\n").unwrap();
    git(b.root(), &["commit", "-qam", "b readme"]);
    let snap = snapshot(&b);
    sync_fails(&b, &["--merge-outside"], "merge conflict in 'README.txt', which kb-tools does not own");
    assert_eq!(snapshot(&b), snap);
    assert!(!b.root().join(".git/MERGE_HEAD").exists());
    // settle it by hand (b takes a's words), then sync works and keeps the pending write
    std::fs::write(b.root().join("README.txt"), "from a\n").unwrap();
    git(b.root(), &["commit", "-qam", "b takes a's readme"]);
    ok_records(sync(&b).arg("--merge-outside"));
    assert_eq!(b.read("team-notes/pending.md"), "# Pending\n");

    // A push refused for a reason other than non-fast-forward.
    write(&a, "team-notes/late.md", "# Late\n", "2026-03-01T12:00:00Z", "nb-a");
    synced(&a);
    let hook = hub.url().join("hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho 'library frozen for audit' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    write(&b, "team-notes/mine.md", "# Mine\n", "2026-03-01T12:00:01Z", "nb-b");
    let snap = snapshot(&b);
    sync_fails(&b, &[], "was refused");
    assert_eq!(snapshot(&b), snap);
}

#[test]
fn a_sync_killed_with_kill_9_is_completed_by_the_next_one() {
    // Kill after the fetch, when the merge begins, and when git has left it
    // to sync's settling: each the moment its marker appears in .git.
    let triggers = ["FETCH_HEAD", "kb-sync-merge", "MERGE_HEAD"];
    for (round, trigger) in triggers.into_iter().enumerate() {
        let hub = Hub::new();
        let a = hub.first();
        let b = hub.clone();
        synced(&b);
        let mut written = Vec::new();
        for i in 0..25 {
            let now = format!("2026-03-01T10:00:{i:02}Z");
            written.push(write(&a, &format!("team-notes/a-{i}.md"), &format!("# a {i}\n"), &now, "nb-a"));
        }
        synced(&a);
        for i in 0..5 {
            let now = format!("2026-03-01T11:00:{i:02}Z");
            written.push(write(&b, &format!("team-notes/b-{i}.md"), &format!("# b {i}\n"), &now, "nb-b"));
        }
        let before = head(&b);
        let marker = b.root().join(".git").join(trigger);
        let _ = std::fs::remove_file(&marker); // an earlier sync's FETCH_HEAD
                                               // Its own process group, so the test can wait for an orphaned git
                                               // child to finish, as after a real crash.
        let mut child = std::os::unix::process::CommandExt::process_group(
            b.std_cmd("kb-append").arg("sync").stdout(std::process::Stdio::null()),
            0,
        )
        .spawn()
        .unwrap();
        let group = format!("-{}", child.id());
        let t = std::time::Instant::now();
        let status = kill_when(&mut child, || true, || marker.exists() || t.elapsed().as_secs() >= 60);
        // The kill landed mid-sync: the marker was there and sync had not exited.
        assert!(marker.exists(), "round {round}: sync never reached {trigger}");
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "round {round}: sync ended ({status}) before the kill at {trigger}"
        );
        while std::process::Command::new("kill").args(["-0", "--", &group]).status().unwrap().success() {
            std::thread::yield_now();
        }
        let after_kill = head(&b);
        let interrupted = b.root().join(".git/MERGE_HEAD").exists();
        eprintln!("kill at {trigger}: merge in progress {interrupted}, HEAD moved {}", after_kill != before);
        assert!(
            after_kill == before || b.git(&["merge-base", "--is-ancestor", &before, &after_kill]).is_empty(),
            "round {round}: HEAD moved somewhere unexpected"
        );
        synced(&b);
        synced(&a);
        assert_eq!(tree(&a), tree(&b), "round {round}");
        let log = b.read(".changelog");
        for w in &written {
            let needle = format!(
                "{{\"ts\":\"{}\",\"event\":\"write\",\"path\":\"{}\",",
                w["ts"].as_str().unwrap(),
                w["path"].as_str().unwrap()
            );
            assert_eq!(log.lines().filter(|l| l.starts_with(&needle)).count(), 1, "round {round}: {needle}");
        }
        assert!(!b.root().join(".git/MERGE_HEAD").exists());
        assert_eq!(b.git(&["status", "--porcelain", "--untracked-files=all"]), "", "round {round}");
        assert_derived_match_rebuild(&b);
    }
}

/// The README session: a bare remote, two clones, a write on each, `just
/// sync` on both (the recipe from docs/sync.just on top of the justfile).
#[test]
fn just_sync_recipe_converges_two_clones() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let hub = Hub::new();
    let justfile = repo.join("justfile");
    let just = |lib: &Lib, args: &[&str]| {
        let mut c = std::process::Command::new("just");
        crate::util::isolate(&mut c, lib.root());
        c.env("KB_BIN_DIR", crate::recipes::bin_dir()).arg("--justfile").arg(&justfile);
        c.arg("--working-directory").arg(lib.root()).args(args);
        assert_cmd::Command::from_std(c)
    };
    let laptop = hub.first();
    let server = hub.clone();
    just(&server, &["sync"]).assert().success();
    write(
        &laptop,
        ".memory/.references/pgbouncer-v1.md",
        "---\ntopic: pgbouncer\n---\n# PgBouncer\n",
        "2026-03-02T09:00:00Z",
        "nb-laptop",
    );
    write(&server, "team-notes/pool.md", "# Pool sizing\n", "2026-03-02T09:05:00Z", "nb-ci");
    just(&server, &["sync"]).assert().success();
    let recs = ok_records(&mut just(&laptop, &["sync"]));
    let rec = &recs[0];
    assert_eq!((rec["fetched"].as_u64(), rec["pushed"].as_bool()), (Some(1), Some(true)), "{rec}");
    just(&server, &["sync"]).assert().success();
    assert_eq!(tree(&laptop), tree(&server));
    assert_eq!(server.read(".changelog").lines().count(), 2);
    assert!(server.read(".master-index.md").contains(".memory/.references/pgbouncer-v1.md"));
}

/// a sync aborted at each named step (`KB_CRASH_AT`), with the
/// stale git state a killed git leaves (`index.lock`, a merge driver's
/// `.merge_file_*`) planted on top, is finished by the next sync: both
/// clones converge, every write is logged once, nothing is left behind.
#[test]
fn a_sync_crashed_at_every_step_is_finished_by_the_next_one() {
    for &step in kb::fs::crash::STEPS.iter().filter(|s| s.pipeline() == "sync") {
        let what = step.name();
        let hub = Hub::new();
        let a = hub.first();
        let b = hub.clone();
        synced(&b);
        let mut written = Vec::new();
        for i in 0..3 {
            let now = format!("2026-03-01T10:00:{i:02}Z");
            written.push(write(&a, &format!("team-notes/a-{i}.md"), &format!("# a {i}\n"), &now, "nb-a"));
        }
        synced(&a);
        for i in 0..2 {
            let now = format!("2026-03-01T11:00:{i:02}Z");
            written.push(write(&b, &format!("team-notes/b-{i}.md"), &format!("# b {i}\n"), &now, "nb-b"));
        }
        let out = b.cmd("kb-append").arg("sync").env(kb::fs::crash::VAR, format!("{what}:1")).output().unwrap();
        assert!(out.status.code().is_none(), "{what}: sync was not aborted");
        std::fs::write(b.root().join(".git/index.lock"), "").unwrap();
        std::fs::write(b.root().join(".merge_file_a1b2c3"), "leftover").unwrap();
        let out = sync(&b).assert().success().get_output().clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("index.lock") && stderr.contains(".merge_file_a1b2c3"), "{what}: {stderr}");
        synced(&a);
        assert_eq!(tree(&a), tree(&b), "{what}");
        for lib in [&a, &b] {
            let log = lib.read(".changelog");
            for w in &written {
                let needle = format!(
                    "{{\"ts\":\"{}\",\"event\":\"write\",\"path\":\"{}\",",
                    w["ts"].as_str().unwrap(),
                    w["path"].as_str().unwrap()
                );
                assert_eq!(log.lines().filter(|l| l.starts_with(&needle)).count(), 1, "{what}: {needle}");
            }
            assert!(!lib.root().join(".git/MERGE_HEAD").exists(), "{what}");
            assert!(!lib.root().join(".git/index.lock").exists(), "{what}");
            assert!(!lib.root().join(".merge_file_a1b2c3").exists(), "{what}");
            crate::util::assert_recovered(lib, what);
        }
    }
}

/// a document only ever appended to merges as the union of the
/// appends: 4 clones appending 10 lines each to one file and syncing end
/// with all 40 lines, the same bytes everywhere, and nothing in
/// `.conflicts/`.
#[test]
fn appends_from_four_clones_merge_as_a_union() {
    let hub = Hub::new();
    let first = hub.first();
    let log = "team-notes/decisions.md";
    write(&first, log, "# Decisions\n\n", "2026-03-01T09:00:00Z", "nb-0");
    synced(&first);
    let mut clones = vec![first];
    for _ in 1..4 {
        let c = hub.clone();
        synced(&c);
        clones.push(c);
    }
    for (k, c) in clones.iter().enumerate() {
        for i in 0..10 {
            let recs = ok_records(
                c.cmd("kb-append")
                    .args(["write", log, "--append", "--notebook", &format!("nb-{k}"), "--content"])
                    .arg(format!("- clone {k} line {i}\n"))
                    .env("KB_NOW", format!("2026-03-01T10:{k:02}:{i:02}Z")),
            );
            assert_eq!(recs[0]["action"], "appended");
        }
    }
    // Sync in a scrambled order, then once more each so all see the end.
    for k in [2, 0, 3, 1, 2, 0, 3, 1] {
        synced(&clones[k]);
    }
    let want = clones[0].read(log);
    for (k, c) in clones.iter().enumerate() {
        let text = c.read(log);
        assert_eq!(text, want, "clone {k} differs");
        assert!(
            !c.path(".conflicts").exists() || std::fs::read_dir(c.path(".conflicts")).unwrap().next().is_none(),
            "clone {k}: conflict copies"
        );
        assert_derived_match_rebuild(c);
    }
    for k in 0..4 {
        for i in 0..10 {
            let line = format!("- clone {k} line {i}");
            assert_eq!(want.lines().filter(|l| *l == line).count(), 1, "{line} in:\n{want}");
        }
    }
    assert!(want.starts_with("# Decisions\n\n"));
}
