//! kb-relate: relations rebuild, neighbours, usage, lifecycle, promotion.

use serde_json::json;

use crate::index::fixture;
use crate::util::{golden, records, Lib};

#[test]
fn rebuild_writes_the_sorted_edge_set() {
    let lib = fixture();
    let out = lib.cmd("kb-relate").arg("rebuild").assert().success();
    let rec = &records(&out.get_output().stdout)[0];
    assert_eq!(rec["kinds"], json!({"link": 1, "referenced": 13, "related": 2}));
    golden("kb-relate/relations.jsonl", &lib.read(".relations.jsonl"));
    let again = &records(&lib.cmd("kb-relate").arg("rebuild").output().unwrap().stdout)[0];
    assert_eq!(again["changed"], false);
}

#[test]
fn neighbors_walks_two_hops_in_order() {
    let lib = fixture();
    lib.cmd("kb-relate").arg("rebuild").assert().success();
    let out = lib
        .cmd("kb-relate")
        .args(["neighbors", ".memory/.references/jwt-auth-v2.md", "--format", "jsonl"])
        .assert()
        .success();
    assert_eq!(
        records(&out.get_output().stdout),
        vec![
            json!({"record": "neighbor", "path": ".memory/.references/oauth-flow-v1.md", "hop": 1, "via": ".memory/.references/jwt-auth-v2.md"}),
            json!({"record": "neighbor", "path": ".memory/.references/rate-limiting-v1.md", "hop": 2, "via": ".memory/.references/oauth-flow-v1.md"}),
        ]
    );
    let one =
        lib.cmd("kb-relate").args(["neighbors", ".memory/.references/jwt-auth-v2.md", "--hops", "1"]).output().unwrap();
    assert_eq!(records(&one.stdout).len(), 1);
    let table = lib
        .cmd("kb-relate")
        .args(["neighbors", ".memory/.references/jwt-auth-v1.md", "--format", "table"])
        .output()
        .unwrap();
    golden("kb-relate/neighbors.table", &String::from_utf8_lossy(&table.stdout));
    lib.cmd("kb-relate").args(["neighbors", "notes/setup.md"]).assert().code(1).stdout("");
}

#[test]
fn usage_counts_references_and_replans_within_a_day() {
    let lib = fixture();
    let out = lib.cmd("kb-relate").args(["usage", "--format", "jsonl"]).assert().success();
    let recs = records(&out.get_output().stdout);
    let csv = recs.iter().find(|r| r["path"] == ".skills/.active/csv-tools/SKILL.md").unwrap();
    assert_eq!(
        csv,
        &json!({"record": "usage", "path": ".skills/.active/csv-tools/SKILL.md", "usage_count": 4, "failures": 1,
                "failure_rate": 25.0, "tasks": 4, "accepted_tasks": 3, "suggest_mark": false})
    );
    let suggested: Vec<&str> =
        recs.iter().filter(|r| r["suggest_mark"] == true).map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(
        suggested,
        [
            ".memory/.thinking/patterns/divide.md",
            ".memory/.thinking/patterns/guess.md",
            ".skills/.active/pdf-tools/SKILL.md"
        ]
    );
    let table = lib.cmd("kb-relate").args(["usage", "--format", "table"]).output().unwrap();
    golden("kb-relate/usage.table", &String::from_utf8_lossy(&table.stdout));
}

