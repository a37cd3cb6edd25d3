//! kb-index: list, rebuild (full and incremental), check, stale, status,
//! quick and scheduled maintenance, and the justfile recipes built on them.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;

use crate::util::{golden, records, Lib, NOW};

/// A small library covering every category, two marked versions of one
/// topic, a domain cited by three references, a broken document, and
/// changelog events for usage, lifecycle and promotion.
pub fn fixture() -> Lib {
    let lib = Lib::new();
    lib.put(
        ".memory/.references/jwt-auth-v1.md",
        "---\ntopic: jwt-auth\nkeywords: [jwt, auth]\nlast_verified_at: 2025-10-01\nstaleness_threshold_days: 60\neffectiveness_mark: true\nsource: https://auth0.com/docs\n---\n# JWT auth v1\nSee https://datatracker.ietf.org/doc/rfc7519 and [the session](../.experiences/software/session-impl.md).\n",
    );
    lib.put(
        ".memory/.references/jwt-auth-v2.md",
        "---\ntopic: jwt-auth\nkeywords: [jwt]\nlast_verified_at: 2026-02-20\neffectiveness_mark: true\nrelated: [oauth-flow]\n---\nhttps://datatracker.ietf.org/doc/rfc7519\n",
    );
    lib.put(
        ".memory/.references/oauth-flow-v1.md",
        "---\ntopic: oauth-flow\nlast_verified_at: 2026-02-01\nrelated: [rate-limiting]\n---\nhttps://datatracker.ietf.org/doc/rfc6749\n",
    );
    lib.put(
        ".memory/.references/rate-limiting-v1.md",
        "---\ntopic: rate-limiting\nlast_verified_at: not a date\n---\n",
    );
    lib.put(
        ".memory/.experiences/software/session-impl.md",
        "---\ntype: software\nlast_verified_at: 2025-09-01\n---\n# Session impl\n",
    );
    lib.put(".memory/.experiences/software/cache-complete.md", "---\ntype: software\n---\n# Cache\n");
    lib.put(".memory/.experiences/software/cache-eval.md", "---\ntype: software\nlast_verified_at: 2025-01-01\n---\n");
    lib.put(".memory/.experiences/data-pipeline/etl-verify.md", "---\ntype: data-pipeline\n---\n");
    lib.put(".memory/.type-profiles/software.md", "---\ntopic: software\nupdated_at: 2026-01-15\n---\n");
    lib.put(".memory/.thinking/patterns/divide.md", "---\ntopic: divide\n---\n# Divide and conquer\n");
    lib.put(".memory/.thinking/patterns/guess.md", "---\ntopic: guess\n---\n");
    lib.put(".memory/.thinking/patterns/old.md", "---\ntopic: old\nsuperseded_by: divide\n---\n");
    lib.put(".memory/.thinking/raw/cache-miss.md", "---\nquality_tier: H\n---\n");
    lib.put(".memory/.thinking/raw/cache-miss-2.md", "---\nquality: L\n---\n");
    lib.put(".skills/.active/pdf-tools/SKILL.md", "---\nname: pdf-tools\ntrust_tier: T3\n---\n# PDF\n");
    lib.put(".skills/.active/csv-tools/SKILL.md", "---\nname: csv-tools\ntrust_tier: T3\n---\n# CSV\n");
    lib.put("notes/setup.md", "# Setup\n");
    lib.put("notes/bad.md", "---\ntopic: [broken\n---\nx\n");
    let mut log = String::new();
    let ev = |ts: &str, event: &str, path: &str, nb: &str| {
        format!("{}\n", json!({"ts": ts, "event": event, "path": path, "notebook": nb}))
    };
    for (i, nb) in ["nb1", "nb2", "nb3"].iter().enumerate() {
        let day = format!("2026-02-0{}T10:00:00Z", i + 1);
        log += &ev(&day, "referenced", ".memory/.thinking/patterns/divide.md", nb);
        log += &ev(&day, "referenced", ".skills/.active/pdf-tools/SKILL.md", nb);
        log += &ev(&day, "referenced", ".skills/.active/csv-tools/SKILL.md", nb);
        log += &ev(&day, "referenced", ".memory/.thinking/patterns/guess.md", nb);
        log += &ev(&format!("2026-02-0{}T18:00:00Z", i + 1), "accept", "notes/setup.md", nb);
    }
    log += &ev("2026-02-10T10:00:00Z", "referenced", ".skills/.active/csv-tools/SKILL.md", "nb4");
    log += &ev("2026-02-10T12:00:00Z", "replan", "notes/setup.md", "nb4");
    log += "{\"this is\": not json}\n";
    lib.put(".changelog", &log);
    lib
}

