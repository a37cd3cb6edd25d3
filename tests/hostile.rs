//! Hostile input: paths, links, names and bytes from a library,
//! a request, a delta or a peer never escape the library or run code.
//! Every test plays the attacker against the real binaries and checks the
//! same things: no command ran (a sentinel stays absent), no byte outside
//! the temporary library changed, a clear `error` record naming the rule,
//! exit 2, and nothing already in the library lost.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::{git, records, Lib};

/// Every file under `root` except the library, the workspace's own git
/// directory and the given subtrees (`util::tree`).
fn snapshot(root: &Path, skip: &[&str]) -> BTreeMap<String, Vec<u8>> {
    let all: Vec<&str> = [".library", ".git"].iter().chain(skip).copied().collect();
    crate::util::tree(root, &all)
}

/// A workspace with an initialised library, an `outside/` directory of
/// files an attacker wants (a secret, a victim document, an ssh key file)
/// and one document already stored.
struct Scene {
    lib: Lib,
    before: BTreeMap<String, Vec<u8>>,
}

const KEPT: &str = "notes/kept.md";
const KEPT_TEXT: &str = "# Kept\n\nAlready in the library.\n";
const SECRET: &str = "TOPSECRET-4711 do not print\n";

impl Scene {
    fn new() -> Scene {
        Scene::build(false)
    }

    fn with_git() -> Scene {
        Scene::build(true)
    }

    fn build(with_git: bool) -> Scene {
        let lib = Lib::new();
        if with_git {
            lib.git_init();
        }
        let o = lib.root().join("outside");
        std::fs::create_dir_all(o.join("dir")).unwrap();
        std::fs::write(o.join("secret.txt"), SECRET).unwrap();
        std::fs::write(o.join("victim.md"), "# Victim\n\nuntouched\n").unwrap();
        std::fs::create_dir_all(lib.root().join(".ssh")).unwrap();
        std::fs::write(lib.root().join(".ssh/authorized_keys"), "ssh-ed25519 AAAA good@host\n").unwrap();
        lib.cmd("kb-append").args(["write", KEPT, "--content", KEPT_TEXT]).assert().success();
        let before = snapshot(lib.root(), &[]);
        Scene { lib, before }
    }

    fn outside(&self, rel: &str) -> PathBuf {
        self.lib.root().join("outside").join(rel)
    }

    fn sentinel(&self) -> PathBuf {
        self.lib.root().join("PWNED")
    }

    /// The checks every hostile test ends with.
    #[track_caller]
    fn unharmed(&self) {
        assert!(!self.sentinel().exists(), "a command planted by the attacker ran");
        let now = snapshot(self.lib.root(), &[]);
        let changed: Vec<&String> = self
            .before
            .keys()
            .chain(now.keys())
            .filter(|k| self.before.get(*k) != now.get(*k))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert!(changed.is_empty(), "bytes outside the library changed: {changed:?}");
        assert_eq!(std::fs::read_to_string(self.lib.path(KEPT)).unwrap(), KEPT_TEXT, "a stored document was lost");
    }

    /// A write request batch; returns (exit code, records).
    fn batch(&self, reqs: &[Value]) -> (i32, Vec<Value>) {
        let input: String = reqs.iter().map(|r| format!("{r}\n")).collect();
        let out = self.lib.cmd("kb-append").arg("batch").write_stdin(input).output().unwrap();
        (out.status.code().unwrap_or(-1), records(&out.stdout))
    }

