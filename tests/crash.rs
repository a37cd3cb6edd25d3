//! Crash safety: `KB_CRASH_AT=<step>:<n>` aborts a writer at
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
use crate::util::{assert_recovered, ok_records, records, sha256, Lib};

fn doc(topic: &str, body: &str) -> String {
    format!("---\ntopic: {topic}\nkeywords: [crash, {topic}]\n---\n# {topic}\n\n{body}\n")
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
        let logged = ev.get(path).is_some_and(|v| v.contains(&sha256(new.as_bytes())));
        assert_eq!(logged, want_new, "{what}: {path}: changelog line present = {logged}, landed = {want_new}");
    }
    // One line per request: d04 was appended twice, each line once.
    let d04 = ev.get("notes/d04.md").map_or(0, Vec::len);
    assert_eq!(d04, if landed >= 5 { 3 } else { 1 }, "{what}: changelog lines of notes/d04.md");
    assert_recovered(lib, what);
}

/// The next writer after a crash: a committing write of its own, which
/// recovers first. Returns its records.
fn next_writer(lib: &Lib, round: impl std::fmt::Display) -> Vec<Value> {
    ok_records(lib.cmd("kb-append").args(["write", "notes/after.md", "--content", &format!("# after {round}\n")]))
}

/// How many files of the crash batch are in place once the next writer
/// recovered a crash at `step`: none before its journal; from the journal
/// on, which holds every new text, all of them (rolled forward).
fn landed_at(step: Step, total: usize) -> usize {
    match step {
        Step::WriteTemp => 0,
        _ => total,
    }
}

