//! `kb-index changes --notebook NB`: seed 000's changelog consumption
//! protocol. Each notebook reads what happened since its cursor; the
//! cursor survives compaction of older lines; a cursor that cannot be
//! trusted takes the cold start (the master index in full); concurrent
//! writers lose and repeat nothing.

use serde_json::Value;

use crate::util::{records, Lib};

fn changes(lib: &Lib, nb: &str, now: &str) -> Vec<Value> {
    let out = lib.cmd("kb-index").args(["changes", "--notebook", nb]).env("KB_NOW", now).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = records(&out.stdout);
    assert_eq!(recs.last().unwrap()["record"], "cursor", "{recs:?}");
    recs
}

fn write(lib: &Lib, path: &str, now: &str) {
    lib.cmd("kb-append")
        .args(["write", path, "--no-commit"])
        .env("KB_NOW", now)
        .write_stdin(format!("# {path}\n"))
        .assert()
        .success();
}

/// (event, path) of the change records.
fn seen(recs: &[Value]) -> Vec<(String, String)> {
    recs.iter()
        .filter(|r| r["record"] == "change")
        .map(|r| (r["event"].as_str().unwrap().to_string(), r["path"].as_str().unwrap().to_string()))
        .collect()
}

fn pair(e: &str, p: &str) -> (String, String) {
    (e.to_string(), p.to_string())
}

const JAN: &str = "2026-01-10T00:00:00Z";
const MAY: &str = "2026-05-01T00:00:00Z";

#[test]
fn first_read_is_a_cold_start_then_only_what_is_new() {
    let lib = Lib::new();
    write(&lib, "notes/a.md", JAN);
    let r = changes(&lib, "nb-1", JAN);
    assert_eq!(r[0]["record"], "cold_start");
    assert_eq!(r[0]["reason"], "first-read");
    assert_eq!(r[0]["index"], ".master-index.md");
    assert_eq!(r[0]["entries"], 1);
    assert_eq!(seen(&r), vec![pair("indexed", "notes/a.md")]);
    assert_eq!(r.last().unwrap()["position"], 1);
    // Nothing new: only the cursor.
    assert_eq!(changes(&lib, "nb-1", JAN).len(), 1);
    write(&lib, "notes/b.md", JAN);
    lib.cmd("kb-append")
        .args(["event", "referenced", "notes/a.md", "--notebook", "agent-x", "--no-commit"])
        .assert()
        .success();
    let r = changes(&lib, "nb-1", JAN);
    assert_eq!(seen(&r), vec![pair("write", "notes/b.md"), pair("referenced", "notes/a.md")]);
    assert_eq!(r[1]["by"], "agent-x");
    assert_eq!(r[0]["line"], 2);
    // Notebooks are independent.
    assert_eq!(changes(&lib, "nb-2", JAN)[0]["reason"], "first-read");
    let state = lib.read(".changelog-cursors");
    let nbs: Vec<String> = records(state.as_bytes()).iter().map(|c| c["notebook"].as_str().unwrap().into()).collect();
    assert_eq!(nbs, ["nb-1", "nb-2"]);
}

/// Compaction between two reads: the lines it archives are older than the
/// cursor's, so the cursor is found again and the second read reports
/// exactly the lines written since the first.
#[test]
fn compaction_between_two_reads_loses_and_repeats_nothing() {
    let lib = Lib::new();
    write(&lib, "notes/old.md", JAN);
    changes(&lib, "nb", MAY);
    write(&lib, "notes/recent.md", MAY);
    assert_eq!(seen(&changes(&lib, "nb", MAY)), vec![pair("write", "notes/recent.md")]);
    write(&lib, "notes/new.md", MAY);
    lib.cmd("kb-append").args(["compact", "--no-commit"]).env("KB_NOW", MAY).assert().success();
    let log = lib.read(".changelog");
    assert!(log.starts_with("# COMPACT 2026-05-01: archived 1 lines"), "{log}");
    assert!(!log.contains("notes/old.md"));
    let r = changes(&lib, "nb", MAY);
    assert_eq!(seen(&r), vec![pair("write", "notes/new.md")], "{r:?}");
    assert_eq!(r.last().unwrap()["position"], 3);
    assert_eq!(changes(&lib, "nb", MAY).len(), 1, "a third read sees nothing again");
}

