//! Crash safety (issue 22): `KB_CRASH_AT=<step>:<n>` aborts a writer at
//! every named step of the write and compaction pipelines; the next writer
//! must leave no torn file, a changelog line for every file that landed
//! (and none for one that did not), derived files equal to a full rebuild,
//! everything committed, and `git fsck` clean. Plus a random kill -9 loop.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::Stdio;

use kb::fs::crash::{Step, STEPS};
use serde_json::{json, Value};

use crate::append::assert_matches_rebuild;
use crate::util::{records, Lib};

fn doc(topic: &str, body: &str) -> String {
    format!("---\ntopic: {topic}\nkeywords: [crash, {topic}]\n---\n# {topic}\n\n{body}\n")
}

fn sha(text: &str) -> String {
    kb::doc::digest::sha256_hex(text.as_bytes())
}

/// A git workspace with a library holding `old` docs, all committed.
fn seeded(n: usize) -> Lib {
    let lib = Lib::new();
    lib.git_init();
    let mut seed = String::new();
    for i in 0..n {
        seed.push_str(
            &json!({"path": format!("notes/d{i:02}.md"), "content": doc(&format!("d{i:02}"), "old")}).to_string(),
        );
        seed.push('\n');
    }
    lib.cmd("kb-append").args(["batch", "--no-commit"]).write_stdin(seed).assert().success();
    lib.git(&["add", "-A"]);
    lib.git(&["commit", "-q", "-m", "seed"]);
    lib
}

/// The crash batch: overwrite d00..d03, append twice to d04, create n00,
/// n01. Returns the requests and each path's final new content, in the
/// order the batch puts files in place.
fn crash_batch() -> (String, Vec<(String, String, String)>) {
    let mut reqs = Vec::new();
    let mut files = Vec::new();
    for i in 0..4 {
        let path = format!("notes/d{i:02}.md");
        let new = doc(&format!("d{i:02}"), "new");
        reqs.push(json!({"path": path, "content": new}));
        files.push((path, doc(&format!("d{i:02}"), "old"), new));
    }
    let d4 = "notes/d04.md".to_string();
    let old4 = doc("d04", "old");
    reqs.push(json!({"path": d4, "content": "- first\n", "mode": "append"}));
    reqs.push(json!({"path": d4, "content": "- second\n", "mode": "append"}));
    files.push((d4, old4.clone(), format!("{old4}- first\n- second\n")));
    for i in 0..2 {
        let path = format!("notes/n{i:02}.md");
        let new = doc(&format!("n{i:02}"), "created");
        reqs.push(json!({"path": path, "content": new}));
        files.push((path, String::new(), new));
    }
    let text = reqs.iter().map(|r| format!("{r}\n")).collect();
    (text, files)
}

