//! kb-lastword apply killed at every named step: one apply
//! changes several files (two targets, a staging file, the pending file);
//! `KB_CRASH_AT=lastword-<step>:<n>` aborts it there, each test asserts
//! the kill landed mid-apply, and the next apply must leave exactly what an
//! uninterrupted apply leaves: same target bytes, the one conflicting entry
//! staged once, nothing pending, no temp file, no journal.

use std::fs;
use std::path::{Path, PathBuf};

use kb::fs::crash::{Step, STEPS};
use serde_json::Value;

use crate::lastword::{doc, entry, Lw};

const TOP: &str = "# A\n\n## B\n\nb\n\n## Keep\n\nk\n";
const SUB: &str = "# S\n\n## X\n\nx\n";

/// Two sessions' entries for two project files, queued in one pending
/// file (`.agents/AGENTS.md.yaml`): s1 and s2 both update `B` (s1's
/// lands, s2's then conflicts and is staged), s1 updates `X` in the other
/// file and `Keep`, which a person edits after the plan (staged too). A
/// rerun that met the targets already edited but the pending file not yet
/// rewritten would stage both conflicts a second time.
fn scene() -> Lw {
    let lw = Lw::new();
    lw.configure(&["./AGENTS.md", "./sub/AGENTS.md"], &[]);
    fs::create_dir_all(lw.proj().join("sub")).unwrap();
    fs::write(lw.proj().join("AGENTS.md"), TOP).unwrap();
    fs::write(lw.proj().join("sub/AGENTS.md"), SUB).unwrap();
    let s1 = doc(&[
        entry("AGENTS.md", "B", None, "update", Some("one")),
        entry("sub/AGENTS.md", "X", None, "update", Some("x1")),
        entry("AGENTS.md", "Keep", None, "update", Some("agent")),
    ]);
    let s2 = doc(&[entry("AGENTS.md", "B", None, "update", Some("two"))]);
    for (s, d) in [("s1", s1), ("s2", s2)] {
        let (code, _, err) = lw.run(&["plan", "--source", s], &d);
        assert_eq!(code, 0, "{err}");
    }
    fs::write(lw.proj().join("AGENTS.md"), TOP.replace("\nk\n", "\nperson\n")).unwrap();
    lw
}

fn queue(lw: &Lw) -> PathBuf {
    lw.proj().join(".agents/AGENTS.md.yaml")
}

/// Every file under `dir` whose name marks a temp file or a journal.
fn leftovers(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else if name.contains(".tmp.") || name == ".journal" {
                out.push(e.path().display().to_string());
            }
        }
    }
    out
}

/// What an uninterrupted apply leaves: the two targets' bytes and the
/// staged entries' contents.
#[derive(Debug, PartialEq)]
struct End {
    top: String,
    sub: String,
    staged: Vec<String>,
    pending: bool,
}

fn end(lw: &Lw) -> End {
    let staged = lw
        .staging()
        .iter()
        .map(|p| {
            let t = fs::read_to_string(p).unwrap();
            // The file names its own (random) name in its first line.
            t.lines().skip(1).collect::<Vec<_>>().join("\n")
        })
        .collect();
    End {
        top: fs::read_to_string(lw.proj().join("AGENTS.md")).unwrap(),
        sub: fs::read_to_string(lw.proj().join("sub/AGENTS.md")).unwrap(),
        staged,
        pending: queue(lw).exists(),
    }
}

fn clean_end() -> End {
    let lw = scene();
    let (code, recs, err) = lw.run(&["apply"], "");
    assert_eq!(code, 1, "{recs:?} {err}");
    let e = end(&lw);
    assert!(e.top.contains("## B\n\none\n") && e.top.contains("## Keep\n\nperson\n"), "{}", e.top);
    assert_eq!(e.sub, "# S\n\n## X\n\nx1\n");
    assert_eq!(e.staged.len(), 1);
    assert!(e.staged[0].contains("content: agent") && e.staged[0].contains("content: two"), "{}", e.staged[0]);
    assert!(!e.pending);
    e
}

/// How many times one apply of the scene reaches each step.
fn hits(step: Step) -> u32 {
    match step {
        // The two targets and the staging file.
        Step::LastwordTemp => 3,
        // ... and the pending file's removal.
        Step::LastwordRename => 4,
        _ => 1,
    }
}

/// Runs apply armed to abort at `step:n`; asserts it did.
#[track_caller]
fn crash(lw: &Lw, step: Step, n: u32) {
    let armed = format!("{}:{n}", step.name());
    let out = lw.cmd(&["apply"]).env("KB_CRASH_AT", &armed).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_none() && err.contains("aborting"), "{armed}: the kill did not land: {err}");
}