/// The cursor's own line archived: the offset is gone, so the reader
/// degrades to the cold start and resets its cursor.
#[test]
fn cursor_archived_by_compaction_degrades_to_the_cold_start() {
    let lib = Lib::new();
    write(&lib, "notes/a.md", JAN);
    changes(&lib, "nb", JAN);
    write(&lib, "notes/b.md", MAY);
    lib.cmd("kb-append").args(["compact", "--no-commit"]).env("KB_NOW", MAY).assert().success();
    let r = changes(&lib, "nb", MAY);
    assert_eq!(r[0]["record"], "cold_start");
    assert_eq!(r[0]["reason"], "cursor-archived");
    assert_eq!(seen(&r), vec![pair("indexed", "notes/a.md"), pair("indexed", "notes/b.md")]);
    assert_eq!(changes(&lib, "nb", MAY).len(), 1, "the cursor was reset");
}

/// Lines that appear before the cursor (a sync merge of older history) or
/// a damaged state file: never silently skipped.
#[test]
fn history_changed_before_the_cursor_or_a_bad_state_line_goes_cold() {
    let lib = Lib::new();
    write(&lib, "notes/a.md", JAN);
    changes(&lib, "nb", JAN);
    let log = lib.read(".changelog");
    let merged = format!("{{\"ts\":\"2026-01-01T00:00:00Z\",\"event\":\"write\",\"path\":\"notes/peer.md\"}}\n{log}");
    lib.put(".changelog", &merged);
    let r = changes(&lib, "nb", JAN);
    assert_eq!(r[0]["reason"], "history-changed");
    lib.put(".changelog-cursors", "not json\n");
    assert_eq!(changes(&lib, "nb", JAN)[0]["reason"], "first-read");
}

/// A writer appends while the notebook reads again and again: every line
/// is reported exactly once over all reads.
#[test]
fn a_concurrent_writer_loses_and_repeats_nothing() {
    let lib = Lib::new();
    write(&lib, "notes/seed.md", JAN);
    changes(&lib, "nb", JAN);
    const N: usize = 20;
    let bin = assert_cmd::cargo::cargo_bin("kb-append");
    let script: String = (0..N)
        .map(|i| format!("echo '# {i}' | '{}' write notes/w{i}.md --no-commit >/dev/null || exit 1\n", bin.display()))
        .collect();
    let mut writer = std::process::Command::new("sh");
    crate::util::isolate(&mut writer, lib.root());
    writer.args(["-c", &script]).env("KB_NOW", JAN);
    let mut child = writer.spawn().unwrap();
    let mut got: Vec<(String, String)> = Vec::new();
    loop {
        let done = child.try_wait().unwrap().is_some();
        let r = changes(&lib, "nb", JAN);
        assert!(r.iter().all(|x| x["record"] != "cold_start"), "{r:?}");
        got.extend(seen(&r));
        if done {
            break;
        }
    }
    assert!(child.wait().unwrap().success());
    let want: Vec<(String, String)> = (0..N).map(|i| pair("write", &format!("notes/w{i}.md"))).collect();
    assert_eq!(got, want);
}

#[test]
fn a_notebook_is_required_and_checked() {
    let lib = Lib::new();
    let out = lib.cmd("kb-index").args(["changes"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("changes needs --notebook NB"));
    let out = lib.cmd("kb-index").args(["changes", "--notebook", "a\nb"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!lib.path(".changelog-cursors").exists());
}

/// A state file with two lines for a notebook (a library whose file was
/// merged as a log before cursors became local): the one with
/// the latest read wins.
#[test]
fn merged_state_file_keeps_each_notebooks_latest_cursor() {
    let lib = Lib::new();
    write(&lib, "notes/a.md", JAN);
    changes(&lib, "nb", "2026-01-10T00:00:00Z");
    let old = lib.read(".changelog-cursors");
    write(&lib, "notes/b.md", JAN);
    changes(&lib, "nb", "2026-01-11T00:00:00Z");
    let new = lib.read(".changelog-cursors");
    assert_ne!(old, new);
    // The union, older line last: order does not matter, the read time does.
    lib.put(".changelog-cursors", &format!("{new}{old}"));
    write(&lib, "notes/c.md", JAN);
    let r = changes(&lib, "nb", "2026-01-12T00:00:00Z");
    assert_eq!(seen(&r), vec![pair("write", "notes/c.md")]);
    assert_eq!(lib.read(".changelog-cursors").lines().count(), 1, "the next store keeps one line per notebook");
    // Local state: never merged, never committed.
    assert!(!lib.read(".gitattributes").contains(".changelog-cursors"));
    assert!(lib.read(".gitignore").contains("/.changelog-cursors"));
}
