//! kb-lastword on real files: golden edits of tricky Markdown, byte-exact
//! round trips over the agents-md corpus, conflicts, bad input, staging,
//! resolve, and 16 concurrent sessions.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{golden, records, NOW};

/// A temp dir with `home/` (KB_LASTWORD_HOME) and `proj/` (the cwd).
pub(crate) struct Lw {
    tmp: tempfile::TempDir,
}

impl Lw {
    pub(crate) fn new() -> Lw {
        let lw = Lw { tmp: tempfile::tempdir().unwrap() };
        fs::create_dir_all(lw.agents()).unwrap();
        fs::create_dir_all(lw.proj()).unwrap();
        lw
    }
    /// The temp dir holding `home/`, `proj/` and anything else a test needs.
    pub(crate) fn root(&self) -> &Path {
        self.tmp.path()
    }
    /// Writes `config.yaml` naming these project knowledge files
    /// (`auto_detect`) and, when `bases` is not empty, these global ones
    /// instead of seed 004's three: kb-lastword writes no other file.
    pub(crate) fn configure(&self, project: &[&str], bases: &[&str]) {
        let list = |v: &[&str]| v.iter().map(|f| format!("\n    - {}", yaml_str(f))).collect::<String>();
        let mut text = format!("project_knowledge:\n  enabled: true\n  auto_detect:{}\n", list(project));
        if !bases.is_empty() {
            let b: String =
                bases.iter().enumerate().map(|(i, f)| format!("\n  - id: kb{i}\n    file: {}", yaml_str(f))).collect();
            text.push_str(&format!("default_knowledge_bases:{b}\n"));
        }
        fs::create_dir_all(self.lastword()).unwrap();
        fs::write(self.lastword().join("config.yaml"), text).unwrap();
    }
    pub(crate) fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }
    pub(crate) fn agents(&self) -> PathBuf {
        self.home().join(".config/agents")
    }
    pub(crate) fn lastword(&self) -> PathBuf {
        self.agents().join("last-word")
    }
    pub(crate) fn proj(&self) -> PathBuf {
        self.tmp.path().join("proj")
    }
    pub(crate) fn std_cmd(&self) -> std::process::Command {
        use assert_cmd::cargo::CommandCargoExt;
        let mut c = std::process::Command::cargo_bin("kb-lastword").unwrap();
        crate::util::isolate(&mut c, &self.proj());
        c.env("KB_LASTWORD_HOME", self.home()).env_remove("KB_LASTWORD_LOCK_MS");
        c
    }
    pub(crate) fn cmd(&self, args: &[&str]) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::from_std(self.std_cmd());
        c.args(args).timeout(std::time::Duration::from_secs(120));
        c
    }
    /// Runs a command with stdin; returns (exit code, records, stderr).
    pub(crate) fn run(&self, args: &[&str], stdin: &str) -> (i32, Vec<Value>, String) {
        let out = self.cmd(args).write_stdin(stdin).output().unwrap();
        (out.status.code().unwrap_or(-1), records(&out.stdout), String::from_utf8_lossy(&out.stderr).into_owned())
    }
    pub(crate) fn staging(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = fs::read_dir(self.lastword().join("staging"))
            .map(|rd| rd.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }
}

fn fixture(name: &str) -> Vec<u8> {
    fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lastword").join(name)).unwrap()
}

pub(crate) fn corpus() -> Option<Vec<PathBuf>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/agents-md");
    let Ok(rd) = fs::read_dir(&dir) else {
        eprintln!("skipping: {} is absent", dir.display());
        return None;
    };
    let mut v: Vec<PathBuf> = rd
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md") && !p.ends_with("SOURCES.md"))
        .collect();
    v.sort();
    Some(v)
}

pub(crate) fn yaml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

pub(crate) fn entry(path: &str, heading: &str, level: Option<u8>, op: &str, content: Option<&str>) -> String {
    let level = level.map_or("null".to_string(), |l| l.to_string());
    let content = content.map_or("null".to_string(), yaml_str);
    format!(
        "  - key: {{path: {}, heading: {}, level: {level}}}\n    operation: {op}\n    content: {content}\n",
        yaml_str(path),
        yaml_str(heading)
    )
}

