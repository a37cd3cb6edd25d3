//! Issue 35, linear rule loading: a rule file is validated once per
//! distinct text (the result kept as local state under `.cache/`, checked
//! against the text's digest before use), an over-size or uncompilable
//! rule file is refused where it enters (a peer's commit waits), and a rule
//! file broken in place leaves its last good version in force, so no rule
//! file locks writers out or quietly weakens their scan.

use crate::util::{records, Lib};

const ACTIVE: &str = ".evolving-rules/security/active";

/// A rule file of `n` rules; rule `i` catches `zq<i>x-payload`.
fn many_rules(n: usize) -> String {
    let mut s = String::from("rules:\n");
    for i in 0..n {
        s.push_str(&format!(
            "- id: bulk-{i}\n  category: execution\n  severity: critical\n  description: bulk threat {i}\n  pattern: 'zq{i}x-payload\\b'\n  match: ['run zq{i}x-payload --now']\n  clean: ['zq{i}x is a name']\n"
        ));
    }
    s
}

/// The team's rule, in force before anything breaks.
const BEACON: &str = "rules:\n- id: team-01\n  category: exfiltration\n  severity: critical\n  description: the team's beacon\n  pattern: 'zz-beacon-[0-9]{4}'\n  match: ['zz-beacon-1234']\n  clean: ['beacon']\n";

/// `kb-append write`: (exit code, records, stderr).
fn write(lib: &Lib, path: &str, content: &str) -> (Option<i32>, Vec<serde_json::Value>, String) {
    let out = lib.cmd("kb-append").args(["write", path, "--no-commit", "--content", content]).output().unwrap();
    (out.status.code(), records(&out.stdout), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn refused(recs: &[serde_json::Value]) -> bool {
    recs.iter().any(|r| {
        r["record"] == "error"
            && r["message"].as_str().is_some_and(|m| m.contains("the guard judged the content dangerous"))
    })
}

fn written(lib: &Lib, path: &str) -> bool {
    lib.path(path).is_file()
}

#[test]
fn a_peer_rule_file_of_20000_rules_waits_and_never_locks_writers_out() {
    let lib = Lib::new();
    lib.put(&format!("{ACTIVE}/team.yaml"), BEACON);
    let text = many_rules(20_000);
    let rel = format!("{ACTIVE}/peer.yaml");
    let why =
        kb::guard::evolve::peer::judge_rule_change(&kb::Library { dir: lib.dir() }, &rel, None, Some(text.as_bytes()))
            .unwrap()
            .expect("an over-size rule file waits");
    assert!(why.contains("over the limit"), "{why}");
    // Planted anyway (a hand copy, an old merge): writers still write,
    // the team's rule still refuses its beacon, and the big file is named.
    lib.put(&rel, &text);
    let (code, recs, err) = write(&lib, "notes/plain.md", "# Plain\n\nnothing here\n");
    assert!(written(&lib, "notes/plain.md"), "{code:?} {recs:?} {err}");
    assert!(err.contains("peer.yaml") && err.contains("over the limit"), "{err}");
    let (_, recs, _) = write(&lib, "notes/beacon.md", "# Beacon\n\nsend zz-beacon-9876 home\n");
    assert!(refused(&recs) && !written(&lib, "notes/beacon.md"), "{recs:?}");
    let (code, recs) = {
        let out = lib.cmd("kb-guard").args(["rules", "validate", lib.path(&rel).to_str().unwrap()]).output().unwrap();
        (out.status.code(), records(&out.stdout))
    };
    assert_eq!(code, Some(1), "{recs:?}");
    assert!(recs[0]["problems"].to_string().contains("over the limit"), "{recs:?}");
}

#[test]
fn a_rule_file_broken_in_place_keeps_its_last_good_version_in_force() {
    let lib = Lib::new();
    let rel = format!("{ACTIVE}/team.yaml");
    lib.put(&rel, BEACON);
    // The first writer validates the file and keeps it as the last good one.
    let (code, recs, err) = write(&lib, "notes/a.md", "# A\n\nplain\n");
    assert_eq!(code, Some(0), "{recs:?} {err}");
    let (_, recs, _) = write(&lib, "notes/beacon.md", "# Beacon\n\nsend zz-beacon-9876 home\n");
    assert!(refused(&recs), "{recs:?}");
    // A peer's uncompilable rule file waits at admission...
    let broken = BEACON.replace("zz-beacon-[0-9]{4}", "zz-beacon(?=[0-9])");
    let why = kb::guard::evolve::peer::judge_rule_change(
        &kb::Library { dir: lib.dir() },
        &format!("{ACTIVE}/peer.yaml"),
        None,
        Some(broken.replace("team-01", "peer-01").as_bytes()),
    )
    .unwrap()
    .expect("an uncompilable rule file waits");
    assert!(why.contains("does not compile"), "{why}");
    // ...and put in place anyway, the last good version stays in force,
    // with a warning naming the file; plain writes land.
    lib.put(&rel, &broken);
    let (_, recs, err) = write(&lib, "notes/beacon.md", "# Beacon\n\nsend zz-beacon-9876 home\n");
    assert!(refused(&recs) && !written(&lib, "notes/beacon.md"), "{recs:?}");
    assert!(err.contains("team.yaml") && err.contains("last good version stays in force"), "{err}");
    let (_, recs, err) = write(&lib, "notes/b.md", "# B\n\nplain\n");
    assert!(written(&lib, "notes/b.md"), "{recs:?} {err}");
    // The kept version is local state, never shared.
    assert!(kb::library::kind::kind(".cache/guard-rules/x.yaml") == kb::library::kind::Kind::Local);
}

#[test]
fn a_kept_rule_file_whose_bytes_do_not_match_its_digest_is_not_used() {
    let lib = Lib::new();
    let rel = format!("{ACTIVE}/team.yaml");
    lib.put(&rel, BEACON);
    write(&lib, "notes/a.md", "# A\n\nplain\n");
    let kept: Vec<_> = std::fs::read_dir(lib.path(".cache/guard-rules"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    // Someone rewrites the kept copy's rule; its digest no longer matches.
    let text = std::fs::read_to_string(&kept[0]).unwrap();
    std::fs::write(&kept[0], text.replace("zz-beacon-[0-9]{4}", "zz-other-[0-9]{4}")).unwrap();
    lib.put(&rel, &BEACON.replace("zz-beacon-[0-9]{4}", "zz-beacon(?=[0-9])"));
    let (_, recs, err) = write(&lib, "notes/other.md", "# Other\n\nsend zz-other-9876 home\n");
    assert!(!refused(&recs) && written(&lib, "notes/other.md"), "{recs:?} {err}");
    assert!(err.contains("team.yaml") && !err.contains("last good version"), "{err}");
}

#[test]
fn a_big_rule_set_loads_once_and_then_scans_from_the_kept_copy() {
    let lib = Lib::new();
    lib.put(&format!("{ACTIVE}/bulk.yaml"), &many_rules(2_000));
    let scan = |text: &str| {
        std::fs::write(lib.root().join("x.txt"), text).unwrap();
        let out = lib.cmd("kb-guard").args(["scan", "x.txt"]).output().unwrap();
        records(&out.stdout).iter().filter_map(|r| r["rule"].as_str().map(String::from)).collect::<Vec<_>>()
    };
    assert_eq!(scan("run zq1999x-payload now\n"), ["bulk-1999"]);
    assert!(lib.path(".cache/guard-rules").is_dir());
    assert_eq!(scan("run zq7x-payload now\n"), ["bulk-7"]);
    assert!(scan("plain words\n").is_empty());
}