fn stdout(lib: &Lib, bin: &str, args: &[&str]) -> String {
    let out = lib.cmd(bin).args(args).output().expect("run");
    String::from_utf8(out.stdout).expect("utf8")
}

/// Every derived file's bytes, keyed by library path.
pub fn derived(lib: &Lib) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in walk(&lib.dir()) {
        let rel = e.strip_prefix(lib.dir()).unwrap().to_string_lossy().replace('\\', "/");
        let name = e.file_name().unwrap().to_string_lossy();
        if name == ".index.md" || name == ".master-index.md" || name == ".ioc.md" || name == ".relations.jsonl" {
            out.insert(rel, std::fs::read_to_string(&e).unwrap());
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            if e.file_name() != ".cache" {
                out.extend(walk(&p));
            }
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn list_prints_one_entry_record_per_document() {
    let lib = fixture();
    let out = lib.cmd("kb-index").args(["list", "--format", "jsonl"]).assert().code(2);
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    golden("kb-index/list.out.jsonl", &text);
    let recs = records(text.as_bytes());
    let v1 = recs.iter().find(|r| r["path"] == ".memory/.references/jwt-auth-v1.md").unwrap();
    assert_eq!(v1["stale"], true);
    assert_eq!(v1["effectiveness_mark"], true);
    let err = recs.last().unwrap();
    assert_eq!((err["record"].as_str(), err["path"].as_str()), (Some("error"), Some("notes/bad.md")));
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.starts_with("kb-index: notes/bad.md: invalid YAML"), "{stderr}");
}

#[test]
fn list_table_has_the_seed_tables_per_category() {
    let lib = fixture();
    std::fs::remove_file(lib.path("notes/bad.md")).unwrap();
    let out = stdout(&lib, "kb-index", &["list", "--format", "table"]);
    golden("kb-index/list.table", &out);
    assert!(out.contains("divide   validated\nguess    validated\nold      deprecated\n"), "{out}");
}

#[test]
fn list_type_takes_pipe_separated_segments_and_topic_filters() {
    let lib = fixture();
    let paths = |args: &[&str]| -> Vec<String> {
        let out = lib.cmd("kb-index").args(args).output().unwrap();
        records(&out.stdout)
            .iter()
            .filter(|r| r["record"] == "entry")
            .map(|r| r["path"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        paths(&["list", "--type", "data-pipeline|nothing"]),
        vec![".memory/.experiences/data-pipeline/etl-verify.md"]
    );
    assert_eq!(paths(&["list", "--type", "software|data-pipeline"]).len(), 4);
    assert_eq!(
        paths(&["list", "--topic", "JWT-AUTH"]),
        vec![".memory/.references/jwt-auth-v1.md", ".memory/.references/jwt-auth-v2.md"]
    );
}

#[test]
fn rebuild_writes_indexes_ioc_marks_and_commits() {
    let lib = fixture();
    lib.git_init();
    lib.put(".inconsistency.log", "2026-01-01T00:00:00Z | missing-file | gone.md\n");
    lib.put(".memory/.references/.index.md", "| file | topic |\n|---|---|\n| gone-v1.md | gone |\n");
    let out = lib.cmd("kb-index").args(["rebuild"]).assert().success();
    let rec = &records(&out.get_output().stdout)[0];
    assert_eq!(rec["mode"], "full");
    assert_eq!(rec["documents"], 18);
    assert_eq!(rec["ioc_domains"], 1);
    assert_eq!(rec["inconsistency_log_cleared"], true);
    assert_eq!(rec["committed"], true);
    assert_eq!(
        rec["marks_cleared"],
        json!([{"record": "mark-cleared", "path": ".memory/.references/jwt-auth-v1.md",
                "kept": ".memory/.references/jwt-auth-v2.md", "scope": "reference:jwt-auth"}])
    );
    assert_eq!(rec["problems"][0]["path"], "notes/bad.md");
    assert!(!lib.path(".inconsistency.log").exists());
    assert!(lib.read(".memory/.references/jwt-auth-v1.md").contains("\neffectiveness_mark: false\n"));
    assert!(lib.read(".memory/.references/jwt-auth-v2.md").contains("\neffectiveness_mark: true\n"));
    golden("kb-index/references.index.md", &lib.read(".memory/.references/.index.md"));
    golden("kb-index/master-index.md", &lib.read(".master-index.md"));
    golden("kb-index/ioc.md", &lib.read(".ioc.md"));
    assert!(lib
        .read(".master-index.md")
        .contains("| .skills/.active/pdf-tools/SKILL.md | skill | pdf-tools |  |  |  |  | T3 |"));
    assert_eq!(lib.git(&["log", "-1", "--format=%s"]).trim(), "task-ai(library):maintain rebuild index");
    // A second full rebuild changes nothing and commits nothing.
    let rec = &records(&lib.cmd("kb-index").arg("rebuild").output().unwrap().stdout)[0];
    assert_eq!((rec["touched"].clone(), rec["committed"].clone()), (json!([]), json!(false)));
}

#[test]
fn incremental_rebuild_is_byte_identical_to_a_full_rebuild() {
    let lib = fixture();
    let first = &records(&lib.cmd("kb-index").args(["rebuild", "--incremental"]).output().unwrap().stdout)[0];
    assert_eq!(first["mode"], "full");
    let noop = &records(&lib.cmd("kb-index").args(["rebuild", "--incremental"]).output().unwrap().stdout)[0];
    assert_eq!((noop["mode"].as_str(), noop["reread"].as_u64()), (Some("no-op"), Some(0)));
    // Change, add, delete and break documents; mark a second version. First
    // wait until the file system's clock has ticked past the cache's stamps
    // (a condition, not a sleep), so an edit of the same size shows in mtime.
    let probe = lib.root().join("mtime-probe");
    let stamp = || {
        std::fs::write(&probe, "").unwrap();
        std::fs::metadata(&probe).unwrap().modified().unwrap()
    };
    let t0 = stamp();
    while stamp() == t0 {
        std::thread::yield_now();
    }
    lib.put(
        ".memory/.references/oauth-flow-v1.md",
        "---\ntopic: oauth-flow\nkeywords: [oauth]\n---\nhttps://datatracker.ietf.org/x\n",
    );
    lib.put(
        ".memory/.references/jwt-auth-v3.md",
        "---\ntopic: jwt-auth\neffectiveness_mark: true\nlast_verified_at: 2026-02-28\n---\n",
    );
    lib.put("notes/new/deep.md", "---\ntopic: deep\n---\n");
    std::fs::remove_file(lib.path(".memory/.thinking/raw/cache-miss-2.md")).unwrap();
    std::fs::remove_file(lib.path(".skills/.active/csv-tools/SKILL.md")).unwrap();
    lib.put("notes/setup.md", "---\ntopic: [broken\n---\n");
    let inc = &records(&lib.cmd("kb-index").args(["rebuild", "--incremental"]).output().unwrap().stdout)[0];
    assert_eq!(inc["mode"], "incremental");
    assert_eq!(inc["reread"], 4);
    assert_eq!(inc["marks_cleared"][0]["path"], ".memory/.references/jwt-auth-v2.md");
    // A derived file edited by hand is repaired by a no-op-looking run.
    lib.put(".master-index.md", "tampered\n");
    let rep = &records(&lib.cmd("kb-index").args(["rebuild", "--incremental"]).output().unwrap().stdout)[0];
    assert_eq!(rep["touched"], json!([".master-index.md"]));
    let incremental = derived(&lib);
    assert!(incremental.contains_key("notes/new/.index.md"));
    assert!(
        !incremental.contains_key(".skills/.active/.index.md")
            || !incremental[".skills/.active/.index.md"].contains("csv-tools")
    );
    // Wipe every derived file and the cache; a full rebuild gives the same bytes.
    for p in incremental.keys().filter(|p| !p.ends_with(".relations.jsonl")) {
        std::fs::remove_file(lib.path(p)).unwrap();
    }
    std::fs::remove_dir_all(lib.path(".cache")).unwrap();
    lib.cmd("kb-index").args(["rebuild"]).assert().success();
    assert_eq!(derived(&lib), incremental);
}

#[test]
fn check_logs_missing_files_and_exits_1() {
    let lib = fixture();
    std::fs::remove_file(lib.path("notes/bad.md")).unwrap();
    lib.cmd("kb-index").args(["rebuild", "--no-commit"]).assert().success();
    lib.cmd("kb-index").arg("check").assert().code(1); // the changelog's bad line
    lib.put(".changelog", "");
    std::fs::remove_file(lib.path(".inconsistency.log")).unwrap();
    lib.cmd("kb-index").arg("check").assert().success().stdout("");
    std::fs::remove_file(lib.path(".memory/.type-profiles/software.md")).unwrap();
    lib.put("notes/extra.md", "# Extra\n");
    let out = lib.cmd("kb-index").arg("check").assert().code(1);
    let kinds: Vec<(String, String, String)> = records(&out.get_output().stdout)
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().into(),
                r["path"].as_str().unwrap().into(),
                r["index"].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    assert_eq!(
        kinds,
        vec![
            s("missing-file", ".memory/.type-profiles/software.md", ".master-index.md"),
            s("missing-file", ".memory/.type-profiles/software.md", ".memory/.type-profiles/.index.md"),
            s("missing-row", "notes/extra.md", ".master-index.md"),
            s("missing-row", "notes/extra.md", "notes/.index.md"),
        ]
    );
    assert_eq!(
        lib.read(".inconsistency.log"),
        format!(
            "{NOW} | missing-file | .memory/.type-profiles/software.md\n{NOW} | missing-file | .memory/.type-profiles/software.md\n{NOW} | missing-row | notes/extra.md\n{NOW} | missing-row | notes/extra.md\n"
        )
    );
}

#[test]
fn stale_reports_references_and_old_provisional_experiences() {
    let lib = fixture();
    let out = stdout(&lib, "kb-index", &["stale"]);
    let got: Vec<(String, String)> = records(out.as_bytes())
        .iter()
        .map(|r| (r["path"].as_str().unwrap().into(), r["reason"].as_str().unwrap().into()))
        .collect();
    let s = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        got,
        vec![
            s(".memory/.references/jwt-auth-v1.md", "past-threshold"),
            s(".memory/.references/rate-limiting-v1.md", "bad-date"),
            s(".memory/.experiences/software/session-impl.md", "provisional-unverified"),
        ]
    );
    let out = stdout(&lib, "kb-index", &["stale", "--days", "20"]);
    assert_eq!(records(out.as_bytes()).len(), 4, "oauth-flow is 28 days old: {out}");
}

#[test]
fn status_reports_six_dimensions_and_exits_1_on_attention() {
    let lib = fixture();
    lib.cmd("kb-index").args(["rebuild", "--no-commit"]).assert().success();
    let out = lib.cmd("kb-index").args(["status", "--format", "jsonl"]).assert().code(1);
    let dims = records(&out.get_output().stdout);
    let summary: Vec<(u64, String, bool)> = dims
        .iter()
        .map(|d| {
            (d["dimension"].as_u64().unwrap(), d["name"].as_str().unwrap().into(), d["attention"].as_bool().unwrap())
        })
        .collect();
    let s = |n: u64, a: &str, b: bool| (n, a.to_string(), b);
    assert_eq!(
        summary,
        vec![
            s(1, "index", false),
            s(2, "staleness", true),
            s(3, "effectiveness", true),
            s(4, "ioc", true),
            s(5, "lifecycle", true),
            s(6, "integrity", true),
        ]
    );
    let table = stdout(&lib, "kb-index", &["status", "--format", "table"]);
    golden("kb-index/status.table", &table);
    // A healthy library passes.
    let clean = Lib::new();
    clean.put("notes/a.md", "# A\n");
    clean.cmd("kb-index").args(["rebuild"]).assert().success();
    clean.cmd("kb-index").args(["status", "--format", "jsonl"]).assert().success();
}

#[test]
fn bad_inputs_are_reported_and_the_rest_is_indexed() {
    let lib = Lib::new();
    lib.put("notes/good.md", "---\ntopic: good\n---\n");
    lib.put("notes/bad-yaml.md", "---\n: : :\n  - [\n---\n");
    lib.put("notes/unclosed.md", "---\ntopic: x\n");
    lib.put("notes/types.md", "---\nkeywords: 7\nstaleness_threshold_days: soon\ntrust_tier: [T1]\n---\n");
    std::fs::write(lib.path("notes/binary.md"), b"\x00\xff\xfe binary \x00").unwrap();
    std::fs::write(lib.path("notes/huge.md"), vec![b'a'; 9 << 20]).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        std::os::unix::fs::symlink(lib.path("notes"), lib.path("notes/loop")).unwrap();
        let name = std::ffi::OsStr::from_bytes(b"bad-\xff.md");
        std::fs::write(lib.path("notes").join(name), "# x\n").unwrap();
    }
    lib.put(
        ".changelog",
        "{\"ts\":\"2026-01-01T00:00:00Z\",\"event\":\"write\",\"path\":\"notes/good.md\"}\n{\"ts\":\"2026-01",
    );
    let out = lib.cmd("kb-index").args(["rebuild", "--no-commit"]).assert().success();
    let rec = &records(&out.get_output().stdout)[0];
    let kinds: Vec<&str> = rec["problems"].as_array().unwrap().iter().map(|p| p["kind"].as_str().unwrap()).collect();
    for k in ["frontmatter", "not-utf8", "too-large", "walk"] {
        assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
    }
    let master = lib.read(".master-index.md");
    for p in ["notes/good.md", "notes/binary.md", "notes/huge.md", "notes/types.md", "notes/unclosed.md"] {
        assert!(master.contains(&format!("| {p} |")), "{p} not indexed:\n{master}");
    }
    let out = lib.cmd("kb-index").args(["status", "--format", "jsonl"]).assert().code(1);
    let dims = records(&out.get_output().stdout);
    let integrity: Vec<&str> =
        dims[5]["items"].as_array().unwrap().iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert!(integrity.contains(&"changelog-torn"), "{integrity:?}");
    assert!(integrity.contains(&"frontmatter"), "{integrity:?}");
}

#[test]
fn quick_reindexes_what_the_changelog_names_since_last_maintained() {
    let lib = Lib::new();
    lib.put("notes/a.md", "---\ntopic: a\n---\n");
    lib.put(
        ".changelog",
        "{\"ts\":\"2026-02-01T00:00:00Z\",\"event\":\"write\",\"path\":\"notes/a.md\",\"notebook\":\"nb1\"}\n",
    );
    let out = stdout(&lib, "kb-index", &["quick"]);
    assert_eq!(
        records(out.as_bytes())[0],
        json!({"record": "maintain", "mode": "quick", "since_ms": 0, "events": 1, "paths": ["notes/a.md"],
               "touched": ["notes/.index.md", ".master-index.md", ".relations.jsonl"], "last_maintained": 1772366400000i64})
    );
    assert_eq!(lib.read(".last-maintained"), "1772366400000\n");
    assert!(lib.read("notes/.index.md").contains("| a.md | a |"));
    assert_eq!(lib.read(".relations.jsonl"), "{\"from\":\"notebook:nb1\",\"to\":\"notes/a.md\",\"kind\":\"wrote\"}\n");
    let again = &records(stdout(&lib, "kb-index", &["quick"]).as_bytes())[0];
    assert_eq!((again["events"].as_u64(), again["since_ms"].as_i64()), (Some(0), Some(1772366400000)));
}

#[test]
fn scheduled_is_gated_to_once_a_day_and_runs_seven_steps() {
    let lib = fixture();
    lib.git_init();
    lib.put(".last-compact", "1772000000\n"); // 4 days before NOW: no compaction due
    let first = &records(stdout(&lib, "kb-index", &["scheduled"]).as_bytes())[0];
    assert_eq!(first["ran"], true);
    let names: Vec<&str> = first["steps"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["staleness", "promote", "core-rules", "compact", "rebuild-index", "rebuild-relations", "commit"]
    );
    assert_eq!(first["steps"][0]["stale"], 2);
    assert_eq!(first["steps"][1]["promoted"], json!([".skills/.active/pdf-tools/SKILL.md"]));
    assert_eq!(first["steps"][3]["ran"], false);
    assert_eq!(first["committed"], true);
    assert_eq!(lib.read(".last-scheduled"), "1772366400\n");
    assert!(lib.read(".skills/.active/pdf-tools/SKILL.md").contains("trust_tier: T4"));
    assert!(lib.read(".skills/.active/csv-tools/SKILL.md").contains("trust_tier: T3"), "csv-tools failed once");
    assert_eq!(lib.git(&["log", "-1", "--format=%s"]).trim(), "library(scheduled): daily maintenance 2026-03-01");
    let tracked = lib.git(&["ls-files"]);
    assert!(!tracked.contains(".cache/") && !tracked.contains(".library/.lock"), "{tracked}");
    // Gated: no work at all.
    let before = derived(&lib);
    std::fs::remove_file(lib.path(".master-index.md")).unwrap();
    let gated = &records(stdout(&lib, "kb-index", &["scheduled"]).as_bytes())[0];
    assert_eq!(
        gated,
        &json!({"record": "maintain", "mode": "scheduled", "ran": false,
        "next_run": "2026-03-02T12:00:00Z", "steps": [], "committed": false})
    );
    assert!(!lib.path(".master-index.md").exists());
    let forced = &records(stdout(&lib, "kb-index", &["scheduled", "--force"]).as_bytes())[0];
    assert_eq!(forced["ran"], true);
    assert_eq!(derived(&lib), before);
    // Compaction when the last one is 30 days old.
    lib.put(".last-compact", "1769000000\n");
    let forced = &records(stdout(&lib, "kb-index", &["scheduled", "--force"]).as_bytes())[0];
    assert_eq!(forced["steps"][3], json!({"step": 4, "name": "compact", "ran": true, "archived": 0}));
}

/// Runs a recipe of the repository's justfile with the built binaries
/// (KB_BIN_DIR) and `fakebin` (a fake crontab) first on PATH.
fn just(lib: &Lib, args: &[&str]) -> std::process::Output {
    let path = format!("{}:{}", lib.root().join("fakebin").display(), std::env::var("PATH").unwrap_or_default());
    let mut c = crate::recipes::just(lib.root());
    c.env("PATH", path).args(args).output().expect("just is on PATH")
}

#[test]
fn just_list_and_status() {
    let lib = fixture();
    std::fs::remove_file(lib.path("notes/bad.md")).unwrap();
    let out = just(&lib, &["list", "--type", "software"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    golden("kb-index/just-list-software.table", &String::from_utf8_lossy(&out.stdout));
    // the report shows what needs attention and exits 0; `check` gates on it.
    let out = just(&lib, &["status"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("[!] 1. index: "));
    let gate = just(&lib, &["check"]);
    assert_eq!(gate.status.code(), Some(1));
    assert_eq!(gate.stdout, out.stdout);
}

#[test]
fn just_maintain_modes() {
    let lib = fixture();
    lib.git_init();
    lib.git(&["add", "-A"]);
    lib.git(&["commit", "-qm", "fixture"]);
    let ok = |args: &[&str]| {
        let out = just(&lib, args);
        assert!(out.status.success(), "just {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        records(&out.stdout)
    };
    let q = ok(&["maintain"]);
    assert_eq!((q[0]["mode"].as_str(), q[0]["events"].as_u64()), (Some("quick"), Some(17)));
    assert!(lib.path(".last-maintained").exists());
    assert_eq!(ok(&["maintain", "rebuild-index"])[0]["record"], "rebuild");
    assert_eq!(lib.git(&["log", "-1", "--format=%s"]).trim(), "task-ai(library):maintain rebuild index");
    assert_eq!(ok(&["maintain", "rebuild-relations"])[0]["record"], "relations");
    assert_eq!(ok(&["maintain", "compact"])[0]["record"], "compact");
    assert_eq!(ok(&["maintain", "check-staleness"]).len(), 3);
    // A legacy mkdir lock of a dead process below the root is swept by full.
    std::fs::create_dir_all(lib.path("notes/.lock")).unwrap();
    std::fs::write(lib.path("notes/.lock/pid"), "999999999\n").unwrap();
    lib.put("notes/later.md", "# Later\n");
    for (i, mode) in ["full", "audit", "all"].into_iter().enumerate() {
        let recs = ok(&["maintain", mode]);
        let mut kinds: Vec<&str> = recs.iter().map(|r| r["record"].as_str().unwrap()).collect();
        kinds.dedup();
        let mut want = vec!["swept", "rebuild", "relations", "compact", "stale", "commit"];
        if i > 0 {
            want.remove(0);
        }
        assert_eq!(kinds, want, "{mode}");
    }
    assert!(!lib.path("notes/.lock").exists());
    assert!(lib.git(&["log", "--format=%s"]).contains("library(full): full maintenance 2026-03-01"));
    assert!(lib.git(&["ls-files"]).contains(".library/notes/later.md"));
    let s = ok(&["maintain", "scheduled"]);
    assert_eq!(s[0]["ran"], true);
    assert_eq!(ok(&["maintain", "scheduled"])[0]["ran"], false);
    assert_eq!(ok(&["maintain", "scheduled", "--force"])[0]["ran"], true);
    assert!(!just(&lib, &["maintain", "nonsense"]).status.success());
}

#[test]
fn just_install_and_uninstall_cron_keep_other_lines() {
    let lib = Lib::new();
    let fake = lib.root().join("fakebin");
    std::fs::create_dir_all(&fake).unwrap();
    let tab = lib.root().join("crontab.txt");
    let script = format!(
        "#!/bin/sh\nf='{}'\nif [ \"$1\" = -l ]; then [ -f \"$f\" ] || {{ echo 'no crontab for test' >&2; exit 1; }}; cat \"$f\"; else cat > \"$f\"; fi\n",
        tab.display()
    );
    std::fs::write(fake.join("crontab"), script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(fake.join("crontab"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let run = |recipe: &str| {
        let out = just(&lib, &[recipe]);
        assert!(out.status.success(), "{recipe}: {}", String::from_utf8_lossy(&out.stderr));
        records(&out.stdout)[0].clone()
    };
    assert_eq!(run("install-cron")["changed"], true);
    std::fs::write(&tab, format!("MAILTO=me\n{}5 * * * * other-job\n", std::fs::read_to_string(&tab).unwrap()))
        .unwrap();
    assert_eq!(run("install-cron")["changed"], true, "our line moves to the end once");
    assert_eq!(run("install-cron")["changed"], false, "idempotent");
    let text = std::fs::read_to_string(&tab).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(&lines[..2], ["MAILTO=me", "5 * * * * other-job"]);
    assert!(lines[2].starts_with("0 3 * * * cd "), "{}", lines[2]);
    assert!(
        lines[2].contains(" maintain scheduled >> ")
            && lines[2].contains(".library/.scheduled.log' 2>&1 # kb-tools:scheduled ")
    );
    assert_eq!(run("uninstall-cron")["changed"], true);
    assert_eq!(std::fs::read_to_string(&tab).unwrap(), "MAILTO=me\n5 * * * * other-job\n");
    assert_eq!(run("uninstall-cron")["changed"], false);
}
