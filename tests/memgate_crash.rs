//! kb-memgate apply killed mid-change: a replace writes the survivor note,
//! moves the old note to `archive/`, rewrites INDEX.md, updates the
//! search index and appends audit lines. Killed between any two of those,
//! the next writer (apply or reindex) must bring them back into agreement:
//! the notes are the truth, INDEX.md's rows and the search index are
//! theirs, every note on disk has an audit line with its digest, every
//! archived note a delete line, the INDEX.md audit lines chain to the
//! file's digest, and a retried decision lands once.

use std::io::Write;
use std::process::Stdio;

use kb::fs::crash::{Step, STEPS};
use serde_json::{json, Value};

use crate::memgate::{answered, decide, lines, mem, notes, read, remember, said, MEM};
use crate::util::{kill_when, records, sha256, Lib, Rng};

/// A library with two notes, the replace decision for the first (answered
/// "confirm"), a silent new decision and the next writer's decision.
pub(crate) struct Scene {
    pub lib: Lib,
    /// The note the replace archives.
    pub old: String,
    /// The note the replace writes.
    pub new: String,
    /// The replace, answered.
    pub replace: Value,
    /// A silent new note ("extra").
    pub extra: Value,
    /// The next writer's silent new note.
    pub next: Value,
}

impl Scene {
    pub fn new() -> Scene {
        let lib = Lib::project();
        let old = remember(&lib, "Use yarn for installs.");
        remember(&lib, "Write commit messages in English.");
        lib.cmd("kb-memgate").arg("reindex").assert().success();
        let d = decide(&lib, &[said("remember", "From now on use pnpm for installs instead.")]);
        assert_eq!((d[0]["action"].as_str(), d[0]["targets"].clone()), (Some("replace"), json!([old])), "{}", d[0]);
        let new = d[0]["note_id"].as_str().unwrap().to_string();
        let replace = answered(&d[0], "confirm");
        let extra = decide(&lib, &[said("remember", "Keep secrets out of the repository.")]).remove(0);
        let next = decide(&lib, &[said("remember", "Run clippy before every push.")]).remove(0);
        for d in [&extra, &next] {
            assert_eq!((d["action"].as_str(), d["gate"].as_str()), (Some("new"), Some("silent")), "{d}");
        }
        Scene { lib, old, new, replace, extra, next }
    }

    fn id(d: &Value) -> String {
        d["note_id"].as_str().unwrap().to_string()
    }
}

/// The ids of the notes in notes/ (temp files are not notes).
fn live(lib: &Lib) -> Vec<String> {
    notes(lib).iter().filter(|f| f.starts_with("MEM-")).map(|f| f.trim_end_matches(".md").to_string()).collect()
}

fn audit(lib: &Lib) -> Vec<Value> {
    let p = lib.root().join(".agents/.lingxi/workspace/audit.log");
    std::fs::read_to_string(p).map(|t| records(t.as_bytes())).unwrap_or_default()
}