pub(crate) fn doc(entries: &[String]) -> String {
    format!("version: \"1.0.0\"\nsource: test\nentries:\n{}", entries.concat())
}

#[test]
fn golden_operations_on_tricky_markdown() {
    type Case<'a> = (&'a str, &'a str, Option<u8>, &'a str, Option<&'a str>);
    let cases: &[Case] = &[
        ("update", "Build", Some(2), "update", Some("new line 1\nnew line 2\n")),
        ("clear", "Build", Some(2), "clear", Some("")),
        ("delete", "Build", Some(2), "delete", None),
        ("delete-last", "Test", None, "delete", None),
        ("create", "Added", None, "update", Some("- fresh")),
    ];
    for name in ["fences", "setext", "crlf", "bom", "nested", "eof", "empty"] {
        for (case, heading, level, op, content) in cases {
            let lw = Lw::new();
            let target = lw.proj().join("AGENTS.md");
            fs::write(&target, fixture(&format!("{name}.md"))).unwrap();
            let input = doc(&[entry("AGENTS.md", heading, *level, op, *content)]);
            let (code, recs, err) = lw.run(&["plan"], &input);
            assert_eq!(code, 0, "{name}/{case}: {err}");
            assert_eq!(recs[0]["status"], "pending");
            let (code, recs, err) = lw.run(&["apply"], "");
            assert_eq!(code, 0, "{name}/{case}: {err}");
            let once = fs::read(&target).unwrap();
            golden(&format!("kb-lastword/{name}.{case}.md"), &String::from_utf8(once.clone()).unwrap());
            let status = recs[0]["status"].as_str().unwrap().to_string();
            // Re-applying the same delta changes nothing.
            lw.run(&["plan"], &input);
            let (_, again, _) = lw.run(&["apply"], "");
            assert_eq!(fs::read(&target).unwrap(), once, "{name}/{case} not idempotent");
            assert_eq!(again[0]["status"], "unchanged", "{name}/{case} (first: {status})");
            assert!(!lw.proj().join(".agents/AGENTS.md.yaml").exists());
        }
    }
}

#[test]
fn dry_run_prints_a_diff_and_changes_nothing() {
    let lw = Lw::new();
    let user = lw.agents().join("USER.md");
    fs::write(&user, fixture("crlf.md")).unwrap();
    let input = doc(&[
        entry("~/.config/agents/USER.md", "Build", Some(2), "update", Some("just build")),
        entry("~/.config/agents/USER.md", "Test", None, "delete", None),
    ]);
    lw.cmd(&["plan"]).write_stdin(input).assert().success();
    let queue = fs::read(lw.lastword().join("USER.md.yaml")).unwrap();
    let out = lw.cmd(&["apply", "--dry-run"]).assert().success().get_output().stdout.clone();
    golden("kb-lastword/dry-run.diff", &String::from_utf8(out).unwrap());
    assert_eq!(fs::read(&user).unwrap(), fixture("crlf.md"));
    assert_eq!(fs::read(lw.lastword().join("USER.md.yaml")).unwrap(), queue);
}