    /// One `kb-append write`; returns (exit code, records, stderr).
    fn write(&self, path: &str, content: &str) -> (i32, Vec<Value>, String) {
        let out = self.lib.cmd("kb-append").args(["write", path, "--content", content]).output().unwrap();
        (out.status.code().unwrap_or(-1), records(&out.stdout), String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// A write that must be refused with an error naming `rule`.
    #[track_caller]
    fn refused(&self, path: &str, rule: &str) {
        let (code, recs, err) = self.write(path, "# x\n");
        assert_eq!(code, 2, "{path:?} was accepted: {recs:?} {err}");
        let e = recs.iter().find(|r| r["record"] == "error").unwrap_or_else(|| panic!("{path:?}: no error record"));
        let msg = e["message"].as_str().unwrap();
        assert!(msg.contains(rule), "{path:?}: error {msg:?} does not name the rule {rule:?}");
    }
}

/// The one error record of an output, checked to name `rule`.
#[track_caller]
fn error_naming(recs: &[Value], rule: &str) {
    let errs: Vec<&Value> = recs.iter().filter(|r| r["record"] == "error").collect();
    assert!(!errs.is_empty(), "no error record in {recs:?}");
    assert!(
        errs.iter().any(|e| e["message"].as_str().unwrap_or_default().contains(rule)),
        "no error names {rule:?}: {errs:?}"
    );
}

fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) {
    let link = link.as_ref();
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

fn mkfifo(p: &Path) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let st = std::process::Command::new("mkfifo").arg(p).status().unwrap();
    assert!(st.success());
}

/// Runs a command that must finish within `secs` (a hang is the bug);
/// kills it and fails otherwise. Returns (exit code, stdout, stderr).
#[track_caller]
fn bounded(mut c: std::process::Command, secs: u64, stdin: &str) -> (i32, Vec<u8>, String) {
    let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    {
        use std::io::Write;
        let mut i = child.stdin.take().unwrap();
        let _ = i.write_all(stdin.as_bytes());
    }
    let started = Instant::now();
    loop {
        if let Some(_st) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            return (out.status.code().unwrap_or(-1), out.stdout, String::from_utf8_lossy(&out.stderr).into_owned());
        }
        if started.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the command hung for {secs}s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The fake repository of case 1: a `config` whose fsmonitor writes the
/// sentinel.
fn fake_repo_files(prefix: &str, sentinel: &Path) -> Vec<(String, String)> {
    let cfg = format!(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = \"echo pwned > {}; false\"\n",
        sentinel.display()
    );
    vec![
        (format!("{prefix}HEAD"), "ref: refs/heads/main\n".to_string()),
        (format!("{prefix}objects/readme.md"), "# objects\n".to_string()),
        (format!("{prefix}refs/readme.md"), "# refs\n".to_string()),
        (format!("{prefix}config"), cfg),
    ]
}

// ---------------------------------------------------------------- case 1

#[test]
fn c01_a_batch_writing_dot_git_and_a_fake_repository_runs_nothing() {
    let s = Scene::with_git();
    let mut reqs = vec![json!({"path": ".git", "content": "gitdir: notes/g\n"})];
    for (p, c) in fake_repo_files("notes/g/", &s.sentinel()) {
        reqs.push(json!({"path": p, "content": c}));
    }
    reqs.push(json!({"path": "notes/after.md", "content": "# After\n\nfine\n"}));
    let (code, recs) = s.batch(&reqs);
    assert_eq!(code, 2, "{recs:?}");
    error_naming(&recs, "git");
    assert!(!s.lib.path(".git").exists(), ".git was written into the library");
    // The later write still landed and was committed to the workspace repo.
    assert!(s.lib.git(&["log", "--format=%s"]).contains("task-ai(library)"));
    s.lib.cmd("kb-append").args(["write", "notes/later.md", "--content", "# Later\n"]).assert().success();
    s.unharmed();
}

#[test]
fn c01_a_planted_dot_git_file_is_never_followed_by_the_git_kb_tools_runs() {
    let s = Scene::with_git();
    // Planted by hand (another tool, an unpacked archive): kb-tools' own
    // git must still use the workspace repository and run no command.
    for (p, c) in fake_repo_files("notes/g/", &s.sentinel()) {
        s.lib.put(&p, &c);
    }
    s.lib.put(".git", "gitdir: notes/g\n");
    s.lib.cmd("kb-append").args(["write", "notes/x.md", "--content", "# X\n"]).assert().success();
    assert!(!s.sentinel().exists(), "git ran the planted fsmonitor");
    let log = s.lib.git(&["log", "-1", "--format=%s", "--", ".library/notes/x.md"]);
    assert!(log.contains("task-ai(library)"), "the commit did not land in the workspace repository: {log:?}");
    std::fs::remove_file(s.lib.path(".git")).unwrap();
    s.unharmed();
}

#[test]
fn c01_root_head_config_objects_refs_are_refused() {
    let s = Scene::with_git();
    let mut reqs = Vec::new();
    for (p, c) in fake_repo_files("", &s.sentinel()) {
        reqs.push(json!({"path": p, "content": c}));
    }
    let (code, recs) = s.batch(&reqs);
    assert_eq!(code, 2);
    assert_eq!(recs.iter().filter(|r| r["record"] == "error").count(), 4, "{recs:?}");
    error_naming(&recs, "git");
    for p in ["HEAD", "config", "objects", "refs"] {
        assert!(!s.lib.path(p).exists(), "{p} was written");
    }
    s.lib.cmd("kb-append").args(["write", "notes/y.md", "--content", "# Y\n"]).assert().success();
    assert!(s.lib.git(&["log", "-1", "--format=%s"]).contains("task-ai(library)"));
    s.unharmed();
}

#[test]
fn c01_kb_guard_filter_refuses_requests_for_refused_paths() {
    let s = Scene::new();
    let input = format!(
        "{}\n{}\n",
        json!({"path": ".git", "content": "gitdir: notes/g\n"}),
        json!({"path": "notes/fine.md", "content": "# Fine\n"})
    );
    let out = s.lib.cmd("kb-guard").arg("filter").write_stdin(input).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or_default();
    assert!(
        !first.contains("\"safe\"") && first.contains("git"),
        "kb-guard filter passed a .git write as safe: {text}"
    );
    s.unharmed();
}

// ---------------------------------------------------------------- case 2

/// kb-lastword with its home in the scene's temp dir.
fn lastword(s: &Scene, args: &[&str], stdin: &str) -> (i32, Vec<Value>, String) {
    use assert_cmd::cargo::CommandCargoExt;
    let proj = s.lib.root().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(s.lib.root().join(".config/agents")).unwrap();
    let mut c = std::process::Command::cargo_bin("kb-lastword").unwrap();
    crate::util::isolate(&mut c, &proj);
    c.env("KB_LASTWORD_HOME", s.lib.root()).args(args);
    let (code, out, err) = bounded(c, 60, stdin);
    (code, records(&out), err)
}

fn delta(path: &str) -> String {
    format!(
        "version: \"1.0.0\"\nsource: attacker\nentries:\n  - key: {{path: {}, heading: Keys, level: 2}}\n    operation: update\n    content: \"ssh-ed25519 EVIL attacker@evil\"\n",
        serde_json::to_string(path).unwrap()
    )
}

#[test]
fn c02_kb_lastword_writes_only_the_configured_knowledge_files() {
    let s = Scene::new();
    let abs_new = s.outside("dir/new.md");
    let before = snapshot(s.lib.root(), &["proj", ".config"]);
    for target in ["~/.ssh/authorized_keys", abs_new.to_str().unwrap(), "../outside/victim.md"] {
        let (code, recs, err) = lastword(&s, &["plan"], &delta(target));
        // Planning may queue it; applying must refuse and stage it.
        let (code2, recs2, err2) = lastword(&s, &["apply"], "");
        assert!(code == 2 || code2 == 2, "{target}: accepted ({code}/{code2}) {recs:?} {recs2:?} {err} {err2}");
        let all: Vec<Value> = recs.into_iter().chain(recs2).collect();
        let named = all.iter().any(|r| {
            r.get("message").or(r.get("error")).and_then(Value::as_str).unwrap_or_default().contains("knowledge file")
        });
        assert!(named, "{target}: no error names the knowledge-file rule: {all:?}");
    }
    assert_eq!(snapshot(s.lib.root(), &["proj", ".config"]), before, "kb-lastword wrote outside its files");
    assert!(!abs_new.exists());
    s.unharmed_except_lastword();
}

impl Scene {
    #[track_caller]
    fn unharmed_except_lastword(&self) {
        let now = snapshot(self.lib.root(), &["proj", ".config"]);
        let before: BTreeMap<_, _> =
            self.before.iter().filter(|(k, _)| !k.starts_with("proj") && !k.starts_with(".config")).collect();
        let now: BTreeMap<_, _> = now.iter().collect();
        assert_eq!(before, now, "bytes outside changed");
        assert!(!self.sentinel().exists());
    }
}

#[test]
fn c02_kb_lastword_never_writes_through_a_symlinked_knowledge_file() {
    let s = Scene::new();
    symlink(s.lib.root().join(".ssh/authorized_keys"), s.lib.root().join("proj/AGENTS.md"));
    let (code, recs, err) = lastword(&s, &["plan"], &delta("AGENTS.md"));
    let (code2, recs2, err2) = lastword(&s, &["apply"], "");
    assert!(code == 2 || code2 == 2, "accepted: {recs:?} {recs2:?} {err} {err2}");
    let all: Vec<Value> = recs.into_iter().chain(recs2).collect();
    assert!(
        all.iter().any(|r| r
            .get("message")
            .or(r.get("error"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .contains("symlink")),
        "{all:?}"
    );
    s.unharmed_except_lastword();
}

// ---------------------------------------------------------------- case 3

#[test]
fn c03_a_symlinked_lock_file_is_never_written_through() {
    let s = Scene::new();
    std::fs::remove_file(s.lib.path(".lock")).ok();
    symlink(s.outside("secret.txt"), s.lib.path(".lock"));
    let (code, recs, err) = s.write("notes/n.md", "# N\n");
    assert_eq!(code, 2, "{recs:?} {err}");
    assert!(format!("{recs:?}{err}").contains(".lock"), "{recs:?} {err}");
    assert_eq!(std::fs::read_to_string(s.outside("secret.txt")).unwrap(), SECRET);
    std::fs::remove_file(s.lib.path(".lock")).unwrap();
    s.unharmed();
}

#[test]
fn c03_a_symlinked_changelog_sends_nothing_outside() {
    let s = Scene::new();
    let log = s.lib.read(".changelog");
    std::fs::rename(s.lib.path(".changelog"), s.lib.root().join("saved-changelog")).unwrap();
    symlink(s.outside("victim.md"), s.lib.path(".changelog"));
    let (code, recs, err) = s.write("notes/n.md", "# N\n");
    assert_eq!(code, 2, "{recs:?} {err}");
    assert!(format!("{recs:?}{err}").contains("symlink"), "{recs:?} {err}");
    std::fs::remove_file(s.lib.path(".changelog")).unwrap();
    std::fs::rename(s.lib.root().join("saved-changelog"), s.lib.path(".changelog")).unwrap();
    assert_eq!(s.lib.read(".changelog"), log);
    s.unharmed();
}

fn score(s: &Scene, args: &[&str]) -> (i32, Vec<Value>, String) {
    let mut c = s.lib.std_cmd("kb-score");
    c.args(["--no-registries", "--no-recommend", "--format", "jsonl"]).args(args);
    let (code, out, err) = bounded(c, 60, "");
    (code, records(&out), err)
}

#[test]
fn c03_kb_score_never_prints_a_document_symlinked_outside() {
    let s = Scene::new();
    symlink(s.outside("secret.txt"), s.lib.path("notes/leak.md"));
    let (_, recs, err) = score(&s, &["TOPSECRET", "--tier", "3"]);
    let all = format!("{recs:?}{err}");
    assert!(!all.contains("4711"), "kb-score printed the outside secret: {all}");
    std::fs::remove_file(s.lib.path("notes/leak.md")).unwrap();
    s.unharmed();
}

#[test]
fn c03_kb_index_rebuild_never_writes_into_a_symlinked_directory() {
    let mut s = Scene::new();
    std::fs::write(s.outside("dir/doc.md"), "---\ntopic: far\n---\n# Far\n").unwrap();
    let before = snapshot(s.lib.root(), &[]);
    s.before = before.clone();
    symlink(s.outside("dir"), s.lib.path("notes/ext"));
    let mut c = s.lib.std_cmd("kb-index");
    c.arg("rebuild");
    let (_, _, _) = bounded(c, 60, "");
    assert!(!s.outside("dir/.index.md").exists(), "kb-index rebuild wrote into the outside directory");
    std::fs::remove_file(s.lib.path("notes/ext")).unwrap();
    let mut after = snapshot(s.lib.root(), &[]);
    after.retain(|k, _| before.contains_key(k));
    assert_eq!(before.len(), after.len());
    s.unharmed();
}

#[test]
fn c03_symlink_loops_neither_multiply_hits_nor_hang_kb_score() {
    let s = Scene::new();
    symlink("..", s.lib.path("notes/loop"));
    symlink("../..", s.lib.path("notes/loop2"));
    symlink(".", s.lib.path(".memory/self"));
    let (code, recs, err) = score(&s, &["kept", "--tier", "1"]);
    let hits: Vec<&Value> = recs.iter().filter(|r| r["record"] == "hit").collect();
    assert!(hits.len() <= 1, "one document gave {} hits ({code}): {err}", hits.len());
    for l in ["notes/loop", "notes/loop2", ".memory/self"] {
        std::fs::remove_file(s.lib.path(l)).unwrap();
    }
    s.unharmed();
}

// ---------------------------------------------------------------- case 4

#[test]
fn c04_resolve_never_writes_through_a_symlinked_document_directory() {
    let s = Scene::new();
    symlink(s.outside("dir"), s.lib.path("notes-link"));
    std::fs::write(s.outside("dir/target.md"), "# Outside\n").unwrap();
    let before = snapshot(s.lib.root(), &[]);
    s.lib.put(".conflicts/notes-link/target.md/abc1234.md", "# Attacker\n");
    let out = s.lib.cmd("kb-append").args(["resolve", "notes-link/target.md", "--keep", "theirs"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    error_naming(&records(&out.stdout), "symlink");
    assert_eq!(std::fs::read_to_string(s.outside("dir/target.md")).unwrap(), "# Outside\n");
    assert_eq!(snapshot(s.lib.root(), &[]), before);
    std::fs::remove_file(s.lib.path("notes-link")).unwrap();
    std::fs::remove_file(s.outside("dir/target.md")).unwrap();
    s.unharmed();
}

#[test]
fn c04_resolve_refuses_internal_files() {
    let s = Scene::new();
    let log = s.lib.read(".changelog");
    s.lib.put(".conflicts/.changelog/abc1234.md", "{\"forged\": true}\n");
    let out = s.lib.cmd("kb-append").args(["resolve", ".changelog", "--keep", "theirs"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    error_naming(&records(&out.stdout), "internal");
    assert_eq!(s.lib.read(".changelog"), log, "resolve replaced the changelog");
    s.unharmed();
}

// ---------------------------------------------------------------- case 5

const MEM: &str = ".agents/.lingxi/memory";

fn memgate(s: &Scene, cmd: &str, input: &[Value]) -> (i32, Vec<Value>) {
    let text: String = input.iter().map(|v| format!("{v}\n")).collect();
    let out = s.lib.cmd("kb-memgate").arg(cmd).write_stdin(text).output().unwrap();
    (out.status.code().unwrap_or(-1), records(&out.stdout))
}

fn said(text: &str) -> Value {
    let n = text.chars().count();
    json!({"mode": "remember", "conversation_id": "conv-1", "generation_id": "gen-1",
        "input": {"user_input": {"text": text, "evidence_spans": [{"start": 0, "end": n}]},
                  "target_claim": {"id": "claim-1", "digest": "what the user settled"}}})
}

/// Stores one note and returns the replace decision for a second one.
fn memgate_replace(s: &Scene) -> (String, Value) {
    let (_, d) = memgate(s, "decide", &[said("Use yarn for installs.")]);
    let (code, r) = memgate(s, "apply", &d);
    assert_eq!(code, 0, "{r:?}");
    let old = d[0]["note_id"].as_str().unwrap().to_string();
    let (_, d) = memgate(s, "decide", &[said("From now on use pnpm for installs instead.")]);
    assert_eq!(d[0]["action"], "replace", "{d:?}");
    let mut d0 = d[0].clone();
    d0["answer"] = json!("confirm");
    (old, d0)
}

fn mem_notes(s: &Scene) -> BTreeMap<String, Vec<u8>> {
    snapshot(&s.lib.root().join(MEM).join("notes"), &[])
}

#[test]
fn c05_kb_memgate_refuses_archive_ids_that_leave_notes() {
    let s = Scene::new();
    let (_, mut d0) = memgate_replace(&s);
    std::fs::create_dir_all(s.lib.root().join(MEM).join("notes/MEM-x")).unwrap();
    std::fs::write(s.outside("pwned.md"), "## Meta\n- Id: MEM-x\n").unwrap();
    let before = snapshot(s.lib.root(), &[".agents"]);
    let notes = mem_notes(&s);
    let evil = "MEM-x/../../../../../outside/pwned";
    d0["targets"] = json!([evil]);
    d0["archive"] = json!([evil]);
    let (code, recs) = memgate(&s, "apply", &[d0]);
    assert_eq!(code, 2, "{recs:?}");
    error_naming(&recs, "MEM-[A-Za-z0-9_-]+");
    assert_eq!(snapshot(s.lib.root(), &[".agents"]), before, "apply touched a file outside the memory");
    assert_eq!(mem_notes(&s), notes, "a note was lost");
}

#[test]
fn c05_kb_memgate_never_deletes_a_note_other_than_the_archived_one() {
    let s = Scene::new();
    let (old, d0) = memgate_replace(&s);
    // A note file whose Meta Id names the survivor: archiving it must not
    // delete the survivor's file.
    let notes_dir = s.lib.root().join(MEM).join("notes");
    let text = std::fs::read_to_string(notes_dir.join(format!("{old}.md"))).unwrap();
    let forged = text.replace(&format!("- Id: {old}"), "- Id: MEM-survivor");
    assert_ne!(forged, text, "the note format changed: {text}");
    std::fs::write(notes_dir.join(format!("{old}.md")), &forged).unwrap();
    std::fs::write(notes_dir.join("MEM-survivor.md"), text.replace(&old, "MEM-survivor")).unwrap();
    let (code, recs) = memgate(&s, "apply", &[d0]);
    assert!(notes_dir.join("MEM-survivor.md").exists(), "the survivor was deleted ({code}): {recs:?}");
    assert_eq!(code, 2, "{recs:?}");
    error_naming(&recs, "Id");
}

#[test]
fn c05_kb_memgate_skips_notes_whose_id_is_not_a_mem_id() {
    let s = Scene::new();
    let (old, _) = memgate_replace(&s);
    let notes_dir = s.lib.root().join(MEM).join("notes");
    let text = std::fs::read_to_string(notes_dir.join(format!("{old}.md"))).unwrap();
    let evil = text.replace(&format!("- Id: {old}"), "- Id: MEM-x/../../../../../outside/pwned");
    std::fs::write(notes_dir.join(format!("{old}.md")), evil).unwrap();
    let (_, d) = memgate(&s, "decide", &[said("From now on use pnpm for installs instead.")]);
    let all = format!("{d:?}");
    assert!(!all.contains("outside/pwned\""), "a bad id was proposed as a target: {all}");
    let (_, r) = memgate(&s, "apply", &d);
    assert!(!s.outside("pwned.md").exists(), "{r:?}");
    s.unharmed_except(&[".agents"]);
}

impl Scene {
    #[track_caller]
    fn unharmed_except(&self, skip: &[&str]) {
        assert!(!self.sentinel().exists());
        let now = snapshot(self.lib.root(), skip);
        let before: BTreeMap<_, _> =
            self.before.iter().filter(|(k, _)| !skip.iter().any(|s| k.starts_with(s))).collect();
        assert_eq!(before, now.iter().collect::<BTreeMap<_, _>>(), "bytes outside changed");
    }
}

// ---------------------------------------------------------------- case 6

#[test]
fn c06_a_planted_gitattributes_is_refused_anywhere() {
    let s = Scene::new();
    for p in ["notes/.gitattributes", ".gitattributes", "a/b/c/.gitattributes", "notes/.GitAttributes"] {
        s.refused(p, "git");
    }
    s.unharmed();
}

// ---------------------------------------------------------------- case 7

#[test]
fn c07_a_fifo_target_is_an_error_not_a_hang() {
    let s = Scene::new();
    mkfifo(&s.lib.path("notes/fifo.md"));
    let mut c = s.lib.std_cmd("kb-append");
    c.args(["write", "notes/fifo.md", "--content", "# F\n"]);
    let (code, out, err) = bounded(c, 20, "");
    assert_eq!(code, 2, "{err}");
    error_naming(&records(&out), "not a regular file");
    // The lock was released: another writer gets in at once.
    s.lib.cmd("kb-append").args(["write", "notes/next.md", "--timeout", "2s", "--content", "# N\n"]).assert().success();
    std::fs::remove_file(s.lib.path("notes/fifo.md")).unwrap();
    s.unharmed();
}

#[test]
fn c07_special_files_as_content_input_are_errors_not_hangs() {
    let s = Scene::new();
    let fifo = s.lib.root().join("in.fifo");
    mkfifo(&fifo);
    let before = snapshot(s.lib.root(), &[]);
    for input in [fifo.to_str().unwrap(), "/dev/zero"] {
        let mut c = s.lib.std_cmd("kb-append");
        c.args(["write", "notes/in.md", "--content-file", input]);
        let (code, _, err) = bounded(c, 20, "");
        assert_eq!(code, 2, "{input}: {err}");
        assert!(err.contains("not a regular file"), "{input}: {err}");
    }
    assert!(!s.lib.path("notes/in.md").exists());
    assert_eq!(snapshot(s.lib.root(), &[]), before);
}

#[test]
fn c07_readers_skip_special_files_without_hanging() {
    let s = Scene::new();
    mkfifo(&s.lib.path("notes/pipe.md"));
    let (_, _, err) = score(&s, &["kept"]);
    let mut c = s.lib.std_cmd("kb-index");
    c.arg("rebuild");
    let (_, _, err2) = bounded(c, 30, "");
    let mut c = s.lib.std_cmd("kb-index");
    c.arg("check");
    let (_, _, err3) = bounded(c, 30, "");
    assert!(format!("{err}{err2}{err3}").contains("not a regular file"), "special file not reported: {err}{err2}");
    std::fs::remove_file(s.lib.path("notes/pipe.md")).unwrap();
    s.unharmed();
}

// ---------------------------------------------------------------- case 8

fn wait_for(p: &Path) {
    let started = Instant::now();
    while !p.exists() {
        assert!(started.elapsed() < Duration::from_secs(30), "{} never appeared", p.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn lock_state(s: &Scene) -> String {
    let out = s.lib.cmd("kb-lock").args(["status", "--format", "jsonl"]).output().unwrap();
    records(&out.stdout).first().map(|r| r["state"].as_str().unwrap_or_default().to_string()).unwrap_or_default()
}

#[test]
fn c08_kb_lock_forwards_signals_and_keeps_the_lock_until_the_child_exits() {
    for sig in ["TERM", "INT", "HUP"] {
        let s = Scene::new();
        let root = s.lib.root();
        let script = format!(
            "trap 'echo {sig} >> got' {sig}; touch ready; while [ ! -e stop ]; do sleep 0.05; done; echo done > finished"
        );
        let mut child = s.lib.std_cmd("kb-lock").args(["--", "sh", "-c", &script]).spawn().unwrap();
        wait_for(&root.join("ready"));
        let st = std::process::Command::new("kill").arg(format!("-{sig}")).arg(child.id().to_string()).status();
        assert!(st.unwrap().success());
        wait_for(&root.join("got"));
        assert_eq!(lock_state(&s), "held", "{sig}: the lock was freed while the command runs");
        let other = s.lib.cmd("kb-lock").args(["--timeout", "200ms", "--", "true"]).output().unwrap();
        assert_eq!(other.status.code(), Some(2), "{sig}: a second holder got the lock");
        std::fs::write(root.join("stop"), "").unwrap();
        let _ = child.wait();
        assert!(root.join("finished").exists(), "{sig}: the child was not allowed to finish");
        assert_eq!(lock_state(&s), "free");
    }
}

#[test]
fn c08_a_legacy_lock_whose_pid_was_reused_is_swept() {
    let s = Scene::new();
    std::fs::remove_file(s.lib.path(".lock")).ok();
    std::fs::create_dir(s.lib.path(".lock")).unwrap();
    // The pid of a live process that started long after the lock was taken.
    std::fs::write(s.lib.path(".lock/pid"), format!("{}\n", std::process::id())).unwrap();
    let st = std::process::Command::new("touch")
        .args(["-d", "2020-01-01T00:00:00Z"])
        .arg(s.lib.path(".lock/pid"))
        .arg(s.lib.path(".lock"))
        .status()
        .unwrap();
    assert!(st.success());
    let out = s.lib.cmd("kb-lock").arg("sweep").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!s.lib.path(".lock").is_dir(), "a reused pid kept the legacy lock alive");
}

// ---------------------------------------------------------------- case 9

#[test]
fn c09_names_git_and_kb_tools_give_a_meaning_to_are_refused() {
    let s = Scene::new();
    for (p, rule) in [
        (".git", "git"),
        ("notes/.git", "git"),
        (".gitignore", "git"),
        (".gitmodules", "git"),
        ("notes/.gitmodules", "git"),
        (".core-rule-proposals/CORE-999.md", "internal"),
        ("notes/.lock/meeting.md", ".lock"),
    ] {
        s.refused(p, rule);
    }
    s.unharmed();
}

#[test]
fn c09_trailing_slash_newline_and_control_characters_are_refused() {
    let s = Scene::new();
    s.refused("fuzz/slash/", "trailing '/'");
    assert!(!s.lib.path("fuzz/slash").exists());
    s.refused("notes/a\nb.md", "control character");
    s.refused("notes/tab\there.md", "control character");
    s.refused("notes/esc\x1b[31m.md", "control character");
    let out = s.lib.cmd("kb-index").arg("check").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    s.unharmed();
}

#[test]
fn c09_kb_lock_sweep_never_deletes_a_document_directory() {
    let s = Scene::new();
    // Planted by hand: a document directory named .lock with a year in it.
    s.lib.put("notes/.lock/meeting.md", "# Meeting\n\nHeld in 2019.\n");
    s.lib.cmd("kb-lock").arg("sweep").assert().success();
    assert!(s.lib.path("notes/.lock/meeting.md").exists(), "sweep deleted a document");
}

// ------------------------------------------------------- from a peer (sync)

/// A bare hub with a victim clone and an attacker clone; the attacker
/// pushes commits made with plain git (no kb-tools in the way).
struct Peers {
    _hub: tempfile::TempDir,
    victim: Scene,
    attacker: Lib,
}

impl Peers {
    fn new() -> Peers {
        let hub = tempfile::tempdir().unwrap();
        git(hub.path(), &["init", "-q", "--bare", "-b", "main", "hub.git"]);
        let url = hub.path().join("hub.git");
        let first = Lib::empty();
        git(first.root(), &["clone", "-q", url.to_str().unwrap(), "."]);
        configure(first.root());
        first.cmd("kb-append").arg("init").assert().success();
        first.cmd("kb-append").args(["write", KEPT, "--content", KEPT_TEXT]).assert().success();
        first.cmd("kb-append").arg("sync").assert().success();
        let victim_lib = Lib::empty();
        git(victim_lib.root(), &["clone", "-q", url.to_str().unwrap(), "."]);
        configure(victim_lib.root());
        victim_lib.cmd("kb-append").arg("sync").assert().success();
        let o = victim_lib.root().join("outside");
        std::fs::create_dir_all(o.join("dir")).unwrap();
        std::fs::write(o.join("secret.txt"), SECRET).unwrap();
        std::fs::write(o.join("victim.md"), "# Victim\n\nuntouched\n").unwrap();
        let before = snapshot(victim_lib.root(), &[]);
        Peers { _hub: hub, victim: Scene { lib: victim_lib, before }, attacker: first }
    }

    /// Commits files (text or symlink targets) in the attacker's clone
    /// with plain git and pushes them.
    fn push(&self, files: &[(&str, &str)], links: &[(&str, &str)]) {
        let a = self.attacker.root();
        for (p, text) in files {
            let full = a.join(p);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        }
        for (p, target) in links {
            let _ = std::fs::remove_file(a.join(p));
            symlink(target, a.join(p));
        }
        git(a, &["add", "-A", "-f", "."]);
        git(a, &["commit", "-q", "-m", "peer"]);
        git(a, &["push", "-q", "origin", "main"]);
    }

    /// Pushes a commit whose tree holds `name` (a name plain git refuses
    /// to add, like `.git`) inside the library, built with mktree.
    fn push_raw(&self, name: &str, content: &str) {
        let a = self.attacker.root();
        let blob = run_git_stdin(a, &["hash-object", "-w", "--stdin"], content);
        let lib_tree = git(a, &["rev-parse", "HEAD:.library"]).trim().to_string();
        let mut entries = git(a, &["ls-tree", &lib_tree]);
        entries.push_str(&format!("100644 blob {}\t{name}\n", blob.trim()));
        let new_lib = run_git_stdin(a, &["mktree"], &entries);
        let root_tree = git(a, &["rev-parse", "HEAD^{tree}"]).trim().to_string();
        let mut top = git(a, &["ls-tree", &root_tree]);
        top = top
            .lines()
            .map(|l| {
                if l.ends_with("\t.library") {
                    format!("040000 tree {}\t.library\n", new_lib.trim())
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        let new_root = run_git_stdin(a, &["mktree"], &top);
        let commit = git(a, &["commit-tree", new_root.trim(), "-p", "HEAD", "-m", "peer raw"]);
        git(a, &["push", "-q", "origin", &format!("{}:refs/heads/main", commit.trim())]);
    }

    /// The victim's sync must refuse the peer's commit: exit 2, a `sync`
    /// record whose `rejected` names the path, HEAD and files unchanged.
    #[track_caller]
    fn rejected(&self, path: &str) {
        self.rejected_with(path, &[])
    }

    /// [`Peers::rejected`] with sync flags (`--merge-outside`: the user
    /// lets outside paths through, and the checks of files above the
    /// library still apply).
    #[track_caller]
    fn rejected_with(&self, path: &str, args: &[&str]) {
        let v = &self.victim.lib;
        let head = v.git(&["rev-parse", "HEAD"]);
        let mut c = v.std_cmd("kb-append");
        c.arg("sync").args(args);
        let (code, out, err) = bounded(c, 120, "");
        assert_eq!(code, 2, "sync accepted a hostile commit: {} {err}", String::from_utf8_lossy(&out));
        let recs = records(&out);
        let rec = recs.iter().find(|r| r["record"] == "sync").unwrap_or_else(|| panic!("no sync record: {recs:?}"));
        let rejected = rec["rejected"].as_array().unwrap_or_else(|| panic!("no rejected list: {rec}"));
        assert!(rejected.iter().any(|r| r["path"].as_str().unwrap_or_default().contains(path)), "{rec}");
        assert_eq!(v.git(&["rev-parse", "HEAD"]), head, "the hostile commit was merged");
        self.victim.unharmed();
    }
}

fn configure(root: &Path) {
    crate::util::identity(root);
}

fn run_git_stdin(dir: &Path, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut c = std::process::Command::new("git")
        .current_dir(dir)
        .env("HOME", dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn peer_symlinked_lock_file_is_rejected() {
    let p = Peers::new();
    p.push(&[], &[(".library/.lock", "../outside/secret.txt")]);
    p.rejected(".lock");
    assert_eq!(std::fs::read_to_string(p.victim.outside("secret.txt")).unwrap(), SECRET);
}

#[test]
fn peer_symlinked_document_is_rejected() {
    let p = Peers::new();
    p.push(&[], &[(".library/notes/leak.md", "../../outside/secret.txt")]);
    p.rejected("notes/leak.md");
}

#[test]
fn peer_planted_gitattributes_is_rejected() {
    let p = Peers::new();
    p.push(&[(".library/notes/.gitattributes", "*.md merge=kb-derived\n")], &[]);
    p.rejected("notes/.gitattributes");
}

#[test]
fn peer_fake_repository_at_the_library_root_is_rejected() {
    let p = Peers::new();
    let cfg = format!("[core]\n\tfsmonitor = \"echo pwned > {}; false\"\n", p.victim.sentinel().display());
    p.push(
        &[
            (".library/HEAD", "ref: refs/heads/main\n"),
            (".library/config", &cfg),
            (".library/objects/readme.md", "# o\n"),
            (".library/refs/readme.md", "# r\n"),
        ],
        &[],
    );
    p.rejected("HEAD");
    // The victim keeps writing and committing normally.
    p.victim.lib.cmd("kb-append").args(["write", "notes/ok.md", "--content", "# Ok\n"]).assert().success();
    assert!(!p.victim.sentinel().exists());
}

#[test]
fn peer_dot_git_file_with_fake_repository_is_rejected() {
    let p = Peers::new();
    let cfg = format!("[core]\n\tfsmonitor = \"echo pwned > {}; false\"\n", p.victim.sentinel().display());
    p.push(
        &[
            (".library/notes/g/HEAD", "ref: refs/heads/main\n"),
            (".library/notes/g/config", &cfg),
            (".library/notes/g/objects/readme.md", "# o\n"),
            (".library/notes/g/refs/readme.md", "# r\n"),
        ],
        &[],
    );
    p.push_raw(".git", "gitdir: notes/g\n");
    p.rejected(".git");
    p.victim.lib.cmd("kb-append").args(["write", "notes/ok.md", "--content", "# Ok\n"]).assert().success();
    assert!(!p.victim.sentinel().exists(), "the peer's fsmonitor ran");
}

#[test]
fn peer_gitmodules_and_planted_proposal_free_names_are_rejected() {
    let p = Peers::new();
    p.push(&[(".library/.gitmodules", "[submodule \"x\"]\n\tpath = notes/x\n\turl = ../evil\n")], &[]);
    p.rejected(".gitmodules");
}

#[test]
fn peer_name_with_a_newline_is_rejected() {
    let p = Peers::new();
    p.push(&[(".library/notes/a\nb.md", "# nl\n")], &[]);
    p.rejected("notes/a");
}

#[test]
fn peer_document_inside_a_lock_directory_is_rejected() {
    let p = Peers::new();
    p.push(&[(".library/notes/.lock/meeting.md", "# Meeting 2019\n")], &[]);
    p.rejected("notes/.lock/meeting.md");
}

// ------------------------------------------------------------ more attacks

#[test]
fn m01_git_in_any_case_or_disguise_is_refused() {
    let s = Scene::new();
    for p in [".GIT", "notes/.Git", ".git.", ".git ", "GIT~1", "notes/git~1", ".g\u{200c}it", "notes/.gi\u{200d}t"] {
        s.refused(p, "git");
    }
    s.unharmed();
}

#[test]
fn m02_fullwidth_look_alikes_of_reserved_names_are_refused() {
    let s = Scene::new();
    s.refused("\u{ff0e}\u{ff47}\u{ff49}\u{ff54}", "git");
    s.refused("notes/\u{ff0e}lock/x.md", ".lock");
    s.unharmed();
}

#[test]
fn m03_bidi_and_zero_width_characters_are_refused() {
    let s = Scene::new();
    s.refused("notes/invoice\u{202e}dm.exe", "invisible");
    s.refused("notes/a\u{200b}b.md", "invisible");
    s.refused("notes/\u{feff}bom.md", "invisible");
    s.unharmed();
}

#[test]
fn m04_case_fold_collisions_with_existing_paths_are_refused() {
    let s = Scene::new();
    s.refused("notes/KEPT.md", "differs only in case");
    s.refused("NOTES/new.md", "differs only in case");
    s.unharmed();
}

#[test]
fn m05_internal_names_in_another_case_are_refused() {
    let s = Scene::new();
    for p in [".CHANGELOG", ".Index.md", ".Evolving-Rules/security/active/x.yaml", ".CONFLICTS/notes/a.md/x.md"] {
        let (code, recs, _) = s.write(p, "# x\n");
        assert_eq!(code, 2, "{p}: {recs:?}");
    }
    s.unharmed();
}

#[test]
fn m06_very_long_names_and_paths_are_clear_errors() {
    let s = Scene::new();
    s.refused(&format!("notes/{}.md", "a".repeat(300)), "too long");
    let deep = (0..600).map(|i| format!("d{i}")).collect::<Vec<_>>().join("/") + "/x.md";
    s.refused(&deep, "too long");
    assert!(!s.lib.path("notes/d0").exists());
    s.unharmed();
}

#[test]
fn m07_writing_through_a_directory_symlink_inside_the_library_is_refused() {
    let s = Scene::new();
    symlink("../.memory", s.lib.path("notes/alias"));
    s.refused("notes/alias/x.md", "symlink");
    std::fs::remove_file(s.lib.path("notes/alias")).unwrap();
    s.unharmed();
}

#[test]
fn m08_overwriting_a_document_that_is_a_symlink_is_refused() {
    let s = Scene::new();
    symlink(s.outside("victim.md"), s.lib.path("notes/victim.md"));
    s.refused("notes/victim.md", "symlink");
    let (code, recs) = s.batch(&[json!({"path": "notes/victim.md", "content": "# evil\n", "mode": "append"})]);
    assert_eq!(code, 2, "{recs:?}");
    std::fs::remove_file(s.lib.path("notes/victim.md")).unwrap();
    s.unharmed();
}

#[test]
fn m09_a_symlinked_category_directory_is_refused() {
    let s = Scene::new();
    symlink(s.outside("dir"), s.lib.path("docs"));
    s.refused("docs/x.md", "symlink");
    std::fs::remove_file(s.lib.path("docs")).unwrap();
    s.unharmed();
}

#[test]
fn m10_a_hardlinked_document_is_replaced_not_written_through() {
    let s = Scene::new();
    std::fs::hard_link(s.outside("victim.md"), s.lib.path("notes/hard.md")).unwrap();
    let (code, recs, _) = s.write("notes/hard.md", "# replaced\n");
    assert!(code == 0 || code == 2, "{recs:?}");
    std::fs::remove_file(s.lib.path("notes/hard.md")).unwrap();
    s.unharmed();
}

#[test]
fn m11_writes_into_conflicts_and_git_internal_directories_are_refused() {
    let s = Scene::new();
    s.refused(".conflicts/notes/kept.md/abc1234.md", "internal");
    s.refused("notes/.git/config", "git");
    s.refused("hooks/pre-commit", "git");
    s.refused("info/exclude", "git");
    s.refused("packed-refs", "git");
    s.refused("index", "git");
    s.unharmed();
}

#[test]
fn m12_resolve_refuses_dot_dot_absolute_and_git_paths() {
    let s = Scene::new();
    for p in ["../outside/victim.md", "/etc/passwd", ".git", "notes/.gitattributes"] {
        let out = s.lib.cmd("kb-append").args(["resolve", p, "--keep", "ours"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{p}");
    }
    s.unharmed();
}

#[test]
fn m13_resolve_refuses_a_symlinked_conflicts_directory() {
    let mut s = Scene::new();
    std::fs::create_dir_all(s.outside("dir/notes/kept.md")).unwrap();
    std::fs::write(s.outside("dir/notes/kept.md/abc1234.md"), "# planted\n").unwrap();
    let before = snapshot(s.lib.root(), &[]);
    s.before = before.clone();
    symlink(s.outside("dir"), s.lib.path(".conflicts"));
    let out = s.lib.cmd("kb-append").args(["resolve", KEPT, "--keep", "theirs"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    error_naming(&records(&out.stdout), "symlink");
    std::fs::remove_file(s.lib.path(".conflicts")).unwrap();
    assert_eq!(snapshot(s.lib.root(), &[]), before);
    s.unharmed();
}

#[test]
fn m14_names_starting_with_a_dash_never_become_git_options() {
    let s = Scene::with_git();
    let evil = format!("--upload-pack=touch {}", s.sentinel().display());
    let (code, recs) = s.batch(&[json!({"path": evil, "content": "# dash\n"})]);
    assert!(code == 0 || code == 2, "{recs:?}");
    s.lib.cmd("kb-append").args(["write", "notes/z.md", "--content", "# Z\n"]).assert().success();
    assert!(!s.sentinel().exists());
}

#[test]
fn m15_trailing_dots_and_spaces_are_refused() {
    let s = Scene::new();
    s.refused("notes/a.md.", "trailing");
    s.refused("notes/a.md ", "trailing");
    s.refused("notes /a.md", "trailing");
    s.unharmed();
}

#[test]
fn m16_the_lock_file_as_a_fifo_or_directory_symlink_is_an_error() {
    let s = Scene::new();
    std::fs::remove_file(s.lib.path(".lock")).ok();
    mkfifo(&s.lib.path(".lock"));
    let mut c = s.lib.std_cmd("kb-append");
    c.args(["write", "notes/n.md", "--content", "# N\n"]);
    let (code, _, err) = bounded(c, 20, "");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(".lock"), "{err}");
    std::fs::remove_file(s.lib.path(".lock")).unwrap();
    symlink(s.outside("dir"), s.lib.path(".lock"));
    let mut c = s.lib.std_cmd("kb-lock");
    c.arg("sweep");
    let _ = bounded(c, 20, "");
    assert!(s.outside("dir").is_dir(), "sweep removed an outside directory through a .lock symlink");
    std::fs::remove_file(s.lib.path(".lock")).unwrap();
    s.unharmed();
}

#[test]
fn m17_event_on_a_symlinked_document_reads_nothing_outside() {
    let s = Scene::new();
    symlink(s.outside("secret.txt"), s.lib.path("notes/s.md"));
    let out = s.lib.cmd("kb-append").args(["event", "referenced", "notes/s.md", "--notebook", "nb"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!s.lib.read(".changelog").contains("TOPSECRET"));
    std::fs::remove_file(s.lib.path("notes/s.md")).unwrap();
    s.unharmed();
}

#[test]
fn m18_kb_index_list_and_check_never_read_through_symlinks() {
    let s = Scene::new();
    std::fs::write(s.outside("dir/far.md"), "---\ntopic: TOPSECRET-4711\n---\n# far\n").unwrap();
    let before = snapshot(s.lib.root(), &[]);
    symlink(s.outside("dir"), s.lib.path(".memory/.references/far"));
    symlink(s.outside("dir/far.md"), s.lib.path(".memory/.references/far.md"));
    for args in [&["list", "--format", "jsonl"][..], &["check", "--format", "jsonl"][..]] {
        let mut c = s.lib.std_cmd("kb-index");
        c.args(args);
        let (_, out, err) = bounded(c, 60, "");
        let text = format!("{}{err}", String::from_utf8_lossy(&out));
        assert!(!text.contains("4711"), "kb-index {args:?} read through a symlink: {text}");
    }
    std::fs::remove_file(s.lib.path(".memory/.references/far")).unwrap();
    std::fs::remove_file(s.lib.path(".memory/.references/far.md")).unwrap();
    assert_eq!(snapshot(s.lib.root(), &[]), before);
}

#[test]
fn m19_memgate_note_ids_with_path_parts_are_refused() {
    let s = Scene::new();
    let (_, mut d0) = memgate_replace(&s);
    for evil in ["MEM-../../x", "MEM-a/b", "MEM-\u{202e}x", "MEM-", "mem-lower"] {
        d0["note_id"] = json!(evil);
        let (code, recs) = memgate(&s, "apply", &[d0.clone()]);
        assert_eq!(code, 2, "{evil}: {recs:?}");
        error_naming(&recs, "MEM-[A-Za-z0-9_-]+");
    }
    s.unharmed_except(&[".agents"]);
}

#[test]
fn m20_kb_lastword_refuses_dot_dot_through_the_agents_directory() {
    let s = Scene::new();
    let (code, recs, _) = lastword(&s, &["plan"], &delta("~/.config/agents/../../.ssh/authorized_keys"));
    let (code2, recs2, _) = lastword(&s, &["apply"], "");
    assert!(code == 2 || code2 == 2, "{recs:?} {recs2:?}");
    s.unharmed_except_lastword();
}

#[test]
fn m21_kb_lastword_refuses_a_symlinked_agents_directory() {
    let s = Scene::new();
    std::fs::create_dir_all(s.lib.root().join(".config")).unwrap();
    symlink(s.outside("dir"), s.lib.root().join(".config/agents"));
    std::fs::write(s.outside("dir/USER.md"), "# User\n").unwrap();
    let before = snapshot(s.lib.root(), &["proj"]);
    let (code, recs, _) = lastword(&s, &["plan"], &delta("~/.config/agents/USER.md"));
    let (code2, recs2, _) = lastword(&s, &["apply"], "");
    assert!(code == 2 || code2 == 2, "{recs:?} {recs2:?}");
    assert_eq!(std::fs::read_to_string(s.outside("dir/USER.md")).unwrap(), "# User\n");
    let _ = before;
}

#[test]
fn m22_content_file_that_is_a_symlink_to_a_device_is_refused() {
    let s = Scene::new();
    symlink("/dev/zero", s.lib.root().join("zero.md"));
    let mut c = s.lib.std_cmd("kb-append");
    c.args(["write", "notes/z.md", "--content-file", "zero.md"]);
    let (code, _, err) = bounded(c, 20, "");
    assert_eq!(code, 2, "{err}");
    std::fs::remove_file(s.lib.root().join("zero.md")).unwrap();
    s.unharmed();
}

#[test]
fn m23_peer_gitlink_is_rejected() {
    let p = Peers::new();
    let a = p.attacker.root();
    let head = git(a, &["rev-parse", "HEAD"]).trim().to_string();
    git(a, &["update-index", "--add", "--cacheinfo", &format!("160000,{head},.library/notes/sub")]);
    git(a, &["commit", "-q", "-m", "gitlink"]);
    git(a, &["push", "-q", "origin", "main"]);
    p.rejected("notes/sub");
}

#[test]
fn m24_peer_top_level_gitattributes_for_the_library_is_rejected() {
    let p = Peers::new();
    p.push(&[(".gitattributes", ".library/**/*.md merge=kb-derived\n")], &[]);
    p.rejected(".gitattributes");
}

#[test]
fn m25_peer_case_fold_collision_is_rejected() {
    let p = Peers::new();
    p.push(&[(".library/notes/KEPT.md", "# other\n")], &[]);
    p.rejected("notes/KEPT.md");
}

#[test]
fn m26_sweep_leaves_a_lock_directory_of_a_live_process_alone() {
    let s = Scene::new();
    std::fs::remove_file(s.lib.path(".lock")).ok();
    std::fs::create_dir(s.lib.path(".lock")).unwrap();
    std::fs::write(s.lib.path(".lock/pid"), format!("{}\n", std::process::id())).unwrap();
    s.lib.cmd("kb-lock").arg("sweep").assert().success();
    assert!(s.lib.path(".lock").is_dir(), "a live legacy lock was swept");
}

// ------------------------------------------- user play: text, specials, YAML

/// A note whose frontmatter carries terminal escapes (colour, a window
/// title set by OSC, a bell) and a right-to-left override: the tables a
/// person reads and the generated indexes show them escaped, so opening
/// the index or listing the library cannot drive the terminal.
#[test]
fn u01_escapes_in_frontmatter_reach_neither_the_terminal_nor_the_indexes() {
    let s = Scene::new();
    let doc = "---\ntopic: \"evil \\e[31mRED\\e[0m \\u202e\"\nkeywords: [\"a|b\", \"\\e]0;pwned\\a\"]\n---\n# T\n";
    s.lib.cmd("kb-append").args(["write", "notes/evil.md", "--content", doc]).assert().success();
    let row = "| evil.md | evil \\u{1b}[31mRED\\u{1b}[0m \\u{202e} |  |  | a\\|b, \\u{1b}]0;pwned\\u{7} |  |  |  |\n";
    assert!(s.lib.read("notes/.index.md").contains(row), "{}", s.lib.read("notes/.index.md"));
    let master = s.lib.read(".master-index.md");
    assert!(master.contains("| notes/evil.md | user | evil \\u{1b}[31mRED\\u{1b}[0m \\u{202e} |"), "{master}");
    // The incremental rows and a full rebuild agree, and check finds no problem.
    s.lib.cmd("kb-index").args(["rebuild", "--incremental"]).assert().success();
    s.lib.cmd("kb-index").arg("check").assert().success();
    let out = s.lib.cmd("kb-index").args(["list", "--format", "table"]).output().unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("notes/evil.md  evil \\u{1b}[31mRED\\u{1b}[0m \\u{202e}"), "{table}");
    for (name, text) in [("index", s.lib.read("notes/.index.md")), ("master", master), ("table", table)] {
        assert!(!text.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{name} carries a raw control character: {text:?}");
    }
    // JSON records keep the exact value: the escaping is for people only.
    let recs = crate::util::ok_records(s.lib.cmd("kb-index").args([
        "list",
        "--topic",
        "evil \u{1b}[31mRED\u{1b}[0m \u{202e}",
    ]));
    assert_eq!(recs[0]["keywords"], json!(["a|b", "\u{1b}]0;pwned\u{7}"]));
    s.unharmed();
}

/// kb-mcp reads a document resource the way every reader does: a FIFO
/// in a document's place is an error answer, and the server goes on.
#[test]
fn u02_mcp_reading_a_fifo_resource_is_an_error_not_a_hang() {
    let s = Scene::new();
    mkfifo(&s.lib.path("notes/fifo.md"));
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "kb://notes/fifo.md"}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "kb://notes/kept.md"}}),
    ];
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let (code, out, err) = bounded(s.lib.std_cmd("kb-mcp"), 20, &input);
    assert_eq!(code, 0, "{err}");
    let answers = records(&out);
    assert_eq!(answers.len(), 3, "{answers:?}");
    let msg = answers[1]["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("not a regular file"), "{}", answers[1]);
    assert_eq!(answers[2]["result"]["contents"][0]["text"], KEPT_TEXT);
    std::fs::remove_file(s.lib.path("notes/fifo.md")).unwrap();
    s.unharmed();
}

/// A skill's supporting file replaced by a FIFO, or by a link to an
/// endless device: patch and write-file answer at once with an error
/// naming the problem, never read through the link, never block.
#[test]
fn u03_skill_files_that_are_fifos_or_links_to_devices_are_errors_not_hangs() {
    let s = Scene::new();
    let skill = "---\nname: pdf-tools\ndescription: Extract text from PDF files.\n---\n# PDF\n";
    s.lib.cmd("kb-append").args(["skill", "create", "pdf-tools", "--content", skill]).assert().success();
    let dir = ".skills/.candidates/pdf-tools";
    mkfifo(&s.lib.path(&format!("{dir}/references/fifo.md")));
    symlink("/dev/zero", s.lib.path(&format!("{dir}/references/zero.md")));
    let run = |args: &[&str]| {
        let mut c = s.lib.std_cmd("kb-append");
        c.args(["skill"]).args(args);
        let (code, out, err) = bounded(c, 20, "");
        assert_eq!(code, 2, "{args:?}: {err}");
        records(&out)
    };
    let patch = ["patch", "pdf-tools", "--old-string", "a", "--new-string", "b", "--file-path"];
    error_naming(&run(&[&patch[..], &["references/fifo.md"]].concat()), "not a regular file");
    error_naming(
        &run(&["write-file", "pdf-tools", "--file-path", "references/fifo.md", "--content", "x"]),
        "not a regular file",
    );
    error_naming(&run(&[&patch[..], &["references/zero.md"]].concat()), "symlink");
    assert_eq!(s.lib.read(&format!("{dir}/SKILL.md")), skill);
    for f in ["fifo.md", "zero.md"] {
        std::fs::remove_file(s.lib.path(&format!("{dir}/references/{f}"))).unwrap();
    }
    s.unharmed();
}

/// Frontmatter nested 200,000 flow levels deep (`[[[[…]]]]`, 400 kB): the
/// YAML reader refuses it by its depth before parsing (the parser's time
/// grows with the square of the depth: minutes for every reader), so the
/// write and the listing answer at once and name the problem.
#[test]
fn u04_frontmatter_nested_beyond_the_depth_limit_is_refused_before_parsing() {
    let s = Scene::new();
    let deep = format!("---\ntopic: deep\nkeywords: {}{}\n---\n# Deep\n", "[".repeat(200_000), "]".repeat(200_000));
    let file = s.lib.root().join("deep.md");
    std::fs::write(&file, &deep).unwrap();
    let mut c = s.lib.std_cmd("kb-append");
    c.args(["write", "notes/deep.md", "--content-file", file.to_str().unwrap()]);
    let (code, _, err) = bounded(c, 60, "");
    assert_eq!(code, 0, "{err}");
    let mut c = s.lib.std_cmd("kb-index");
    c.args(["list", "--topic", "deep"]);
    let (code, out, err) = bounded(c, 60, "");
    assert_eq!(code, 2, "{err}");
    let recs = records(&out);
    let entry = recs.iter().find(|r| r["record"] == "entry").expect("the document is listed");
    assert_eq!(entry["frontmatter_error"], "invalid YAML: nested deeper than 128 levels at line 2");
    std::fs::remove_file(file).unwrap();
    s.unharmed();
}

/// A peer that makes git ignore the library's documents: its commit is
/// refused, whether it edits the library's own `.gitignore` or adds a
/// line about the library to one outside it. Merged, every later write
/// would leave its document out of the commit while the shared changelog
/// and indexes named it, and no other clone would ever get it. A change
/// to the workspace's `.gitignore` that does not speak of the library
/// merges as before.
#[test]
fn u05_peer_gitignore_that_hides_documents_is_rejected() {
    let mut p = Peers::new();
    let a = p.attacker.root().to_path_buf();
    std::fs::write(a.join(".gitignore"), "target/\n").unwrap();
    git(&a, &["add", ".gitignore"]);
    git(&a, &["commit", "-q", "-m", "ignore the build"]);
    git(&a, &["push", "-q", "origin", "main"]);
    let v = &p.victim.lib;
    v.cmd("kb-append").args(["sync", "--merge-outside"]).assert().success();
    assert_eq!(std::fs::read_to_string(v.root().join(".gitignore")).unwrap(), "target/\n");
    p.victim.before = snapshot(v.root(), &[]);
    let own = p.attacker.read(".gitignore");
    std::fs::write(a.join(".library/.gitignore"), format!("{own}*.md\n")).unwrap();
    git(&a, &["commit", "-q", "-am", "peer"]);
    git(&a, &["push", "-q", "origin", "main"]);
    p.rejected_with(".gitignore", &["--merge-outside"]);
    // The attacker undoes it and tries the workspace's file instead.
    std::fs::write(a.join(".library/.gitignore"), &own).unwrap();
    std::fs::write(a.join(".gitignore"), "target/\n.library/notes/\n").unwrap();
    git(&a, &["add", ".gitignore", ".library/.gitignore"]);
    git(&a, &["commit", "-q", "-m", "peer"]);
    git(&a, &["push", "-q", "origin", "main"]);
    p.rejected_with(".gitignore", &["--merge-outside"]);
}

/// A peer's line in the workspace's `.gitignore` that hides library
/// documents without naming the library (`*.md`, `notes/`) is refused as
/// one that names it is: git matches it against the library's files all
/// the same. A line that reaches no library file (`*.log`, `target/`), or
/// re-includes (`!`), merges as before.
#[test]
fn u21_peer_gitignore_pattern_reaching_library_files_is_rejected() {
    let mut p = Peers::new();
    let a = p.attacker.root().to_path_buf();
    std::fs::write(a.join(".gitignore"), "target/\n*.log\n!keep.md\n").unwrap();
    git(&a, &["add", ".gitignore"]);
    git(&a, &["commit", "-q", "-m", "ignore the build"]);
    git(&a, &["push", "-q", "origin", "main"]);
    let v = &p.victim.lib;
    v.cmd("kb-append").args(["sync", "--merge-outside"]).assert().success();
    assert_eq!(std::fs::read_to_string(v.root().join(".gitignore")).unwrap(), "target/\n*.log\n!keep.md\n");
    for hide in ["*.md", "notes/", "**/*.md"] {
        p.victim.before = snapshot(v.root(), &[]);
        std::fs::write(a.join(".gitignore"), format!("target/\n*.log\n!keep.md\n{hide}\n")).unwrap();
        git(&a, &["commit", "-q", "-am", "peer"]);
        git(&a, &["push", "-q", "origin", "main"]);
        p.rejected_with(".gitignore", &["--merge-outside"]);
        std::fs::write(a.join(".gitignore"), "target/\n*.log\n!keep.md\n").unwrap();
        git(&a, &["commit", "-q", "-am", "undo"]);
        git(&a, &["push", "-q", "origin", "main"]);
    }
}

/// A note's topic goes into the commit message, a notebook name into the
/// changelog, the relations and the cursors file. A topic with line breaks
/// could append trailers to the commit (`Co-authored-by:`, `Signed-off-by:`)
/// and escapes to what `git log` prints: the subject stays one line, shown
/// escaped. A notebook name with control characters is refused like
/// `kb-index changes --notebook` refuses it (before, a write took it and
/// no reader could ever ask for it).
#[test]
fn u06_topics_and_notebooks_cannot_forge_commit_lines() {
    let s = Scene::with_git();
    let doc = "---\ntopic: \"t\\n\\nCo-authored-by: Mallory <m@example.invalid>\\e[2J\"\n---\n# T\n";
    s.lib.cmd("kb-append").args(["write", "notes/msg.md", "--content", doc]).assert().success();
    assert_eq!(
        s.lib.git(&["log", "-1", "--format=%B"]),
        "task-ai(library):user created t\\n\\nCo-authored-by: Mallory <m@example.invalid>\\u{1b}[2J\n\n"
    );
    let (code, recs) = s.batch(&[
        json!({"path": "notes/nb1.md", "content": "# 1\n", "notebook": "nb\n\nSigned-off-by: x"}),
        json!({"path": "notes/nb2.md", "content": "# 2\n", "notebook": "nb-ok"}),
    ]);
    assert_eq!(code, 2, "{recs:?}");
    error_naming(&recs, "notebook");
    assert_eq!(recs.iter().filter(|r| r["record"] == "write").count(), 1, "{recs:?}");
    assert!(!s.lib.path("notes/nb1.md").exists());
    let out = s
        .lib
        .cmd("kb-append")
        .args(["write", "notes/nb3.md", "--notebook", "a\u{1b}[2J", "--content", "# 3\n"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!s.lib.path("notes/nb3.md").exists());
    assert!(!s.lib.read(".changelog").contains("Signed-off-by"), "{}", s.lib.read(".changelog"));
    s.unharmed();
}

/// `café` written precomposed (NFC) and decomposed (NFD) are two names
/// on Linux and one file on macOS: like a case twin, the second is
/// refused, whether a request writes it or a peer's commit brings it.
#[test]
fn u07_unicode_normalisation_twins_are_refused_like_case_twins() {
    let s = Scene::new();
    let (nfc, nfd) = ("notes/caf\u{e9}.md", "notes/cafe\u{301}.md");
    assert_eq!(s.write(nfc, "# nfc\n").0, 0);
    // A name not in NFC is refused as such before it is
    // compared; a compatibility twin (the `ﬁ` ligature) still collides.
    s.refused(nfd, "not in Unicode NFC form");
    assert!(!s.lib.path(nfd).exists());
    assert_eq!(s.write("notes/file.md", "# file\n").0, 0);
    s.refused("notes/\u{fb01}le.md", "differs only in case");
    assert_eq!(s.lib.read(nfc), "# nfc\n");
    // Two new twins in one batch: the disk holds neither yet.
    let (code, recs) = s.batch(&[
        json!({"path": "notes/Twin.md", "content": "# a\n"}),
        json!({"path": "notes/twin.md", "content": "# b\n"}),
        json!({"path": "Team/a.md", "content": "# c\n"}),
        json!({"path": "team/b.md", "content": "# d\n"}),
        json!({"path": "notes/Twin.md", "content": "# a again\n"}),
    ]);
    assert_eq!(code, 2, "{recs:?}");
    let kinds: Vec<&str> = recs.iter().map(|r| r["record"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["write", "error", "write", "error", "write"], "{recs:?}");
    error_naming(&recs, "differs only in case or Unicode form from 'notes/Twin.md' earlier in this batch");
    error_naming(&recs, "differs only in case or Unicode form from 'Team' earlier in this batch");
    assert!(!s.lib.path("notes/twin.md").exists() && !s.lib.path("team").exists());
    assert_eq!(s.lib.read("notes/Twin.md"), "# a again\n");
    s.unharmed();
    let p = Peers::new();
    p.push(&[(".library/notes/caf\u{e9}.md", "# nfc\n"), (".library/notes/cafe\u{301}.md", "# nfd\n")], &[]);
    p.rejected("notes/caf");
}

/// `kb-guard sanitize` prints a document to store, not a report: a CRLF
/// file with tabs and no injection comes out byte for byte (the escaping
/// of text for people must not reach data).
#[test]
fn u08_sanitize_output_is_the_documents_bytes() {
    let s = Scene::new();
    let page = "# Page\r\n\r\n| a\t| b |\r\nplain text\r\n";
    std::fs::write(s.lib.root().join("page.md"), page).unwrap();
    let out = s.lib.cmd("kb-guard").args(["sanitize", "page.md"]).current_dir(s.lib.root()).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), page);
    std::fs::remove_file(s.lib.root().join("page.md")).unwrap();
    s.unharmed();
}

/// The findings (rule, line, matched) and the verdict of `kb-guard scan`
/// on a skill whose `assets/icon.svg` holds `svg`.
fn scan_svg_icon(svg: &str) -> (Vec<(String, u64, String)>, String) {
    let lib = Lib::empty();
    let skill = lib.root().join("badge");
    std::fs::create_dir_all(skill.join("assets")).unwrap();
    let md = "---\nname: badge\ndescription: Renders the project badge\n---\n# Badge\n\nUse `assets/icon.svg`.\n";
    std::fs::write(skill.join("SKILL.md"), md).unwrap();
    std::fs::write(skill.join("assets/icon.svg"), svg).unwrap();
    let out = lib.cmd("kb-guard").args(["scan", "badge"]).output().unwrap();
    let recs = records(&out.stdout);
    let findings = recs
        .iter()
        .filter(|r| r["record"] == "finding")
        .map(|r| {
            let rule = r["rule"].as_str().unwrap().to_string();
            (rule, r["line"].as_u64().unwrap(), r["matched"].as_str().unwrap().to_string())
        })
        .collect();
    let verdict = recs.iter().find(|r| r["record"] == "verdict").unwrap()["verdict"].as_str().unwrap().to_string();
    (findings, verdict)
}

/// An SVG icon is a document a browser runs: `<script>`, an event
/// handler (`onload=`, also after `/`), a `javascript:` link (also
/// spelled with entities) or `<foreignObject>` HTML in a skill's icon is
/// dangerous. A plain icon (paths, gradients, `<title>`, a same-file
/// `xlink:href="#id"`, text saying "onload=") stays safe with no finding.
#[test]
fn u09_svg_icons_with_active_content_are_dangerous() {
    let plain = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" viewBox=\"0 0 24 24\">\n\
  <title>Badge (online=yes)</title>\n\
  <defs><linearGradient id=\"g\"><stop offset=\"0\" stop-color=\"#fff\"/></linearGradient>\n\
  <path id=\"p\" d=\"M0 0h24v24H0z\" fill=\"url(#g)\"/></defs>\n\
  <use xlink:href=\"#p\"/><a href=\"https://example.test/docs\"><text x=\"1\" y=\"9\">set onload= in docs</text></a>\n\
</svg>\n";
    assert_eq!(scan_svg_icon(plain), (vec![], "safe".to_string()));
    let head = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 24 24\">\n";
    let cases = [
        ("  <script>alert(1)</script>\n", 2, "<script"),
        ("  <rect width=\"1\" height=\"1\"\n        onload=\"alert(1)\"/>\n", 3, "onload="),
        ("  <g/onclick=alert(1)>\n", 2, "onclick="),
        ("  <a xlink:href=\"javascript:alert(1)\"><text>go</text></a>\n", 2, "javascript:"),
        ("  <a href=\"jav&#x09;ascript&colon;alert(1)\">x</a>\n", 2, "jav&#x09;ascript&colon;"),
        ("  <foreignObject width=\"9\" height=\"9\"><iframe src=\"x\"/></foreignObject>\n", 2, "<foreignObject"),
    ];
    for (body, line, matched) in cases {
        let svg = format!("{head}{body}</svg>\n");
        let want = vec![("svg_active_content".to_string(), line, matched.to_string())];
        assert_eq!(scan_svg_icon(&svg), (want, "dangerous".to_string()), "{svg}");
    }
}

/// A FIFO planted in place of a log or a derived file hung every command
/// that read it (a CI job waits forever): each is now read without
/// blocking and refused with an error naming it, exit 2, and the
/// documents already in the library are untouched.
#[test]
fn u10_a_fifo_in_place_of_a_derived_file_is_an_error_not_a_hang() {
    let cases: [(&str, &[&str]); 6] = [
        (".changelog", &["kb-index", "changes", "--notebook", "nb"]),
        (".changelog", &["kb-append", "write", "notes/new.md", "--content", "# New\n"]),
        (".changelog-cursors", &["kb-index", "changes", "--notebook", "nb"]),
        (".relations.jsonl", &["kb-append", "write", "notes/new.md", "--content", "# New\n"]),
        ("notes/.index.md", &["kb-append", "write", "notes/new.md", "--content", "# New\n"]),
        (".master-index.md", &["kb-append", "write", "notes/new.md", "--content", "# New\n"]),
    ];
    for (file, argv) in cases {
        let s = Scene::new();
        s.lib.cmd("kb-index").args(["changes", "--notebook", "nb"]).assert().success();
        let p = s.lib.path(file);
        std::fs::remove_file(&p).unwrap();
        mkfifo(&p);
        let mut c = s.lib.std_cmd(argv[0]);
        c.args(&argv[1..]);
        let (code, _, err) = bounded(c, 20, "");
        assert_eq!(code, 2, "{file} {argv:?}: {err}");
        let want = format!("{} is not a regular file (a FIFO, device or socket)", p.display());
        assert!(err.contains(&want), "{file} {argv:?}: {err}");
        assert_eq!(s.lib.read(KEPT), KEPT_TEXT);
    }
}

/// kb-lastword's stderr lines quote headings and paths from its input
/// and the knowledge files: an escape sequence or a bidi override there is
/// shown escaped, never run by the terminal; records keep the exact text.
#[test]
fn u11_lastword_stderr_shows_library_text_escaped() {
    use crate::lastword::{doc, entry, Lw};
    let lw = Lw::new();
    let h = "Pro\u{1b}]0;pwned\u{7}jects\u{202e}";
    let input = doc(&[
        entry("~/.config/agents/USER.md", h, Some(2), "update", Some("A")),
        entry("~/.config/agents/USER.md", h, Some(3), "update", Some("B")),
        entry("~/.config/agents/USER.md", h, None, "update", Some("C")),
    ]);
    let (code, recs, err) = lw.run(&["plan"], &input);
    assert_eq!(code, 1, "{err} {recs:?}");
    assert!(!err.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{err:?}");
    assert!(err.contains("Pro\\u{1b}]0;pwned\\u{7}jects\\u{202e}"), "{err:?}");
    assert!(recs[2]["error"].as_str().unwrap().contains(h), "{recs:?}");
}

/// kb-memgate's `message` is the sentence an agent shows or commits with:
/// the user's words in it come out with escapes and bidi overrides
/// escaped and on one line (no forged `Signed-off-by:` trailer line);
/// the note itself keeps the exact text.
#[test]
fn u12_memgate_messages_show_user_text_escaped() {
    use crate::memgate::{apply, decide, said};
    let lib = Lib::project();
    let text = "Never use var in this project\u{1b}]0;pwned\u{7}\u{202e}.\n\nSigned-off-by: Mallory <m@x.invalid>";
    let d = decide(&lib, &[said("remember", text)]);
    assert!(!d[0]["message"].as_str().unwrap().contains(['\u{1b}', '\u{7}', '\u{202e}', '\n']), "{d:?}");
    let r = apply(&lib, &d);
    assert_eq!(r[0]["status"], "applied", "{r:?}");
    assert_eq!(
        r[0]["message"],
        "Remembered: Never use var in this project\\u{1b}]0;pwned\\u{7}\\u{202e}. Signed-off-by: Mallory <m@x.invalid>"
    );
}

/// Every binary's last word is the error that ended its run, printed by
/// the one edge in `kb::cli`. It quotes what it was given (a command word,
/// a file name a script took from a listing): an escape sequence or a
/// bidi override there is shown escaped on the user's terminal, on one
/// line, never run.
#[test]
fn u13_the_error_that_ends_a_run_shows_hostile_text_escaped() {
    let s = Scene::new();
    let evil = "x\u{1b}]0;pwned\u{7}\u{202e}\nkb-append: forged line";
    let shown = "x\\u{1b}]0;pwned\\u{7}\\u{202e}\\nkb-append: forged line";
    let out = s.lib.cmd("kb-append").arg(evil).output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with(&format!("kb-append: unknown command '{shown}'")), "{err:?}");
    let name = format!("outside/{evil}.md");
    let out = s.lib.cmd("kb-append").args(["write", "notes/n.md", "--content-file", &name]).output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with(&format!("kb-append: reading outside/{shown}.md: ")), "{err:?}");
    assert_eq!(err.lines().count(), 1, "{err:?}");
    for bin in ["kb-lock", "kb-index"] {
        let out = s.lib.cmd(bin).args(["status", "--format", evil]).output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(!err.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{bin}: {err:?}");
        assert!(err.contains(shown), "{bin}: {err:?}");
    }
    s.unharmed();
}

/// A request line far over any request's size (here 17 MiB with no
/// content limit near it; a 2 GB line without a newline is the attack) is
/// refused by its length before it is read whole: an error naming the
/// limit, and the next line is still read and written.
#[test]
fn u14_a_batch_line_over_the_line_limit_is_refused_and_the_next_is_written() {
    let s = Scene::new();
    let huge = format!("{{\"path\":\"notes/huge.md\",\"content\":\"{}\"}}\n", "a".repeat(17 << 20));
    let good = json!({"path": "notes/after.md", "content": "# After\n"});
    let mut c = s.lib.std_cmd("kb-append");
    c.arg("batch");
    let (code, out, err) = bounded(c, 120, &format!("{huge}{good}\n"));
    assert_eq!(code, 2, "{err}");
    let recs = records(&out);
    assert_eq!(recs.len(), 2, "{recs:?}");
    assert_eq!(recs[0]["line"], 1);
    error_naming(&recs, "the line is longer than the 16777216-byte line limit");
    assert_eq!((recs[1]["record"].as_str(), recs[1]["path"].as_str()), (Some("write"), Some("notes/after.md")));
    assert!(!s.lib.path("notes/huge.md").exists());
    assert_eq!(s.lib.read("notes/after.md"), "# After\n");
    assert!(err.len() < 1000, "stderr repeats the line: {} bytes", err.len());
    s.unharmed();
}

/// kb-mcp reads one message per line: a line over the limit is answered
/// with a JSON-RPC error naming the limit (its id unread, so null), and
/// the server goes on with the next request.
#[test]
fn u15_mcp_answers_an_over_long_line_with_an_error_and_keeps_serving() {
    let s = Scene::new();
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"library_write\",\
         \"arguments\":{{\"path\":\"notes/huge.md\",\"content\":\"{}\"}}}}}}\n",
        "a".repeat(17 << 20)
    );
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let (code, out, err) = bounded(s.lib.std_cmd("kb-mcp"), 120, &format!("{huge}{ping}\n"));
    assert_eq!(code, 0, "{err}");
    let answers = records(&out);
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0]["id"], Value::Null);
    assert_eq!(answers[0]["error"]["code"], -32600);
    assert_eq!(
        answers[0]["error"]["message"],
        "request too large: the line is longer than the 16777216-byte line limit"
    );
    assert_eq!(answers[1], json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    assert!(!s.lib.path("notes/huge.md").exists());
    s.unharmed();
}

/// A mistyped key in a batch request (`"mdoe": "append"`) was ignored: the
/// request ran with the default and overwrote the log it meant to append
/// to. An unknown key is refused, naming the key and the known key it is
/// nearest to, and the file keeps its bytes; kb-guard filter's `verdict`
/// and an upstream `record` stay known.
#[test]
fn u16_a_batch_request_with_an_unknown_key_is_refused_with_a_suggestion() {
    let s = Scene::new();
    let (code, recs) = s.batch(&[
        json!({"path": KEPT, "content": "- one more\n", "mdoe": "append"}),
        json!({"path": "notes/b.md", "contnet": "# B\n", "content": "# B\n"}),
        json!({"path": "notes/c.md", "content": "# C\n", "zzzzzzzz": 1}),
        json!({"path": "notes/d.md", "content": "# D\n", "verdict": "safe", "notebook": "nb"}),
    ]);
    assert_eq!(code, 2, "{recs:?}");
    let msgs: Vec<&str> = recs.iter().map(|r| r["message"].as_str().unwrap_or("")).collect();
    assert_eq!(
        msgs[..3],
        [
            "unknown key 'mdoe'; did you mean 'mode'? (keys: path, content, mode, notebook, allow_risky, verdict)",
            "unknown key 'contnet'; did you mean 'content'? (keys: path, content, mode, notebook, allow_risky, verdict)",
            "unknown key 'zzzzzzzz' (keys: path, content, mode, notebook, allow_risky, verdict)",
        ],
        "{recs:?}"
    );
    assert_eq!((recs[3]["record"].as_str(), recs[3]["path"].as_str()), (Some("write"), Some("notes/d.md")));
    assert!(!s.lib.path("notes/b.md").exists() && !s.lib.path("notes/c.md").exists());
    // kb-mcp's library_write refused the key already; now it says which one was meant.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "library_write",
        "arguments": {"path": KEPT, "content": "- one more\n", "mdoe": "append"}}});
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}});
    let (code, out, err) = bounded(s.lib.std_cmd("kb-mcp"), 60, &format!("{init}\n{call}\n"));
    assert_eq!(code, 0, "{err}");
    let result = &records(&out)[1]["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(
        result["structuredContent"]["records"][0]["message"],
        "library_write: unknown argument 'mdoe'; did you mean 'mode'? \
         (expected one of: path, content, mode, notebook, allow_risky)"
    );
    s.unharmed();
}

/// A peer's top-level `.gitattributes` need not name the library to reach
/// it: `*.md working-tree-encoding=UTF-16LE` re-encodes every document on
/// checkout (no reader takes them after), `* merge=union` splices two
/// edits of a note together instead of keeping the conflict, `filter=`
/// hands the documents to a driver. A line the peer adds whose pattern
/// matches a library file and sets such an attribute is refused; lines
/// for the project's own files (`src/*.rs`, `*.png`) merge as before.
#[test]
fn u17_peer_top_level_gitattributes_reaching_library_files_is_rejected() {
    let attributes = |p: &Peers, text: &str| {
        let a = p.attacker.root();
        std::fs::write(a.join(".gitattributes"), text).unwrap();
        git(a, &["add", ".gitattributes"]);
        git(a, &["commit", "-q", "-m", "peer"]);
        git(a, &["push", "-q", "origin", "main"]);
    };
    let p = Peers::new();
    attributes(&p, "# project\nsrc/*.rs text eol=lf\n*.png binary\n");
    let v = &p.victim.lib;
    v.cmd("kb-append").args(["sync", "--merge-outside"]).assert().success();
    assert_eq!(
        std::fs::read_to_string(v.root().join(".gitattributes")).unwrap(),
        "# project\nsrc/*.rs text eol=lf\n*.png binary\n"
    );
    for line in ["*.md working-tree-encoding=UTF-16LE", "* merge=union", "**/notes/** filter=lfs", "*/*/*.md eol=crlf"]
    {
        let p = Peers::new();
        attributes(&p, &format!("src/*.rs text\n{line}\n"));
        p.rejected_with(".gitattributes", &["--merge-outside"]);
        assert_eq!(p.victim.lib.read(KEPT), KEPT_TEXT, "{line}");
    }
}

/// A project's `.sdlc/libraries.json` comes with the repository a user
/// clones: a source name or path there with terminal escapes reached the
/// terminal raw in kb-score's and promote-answer's "source skipped"
/// warnings. They are shown escaped, like every line for people.
#[test]
fn u18_source_registry_text_in_warnings_is_shown_escaped() {
    let s = Scene::new();
    std::fs::create_dir_all(s.lib.root().join(".sdlc")).unwrap();
    let reg = json!({"version": 1, "active": [{"name": "evil\u{1b}]0;pwned\u{7}", "path": "missing\u{1b}[2J\u{202e}"},
        "glob\u{1b}[31m"]});
    std::fs::write(s.lib.root().join(".sdlc/libraries.json"), reg.to_string()).unwrap();
    let runs: [&[&str]; 2] =
        [&["kb-score", "anything"], &["kb-append", "promote-answer", "notes/answer.md", "--content", "# Answer\n"]];
    for argv in runs {
        let out = s.lib.cmd(argv[0]).args(&argv[1..]).output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains("source 'evil\\u{1b}]0;pwned\\u{7}' skipped: missing\\u{1b}[2J\\u{202e}: "),
            "{argv:?}: {err:?}"
        );
        assert!(err.contains("source 'glob\\u{1b}[31m' skipped"), "{argv:?}: {err:?}");
        assert!(!err.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{argv:?}: {err:?}");
    }
    std::fs::remove_dir_all(s.lib.root().join(".sdlc")).unwrap();
    s.unharmed();
}

/// `kb-lastword plan FILE` (and `validate FILE`) read its file whole
/// with no check: a FIFO hung it, `/dev/zero` ate memory until the machine killed something. Input
/// files and stdin are read like every other named input (a FIFO or
/// device is an error) and up to the queue's size limit; the error names
/// the file and the limit, and nothing is queued.
#[test]
fn u19_lastword_plan_input_is_bounded_and_never_a_special_file() {
    use crate::lastword::{doc, entry, Lw};
    let lw = Lw::new();
    let fifo = lw.root().join("in.fifo");
    mkfifo(&fifo);
    for (cmd, input) in [("plan", fifo.to_str().unwrap()), ("validate", fifo.to_str().unwrap()), ("plan", "/dev/zero")]
    {
        let mut c = lw.std_cmd();
        c.args([cmd, input]);
        let (code, _, err) = bounded(c, 20, "");
        assert_eq!(code, 2, "{input}: {err}");
        assert!(err.contains(&format!("kb-lastword: reading {input}: ")), "{input}: {err}");
        assert!(err.contains("not a regular file"), "{input}: {err}");
    }
    let big = lw.root().join("big.yaml");
    let good = doc(&[entry("~/.config/agents/USER.md", "Projects", Some(2), "update", Some("A"))]);
    std::fs::write(&big, format!("{good}\n#{}\n", " ".repeat(64 << 20))).unwrap();
    let mut c = lw.std_cmd();
    c.args(["plan", big.to_str().unwrap()]);
    let (code, _, err) = bounded(c, 60, "");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("{} is over the limit of 67108864 bytes", big.display())), "{err}");
    let mut c = lw.std_cmd();
    c.arg("plan");
    let (code, _, err) = bounded(c, 60, &std::fs::read_to_string(&big).unwrap());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("kb-lastword: reading stdin: stdin is over the limit of 67108864 bytes"), "{err}");
    std::fs::remove_file(&big).unwrap();
    assert!(!lw.lastword().join("USER.md.yaml").exists(), "an entry was queued");
}

/// `kb-guard sanitize FILE` is the step before storing a fetched page: a
/// FIFO in the file's place hung it and `/dev/zero` read without end.
/// The file is opened like every named input (a special file is an
/// error naming it) and read up to the document limit (8 MiB), like
/// stdin for sanitize and `scan -`.
#[test]
fn u20_guard_sanitize_input_is_bounded_and_never_a_special_file() {
    let s = Scene::new();
    let fifo = s.lib.root().join("page.fifo");
    mkfifo(&fifo);
    for input in [fifo.to_str().unwrap(), "/dev/zero"] {
        let mut c = s.lib.std_cmd("kb-guard");
        c.args(["sanitize", input]);
        let (code, out, err) = bounded(c, 20, "");
        assert_eq!(code, 2, "{input}: {err}");
        assert!(out.is_empty(), "{input}: sanitize printed a document");
        assert!(err.contains(&format!("kb-guard: reading {input}: ")) && err.contains("not a regular file"), "{err}");
    }
    std::fs::remove_file(&fifo).unwrap();
    let page = format!("# Page\n{}", "x".repeat(8 << 20));
    for argv in [&["sanitize"][..], &["sanitize", "-"], &["scan", "-"]] {
        let mut c = s.lib.std_cmd("kb-guard");
        c.args(argv);
        let (code, out, err) = bounded(c, 60, &page);
        assert_eq!(code, 2, "{argv:?}: {err}");
        assert!(out.is_empty(), "{argv:?}: {}", String::from_utf8_lossy(&out[..out.len().min(200)]));
        assert!(err.contains("reading stdin: stdin is over the limit of 8388608 bytes"), "{argv:?}: {err}");
    }
    s.unharmed();
}

/// Rule and policy files are read like every other input: `kb-guard rules
/// validate FILE` and `--policy FILE` (named by the user: links followed)
/// hung on a FIFO and read `/dev/zero` without end; a FIFO or a link to
/// `/dev/zero` planted among the library's own rule files
/// (`.evolving-rules/security/`) hung every scan, every write and kb-mcp's
/// guard_scan. Each is now an error naming the file, and the scan runs on
/// with the rules it could read.
#[test]
fn u22_guard_rule_and_policy_files_are_never_special_files() {
    let s = Scene::new();
    let fifo = s.lib.root().join("rules.fifo");
    mkfifo(&fifo);
    let kept = s.lib.path(KEPT);
    for input in [fifo.to_str().unwrap(), "/dev/zero"] {
        for argv in [vec!["rules", "validate", input], vec!["scan", kept.to_str().unwrap(), "--policy", input]] {
            let mut c = s.lib.std_cmd("kb-guard");
            c.args(&argv);
            let (code, _, err) = bounded(c, 20, "");
            assert_eq!(code, 2, "{argv:?}: {err}");
            assert!(err.contains(input) && err.contains("not a regular file"), "{argv:?}: {err}");
        }
    }
    std::fs::remove_file(&fifo).unwrap();

    let rules = s.lib.path(".evolving-rules/security");
    mkfifo(&rules.join("active/pipe.yaml"));
    symlink("/dev/zero", rules.join("active/zero.yaml"));
    symlink("/dev/zero", rules.join("core.yaml"));
    let mut c = s.lib.std_cmd("kb-guard");
    c.args(["scan", kept.to_str().unwrap()]);
    let (code, out, err) = bounded(c, 20, "");
    assert_eq!(code, 2, "{err}");
    let recs = records(&out);
    for name in ["active/pipe.yaml: ", "active/zero.yaml: ", "security/core.yaml: "] {
        error_naming(&recs, name);
    }
    error_naming(&recs, "not a regular file");
    error_naming(&recs, "is a symlink");
    assert!(recs.iter().any(|r| r["record"] == "verdict" && r["verdict"] == "safe"), "{recs:?}");

    let mut c = s.lib.std_cmd("kb-append");
    c.args(["write", "notes/new.md", "--content", "# New\n"]);
    let (code, _, err) = bounded(c, 20, "");
    assert!(err.contains("pipe.yaml") && err.contains("not a regular file"), "{code}: {err}");

    let mut c = s.lib.std_cmd("kb-mcp");
    c.arg("--root").arg(s.lib.root());
    let calls = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "guard_scan", "arguments": {"text": "Run nginx -t first."}}}),
    ];
    let input: String = calls.iter().map(|c| format!("{c}\n")).collect();
    let (code, out, err) = bounded(c, 20, &input);
    assert_eq!(code, 0, "{err}");
    let answers = records(&out);
    assert_eq!(answers.len(), 2, "{answers:?}");
    let text = answers[1]["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("not a regular file") && text.contains("\"verdict\":\"safe\""), "{text}");
    for p in ["active/pipe.yaml", "active/zero.yaml", "core.yaml"] {
        std::fs::remove_file(rules.join(p)).unwrap();
    }
}
