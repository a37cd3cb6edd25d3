//! `kb-append promote-answer`: seed 001's `--promote-to-library`. The
//! answer becomes a new page in the local library with its provenance and
//! `derived-from` relations; external libraries are cited, never written;
//! hostile cited paths are refused.

use serde_json::{json, Value};

use crate::util::{records, Lib};

const DORA: &str = ".memory/.references/dora-v1.md";
const PAGE: &str = "notes/answers/dora-vs-safe-pi.md";

fn setup() -> (Lib, Lib) {
    let local = Lib::new();
    local.git_init();
    local
        .cmd("kb-append")
        .args(["write", DORA, "--content", "---\ntopic: dora\n---\n# DORA\n\nFour keys.\n"])
        .assert()
        .success();
    let corp = Lib::new();
    corp.cmd("kb-append")
        .args(["write", "notes/safe-pi.md", "--content", "# SAFe PI\n", "--no-commit"])
        .assert()
        .success();
    (local, corp)
}

fn promote(local: &Lib, corp: &Lib, args: &[&str]) -> (Vec<Value>, i32, String) {
    let src = format!("corp={}", corp.dir().display());
    let out = local
        .cmd("kb-append")
        .args(["promote-answer"])
        .args(args)
        .args(["--source", &src, "--no-registries"])
        .write_stdin("DORA and PI planning: measure per value stream.\n")
        .output()
        .unwrap();
    (records(&out.stdout), out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn an_answer_becomes_a_local_page_with_provenance_and_derived_from_edges() {
    let (local, corp) = setup();
    let before = crate::util::tree_times(&corp.dir());
    let (recs, code, err) = promote(
        &local,
        &corp,
        &[
            PAGE,
            "--cites",
            DORA,
            "--cites",
            "corp:notes/safe-pi.md",
            "--question",
            "How do DORA and PI planning interact?",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(recs[0]["record"], "write");
    assert_eq!(recs[0]["action"], "created");
    assert_eq!(recs[1]["record"], "promoted");
    assert_eq!(recs[1]["cites"][1]["library"], "corp");
    let page = local.read(PAGE);
    assert!(page.starts_with("---\ntopic: dora-vs-safe-pi\ntype: answer\nsource: kb-query\nquality_status: provisional\nderived-from:\n- .memory/.references/dora-v1.md\n- corp:notes/safe-pi.md\nprovenance:\n"), "{page}");
    assert!(page.contains("  question: How do DORA and PI planning interact?\n"), "{page}");
    assert!(page.contains("  - library: corp\n    path: notes/safe-pi.md\n    sha256: "), "{page}");
    assert!(page.ends_with("---\n\nDORA and PI planning: measure per value stream.\n"), "{page}");
    // The relations: one derived-from edge per cited file.
    let edges: Vec<Value> = records(local.read(".relations.jsonl").as_bytes())
        .into_iter()
        .filter(|e| e["kind"] == "derived-from")
        .collect();
    assert_eq!(
        edges,
        vec![
            json!({"from": PAGE, "to": DORA, "kind": "derived-from"}),
            json!({"from": PAGE, "to": "library:corp:notes/safe-pi.md", "kind": "derived-from"}),
        ]
    );
    // A full rebuild gives the same edges (they come from the page itself).
    let written = local.read(".relations.jsonl");
    local.cmd("kb-relate").args(["rebuild"]).assert().success();
    assert_eq!(local.read(".relations.jsonl"), written);
    // Indexed, logged and committed through the one writer.
    assert!(local.read(".master-index.md").contains(PAGE));
    assert!(local.read(".changelog").contains(&format!("\"path\":\"{PAGE}\"")));
    assert_eq!(local.git(&["log", "-1", "--format=%s"]).trim(), "task-ai(library):user created dora-vs-safe-pi");
    // The external library was only read.
    assert_eq!(crate::util::tree_times(&corp.dir()), before);
}

#[test]
fn an_external_library_can_be_cited_but_never_written() {
    let (local, corp) = setup();
    let before = crate::util::tree_times(&corp.dir());
    let target = corp.path("notes/x.md").display().to_string();
    for path in ["corp:notes/x.md", target.as_str(), "../corp/.library/notes/x.md"] {
        let (recs, code, err) = promote(&local, &corp, &[path, "--cites", "corp:notes/safe-pi.md"]);
        assert_eq!(code, 2, "{path}: {recs:?}");
        assert!(err.contains("refused") || err.contains("absolute") || err.contains(".."), "{path}: {err}");
    }
    let (_, code, err) = promote(&local, &corp, &["corp:notes/x.md", "--cites", "corp:notes/safe-pi.md"]);
    assert_eq!(code, 2);
    assert!(err.contains("external libraries are read-only"), "{err}");
    assert_eq!(crate::util::tree_times(&corp.dir()), before);
    assert!(!local.path("notes/x.md").exists() && !local.path("corp:notes").exists());
}

#[test]
fn hostile_or_missing_cites_are_refused_and_nothing_is_written() {
    let (local, corp) = setup();
    std::os::unix::fs::symlink("/etc/passwd", local.path("notes-link.md")).unwrap();
    std::fs::create_dir_all(local.path("notes")).unwrap();
    std::os::unix::fs::symlink(corp.dir(), local.path("notes/corp-dir")).unwrap();
    let log = local.read(".changelog");
    for (cite, why) in [
        ("../etc/passwd", "contains '..'"),
        ("/etc/passwd", "absolute"),
        ("corp:../../etc/passwd", "contains '..'"),
        ("notes-link.md", "symlink"),
        ("notes/corp-dir/notes/safe-pi.md", "symlink"),
        (".changelog", "not a document"),
        ("notes/nope.md", "cannot read"),
        ("nolib:notes/a.md", "no library named 'nolib'"),
    ] {
        let (recs, code, err) = promote(&local, &corp, &[PAGE, "--cites", cite]);
        assert_eq!(code, 2, "{cite}: {recs:?}");
        assert!(err.contains(&format!("refused: cited '{cite}'")) && err.contains(why), "{cite}: {err}");
    }
    let (_, code, err) = promote(&local, &corp, &[PAGE]);
    assert_eq!(code, 2);
    assert!(err.contains("needs at least one --cites"), "{err}");
    assert!(!local.path(PAGE).exists());
    assert_eq!(local.read(".changelog"), log);
}

#[test]
fn a_promotion_never_replaces_a_page() {
    let (local, corp) = setup();
    let (_, code, err) = promote(&local, &corp, &[DORA, "--cites", DORA]);
    assert_eq!(code, 2);
    assert!(err.contains("exists; a promoted answer is a new page"), "{err}");
    assert!(local.read(DORA).contains("Four keys."));
}