fn archived(lib: &Lib) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(mem(lib, "archive"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("MEM-"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Every temp file (`.<name>.tmp.<pid>…`) under the workspace.
pub(crate) fn temps(lib: &Lib) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![lib.root().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else if name.contains(".tmp.") {
                out.push(e.path().display().to_string());
            }
        }
    }
    out
}

/// Runs apply on `decisions`; asserts success and returns its records.
#[track_caller]
pub(crate) fn apply_ok(lib: &Lib, decisions: &[&Value]) -> Vec<Value> {
    let ds: Vec<Value> = decisions.iter().map(|d| (*d).clone()).collect();
    let out = lib.cmd("kb-memgate").arg("apply").write_stdin(lines(&ds)).output().unwrap();
    let recs = records(&out.stdout);
    assert!(out.status.success(), "{recs:?} {}", String::from_utf8_lossy(&out.stderr));
    recs
}

/// Notes, archive, INDEX.md, the search index and the audit log agree.
#[track_caller]
pub(crate) fn assert_agrees(lib: &Lib, what: &str) {
    assert!(!mem(lib, ".journal").exists(), "{what}: journal left");
    let live = live(lib);
    // INDEX.md's rows are the notes'.
    let out = lib.cmd("kb-memgate").args(["reindex", "--check"]).output().unwrap();
    let r = records(&out.stdout);
    assert!(out.status.success() && r[0]["in_sync"] == true, "{what}: INDEX.md disagrees with the notes: {r:?}");
    // The search index on disk is current and holds exactly the live notes.
    let paths = kb::memgate::Paths::new(Some(&lib.root().join(MEM))).unwrap();
    let opened = kb::memgate::store::open_index(&paths).unwrap();
    assert!(!opened.stale, "{what}: the search index is stale");
    let mut ids: Vec<String> = opened.view().unwrap().entries().into_iter().map(|e| e.id).collect();
    ids.sort();
    assert_eq!(ids, live, "{what}: search index");
    // The audit log: INDEX.md's lines chain up to the file's digest ...
    let a = audit(lib);
    let mut index = Value::Null;
    for l in a.iter().filter(|l| l["event"] == "memory_index_updated") {
        assert_eq!(l["digest_before"], index, "{what}: an INDEX.md change went unaudited: {l}");
        index = l["digest_after"].clone();
    }
    assert_eq!(index, json!(sha256(read(lib, "INDEX.md").as_bytes())), "{what}: INDEX.md's last audit line");
    // ... every live note's last line names its bytes ...
    for id in &live {
        let last = a.iter().rfind(|l| l["note_id"] == id.as_str());
        let last = last.unwrap_or_else(|| panic!("{what}: {id} has no audit line"));
        assert!(matches!(last["operation"].as_str(), Some("create" | "update")), "{what}: {last}");
        let bytes = std::fs::read(mem(lib, &format!("notes/{id}.md"))).unwrap();
        assert_eq!(last["digest_after"], json!(sha256(&bytes)), "{what}: {id}'s audit digest");
    }
    // ... every archived note has its delete line, and no line names a
    // note that is neither live nor archived.
    for f in archived(lib) {
        let bytes = std::fs::read(mem(lib, &format!("archive/{f}"))).unwrap();
        let to = format!("memory/archive/{f}");
        let del: Vec<&Value> = a.iter().filter(|l| l["archived_to"] == to.as_str()).collect();
        assert_eq!(del.len(), 1, "{what}: delete lines for {f}: {del:?}");
        assert_eq!(del[0]["digest_before"], json!(sha256(&bytes)), "{what}: {f}");
    }
    for l in a.iter().filter(|l| l["note_id"].is_string()) {
        let id = l["note_id"].as_str().unwrap();
        let last = a.iter().rfind(|x| x["note_id"] == id).unwrap();
        if last["operation"] == "delete" {
            assert!(!live.iter().any(|x| x == id), "{what}: {id} is deleted in the audit but live");
        } else {
            assert!(live.iter().any(|x| x == id), "{what}: {id} is audited but not in notes/");
        }
    }
}

/// The end every scene must reach once the killed apply is retried: the
/// replace and the extra note landed once, whatever was killed where.
#[track_caller]
fn assert_end(s: &Scene, what: &str) {
    let mut want = vec![s.new.clone(), Scene::id(&s.extra), Scene::id(&s.next)];
    want.push(
        live(&s.lib)
            .into_iter()
            .find(|id| read(&s.lib, &format!("notes/{id}.md")).contains("Write commit messages in English."))
            .unwrap_or_else(|| panic!("{what}: the untouched note is gone")),
    );
    want.sort();
    assert_eq!(live(&s.lib), want, "{what}: notes");
    let arch = archived(&s.lib);
    assert_eq!(arch.len(), 1, "{what}: archive {arch:?}");
    assert!(arch[0].starts_with(&format!("{}.", s.old)), "{what}: {arch:?}");
    let a = audit(&s.lib);
    for (id, op) in [(&s.new, "create"), (&s.old, "delete")] {
        let n = a.iter().filter(|l| l["note_id"] == id.as_str() && l["operation"] == op).count();
        assert_eq!(n, 1, "{what}: {op} lines of {id}");
    }
    assert_agrees(&s.lib, what);
    // reindex finds nothing to change and sweeps what a kill left.
    let out = lib_ok(&s.lib, &["reindex"]);
    assert_eq!((out[0]["in_sync"].clone(), out[0]["index_md"].clone()), (json!(true), json!(false)), "{what}");
    assert!(temps(&s.lib).is_empty(), "{what}: {:?}", temps(&s.lib));
    assert_agrees(&s.lib, what);
}

#[track_caller]
fn lib_ok(lib: &Lib, args: &[&str]) -> Vec<Value> {
    let out = lib.cmd("kb-memgate").args(args).assert().success();
    records(&out.get_output().stdout)
}

/// A seeded random kill -9 loop: apply of a replace and a new note is
/// killed once a randomly chosen point is reached (the survivor in place,
/// the old note gone, INDEX.md changed, the audit grown, the new note in
/// place), checked while the writer is stopped (`kill_when`: no sleep
/// decides it). The next writer must bring everything into agreement, and
/// the retried decisions land once. `KB_KILL_SEED` replays a run.
#[test]
fn random_kill_nine_during_memgate_applies() {
    let seed: u64 = std::env::var("KB_KILL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5bd1_e995_2f1c_83a7);
    eprintln!("random_kill_nine_during_memgate_applies: KB_KILL_SEED={seed}");
    let mut rng = Rng(seed);
    let (rounds, mut kills) = (10, 0);
    for round in 0..rounds {
        let s = Scene::new();
        let index0 = read(&s.lib, "INDEX.md");
        let audit0 = audit(&s.lib).len();
        let target = rng.below(5);
        let what = format!("round {round} (point {target})");
        let mut child = s
            .lib
            .std_cmd("kb-memgate")
            .arg("apply")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let input = lines(&[s.replace.clone(), s.extra.clone()]);
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let exists = |id: &str| mem(&s.lib, &format!("notes/{id}.md")).exists();
        let reached = || match target {
            0 => exists(&s.new),
            1 => !exists(&s.old),
            2 => std::fs::read_to_string(mem(&s.lib, "INDEX.md")).is_ok_and(|t| t != index0),
            3 => audit(&s.lib).len() > audit0,
            _ => exists(&Scene::id(&s.extra)),
        };
        let status = kill_when(&mut child, || true, reached);
        // The last point comes just before the apply ends: on a loaded
        // machine it may end within one slice. Then it ended well.
        let killed = std::os::unix::process::ExitStatusExt::signal(&status) == Some(9);
        assert!(killed || status.success(), "{what}: {status}");
        kills += usize::from(killed);
        // The next writer, then the agent's retry of what was killed.
        let recs = apply_ok(&s.lib, &[&s.next]);
        assert!(recs.iter().any(|r| r["status"] == "applied"), "{what}: {recs:?}");
        assert_agrees(&s.lib, &format!("{what}, after the next writer"));
        let recs = apply_ok(&s.lib, &[&s.replace, &s.extra]);
        let st: Vec<&str> = recs.iter().filter_map(|r| r["status"].as_str()).collect();
        assert!(st.len() == 2 && st.iter().all(|x| matches!(*x, "applied" | "unchanged")), "{what}: {recs:?}");
        assert_end(&s, &what);
    }
    eprintln!("random_kill_nine_during_memgate_applies: {kills} of {rounds} applies killed mid-way");
    assert!(kills * 2 >= rounds, "only {kills} of {rounds} kills landed (seed {seed})");
}

/// How many times applying `[replace, extra]` reaches a memgate step: the
/// replace stages the new note and the old note's archive copy, the extra
/// its note; the archive and the removal happen in the replace only.
fn hits(step: Step) -> u32 {
    match step {
        Step::MemgateTemp => 3,
        Step::MemgateArchive | Step::MemgateRemove => 1,
        _ => 2,
    }
}

/// Runs apply of `[replace, extra]` armed to abort at `step:n`; asserts
/// that it did.
#[track_caller]
fn crash(s: &Scene, step: Step, n: u32) {
    let armed = format!("{}:{n}", step.name());
    let out = s
        .lib
        .cmd("kb-memgate")
        .arg("apply")
        .env(kb::fs::crash::VAR, &armed)
        .write_stdin(lines(&[s.replace.clone(), s.extra.clone()]))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_none() && err.contains("aborting"), "{armed}: the kill did not land: {err}");
}

/// Killed at every step of both decisions' applies, the next writer
/// finishes what the journal names (every change of the decision killed
/// after its journal, none before) and prints one `recovered` record; the
/// agent's retry then lands each decision once.
#[test]
fn apply_killed_at_every_step_is_finished_by_the_next_writer() {
    for &step in STEPS.iter().filter(|s| s.pipeline() == "memgate") {
        for n in 1..=hits(step) {
            let what = format!("{}:{n}", step.name());
            let s = Scene::new();
            crash(&s, step, n);
            // Which decision the kill hit, and whether its journal was durable.
            let in_extra = n == hits(step) && (step == Step::MemgateTemp || hits(step) == 2);
            let journaled = step != Step::MemgateTemp;
            assert_eq!(mem(&s.lib, ".journal").exists(), journaled, "{what}: journal");
            let replaced = journaled || in_extra;
            let extra = journaled && in_extra;
            let recs = apply_ok(&s.lib, &[&s.next]);
            let rec: Vec<&Value> = recs.iter().filter(|r| r["record"] == "recovered").collect();
            assert_eq!(rec.len(), usize::from(journaled), "{what}: {recs:?}");
            if let Some(r) = rec.first() {
                let want = if in_extra { 1 } else { 3 };
                assert_eq!(r["landed"].as_array().unwrap().len(), want, "{what}: {r}");
                assert_eq!(r["rolled_back"], json!([]), "{what}: {r}");
            }
            let exists = |id: &str| mem(&s.lib, &format!("notes/{id}.md")).exists();
            assert_eq!((exists(&s.new), exists(&s.old)), (replaced, !replaced), "{what}: the replace");
            assert_eq!(exists(&Scene::id(&s.extra)), extra, "{what}: the extra note");
            assert_agrees(&s.lib, &format!("{what}, after the next writer"));
            let recs = apply_ok(&s.lib, &[&s.replace, &s.extra]);
            let st: Vec<&str> = recs.iter().filter_map(|r| r["status"].as_str()).collect();
            let want = [if replaced { "unchanged" } else { "applied" }, if extra { "unchanged" } else { "applied" }];
            assert_eq!(st, want, "{what}: the retry");
            assert_end(&s, &what);
        }
    }
}

/// `reindex` is a next writer too: it finishes a killed apply, sweeps the
/// temp files a kill before the journal left, and writes INDEX.md only
/// when the notes call for it.
#[test]
fn reindex_finishes_a_killed_apply_and_sweeps_its_temps() {
    for (step, n) in [(Step::MemgateTemp, 2), (Step::MemgateRemove, 1), (Step::MemgateAudit, 1)] {
        let what = format!("{}:{n}", step.name());
        let s = Scene::new();
        crash(&s, step, n);
        assert!(!temps(&s.lib).is_empty() || step != Step::MemgateTemp, "{what}: no temp left to sweep");
        let recs = lib_ok(&s.lib, &["reindex"]);
        let journaled = step != Step::MemgateTemp;
        assert_eq!(recs[0]["record"] == "recovered", journaled, "{what}: {recs:?}");
        let report = recs.last().unwrap();
        assert_eq!((report["record"].as_str(), report["in_sync"].as_bool()), (Some("reindex"), Some(true)), "{what}");
        assert!(temps(&s.lib).is_empty(), "{what}: {:?}", temps(&s.lib));
        assert_agrees(&s.lib, &what);
        // A second reindex has nothing to recover or write.
        let recs = lib_ok(&s.lib, &["reindex"]);
        assert_eq!((recs.len(), recs[0]["index_md"].as_bool()), (1, Some(false)), "{what}: {recs:?}");
    }
}

/// `kb-lock sweep` finishes a killed apply too, under the memory store's
/// own lock (the store is outside the library lock's reach), and prints
/// the `recovered` record.
#[test]
fn kb_lock_sweep_finishes_a_killed_apply() {
    let s = Scene::new();
    crash(&s, Step::MemgateRemove, 1);
    assert!(mem(&s.lib, ".journal").exists());
    let out = s.lib.cmd("kb-lock").arg("sweep").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let recs = records(&out.stdout);
    let rec: Vec<&Value> = recs.iter().filter(|r| r["record"] == "recovered").collect();
    assert_eq!(rec.len(), 1, "{recs:?} {err}");
    assert_eq!(rec[0]["landed"].as_array().unwrap().len(), 3, "{}", rec[0]);
    assert!(!mem(&s.lib, ".journal").exists());
    assert_agrees(&s.lib, "swept");
}
