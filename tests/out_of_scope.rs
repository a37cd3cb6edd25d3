//! Seed 001's out-of-scope answer: when no document passes, kb-score's
//! summary says `out_of_scope: true`, names the closest entries in the
//! seed's words and exits 1; a query with hits carries none of it.

use serde_json::{json, Value};

use crate::util::{records, Lib};

const JWT: &str = ".memory/.references/jwt-auth-v1.md";
const BIRDS: &str = ".memory/.references/swallow-migration-v1.md";

fn library() -> Lib {
    let lib = Lib::new();
    let batch = [
        json!({"path": JWT, "content": "---\ntopic: jwt-auth\ntype: security\nkeywords: [bearer token, authentication]\n---\n# JWT\n\nSigned tokens.\n"}),
        json!({"path": BIRDS, "content": "---\ntopic: swallow-migration\ntype: biology\n---\n# Birds\n\nWhere they fly in winter.\n"}),
    ]
    .iter()
    .map(|v| v.to_string() + "\n")
    .collect::<String>();
    lib.cmd("kb-append").args(["batch", "--no-commit"]).write_stdin(batch).assert().success();
    lib
}

fn search(lib: &Lib, args: &[&str]) -> (Value, i32) {
    let out = lib.cmd("kb-score").args(["--no-registries", "--format", "jsonl"]).args(args).output().unwrap();
    let recs = records(&out.stdout);
    let last = recs.last().cloned().expect("a summary record");
    assert_eq!(last["record"], "summary");
    (last, out.status.code().unwrap_or(-1))
}

#[test]
fn no_evidence_names_the_closest_entries_by_spelling() {
    let lib = library();
    let (s, code) = search(&lib, &["airspeed", "velocity", "of", "an", "unladen", "swalow"]);
    assert_eq!(code, 1);
    assert_eq!(s["hits"], 0);
    assert_eq!(s["out_of_scope"], true);
    let closest = s["closest"].as_array().unwrap();
    assert_eq!(closest[0]["path"], BIRDS, "the misspelt swallow is closest: {s}");
    assert_eq!(closest[0]["near"], "spelling");
    assert_eq!(closest[0]["source"], "local");
    assert!(closest[0]["closeness"].as_f64().unwrap() > 0.0);
    assert!(closest.len() <= 3);
    let answer = s["answer"].as_str().unwrap();
    assert!(
        answer.starts_with(
            "The library has no evidence on this. The closest entries are swallow-migration \
             (.memory/.references/swallow-migration-v1.md)"
        ),
        "{answer}"
    );
    assert!(answer.ends_with("Recommendation: this query is out of scope for the project knowledge base."));
}

#[test]
fn a_filter_that_drops_every_match_names_the_dropped_matches() {
    let lib = library();
    let (s, code) = search(&lib, &["jwt", "--type", "biology"]);
    assert_eq!(code, 1);
    assert_eq!(s["out_of_scope"], true);
    assert_eq!(s["closest"][0]["path"], JWT);
    assert_eq!(s["closest"][0]["near"], "filtered");
    assert_eq!(s["closest"][0]["match"], "topic-contains");
}

#[test]
fn nothing_close_says_so() {
    let lib = library();
    let (s, code) = search(&lib, &["qqqq"]);
    assert_eq!(code, 1);
    assert_eq!(s["out_of_scope"], true);
    assert!(s.get("closest").is_none());
    assert_eq!(
        s["answer"],
        "The library has no evidence on this. No entry comes close. Recommendation: this query is out of scope \
         for the project knowledge base."
    );
}

#[test]
fn a_query_with_hits_is_in_scope() {
    let lib = library();
    let (s, code) = search(&lib, &["jwt"]);
    assert_eq!(code, 0);
    assert_eq!(s["out_of_scope"], false);
    assert!(s.get("closest").is_none() && s.get("answer").is_none());
}

#[test]
fn the_table_prints_the_answer() {
    let lib = library();
    let out = lib.cmd("kb-score").args(["--no-registries", "--format", "table", "unladen", "swalow"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines().last().unwrap().starts_with("The library has no evidence on this. The closest entries are"),
        "{text}"
    );
}

#[test]
fn external_closest_entries_name_their_source() {
    let lib = library();
    let ext = Lib::new();
    ext.cmd("kb-append")
        .args(["write", ".memory/.references/swallows-v1.md", "--no-commit"])
        .write_stdin("---\ntopic: swallows\n---\n# Swallows\n")
        .assert()
        .success();
    let src = format!("corp={}", ext.dir().display());
    let (s, code) = search(&lib, &["unladen", "swalows", "--source", &src]);
    assert_eq!(code, 1);
    assert_eq!(s["closest"][0]["source"], "corp", "{s}");
    assert!(s["answer"].as_str().unwrap().contains("swallows (corp:.memory/.references/swallows-v1.md)"), "{s}");
}