/// Every corpus file: no-ops and updates with each section's own body
/// leave it byte-identical; one edited section changes only its bytes.
#[test]
fn corpus_round_trips_byte_for_byte() {
    let Some(files) = corpus() else { return };
    assert_eq!(files.len(), 59);
    let lw = Lw::new();
    // Each copy is a configured project knowledge file.
    let names: Vec<String> = (0..files.len()).map(|n| format!("./f{n:02}.md")).collect();
    lw.configure(&names.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
    for (n, src) in files.iter().enumerate() {
        let original = fs::read(src).unwrap();
        let text = String::from_utf8(original.clone()).unwrap();
        let name = format!("f{n:02}.md");
        let target = lw.proj().join(&name);
        fs::write(&target, &original).unwrap();
        let heads = kb::lastword::outline::headings(&text);
        let unique: Vec<usize> = (0..heads.len())
            .filter(|&i| heads.iter().filter(|h| h.text == heads[i].text).count() == 1 && !heads[i].text.is_empty())
            .collect();
        let (mut noops, mut updates) = (Vec::new(), Vec::new());
        for &i in &unique {
            let h = &heads[i];
            let end = kb::lastword::outline::section_end(&heads, i, text.len());
            let body = &text[h.end..end];
            noops.push(entry(&name, &h.text, Some(h.level), "no-op", None));
            if !body.trim().is_empty() {
                updates.push(entry(&name, &h.text, None, "update", Some(body)));
            }
        }
        for entries in [&noops, &updates] {
            let (code, _, err) = lw.run(&["plan"], &doc(entries));
            assert_eq!(code, 0, "{}: {err}", src.display());
        }
        let (code, recs, err) = lw.run(&["apply"], "");
        assert_eq!(code, 0, "{}: {err}", src.display());
        assert!(recs.iter().all(|r| r["status"] == "unchanged"), "{}", src.display());
        assert_eq!(fs::read(&target).unwrap(), original, "{} changed on a no-op round trip", src.display());

        // One section edited: the bytes before its body and after it stay.
        let Some(&i) = unique.get(unique.len() / 2) else { continue };
        let h = heads[i].clone();
        let end = kb::lastword::outline::section_end(&heads, i, text.len());
        lw.run(&["plan"], &doc(&[entry(&name, &h.text, Some(h.level), "update", Some("EDITED"))]));
        let (code, recs, err) = lw.run(&["apply"], "");
        assert_eq!((code, recs[0]["status"].as_str()), (0, Some("applied")), "{}: {err}", src.display());
        let now = fs::read(&target).unwrap();
        assert_eq!(&now[..h.end], &original[..h.end], "{}: prefix", src.display());
        let tail = &original[end..];
        assert_eq!(&now[now.len() - tail.len()..], tail, "{}: suffix", src.display());
        let mid = String::from_utf8(now[h.end..now.len() - tail.len()].to_vec()).unwrap();
        assert_eq!(mid.trim(), "EDITED", "{}", src.display());
        // Deleting it leaves exactly the bytes around the section.
        lw.run(&["plan"], &doc(&[entry(&name, &h.text, Some(h.level), "delete", None)]));
        lw.cmd(&["apply"]).assert().success();
        let now = fs::read(&target).unwrap();
        assert_eq!(now, [&original[..h.start], tail].concat(), "{}: delete", src.display());
        fs::remove_file(&target).unwrap();
    }
}

#[test]
fn duplicate_keys_stage_the_whole_file_group() {
    let lw = Lw::new();
    let input = doc(&[
        entry("~/.config/agents/USER.md", "Projects", Some(2), "update", Some("A")),
        entry("~/.config/agents/USER.md", "Projects", Some(3), "update", Some("B")),
        entry("~/.config/agents/USER.md", "Projects", None, "update", Some("C")),
        entry("~/.config/agents/SOUL.md", "Values", None, "update", Some("honest")),
    ]);
    let (code, recs, err) = lw.run(&["plan"], &input);
    assert_eq!(code, 1, "{err}");
    let status: Vec<&str> = recs.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(status, ["staged", "staged", "staged", "pending"]);
    assert_eq!(
        recs[2]["error"],
        "duplicate heading \"Projects\" (any level) for ~/.config/agents/USER.md: entries[0] already declares it (level 2)"
    );
    assert!(err.contains("entries[2]: duplicate heading"), "{err}");
    let staged = lw.staging();
    assert_eq!(staged.len(), 1);
    let name = staged[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("20260301-120000-") && name.len() == "20260301-120000-xxxx.yaml".len(), "{name}");
    let text = fs::read_to_string(&staged[0]).unwrap();
    assert!(text.contains("error: 'plan: duplicate heading"), "{text}");
    assert!(text.contains("queue: ~/.config/agents/last-word/USER.md.yaml"), "{text}");
    // resolve shows the problem and keeps the file until it is fixed.
    let (code, recs, _) = lw.run(&["resolve", &name], "");
    assert_eq!(code, 1);
    assert_eq!(recs[0]["field"], "entries[2].key");
    let fixed = text.replace(
        "    heading: Projects\n  operation: update\n  content: C",
        "    heading: Plans\n  operation: update\n  content: C",
    );
    assert_ne!(fixed, text);
    fs::write(&staged[0], fixed).unwrap();
    let (code, recs, err) = lw.run(&["resolve", &name], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(recs.last().unwrap()["record"], "resolved");
    assert!(lw.staging().is_empty());
    lw.cmd(&["apply"]).assert().success();
    assert_eq!(
        fs::read_to_string(lw.agents().join("USER.md")).unwrap(),
        "## Projects\n\nA\n\n### Projects\n\nB\n\n## Plans\n\nC\n"
    );
    assert_eq!(fs::read_to_string(lw.agents().join("SOUL.md")).unwrap(), "## Values\n\nhonest\n");
}

#[test]
fn ambiguous_heading_and_a_persons_edit_are_staged_not_guessed() {
    let lw = Lw::new();
    let agents = lw.proj().join("AGENTS.md");
    fs::write(&agents, "# A\n\n## Notes\n\none\n\n## Notes\n\ntwo\n\n## Keep\n\nk\n").unwrap();
    let (code, recs, _) = lw.run(&["plan"], &doc(&[entry("AGENTS.md", "Notes", None, "update", Some("x"))]));
    assert_eq!(code, 1);
    assert_eq!(
        recs[0]["error"],
        "heading \"Notes\" is ambiguous in AGENTS.md: it appears on lines 3, 7 (give a level or rename one)"
    );
    // Planned against "k", then a person rewrites the section before apply.
    let (code, _, _) = lw.run(&["plan"], &doc(&[entry("AGENTS.md", "Keep", None, "update", Some("agent"))]));
    assert_eq!(code, 0);
    fs::write(&agents, "# A\n\n## Notes\n\none\n\n## Notes\n\ntwo\n\n## Keep\n\nperson\n").unwrap();
    let (code, recs, err) = lw.run(&["apply"], "");
    assert_eq!(code, 1, "{err}");
    assert_eq!(recs[0]["status"], "staged");
    assert!(recs[0]["error"].as_str().unwrap().starts_with("section \"Keep\" of AGENTS.md changed since"));
    assert!(fs::read_to_string(&agents).unwrap().ends_with("person\n"));
    assert!(!lw.proj().join(".agents/AGENTS.md.yaml").exists());
    let staged = lw.staging();
    assert_eq!(staged.len(), 2);
    let last = staged.iter().find(|p| fs::read_to_string(p).unwrap().contains("content: agent")).unwrap().clone();
    let (code, recs, _) = lw.run(&["resolve", last.to_str().unwrap()], "");
    assert_eq!(code, 1);
    let c = recs.iter().find(|r| r["record"] == "conflict").unwrap();
    assert_eq!(c["current"], "\nperson\n");
    assert_eq!(c["content"], "agent");
    let (code, _, err) = lw.run(&["resolve", "--force", last.to_str().unwrap()], "");
    assert_eq!(code, 0, "{err}");
    lw.cmd(&["apply"]).assert().success();
    assert!(fs::read_to_string(&agents).unwrap().ends_with("## Keep\n\nagent\n"));
}

#[test]
fn bad_input_is_reported_precisely_and_staged() {
    let lw = Lw::new();
    // The targets are configured knowledge files, so what is
    // checked here is the input, not the path rule.
    lw.configure(&["./U.md", "./dir.md", "./bin.md"], &[]);
    fs::create_dir_all(lw.proj().join("dir.md")).unwrap();
    fs::write(lw.proj().join("bin.md"), b"# A\n\0\x01\x02").unwrap();
    let input = "version: '1.0.0'\nentries:\n\
  - {key: {path: U.md, heading: A}, operation: replace, content: x}\n\
  - {key: {path: U.md, heading: B}, operation: no-op, content: x}\n\
  - {key: {path: U.md, heading: C}, operation: delete, content: x}\n\
  - {key: {path: U.md}, operation: update, content: x}\n\
  - {key: {path: U.md, heading: D, level: 7}, content: x}\n\
  - {key: {path: U.md, heading: E, level: '2'}, content: x}\n\
  - {key: {heading: F}, content: x}\n\
  - {key: {path: U.md, heading: G}, content: 42}\n\
  - {key: {path: U.md, heading: H}, content: x, meta: {confidence: 1.5}}\n\
  - {key: {path: dir.md, heading: I}, content: x}\n\
  - {key: {path: bin.md, heading: J}, content: x}\n\
  - {key: {path: U.md, heading: K}, content: ok}\n";
    let (code, recs, err) = lw.run(&["plan"], input);
    assert_eq!(code, 2, "{err}");
    let msgs: Vec<String> = recs
        .iter()
        .filter(|r| r["status"] != "pending")
        .map(|r| {
            format!(
                "{}: {}",
                r["origin"].as_str().unwrap(),
                r.get("message").or(r.get("error")).unwrap().as_str().unwrap()
            )
        })
        .collect();
    golden("kb-lastword/bad-input.txt", &(msgs.join("\n") + "\n"));
    assert_eq!(err.lines().count(), 11, "{err}");
    // Nothing is lost: 9 invalid entries in one staging file, two groups in two more.
    assert_eq!(lw.staging().len(), 3);
    let all: String = lw.staging().iter().map(|p| fs::read_to_string(p).unwrap()).collect();
    for h in ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"] {
        assert!(all.contains(&format!("heading: {h}")), "{h} missing from staging");
    }
    // Invalid YAML is kept verbatim.
    let (code, recs, _) = lw.run(&["plan"], "entries: [ {key: \n");
    assert_eq!(code, 2);
    assert!(recs[0]["message"].as_str().unwrap().starts_with("invalid YAML"));
    assert_eq!(lw.staging().len(), 4);
    // validate reports places, exit 1.
    fs::write(lw.proj().join("d.yaml"), input).unwrap();
    let (code, recs, _) = lw.run(&["validate", "d.yaml"], "");
    assert_eq!(code, 1);
    assert_eq!(recs[0]["field"], "entries[0].operation");
    assert_eq!(recs.last().unwrap()["problems"], 9);
}

#[test]
fn jsonl_plan_flat_form_status_and_urls() {
    let lw = Lw::new();
    let input = concat!(
        r#"{"path":"~/.config/agents/USER.md","heading":"Editor","content":"Helix","operation":"update"}"#,
        "\n",
        r#"{"path":"~/.config/agents/USER.md","heading":"Values"}"#,
        "\n",
        r#"{"url":"https://example.org/kb/python.md","heading":"Patterns","content":"- pathlib"}"#,
        "\n",
        "not json\n",
    );
    let (code, recs, err) = lw.run(&["plan", "--source", "s9"], input);
    assert_eq!(code, 2);
    assert!(err.contains("kb-lastword: <stdin>:4: invalid JSON"), "{err}");
    assert_eq!(recs.iter().filter(|r| r["status"] == "pending").count(), 3);
    let out = lw.cmd(&["status", "--format", "table"]).assert().success().get_output().stdout.clone();
    golden("kb-lastword/status.txt", &String::from_utf8(out).unwrap());
    let (code, recs, _) = lw.run(&["apply"], "");
    assert_eq!(code, 0);
    let st: Vec<&str> = recs.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(st, ["applied", "unchanged", "pending"]);
    assert!(lw.lastword().join("python.md.yaml").exists());
    assert!(!lw.lastword().join("USER.md.yaml").exists());
    assert_eq!(fs::read_to_string(lw.agents().join("USER.md")).unwrap(), "## Editor\n\nHelix\n");
    assert!(fs::read_to_string(lw.lastword().join("python.md.yaml")).unwrap().contains("source: s9"));
}

#[test]
fn apply_file_filter_and_pending_file_edited_by_hand() {
    let lw = Lw::new();
    let input = doc(&[
        entry("~/.config/agents/USER.md", "U", None, "update", Some("u")),
        entry("~/.config/agents/SOUL.md", "S", None, "update", Some("s")),
    ]);
    lw.cmd(&["plan"]).write_stdin(input).assert().success();
    let (code, recs, _) = lw.run(&["apply", "--file", "USER.md"], "");
    assert_eq!((code, recs.len()), (0, 1));
    assert!(lw.agents().join("USER.md").exists() && !lw.agents().join("SOUL.md").exists());
    // A pending file broken by hand is staged verbatim, not lost.
    fs::write(lw.lastword().join("SOUL.md.yaml"), "entries: [oops\n").unwrap();
    let (code, _, err) = lw.run(&["apply"], "");
    assert_eq!(code, 2, "{err}");
    assert!(!lw.lastword().join("SOUL.md.yaml").exists());
    assert!(fs::read_to_string(&lw.staging()[0]).unwrap().contains("entries: [oops"));
}

/// The seed's scenario: 16 sessions plan and apply at once against the
/// same files. Every entry is applied exactly once; no file is torn.
#[test]
fn sixteen_concurrent_sessions() {
    let lw = Lw::new();
    fs::write(lw.agents().join("USER.md"), "# User\n\n## Shared\n\nstart\n").unwrap();
    let mut children = Vec::new();
    for s in 0..16 {
        let input = doc(&[
            entry("~/.config/agents/USER.md", &format!("Session {s}"), Some(2), "update", Some(&format!("fact {s}"))),
            entry("~/.config/agents/SOUL.md", &format!("Value {s}"), Some(3), "update", Some(&format!("v{s}"))),
        ]);
        let script = "\"$0\" plan --source \"$1\" && \"$0\" apply";
        let mut c = std::process::Command::new("sh");
        let mut lwc = lw.std_cmd();
        let bin = lwc.get_program().to_owned();
        lwc.arg("noop");
        c.arg("-c").arg(script).arg(bin).arg(format!("s{s}"));
        for (k, v) in lwc.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c.current_dir(lw.proj()).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::null());
        let mut child = c.spawn().unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        children.push(child);
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    lw.cmd(&["apply"]).assert().success();
    assert!(lw.staging().is_empty(), "staged: {:?}", lw.staging());
    let user = fs::read_to_string(lw.agents().join("USER.md")).unwrap();
    let soul = fs::read_to_string(lw.agents().join("SOUL.md")).unwrap();
    assert!(user.starts_with("# User\n\n## Shared\n\nstart\n"));
    for s in 0..16 {
        assert_eq!(user.matches(&format!("## Session {s}\n\nfact {s}\n")).count(), 1, "{user}");
        assert_eq!(soul.matches(&format!("### Value {s}\n\nv{s}\n")).count(), 1, "{soul}");
    }
    assert_eq!(user.matches("## ").count(), 17);
    assert!(!lw.lastword().join("USER.md.yaml").exists());
    let _ = NOW;
}

/// A lock another process holds past the wait is "busy": plan stages the
/// entries (exit 0, nothing lost) instead of failing, and says why. The
/// busy state is the lock's own error kind, not a match on message text.
#[test]
fn a_held_lock_stages_the_plan_instead_of_failing() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let lw = Lw::new();
    fs::create_dir_all(lw.lastword()).unwrap();
    // flock(1) takes the same kernel lock the tools take; it holds it until
    // its stdin closes, and says "held" once it has it (no sleep needed).
    let mut holder = Command::new("flock")
        .arg(lw.lastword().join(".lock"))
        .args(["-c", "echo held; cat >/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("flock(1) from util-linux runs");
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line, "held\n");
    let input = doc(&[entry("~/.config/agents/USER.md", "Projects", Some(2), "update", Some("A"))]);
    let out = lw.cmd(&["plan"]).env("KB_LASTWORD_LOCK_MS", "5").write_stdin(input).output().unwrap();
    drop(holder.stdin.take());
    assert!(holder.wait().unwrap().success());
    let recs = records(&out.stdout);
    assert_eq!(recs.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(recs[0]["status"], "staged");
    let why = recs[0]["error"].as_str().unwrap_or_default();
    assert!(why.contains("last-word is locked"), "{why}");
    assert_eq!(lw.staging().len(), 1);
    assert!(!lw.lastword().join("USER.md.yaml").exists());
}

#[test]
fn help_names_every_flag_the_parser_accepts() {
    let lw = Lw::new();
    let help = String::from_utf8(lw.cmd(&["--help"]).assert().success().get_output().stdout.clone()).unwrap();
    let src = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("lib/src/cli/lastword.rs")).unwrap();
    let flags: Vec<&str> = crate::util::table_flags(&src);
    assert!(flags.len() >= 5, "{flags:?}");
    for f in flags {
        assert!(help.contains(&format!("--{f}")), "--{f} missing from --help");
    }
    lw.cmd(&["apply", "extra"]).assert().code(2);
    lw.cmd(&["frobnicate"]).assert().code(2);
    lw.cmd(&["status", "--format", "jsonl"]).assert().success();
}