/// Runs `kb-append batch` (committing) armed to crash; asserts it aborted.
fn crash(lib: &Lib, at: &str, input: &str) {
    let out =
        lib.cmd("kb-append").arg("batch").env(kb::fs::crash::VAR, at).write_stdin(input.to_string()).output().unwrap();
    assert!(
        out.status.code().is_none(),
        "{at}: the writer was not aborted: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The write events in the changelog, by path, as (action, sha256).
fn events(lib: &Lib) -> BTreeMap<String, Vec<String>> {
    let log = kb::library::changelog::parse(&lib.read(".changelog"));
    assert!(log.bad.is_empty() && !log.torn, "{:?}", log.bad);
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (_, e) in log.events {
        out.entry(e.path.clone()).or_default().push(e.sha256.clone().unwrap_or_default());
    }
    out
}

/// Everything a crash must leave true once the next writer ran.
#[track_caller]
fn assert_consistent(lib: &Lib, files: &[(String, String, String)], landed: usize, what: &str) {
    let ev = events(lib);
    for (k, (path, old, new)) in files.iter().enumerate() {
        let now = std::fs::read_to_string(lib.path(path)).unwrap_or_default();
        assert!(now == *old || now == *new, "{what}: {path} is torn: {now:?}");
        let want_new = k < landed;
        assert_eq!(now == *new, want_new, "{what}: {path} landed = {}, expected {want_new}", now == *new);
        let logged = ev.get(path).is_some_and(|v| v.contains(&sha(new)));
        assert_eq!(logged, want_new, "{what}: {path}: changelog line present = {logged}, landed = {want_new}");
    }
    // One line per request: d04 was appended twice, each line once.
    let d04 = ev.get("notes/d04.md").map_or(0, Vec::len);
    assert_eq!(d04, if landed >= 5 { 3 } else { 1 }, "{what}: changelog lines of notes/d04.md");
    assert_matches_rebuild(lib);
    let status = lib.git(&["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(status, "", "{what}: uncommitted after recovery");
    lib.git(&["fsck", "--no-progress"]);
    assert!(!lib.path(".journal").exists(), "{what}: journal left");
    let temps: Vec<String> = std::fs::read_dir(lib.path("notes"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp."))
        .collect();
    assert!(temps.is_empty(), "{what}: temp files left: {temps:?}");
}

/// How many files of the crash batch are in place when a crash hits `step`
/// for the n-th time.
fn landed_at(step: Step, n: usize, total: usize) -> usize {
    match step {
        Step::WriteTemp | Step::Journal => 0,
        Step::Rename => n,
        _ => total,
    }
}

#[test]
fn a_crash_at_every_write_step_is_recovered_by_the_next_writer() {
    let (input, files) = crash_batch();
    for &step in STEPS.iter().filter(|s| s.pipeline() == "write") {
        let counts: &[usize] = match step {
            Step::WriteTemp | Step::Rename => &[1, 3, files.len()],
            _ => &[1],
        };
        for &n in counts {
            let what = format!("{}:{n}", step.name());
            let lib = seeded(5);
            crash(&lib, &what, &input);
            let journal = lib.path(".journal").exists();
            assert_eq!(journal, !matches!(step, Step::WriteTemp), "{what}: journal present after the crash");
            if journal {
                crate::util::conforms(&serde_json::from_str(&lib.read(".journal")).unwrap());
            }
            // The next writer recovers, then does its own write.
            let out = lib
                .cmd("kb-append")
                .args(["write", "notes/after.md", "--content", "# after\n"])
                .assert()
                .success()
                .get_output()
                .stdout
                .clone();
            let recs = records(&out);
            let recovered: Vec<&Value> = recs.iter().filter(|r| r["record"] == "recovered").collect();
            assert_eq!(recovered.len(), usize::from(journal), "{what}: {recs:?}");
            let landed = landed_at(step, n, files.len());
            if let Some(r) = recovered.first() {
                assert_eq!(r["landed"].as_array().unwrap().len(), landed, "{what}: {r}");
                assert_eq!(r["rolled_back"].as_array().unwrap().len(), files.len() - landed, "{what}: {r}");
            }
            // Temp files of a crash before the journal are the sweep's.
            lib.cmd("kb-lock").arg("sweep").assert().success();
            assert_consistent(&lib, &files, landed, &what);
            // seed, the interrupted batch's one commit when files landed, after.
            let commits = lib.git(&["rev-list", "--count", "HEAD"]);
            assert_eq!(commits.trim(), (2 + usize::from(landed > 0)).to_string(), "{what}: commits");
        }
    }
}

#[test]
fn kb_lock_sweep_recovers_an_interrupted_batch() {
    let (input, files) = crash_batch();
    let lib = seeded(5);
    crash(&lib, "rename:2", &input);
    let out = lib.cmd("kb-lock").arg("sweep").assert().success().get_output().stdout.clone();
    let recs = records(&out);
    let r = recs.iter().find(|r| r["record"] == "recovered").expect("recovered record");
    assert_eq!(r["landed"], json!(["notes/d00.md", "notes/d01.md"]));
    assert_eq!(r["committed"], json!(true));
    assert_consistent(&lib, &files, 2, "sweep");
    // Nothing is left to recover.
    let out = lib.cmd("kb-lock").arg("sweep").assert().success().get_output().stdout.clone();
    assert!(records(&out).is_empty());
}

#[test]
fn a_crash_at_every_compaction_step_loses_and_duplicates_nothing() {
    for &step in STEPS.iter().filter(|s| s.pipeline() == "compact") {
        let what = step.name();
        let lib = Lib::new();
        lib.git_init();
        for (i, now) in ["2025-10-03T10:00:00Z", "2025-11-04T10:00:00Z", "2026-02-27T10:00:00Z"].iter().enumerate() {
            lib.cmd("kb-append")
                .args(["write", &format!("notes/c{i}.md"), "--content", &doc(&format!("c{i}"), "x"), "--no-commit"])
                .env("KB_NOW", now)
                .assert()
                .success();
        }
        lib.git(&["add", "-A"]);
        lib.git(&["commit", "-q", "-m", "seed"]);
        let before: Vec<String> = lib.read(".changelog").lines().map(str::to_string).collect();
        let out = lib
            .cmd("kb-append")
            .args(["compact", "--older-than", "30d"])
            .env(kb::fs::crash::VAR, format!("{what}:1"))
            .output()
            .unwrap();
        assert!(out.status.code().is_none(), "{what}: not aborted");
        lib.cmd("kb-append").args(["compact", "--older-than", "30d"]).assert().success();
        let mut after: Vec<String> = Vec::new();
        for month in ["2025-10", "2025-11"] {
            after.extend(lib.read(&format!(".changelog-archive/{month}.md")).lines().map(str::to_string));
        }
        after.extend(lib.read(".changelog").lines().filter(|l| !l.starts_with('#')).map(str::to_string));
        let mut want = before.clone();
        want.sort();
        after.sort();
        assert_eq!(after, want, "{what}: every line exactly once across log and archives");
        assert_eq!(lib.git(&["status", "--porcelain"]), "", "{what}: uncommitted");
        lib.git(&["fsck", "--no-progress"]);
    }
}

/// A seeded random kill -9 loop over a committing batch: after each kill
/// and the next writer, the same invariants hold. At least one kill must
/// land while the journal existed (mid-batch), or the loop proved nothing.
#[test]
fn random_kill_nine_during_committing_batches() {
    let n = 120;
    let lib = seeded(0);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut mid = 0;
    let batch = |version: usize| {
        let mut batch = String::new();
        for i in 0..n {
            let content = doc(&format!("k{i:03}"), &format!("version {version} {}", "v".repeat(i * 7)));
            batch.push_str(&json!({"path": format!("notes/k{i:03}.md"), "content": content}).to_string());
            batch.push('\n');
        }
        batch
    };
    // One whole batch first: how long one takes bounds the kill delays.
    let t = std::time::Instant::now();
    lib.cmd("kb-append").arg("batch").write_stdin(batch(0)).assert().success();
    let whole = t.elapsed().as_millis() as u64 + 1;
    for round in 0..12 {
        let batch = batch(round + 1);
        let mut child = lib
            .std_cmd("kb-append")
            .arg("batch")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(batch.as_bytes()).unwrap();
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        // Poll (not sleep-as-sync): kill once the batch is visibly under
        // way, at a random further delay.
        let delay = std::time::Duration::from_millis(rng % whole);
        let t = std::time::Instant::now();
        while t.elapsed() < delay && child.try_wait().unwrap().is_none() {
            std::thread::yield_now();
        }
        let _ = child.kill();
        let _ = child.wait();
        if lib.path(".journal").exists() {
            mid += 1;
        }
        lib.cmd("kb-append")
            .args(["write", "notes/after.md", "--content", &format!("# after {round}\n")])
            .assert()
            .success();
        lib.cmd("kb-lock").arg("sweep").assert().success();
        // Every k file is some whole version, and its current bytes are logged.
        let ev = events(&lib);
        for i in 0..n {
            let path = format!("notes/k{i:03}.md");
            let Ok(now) = std::fs::read_to_string(lib.path(&path)) else { continue };
            assert!(now.starts_with("---\ntopic: k") && now.ends_with("\n"), "round {round}: {path} torn");
            assert!(
                ev.get(&path).is_some_and(|v| v.contains(&sha(&now))),
                "round {round}: {path} has no changelog line for its bytes"
            );
        }
        assert_matches_rebuild(&lib);
        assert_eq!(lib.git(&["status", "--porcelain", "--untracked-files=all"]), "", "round {round}");
        lib.git(&["fsck", "--no-progress"]);
    }
    eprintln!("random_kill_nine: {mid} of 12 kills landed while the journal existed");
    assert!(mid > 0, "no kill landed mid-batch; the loop proved nothing");
}

/// A `.git/index.lock` no live git holds (a killed commit's) is removed by
/// the next committing writer, with a `cleared` record, and its commit
/// lands; `kb-lock sweep` does the same without writing.
#[test]
fn a_stale_index_lock_is_cleared_by_the_next_writer_and_by_sweep() {
    let lib = seeded(1);
    let lock = lib.root().join(".git/index.lock");
    std::fs::write(&lock, "").unwrap();
    let out = lib
        .cmd("kb-append")
        .args(["write", "notes/after.md", "--content", "# after\n"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let recs = records(&out);
    assert_eq!(recs[0]["record"], "cleared", "{recs:?}");
    assert!(recs[0]["path"].as_str().unwrap().ends_with(".git/index.lock"));
    assert_eq!(recs[1]["record"], "write");
    assert!(!lock.exists());
    assert_eq!(lib.git(&["rev-list", "--count", "HEAD"]).trim(), "2");
    assert_eq!(lib.git(&["status", "--porcelain"]), "");
    std::fs::write(&lock, "").unwrap();
    std::fs::write(lib.root().join(".merge_file_x1"), "x").unwrap();
    let out = lib.cmd("kb-lock").arg("sweep").assert().success().get_output().stdout.clone();
    let paths: Vec<String> = records(&out).iter().map(|r| r["path"].as_str().unwrap().to_string()).collect();
    assert_eq!(paths.len(), 2, "{paths:?}");
    assert!(!lock.exists() && !lib.root().join(".merge_file_x1").exists());
}

/// An archive that cannot be read (here a directory where the month's
/// file should be) or is not UTF-8 is an error (exit 2) for compaction and
/// for the relation history, never an empty file: compaction would append
/// its lines again, kb-relate would drop their edges.
#[test]
fn an_unreadable_or_non_utf8_archive_is_refused_not_read_as_empty() {
    let old = json!({"ts": "2025-10-02T00:00:00Z", "event": "referenced", "path": "notes/a.md", "notebook": "nb"});
    let old2 = json!({"ts": "2025-11-02T00:00:00Z", "event": "referenced", "path": "notes/a.md", "notebook": "nb"});
    for bad in ["non-utf8", "unreadable"] {
        let lib = Lib::new();
        lib.put("notes/a.md", &doc("a", "x"));
        lib.put(".changelog", &format!("{old}\n{old2}\n"));
        std::fs::create_dir_all(lib.path(".changelog-archive")).unwrap();
        match bad {
            "non-utf8" => {
                std::fs::write(lib.path(".changelog-archive/2025-10.md"), b"{\"ts\":\"2025-10-01\xff\"}\n").unwrap()
            }
            _ => std::fs::create_dir(lib.path(".changelog-archive/2025-10.md")).unwrap(),
        }
        let before = lib.read(".changelog");
        let out = lib.cmd("kb-append").args(["compact", "--no-commit"]).assert().code(2).get_output().clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(".changelog-archive/2025-10.md"), "{bad}: {stderr}");
        assert_eq!(lib.read(".changelog"), before, "{bad}: the log changed");
        assert!(!lib.path(".changelog-archive/2025-11.md").exists(), "{bad}: another month was archived");
        let out = lib.cmd("kb-relate").arg("rebuild").assert().code(2).get_output().clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(".changelog-archive/2025-10.md"), "{bad}: {stderr}");
    }
}

/// `kb-append event` killed between its changelog line and its relation
/// edge: the next writer finishes it (the line once, relations equal to a
/// full rebuild).
#[test]
fn an_event_killed_after_its_changelog_line_is_finished() {
    let lib = seeded(1);
    let out = lib
        .cmd("kb-append")
        .args(["event", "referenced", "notes/d00.md", "--notebook", "nb-9"])
        .env(kb::fs::crash::VAR, "changelog:1")
        .output()
        .unwrap();
    assert!(out.status.code().is_none(), "not aborted");
    assert!(lib.path(".journal").exists());
    let out = lib
        .cmd("kb-append")
        .args(["write", "notes/after.md", "--content", "# after\n", "--no-commit"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let recs = records(&out);
    assert_eq!(recs[0]["record"], "recovered", "{recs:?}");
    assert_eq!(recs[0]["changelog_added"], 0);
    let log = lib.read(".changelog");
    assert_eq!(log.lines().filter(|l| l.contains("\"event\":\"referenced\"")).count(), 1);
    assert!(lib.read(".relations.jsonl").contains("nb-9"));
    assert_matches_rebuild(&lib);
}
