//! Portable names: `kb-append` writes only names every machine
//! of a fleet can check out and that it can itself write back (its temp
//! file beside the target must fit the name limit too), so sync, which
//! judges a peer's names by the same rule (`kb::library::names`), never
//! admits what the writer refuses. A refused name exits 2 with an error
//! record saying why, and nothing in the library changes.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

use crate::util::{records, Lib};

/// Every file under the library with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                stack.push(p);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// `kb-append write PATH --content …`: exit code and records.
fn write(lib: &Lib, path: &str) -> (i32, Vec<Value>) {
    let out = lib.cmd("kb-append").args(["write", path, "--content", "# Note\n\nplain text\n"]).output().unwrap();
    (out.status.code().unwrap_or(-1), records(&out.stdout))
}

/// The refusals: each path, and a word its error must say.
fn refused_names() -> Vec<(String, &'static str)> {
    vec![
        ("notes/CON.md".into(), "device name"),
        ("notes/nul.txt".into(), "device name"),
        ("notes/com1/a.md".into(), "device name"),
        ("a\\b.md".into(), "backslash"),
        ("x.md:Zone.Identifier".into(), "':'"),
        ("a*?.md".into(), "'*'"),
        ("notes/<b>.md".into(), "'<'"),
        ("notes/cafe\u{301}.md".into(), "NFC"),
        (format!("notes/{}.md", "n".repeat(247)), "temp file"),
    ]
}

#[test]
fn the_writer_refuses_names_other_systems_cannot_check_out() {
    let lib = Lib::new();
    let before = files(&lib.dir());
    for (path, word) in refused_names() {
        let (code, recs) = write(&lib, &path);
        assert_eq!(code, 2, "{path:?} was accepted: {recs:?}");
        let errors: Vec<&str> =
            recs.iter().filter(|r| r["record"] == "error").filter_map(|r| r["message"].as_str()).collect();
        assert!(errors.iter().any(|m| m.contains(word)), "{path:?}: {errors:?} does not say {word:?}");
        assert!(!recs.iter().any(|r| r["record"] == "write"), "{path:?}: {recs:?}");
        assert_eq!(files(&lib.dir()), before, "{path:?} changed the library");
    }
    // The 250-byte name is 250 bytes (the limit is about bytes).
    assert_eq!(refused_names()[8].0.rsplit('/').next().unwrap().len(), 250);
}

#[test]
fn a_batch_refuses_the_same_names_line_by_line_and_writes_the_rest() {
    let lib = Lib::new();
    let mut input: String =
        refused_names().iter().map(|(p, _)| format!("{}\n", json!({"path": p, "content": "# x\n"}))).collect();
    input.push_str(&format!("{}\n", json!({"path": "notes/console.md", "content": "# Console\n"})));
    let out = lib.cmd("kb-append").arg("batch").write_stdin(input).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let recs = records(&out.stdout);
    let errors = recs.iter().filter(|r| r["record"] == "error").count();
    assert_eq!(errors, refused_names().len(), "{recs:?}");
    let written: Vec<&str> =
        recs.iter().filter(|r| r["record"] == "write").filter_map(|r| r["path"].as_str()).collect();
    assert_eq!(written, ["notes/console.md"]);
}

#[test]
fn names_that_only_look_like_refused_ones_are_written() {
    let lib = Lib::new();
    let longest = format!("notes/{}.md", "n".repeat(208 - 3));
    for path in [
        "notes/console.md",
        "notes/\u{4e2d}\u{6587}\u{7b14}\u{8bb0}.md",
        "notes/con-pool.md",
        "notes/caf\u{e9}.md",
        &longest,
    ] {
        let (code, recs) = write(&lib, path);
        assert_eq!(code, 0, "{path:?} was refused: {recs:?}");
        assert_eq!(recs.iter().find(|r| r["record"] == "write").map(|r| &r["path"]), Some(&json!(path)));
        assert!(lib.path(path).is_file(), "{path:?}");
    }
    // The longest name is written back too (its temp name fits).
    let out = lib.cmd("kb-append").args(["write", &longest, "--append", "--content", "more\n"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn kb_guard_filter_refuses_the_same_names() {
    let lib = Lib::new();
    let input = format!("{}\n", json!({"path": "notes/AUX.md", "content": "# x\n"}));
    let out = lib.cmd("kb-guard").arg("filter").write_stdin(input).output().unwrap();
    let recs = records(&out.stdout);
    let e = recs.iter().find(|r| r["record"] == "error").unwrap_or_else(|| panic!("accepted: {recs:?}"));
    assert!(e["message"].as_str().unwrap().contains("device name"), "{e}");
}