#[test]
fn apply_killed_at_every_step_is_finished_by_the_next_apply() {
    let want = clean_end();
    for &step in STEPS.iter().filter(|s| s.pipeline() == "lastword") {
        for n in 1..=hits(step) {
            let lw = scene();
            crash(&lw, step, n);
            let at = format!("{}:{n}", step.name());
            // The kill landed mid-apply: before the journal nothing moved;
            // after it, the journal is there, the first target is new from
            // the first rename on, and the pending file goes at the last.
            let journaled = step != Step::LastwordTemp;
            assert_eq!(lw.lastword().join(".journal").exists(), journaled, "{at}");
            let landed = matches!(step, Step::LastwordRename | Step::LastwordRenamed);
            assert_eq!(fs::read_to_string(lw.proj().join("AGENTS.md")).unwrap().contains("one"), landed, "{at}");
            let all_in = step == Step::LastwordRenamed || (step == Step::LastwordRename && n == 4);
            assert_eq!(queue(&lw).exists(), !all_in, "{at}");
            let (code, recs, err) = lw.run(&["apply"], "");
            assert_eq!(recs.iter().any(|r| r["record"] == "recovered"), journaled, "{at}: {recs:?}");
            if journaled {
                let r = recs.iter().find(|r| r["record"] == "recovered").unwrap();
                assert_eq!(r["landed"].as_array().unwrap().len(), 4, "{at}: {r}");
                assert_eq!(r["rolled_back"], Value::Array(vec![]), "{at}");
                assert_eq!(code, 0, "{at}: {recs:?} {err}");
            } else {
                assert_eq!(code, 1, "{at}: {recs:?} {err}");
            }
            assert_eq!(end(&lw), want, "{at}: {err}");
            assert!(leftovers(lw.root()).is_empty(), "{at}: {:?}", leftovers(lw.root()));
        }
    }
}

#[test]
fn the_next_plan_finishes_a_killed_apply_too() {
    let want = clean_end();
    let lw = scene();
    crash(&lw, Step::LastwordRename, 1);
    let (code, recs, err) = lw.run(&["plan"], &doc(&[entry("AGENTS.md", "New", None, "update", Some("n"))]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(recs[0]["record"], "recovered", "{recs:?}");
    assert_eq!(recs[1]["status"], "pending");
    let mut got = end(&lw);
    assert!(got.pending);
    got.pending = false;
    assert_eq!(got, want);
    assert!(leftovers(lw.root()).is_empty(), "{:?}", leftovers(lw.root()));
}

#[test]
fn a_target_a_person_edits_before_recovery_keeps_the_persons_bytes() {
    let lw = scene();
    crash(&lw, Step::LastwordRename, 1);
    // sub/AGENTS.md had not landed; a person edits it before the next run.
    fs::write(lw.proj().join("sub/AGENTS.md"), "# S\n\n## X\n\nperson\n").unwrap();
    let (_, recs, err) = lw.run(&["apply"], "");
    let r = recs.iter().find(|r| r["record"] == "recovered").unwrap_or_else(|| panic!("{recs:?} {err}"));
    assert_eq!(r["landed"], serde_json::json!(["AGENTS.md"]));
    assert_eq!(r["rolled_back"].as_array().unwrap().len(), 3, "{r}");
    // The person's bytes stay; the entry planned against `x` is staged.
    assert_eq!(fs::read_to_string(lw.proj().join("sub/AGENTS.md")).unwrap(), "# S\n\n## X\n\nperson\n");
    let x = recs.iter().find(|r| r["heading"] == "X").unwrap();
    assert_eq!(x["status"], "staged", "{recs:?}");
    assert!(!queue(&lw).exists());
    assert!(leftovers(lw.root()).is_empty(), "{:?}", leftovers(lw.root()));
}

/// `kb-lock sweep` finishes a killed apply too, under last word's own lock
/// (its journal lives in last word's home, which the library lock does
/// not cover), and prints the `recovered` record.
#[test]
fn kb_lock_sweep_finishes_a_killed_apply() {
    let want = clean_end();
    let lw = scene();
    crash(&lw, Step::LastwordRename, 2);
    let mut sweep = std::process::Command::new(assert_cmd::cargo::cargo_bin("kb-lock"));
    crate::util::isolate(&mut sweep, &lw.proj());
    let out = sweep.env("KB_LASTWORD_HOME", lw.home()).arg("sweep").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let recs = crate::util::records(&out.stdout);
    let rec: Vec<&Value> = recs.iter().filter(|r| r["record"] == "recovered").collect();
    assert_eq!(rec.len(), 1, "{recs:?} {err}");
    assert_eq!(rec[0]["landed"].as_array().unwrap().len(), 4, "{}", rec[0]);
    assert!(!lw.lastword().join(".journal").exists());
    assert_eq!(end(&lw), want);
    assert!(leftovers(lw.root()).is_empty(), "{:?}", leftovers(lw.root()));
}
