//! linear rule loading: a rule file is validated once per
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
    let why = kb::evolve::peer::judge_rule_change(&kb::Library { dir: lib.dir() }, &rel, None, Some(text.as_bytes()))
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
    let why = kb::evolve::peer::judge_rule_change(
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

/// A rule file with one rule of each kind validation judges: good ones
/// (one wider than another, which is no problem), a match example that
/// does not match, a clean example that matches, an example caught only
/// in a base64 payload, and one whose payload example a stronger rule of
/// the file shadows (inside a payload, one finding per match).
const JUDGED: &str = r#"rules:
- id: zq-alpha
  category: execution
  severity: high
  description: alpha
  pattern: 'zq-alpha-[0-9]+'
  match: ['zq-alpha-12']
  clean: ['zq-alpha']
- id: zq-wide
  category: execution
  severity: medium
  description: wider than alpha
  pattern: 'zq-alpha'
  match: ['zq-alpha-12', 'zq-alpha']
  clean: ['zq-beta']
- id: zq-gamma
  category: execution
  severity: high
  description: a match example that does not match
  pattern: 'zq-gamma-[0-9]+'
  match: ['zq-gamma-x', 'zq-gamma-7']
- id: zq-delta
  category: execution
  severity: high
  description: a clean example that matches
  pattern: 'zq-delta'
  match: ['zq-delta']
  clean: ['plain', 'zq-delta here']
- id: zq-eps
  category: execution
  severity: critical
  description: caught inside a payload
  pattern: 'zq-eps-payload'
  match: ['echo dGhlbiBydW4genEtZXBzLXBheWxvYWQgcmlnaHQgbm93IHBsZWFzZQ== | base64 -d']
  clean: ['zq-eps alone']
- id: zq-weak
  category: execution
  severity: medium
  description: shadowed inside a payload by zq-eps, which is stronger
  pattern: 'zq-eps'
  match: ['zq-eps', 'echo dGhlbiBydW4genEtZXBzLXBheWxvYWQgcmlnaHQgbm93IHBsZWFzZQ== | base64 -d']
  clean: ['plain']
"#;

/// `kb-guard rules validate` of `text`: (exit code, valid, problems).
fn validate(lib: &Lib, name: &str, text: &str) -> (Option<i32>, bool, Vec<String>) {
    let f = lib.root().join(name);
    std::fs::write(&f, text).unwrap();
    let out = lib.cmd("kb-guard").args(["rules", "validate", f.to_str().unwrap()]).output().unwrap();
    let recs = records(&out.stdout);
    let problems = recs[0]["problems"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
    (out.status.code(), recs[0]["valid"].as_bool().unwrap(), problems)
}

/// The `error` message a scan gives for the library rule file `rel`.
fn load_error(lib: &Lib, rel: &str, text: &str) -> String {
    lib.put(rel, text);
    std::fs::write(lib.root().join("x.txt"), "plain\n").unwrap();
    let out = lib.cmd("kb-guard").args(["scan", "x.txt"]).output().unwrap();
    let recs = records(&out.stdout);
    let err = recs.iter().find(|r| r["record"] == "error").unwrap_or_else(|| panic!("{recs:?}"));
    assert!(err["rule_file"].as_str().unwrap().ends_with(rel), "{err}");
    err["message"].as_str().unwrap().to_string()
}

#[test]
fn validation_refuses_bad_examples_and_nothing_else_with_the_same_messages() {
    let lib = Lib::new();
    let (code, valid, problems) = validate(&lib, "judged.yaml", JUDGED);
    assert_eq!((code, valid), (Some(1), false));
    assert_eq!(
        problems,
        [
            r#"rule zq-gamma: match example does not match: "zq-gamma-x""#,
            r#"rule zq-delta: clean example matches: "zq-delta here""#,
            r#"rule zq-weak: match example does not match: "echo dGhlbiBydW4genEtZXBzLXBheWxvYWQgcmlnaHQgbm93IHBsZWFzZQ== | base64 -d""#,
        ]
    );
    let rel = format!("{ACTIVE}/judged.yaml");
    assert_eq!(
        load_error(&lib, &rel, JUDGED),
        format!("{}: ", lib.path(&rel).display())
            + r#"rule zq-gamma: match example does not match: "zq-gamma-x"; rule zq-delta: clean example matches: "zq-delta here"; rule zq-weak: match example does not match: "echo dGhlbiBydW4genEtZXBzLXBheWxvYWQgcmlnaHQgbm93IHBsZWFzZQ== | base64 -d""#
    );
    // Without the two bad rules the file is valid: a wider rule beside a
    // narrower one, and an example caught in a payload, are fine.
    let good: String = JUDGED
        .split("- id: ")
        .filter(|r| !["zq-gamma", "zq-delta", "zq-weak"].iter().any(|id| r.starts_with(id)))
        .collect::<Vec<_>>()
        .join("- id: ");
    assert_eq!(validate(&lib, "good.yaml", &good), (Some(0), true, vec![]));
    std::fs::remove_file(lib.path(&rel)).unwrap();
    lib.put(&format!("{ACTIVE}/good.yaml"), &good);
    std::fs::write(lib.root().join("x.txt"), "zq-alpha-3\n").unwrap();
    let out = lib.cmd("kb-guard").args(["scan", "x.txt"]).output().unwrap();
    let rules: Vec<_> = records(&out.stdout).iter().filter_map(|r| r["rule"].as_str().map(String::from)).collect();
    assert_eq!(rules, ["zq-alpha"], "one finding per match: the stronger rule");
}

#[test]
fn validation_refuses_uncompilable_and_clashing_rules_with_the_same_messages() {
    let lib = Lib::new();
    let rule = |id: &str, pattern: &str| {
        format!("- id: {id}\n  category: execution\n  severity: high\n  description: d\n  pattern: '{pattern}'\n  match: ['zq-ok']\n")
    };
    let cases = [
        format!("rules:\n{}{}", rule("zq-ok", "zq-ok"), rule("zq-look", "zq(?=-ok)")),
        format!("rules:\n{}{}", rule("zq-ok", "zq-ok"), rule("zq-ok", "zq")),
        format!("rules:\n{}", rule("exf-01", "zq-ok")),
        format!("rules:\n{}", rule("zq-empty", "(zq)?")),
    ];
    let rel = format!("{ACTIVE}/judged.yaml");
    let mut seen = Vec::new();
    for text in cases {
        let (code, valid, problems) = validate(&lib, "judged.yaml", &text);
        assert_eq!((code, valid), (Some(1), false), "{problems:?}");
        let message = load_error(&lib, &rel, &text);
        let root = format!("{}/", lib.root().display());
        let lib_root = format!("{}/", lib.path(ACTIVE).display());
        seen.push((problems.join(" | ").replace(&root, ""), message.replace(&lib_root, "")));
    }
    // As loaded, the file's path comes twice (as the scan has always said it).
    let look = "pattern does not compile: regex parse error:     zq(?=-ok)       ^^^ error: look-around, including look-ahead and look-behind, is not supported";
    let want = [
        (format!("judged.yaml: rule zq-look: {look}"), format!("judged.yaml: judged.yaml: rule zq-look: {look}")),
        (
            "judged.yaml: rule id zq-ok appears twice".into(),
            "judged.yaml: judged.yaml: rule id zq-ok appears twice".into(),
        ),
        (
            "rule exf-01: id already defined in core".into(),
            "judged.yaml: rule exf-01: id already defined in core".into(),
        ),
        (
            "judged.yaml: rule zq-empty: pattern can match the empty string".into(),
            "judged.yaml: judged.yaml: rule zq-empty: pattern can match the empty string".into(),
        ),
    ];
    assert_eq!(seen, want);
}