#[test]
fn lifecycle_states_and_write() {
    let lib = fixture();
    lib.git_init();
    let states = |args: &[&str]| {
        let out = lib.cmd("kb-relate").args(args).output().unwrap();
        assert!(out.status.success());
        records(&out.stdout)
    };
    let recs = states(&["lifecycle"]);
    let got: Vec<(&str, &str)> = recs
        .iter()
        .filter(|r| r["record"] == "lifecycle")
        .map(|r| (r["path"].as_str().unwrap(), r["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            (".memory/.thinking/patterns/divide.md", "validated"),
            (".memory/.thinking/patterns/guess.md", "validated"),
            (".memory/.thinking/patterns/old.md", "deprecated"),
        ]
    );
    assert_eq!(
        recs.last().unwrap(),
        &json!({"record": "lifecycle-summary", "counts": {"draft": 0, "active": 0, "validated": 2, "deprecated": 1}, "needs_review": 1})
    );
    // Two replans after citing `guess` deprecate it.
    let mut log = lib.read(".changelog");
    for nb in ["nb5", "nb6"] {
        log += &format!(
            "{}\n",
            json!({"ts": "2026-02-20T10:00:00Z", "event": "referenced", "path": ".memory/.thinking/patterns/guess.md", "notebook": nb})
        );
        log += &format!(
            "{}\n",
            json!({"ts": "2026-02-20T11:00:00Z", "event": "replan", "path": "notes/setup.md", "notebook": nb})
        );
    }
    lib.put(".changelog", &log);
    let recs = states(&["lifecycle", "--write"]);
    assert_eq!(recs[1]["state"], "deprecated");
    assert_eq!(recs[1]["written"], true);
    assert_eq!(lib.read(".memory/.thinking/patterns/guess.md"), "---\ntopic: guess\nstate: deprecated\n---\n");
    assert_eq!(
        lib.read(".memory/.thinking/patterns/divide.md"),
        "---\ntopic: divide\nstate: validated\n---\n# Divide and conquer\n"
    );
    assert_eq!(lib.git(&["log", "-1", "--format=%s"]).trim(), "task-ai(library):thinking-pattern lifecycle");
    let again = states(&["lifecycle", "--write"]);
    assert!(again.iter().all(|r| r["record"] == "lifecycle-summary" || r["written"] == false));
}

#[test]
fn promote_moves_used_never_failed_t3_skills_to_t4() {
    let lib = fixture();
    let dry = records(&lib.cmd("kb-relate").args(["promote", "--dry-run"]).output().unwrap().stdout);
    assert_eq!(
        dry,
        vec![
            json!({"record": "promotion", "path": ".skills/.active/csv-tools/SKILL.md", "skill": "csv-tools", "usage_count": 4, "failures": 1, "promoted": false, "would_promote": false, "dry_run": true}),
            json!({"record": "promotion", "path": ".skills/.active/pdf-tools/SKILL.md", "skill": "pdf-tools", "usage_count": 3, "failures": 0, "promoted": false, "would_promote": true, "dry_run": true}),
        ]
    );
    assert!(lib.read(".skills/.active/pdf-tools/SKILL.md").contains("trust_tier: T3"));
    lib.cmd("kb-relate").args(["promote", "--no-commit"]).assert().success();
    assert_eq!(lib.read(".skills/.active/pdf-tools/SKILL.md"), "---\nname: pdf-tools\ntrust_tier: T4\n---\n# PDF\n");
    assert!(lib.read(".skills/.active/.index.md").contains("| pdf-tools/SKILL.md | pdf-tools |  |  |  |  |  | T4 |"));
    let after = records(&lib.cmd("kb-relate").args(["promote"]).output().unwrap().stdout);
    assert_eq!(after.len(), 1, "T4 skills are no longer candidates");
}

#[test]
fn output_is_the_same_with_one_thread() {
    let lib = fixture();
    for args in [&["list", "--format", "jsonl"][..], &["status", "--format", "jsonl"][..]] {
        let many = lib.cmd("kb-index").args(args).output().unwrap().stdout;
        let one = lib.cmd("kb-index").env("RAYON_NUM_THREADS", "1").args(args).output().unwrap().stdout;
        assert_eq!(many, one, "{args:?}");
    }
    let a = lib.cmd("kb-relate").args(["usage"]).output().unwrap().stdout;
    let b = lib.cmd("kb-relate").env("RAYON_NUM_THREADS", "1").args(["usage"]).output().unwrap().stdout;
    assert_eq!(a, b);
}

#[test]
fn help_names_every_flag_and_a_closed_pipe_is_quiet() {
    let lib = Lib::new();
    for (bin, src) in
        [("kb-index", include_str!("../lib/src/cli/index.rs")), ("kb-relate", include_str!("../lib/src/cli/relate.rs"))]
    {
        let help = String::from_utf8(lib.cmd(bin).arg("--help").output().unwrap().stdout).unwrap();
        for flag in crate::util::table_flags(src) {
            assert!(help.contains(&format!("--{flag}")), "{bin} --help lacks --{flag}");
        }
        assert!(help.contains("Example:"));
    }
    let fx = fixture();
    for i in 0..800 {
        fx.put(
            &format!("notes/bulk/n{i:03}.md"),
            &format!("---\ntopic: bulk-{i}\nkeywords: [bulk, pipe]\n---\n# n{i}\n"),
        );
    }
    let (status, err) = crate::util::into_head(fx.root(), "kb-index", &["list", "--format", "jsonl"]);
    assert!(status.success(), "{status}: {err}");
    assert_eq!(err, "");
}

#[test]
fn every_record_has_a_schema_naming_its_required_fields() {
    let lib = fixture();
    let mut recs = Vec::new();
    let runs: &[(&str, &[&str])] = &[
        ("kb-index", &["list", "--format", "jsonl"]),
        ("kb-index", &["rebuild", "--no-commit"]),
        ("kb-index", &["check"]),
        ("kb-index", &["stale"]),
        ("kb-index", &["status", "--format", "jsonl"]),
        ("kb-index", &["quick"]),
        ("kb-index", &["scheduled", "--no-commit"]),
        ("kb-index", &["commit", "full"]),
        ("kb-relate", &["rebuild"]),
        ("kb-relate", &["neighbors", ".memory/.references/jwt-auth-v2.md"]),
        ("kb-relate", &["usage"]),
        ("kb-relate", &["lifecycle"]),
        ("kb-relate", &["promote", "--dry-run"]),
    ];
    for (bin, args) in runs {
        recs.extend(records(&lib.cmd(bin).args(*args).output().unwrap().stdout));
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let mut seen = std::collections::BTreeSet::new();
    for r in &recs {
        let name = r["record"].as_str().expect("every record names its type");
        if name == "error" {
            continue;
        }
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.schema.json"))).unwrap()).unwrap();
        for field in schema["required"].as_array().unwrap() {
            assert!(r.get(field.as_str().unwrap()).is_some(), "{name} lacks {field}: {r}");
        }
        for key in r.as_object().unwrap().keys() {
            assert!(schema["properties"].get(key).is_some(), "{name}.schema.json lacks property {key}");
        }
        seen.insert(name.to_string());
    }
    assert_eq!(seen.len(), 13, "{seen:?}");
}

/// `kb-relate lifecycle --write` killed at every step: the states it sets
/// are journaled like a batch, so each pattern keeps its old or its new
/// bytes, the ones that landed are indexed and committed by the next
/// writer (once), and a rerun sets the rest. Before, the documents were
/// written one by one with no journal: a kill left some written,
/// unindexed and uncommitted.
#[test]
fn lifecycle_write_killed_at_every_step_is_recovered() {
    use kb::fs::crash::Step;
    const PATTERNS: [&str; 3] = [
        ".memory/.thinking/patterns/divide.md",
        ".memory/.thinking/patterns/guess.md",
        ".memory/.thinking/patterns/old.md",
    ];
    let setup = || {
        let lib = fixture();
        lib.git_init();
        kb::derived::rebuild_all::rebuild(&kb::Library { dir: lib.dir() }).unwrap();
        lib.git(&["add", "-A"]);
        lib.git(&["commit", "-q", "-m", "seed"]);
        lib
    };
    let reference = setup();
    let old: Vec<String> = PATTERNS.iter().map(|p| reference.read(p)).collect();
    reference.cmd("kb-relate").args(["lifecycle", "--write"]).assert().success();
    let new: Vec<String> = PATTERNS.iter().map(|p| reference.read(p)).collect();
    let changed = old.iter().zip(&new).filter(|(o, n)| o != n).count();
    assert!(changed >= 2, "the fixture must change several patterns: {changed}");
    let mut cases = vec![(Step::WriteTemp, 1), (Step::Journal, 1)];
    cases.extend((1..=changed as u32).map(|n| (Step::Rename, n)));
    cases.extend([Step::Renamed, Step::Index, Step::GitAdd, Step::Committed].map(|s| (s, 1)));
    for (step, n) in cases {
        let what = format!("{}:{n}", step.name());
        let lib = setup();
        let commits = lib.git(&["rev-list", "--count", "HEAD"]).trim().parse::<usize>().unwrap();
        let out = lib.cmd("kb-relate").args(["lifecycle", "--write"]).env(kb::fs::crash::VAR, &what).output().unwrap();
        assert!(out.status.code().is_none(), "{what}: not aborted: {}", String::from_utf8_lossy(&out.stderr));
        lib.cmd("kb-append").args(["write", "notes/after.md", "--content", "# after\n"]).assert().success();
        // A kill before the journal leaves the dead writer's temps for the sweep.
        lib.cmd("kb-lock").arg("sweep").assert().success();
        let landed = match step {
            Step::WriteTemp | Step::Journal => 0,
            Step::Rename => n as usize,
            _ => changed,
        };
        let now: Vec<String> = PATTERNS.iter().map(|p| lib.read(p)).collect();
        for (i, p) in PATTERNS.iter().enumerate() {
            assert!(now[i] == old[i] || now[i] == new[i], "{what}: {p} torn");
        }
        let got = now.iter().zip(&old).filter(|(a, o)| a != o).count();
        assert_eq!(got, landed, "{what}: patterns landed");
        crate::util::assert_recovered(&lib, &what);
        let after = lib.git(&["rev-list", "--count", "HEAD"]).trim().parse::<usize>().unwrap();
        assert_eq!(after, commits + 1 + usize::from(landed > 0), "{what}: commits");
        let subjects = lib.git(&["log", "--format=%s"]);
        let n_life = subjects.lines().filter(|s| *s == "task-ai(library):thinking-pattern lifecycle").count();
        assert_eq!(n_life, usize::from(landed > 0), "{what}: {subjects}");
        // A rerun sets what had not landed.
        lib.cmd("kb-relate").args(["lifecycle", "--write"]).assert().success();
        let now: Vec<String> = PATTERNS.iter().map(|p| lib.read(p)).collect();
        assert_eq!(now, new, "{what}: after a rerun");
        crate::util::assert_recovered(&lib, &format!("{what}, rerun"));
    }
}