#[test]
fn a_crash_at_every_write_step_is_recovered_by_the_next_writer() {
    let (input, files) = crash_batch();
    for &step in STEPS.iter().filter(|s| matches!(s.pipeline(), "write" | "batch")) {
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
            let recs = next_writer(&lib, &what);
            let recovered: Vec<&Value> = recs.iter().filter(|r| r["record"] == "recovered").collect();
            assert_eq!(recovered.len(), usize::from(journal), "{what}: {recs:?}");
            let landed = landed_at(step, files.len());
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
    let recs = ok_records(lib.cmd("kb-lock").arg("sweep"));
    let r = recs.iter().find(|r| r["record"] == "recovered").expect("recovered record");
    let all: Vec<&str> = files.iter().map(|(p, _, _)| p.as_str()).collect();
    assert_eq!(r["landed"], json!(all));
    assert_eq!(r["rolled_back"], json!([]));
    assert_eq!(r["committed"], json!(true));
    assert_consistent(&lib, &files, files.len(), "sweep");
    // Nothing is left to recover.
    assert!(ok_records(lib.cmd("kb-lock").arg("sweep")).is_empty());
}

/// Kills the crash batch after its renames (before the checkpoint) and
/// returns the journal it left, read back.
fn killed_before_the_checkpoint(lib: &Lib, input: &str) -> Value {
    crash(lib, "renamed:1", input);
    let j: Value = serde_json::from_str(&lib.read(".journal")).unwrap();
    assert!(j["files"].as_array().unwrap().iter().all(|f| f["replay"]["text"].is_string()), "{j}");
    j
}

/// A power cut between the renames and the checkpoint: files renamed in
/// unsynced may come back empty, cut short or missing. The journal holds
/// every new text, so recovery in the next boot writes each file that
/// lacks its planned bytes, and each gets its one changelog line.
/// (Simulated: the files damaged as such a cut leaves them, and the
/// journal's boot made another one.)
#[test]
fn after_a_power_cut_before_the_checkpoint_the_journal_replays_every_file() {
    let (input, files) = crash_batch();
    let lib = seeded(5);
    let mut j = killed_before_the_checkpoint(&lib, &input);
    assert!(j["boot"].is_string(), "{j}");
    j["boot"] = json!("00000000-0000-0000-0000-000000000000");
    std::fs::write(lib.path(".journal"), format!("{j}\n")).unwrap();
    std::fs::write(lib.path(&files[0].0), "").unwrap();
    std::fs::write(lib.path(&files[1].0), &files[1].2[..10]).unwrap();
    std::fs::remove_file(lib.path(&files[6].0)).unwrap();
    let recs = next_writer(&lib, "power cut");
    let r = recs.iter().find(|r| r["record"] == "recovered").expect("recovered record");
    assert_eq!(r["rolled_back"], json!([]), "{r}");
    assert_consistent(&lib, &files, files.len(), "power cut");
}

/// In the boot the batch ran in, a renamed file is never torn: one that
/// holds neither its old nor its planned bytes was changed by someone
/// after the kill, and keeps that change, with no line for the batch's.
#[test]
fn in_the_same_boot_a_file_changed_after_the_kill_keeps_the_change() {
    let (input, files) = crash_batch();
    let lib = seeded(5);
    killed_before_the_checkpoint(&lib, &input);
    let mine = doc("d00", "edited by hand after the kill");
    std::fs::write(lib.path(&files[0].0), &mine).unwrap();
    let recs = next_writer(&lib, "hand edit");
    let r = recs.iter().find(|r| r["record"] == "recovered").expect("recovered record");
    assert_eq!(r["rolled_back"], json!([files[0].0]), "{r}");
    assert_eq!(lib.read(&files[0].0), mine);
    let ev = events(&lib);
    assert!(!ev[&files[0].0].contains(&sha256(files[0].2.as_bytes())), "a line for bytes that are not there");
    for (path, _, new) in &files[1..] {
        assert_eq!(&lib.read(path), new, "{path}");
    }
}

/// A person edits a file of a killed batch before anyone recovers it, at
/// every step from the journal on, in the batch's boot and after a
/// reboot (a power cut): `kb-lock sweep` writes no journal text over the
/// edit. The file keeps the person's bytes, is reported (rolled back,
/// named on stderr) and gets no line for the batch's text; a file a power
/// cut left empty is still written from the journal, and no file is torn.
#[test]
fn a_hand_edit_after_the_kill_survives_recovery_at_every_step() {
    let (input, files) = crash_batch();
    let steps = STEPS.iter().filter(|s| matches!(s.pipeline(), "write" | "batch") && **s != Step::WriteTemp);
    for &step in steps {
        let counts: &[usize] = if step == Step::Rename { &[1, 3] } else { &[1] };
        for (&n, rebooted) in counts.iter().flat_map(|n| [(n, false), (n, true)]) {
            let what = format!("{}:{n}{}", step.name(), if rebooted { " then a reboot" } else { "" });
            let lib = seeded(5);
            crash(&lib, &format!("{}:{n}", step.name()), &input);
            let (edited, last) = (&files[1].0, &files[6]);
            let mine = doc("d01", "edited by hand after the kill");
            std::fs::write(lib.path(edited), &mine).unwrap();
            let emptied = rebooted && lib.path(&last.0).exists();
            if rebooted {
                let mut j: Value = serde_json::from_str(&lib.read(".journal")).unwrap();
                j["boot"] = json!("00000000-0000-0000-0000-000000000000");
                std::fs::write(lib.path(".journal"), format!("{j}\n")).unwrap();
                if emptied {
                    std::fs::write(lib.path(&last.0), "").unwrap();
                }
            }
            let out = lib.cmd("kb-lock").arg("sweep").assert().success().get_output().clone();
            let r = records(&out.stdout).into_iter().find(|r| r["record"] == "recovered").expect("recovered record");
            assert_eq!(lib.read(edited), mine, "{what}: the hand edit was overwritten");
            assert!(r["rolled_back"].as_array().unwrap().contains(&json!(edited)), "{what}: {r}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains(&format!("{edited} was changed")), "{what}: not reported: {stderr}");
            let ev = events(&lib);
            for (path, old, new) in &files {
                let now = std::fs::read_to_string(lib.path(path)).unwrap_or_default();
                let logged = ev.get(path).is_some_and(|v| v.contains(&sha256(new.as_bytes())));
                if path == edited {
                    // The killed batch's own line, when it was appended
                    // before the kill, stays: its text did land first.
                    let appended = !matches!(step, Step::Journal | Step::Rename | Step::Renamed);
                    assert_eq!(logged, appended, "{what}: {path}: a line for the batch's text");
                } else {
                    assert!(now == *old || now == *new, "{what}: {path} is torn: {now:?}");
                    assert_eq!(logged, now == *new, "{what}: {path}: changelog line present = {logged}");
                }
            }
            if emptied {
                assert_eq!(lib.read(&last.0), last.2, "{what}: the emptied file was not written from the journal");
            }
            assert_matches_rebuild(&lib);
            assert!(!lib.path(".journal").exists(), "{what}: journal left");
            // The person's edit is theirs to commit; everything else is committed.
            let status = lib.git(&["status", "--porcelain", "--untracked-files=all"]);
            assert!(status.lines().all(|l| l.ends_with(edited.as_str())), "{what}: uncommitted: {status}");
        }
    }
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
        assert_recovered(&lib, what);
    }
}

/// A seeded random kill -9 loop over a committing batch: after each kill
/// and the next writer, the same invariants hold. Even rounds kill at a
/// random instant from the start (temp files, journal, renames, logs,
/// commit); odd rounds wait until the journal exists, then a random
/// further delay, so kills land mid-batch whatever the machine's speed.
/// Each kill is classified from the disk before recovery, and the test
/// asserts that kills landed between the first rename and the commit
/// (the journal present and at least one file already new), or the loop
/// proved nothing. `KB_KILL_SEED` replays a run (the seed is printed).
#[test]
fn random_kill_nine_during_committing_batches() {
    let n = 120;
    let rounds = 16;
    let seed: u64 = std::env::var("KB_KILL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x9e37_79b9_7f4a_7c15);
    eprintln!("random_kill_nine: KB_KILL_SEED={seed}");
    let lib = seeded(0);
    let mut rng = crate::util::Rng(seed);
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
    let whole = t.elapsed().as_micros() as u64 + 1;
    // (before the journal, mid-batch: journal and some new files, journal but none renamed yet, after the batch)
    let (mut early, mut mid, mut journal_only, mut late) = (0, 0, 0, 0);
    for round in 0..rounds {
        let version = round + 1;
        let batch = batch(version);
        let mut child = lib
            .std_cmd("kb-append")
            .arg("batch")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(batch.as_bytes()).unwrap();
        // Poll, never sleep-as-sync: odd rounds first wait for the journal.
        if round % 2 == 1 {
            while !lib.path(".journal").exists() && child.try_wait().unwrap().is_none() {
                std::thread::yield_now();
            }
        }
        let delay = std::time::Duration::from_micros(rng.next() % if round % 2 == 1 { whole / 2 } else { whole });
        let t = std::time::Instant::now();
        while t.elapsed() < delay && child.try_wait().unwrap().is_none() {
            std::thread::yield_now();
        }
        let _ = child.kill();
        let _ = child.wait();
        let marker = format!("version {version} ");
        let renamed = (0..n)
            .filter(|i| {
                std::fs::read_to_string(lib.path(&format!("notes/k{i:03}.md"))).is_ok_and(|t| t.contains(&marker))
            })
            .count();
        match (lib.path(".journal").exists(), renamed) {
            (true, 0) => journal_only += 1,
            (true, _) => mid += 1,
            (false, 0) => early += 1,
            (false, _) => late += 1,
        }
        next_writer(&lib, round);
        lib.cmd("kb-lock").arg("sweep").assert().success();
        // Every k file is some whole version, and its current bytes are logged.
        let ev = events(&lib);
        for i in 0..n {
            let path = format!("notes/k{i:03}.md");
            let now = lib.read(&path);
            assert!(now.starts_with("---\ntopic: k") && now.ends_with('\n'), "round {round}: {path} torn");
            assert!(
                ev.get(&path).is_some_and(|v| v.contains(&sha256(now.as_bytes()))),
                "round {round}: {path} has no changelog line for its bytes"
            );
        }
        assert_recovered(&lib, &format!("round {round}"));
    }
    eprintln!(
        "random_kill_nine: of {rounds} kills, {early} before the journal, {journal_only} with the journal before any rename, {mid} between the first rename and the commit's end, {late} after the batch"
    );
    assert_eq!(early + journal_only + mid + late, rounds);
    assert!(mid >= 2, "only {mid} of {rounds} kills landed between the first rename and the commit (seed {seed})");
}

/// A `.git/index.lock` no live git holds (a killed commit's) is removed by
/// the next committing writer, with a `cleared` record, and its commit
/// lands; `kb-lock sweep` does the same without writing.
#[test]
fn a_stale_index_lock_is_cleared_by_the_next_writer_and_by_sweep() {
    let lib = seeded(1);
    let lock = lib.root().join(".git/index.lock");
    std::fs::write(&lock, "").unwrap();
    let recs = next_writer(&lib, "");
    assert_eq!(recs[0]["record"], "cleared", "{recs:?}");
    assert!(recs[0]["path"].as_str().unwrap().ends_with(".git/index.lock"));
    assert_eq!(recs[1]["record"], "write");
    assert!(!lock.exists());
    assert_eq!(lib.git(&["rev-list", "--count", "HEAD"]).trim(), "2");
    assert_eq!(lib.git(&["status", "--porcelain"]), "");
    std::fs::write(&lock, "").unwrap();
    std::fs::write(lib.root().join(".merge_file_x1"), "x").unwrap();
    let paths: Vec<String> =
        ok_records(lib.cmd("kb-lock").arg("sweep")).iter().map(|r| r["path"].as_str().unwrap().to_string()).collect();
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
        refused(lib.cmd("kb-append").args(["compact", "--no-commit"]), ".changelog-archive/2025-10.md");
        assert_eq!(lib.read(".changelog"), before, "{bad}: the log changed");
        assert!(!lib.path(".changelog-archive/2025-11.md").exists(), "{bad}: another month was archived");
        refused(lib.cmd("kb-relate").arg("rebuild"), ".changelog-archive/2025-10.md");
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
    let recs =
        ok_records(lib.cmd("kb-append").args(["write", "notes/after.md", "--content", "# after\n", "--no-commit"]));
    assert_eq!(recs[0]["record"], "recovered", "{recs:?}");
    assert_eq!(recs[0]["changelog_added"], 0);
    let log = lib.read(".changelog");
    assert_eq!(log.lines().filter(|l| l.contains("\"event\":\"referenced\"")).count(), 1);
    assert!(lib.read(".relations.jsonl").contains("nb-9"));
    assert_matches_rebuild(&lib);
}

// --- No error becomes an empty value ---------------------------

/// Runs `cmd`, asserts it exits 2 and that its stderr contains `needle`.
#[track_caller]
fn refused(cmd: &mut assert_cmd::Command, needle: &str) {
    let out = cmd.assert().code(2).get_output().clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(needle), "stderr lacks {needle:?}: {stderr}");
}

/// Puts a directory where a file should be: unreadable (EISDIR) even for
/// root, which the tests run as in CI.
fn make_unreadable(lib: &Lib, rel: &str) {
    let p = lib.path(rel);
    if p.exists() {
        std::fs::remove_file(&p).unwrap();
    }
    std::fs::create_dir_all(&p).unwrap();
}

/// An unreadable `.changelog` is an error (exit 2, naming it) for every
/// binary that reads it: read as empty, a writer would start a new log
/// over the history, kb-relate would drop its edges, kb-score would rank
/// without freshness. The refused write lands nothing.
#[test]
fn an_unreadable_changelog_is_an_error_for_readers_and_writers() {
    let lib = Lib::new();
    lib.cmd("kb-append").args(["write", "notes/a.md", "--content", "# a\n\nhello\n", "--no-commit"]).assert().success();
    make_unreadable(&lib, ".changelog");
    let runs: [&[&str]; 5] = [
        &["kb-append", "write", "notes/b.md", "--content", "# b\n", "--no-commit"],
        &["kb-index"],
        &["kb-index", "quick"],
        &["kb-relate", "rebuild"],
        &["kb-score", "hello"],
    ];
    for argv in runs {
        refused(lib.cmd(argv[0]).args(&argv[1..]), ".changelog is a directory");
    }
    assert!(!lib.path("notes/b.md").exists(), "the refused write landed");
    assert!(!lib.path(".journal").exists());
}

/// A document that is not UTF-8 is read lossily and reported, never
/// skipped: kb-index lists it and adds an `error` record (exit 2),
/// kb-relate rebuilds and names it among its problems (exit 0), kb-score
/// finds it and warns on stderr (exit 0), a writer of another file is not
/// stopped by it, and a rebuild indexes it with the problem (exit 0).
#[test]
fn a_non_utf8_document_is_reported_by_each_binary_not_dropped() {
    let lib = Lib::new();
    lib.cmd("kb-append")
        .args(["write", "notes/a.md", "--content", "---\ntopic: a\n---\n# a\n\nhello\n", "--no-commit"])
        .assert()
        .success();
    std::fs::write(lib.path("notes/b.md"), b"---\ntopic: b\n---\n# b\n\nhello \xff\xfe\n").unwrap();
    let out = lib.cmd("kb-index").assert().code(2).get_output().stdout.clone();
    let recs = records(&out);
    let paths: Vec<&str> =
        recs.iter().filter(|r| r["record"] == "entry").map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["notes/a.md", "notes/b.md"]);
    let err = recs.iter().find(|r| r["record"] == "error").expect("an error record");
    assert_eq!((err["path"].as_str(), err["kind"].as_str()), (Some("notes/b.md"), Some("not-utf8")));

    let rec = &ok_records(lib.cmd("kb-relate").arg("rebuild"))[0];
    assert_eq!(
        rec["problems"],
        json!([{"path": "notes/b.md", "kind": "not-utf8", "message": "content is not UTF-8; read lossily"}])
    );

    let out = lib.cmd("kb-score").arg("hello").assert().success().get_output().clone();
    let hits: Vec<String> = records(&out.stdout)
        .iter()
        .filter(|r| r["record"] == "hit")
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();
    assert!(hits.contains(&"notes/b.md".to_string()), "{hits:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("notes/b.md: content is not UTF-8"));

    lib.cmd("kb-append").args(["write", "notes/c.md", "--content", "# c\n", "--no-commit"]).assert().success();
    assert_eq!(ok_records(lib.cmd("kb-index").arg("rebuild"))[0]["problems"][0]["kind"], "not-utf8");
    assert!(lib.read(".master-index.md").contains("| notes/b.md |"), "the non-UTF-8 row was dropped");
}

/// The kb-index cache is derived: damaged (not UTF-8, not parsing) it is
/// rebuilt and replaced, with the same indexes as a full rebuild; one
/// that cannot be replaced is an error naming it, never a silent skip.
#[test]
fn a_damaged_index_cache_is_rebuilt_and_an_unreplaceable_one_is_an_error() {
    let lib = Lib::new();
    for i in 0..3 {
        lib.cmd("kb-append")
            .args(["write", &format!("notes/d{i}.md"), "--content", &doc(&format!("d{i}"), "x"), "--no-commit"])
            .assert()
            .success();
    }
    lib.cmd("kb-index").arg("rebuild").assert().success();
    let index = lib.read(".master-index.md");
    for f in ["state.json", "files.tsv", "dirs.tsv", "summary.json"] {
        std::fs::write(lib.path(&format!(".cache/kb-index/{f}")), b"\xff\xfe garbage\tx\n").unwrap();
    }
    std::fs::remove_file(lib.path(".master-index.md")).unwrap();
    lib.cmd("kb-index").arg("rebuild").assert().success();
    assert_eq!(lib.read(".master-index.md"), index);
    assert!(lib.read(".cache/kb-index/state.json").starts_with('{'), "the cache was not replaced");
    assert_matches_rebuild(&lib);
    make_unreadable(&lib, ".cache/kb-index/state.json");
    refused(lib.cmd("kb-index").arg("rebuild"), ".cache/kb-index/state.json");
}

/// `kb-index quick` re-derives the rows of documents the changelog names:
/// one that exists but cannot be read is an error, not a deletion (its
/// rows stayed in the indexes).
#[test]
fn quick_maintenance_refuses_an_unreadable_document_instead_of_dropping_it() {
    let lib = Lib::new();
    let write = |path: &str, now: &str| {
        lib.cmd("kb-append")
            .args(["write", path, "--content", &doc("q", "x"), "--no-commit"])
            .env("KB_NOW", now)
            .assert()
            .success();
    };
    write("notes/a.md", "2026-03-01T10:00:00Z");
    lib.cmd("kb-index").arg("quick").env("KB_NOW", "2026-03-01T11:00:00Z").assert().success();
    write("notes/c.md", "2026-03-01T12:00:00Z");
    make_unreadable(&lib, "notes/c.md");
    refused(lib.cmd("kb-index").arg("quick").env("KB_NOW", "2026-03-01T13:00:00Z"), "reading notes/c.md");
    assert!(lib.read(".master-index.md").contains("notes/c.md"), "the row was dropped");
    assert!(lib.read("notes/.index.md").contains("c.md"), "the row was dropped");
}

/// Extended guard rules that cannot be listed (here the directory is a
/// file) are an error for the scanner and for the writer that runs it,
/// never "no extended rules" (scans would run without them).
#[test]
fn an_unlistable_extended_rules_directory_is_an_error_not_no_rules() {
    let lib = Lib::new();
    let dir = ".evolving-rules/security/active";
    let _ = std::fs::remove_dir_all(lib.path(dir));
    lib.put(dir, "not a directory\n");
    lib.put("notes/a.md", "# a\n");
    refused(lib.cmd("kb-guard").args(["scan", ".library/notes/a.md"]), "listing the directory");
    refused(
        lib.cmd("kb-append").args(["write", "notes/b.md", "--content", "# b\n", "--no-commit"]),
        "listing the directory",
    );
}
