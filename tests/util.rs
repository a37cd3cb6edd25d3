//! The shared test harness: each test gets its own library in a temp
//! directory and runs the real binaries with an isolated environment.

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use serde_json::Value;

/// The instant every test runs at (KB_NOW), so outputs are reproducible.
pub const NOW: &str = "2026-03-01T12:00:00Z";

/// A temporary workspace holding `.library/`.
pub struct Lib {
    /// Keeps the directory alive for the test's duration.
    pub tmp: tempfile::TempDir,
}

impl Lib {
    /// An empty workspace (no library yet).
    pub fn empty() -> Lib {
        Lib { tmp: tempfile::tempdir().expect("tempdir") }
    }

    /// An empty project (an `.agents` folder, no library): where
    /// kb-memgate keeps its notes by default (`.agents/.lingxi`).
    pub fn project() -> Lib {
        let lib = Lib::empty();
        std::fs::create_dir_all(lib.root().join(".agents")).expect("mkdir .agents");
        lib
    }

    /// A workspace with an initialised library.
    pub fn new() -> Lib {
        let lib = Lib::empty();
        lib.cmd("kb-append").arg("init").assert().success();
        lib
    }

    /// A workspace whose library is a copy of `examples/library`.
    pub fn example() -> Lib {
        let lib = Lib::empty();
        copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/library"), &lib.dir());
        lib
    }

    /// The workspace directory.
    pub fn root(&self) -> &Path {
        self.tmp.path()
    }

    /// The `.library` directory.
    pub fn dir(&self) -> PathBuf {
        self.tmp.path().join(".library")
    }

    /// A library-relative path.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir().join(rel)
    }

    /// Reads a library file as text.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
    }

    /// Writes a library file directly (fixtures only, bypassing kb-append).
    pub fn put(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// A binary of this package, run in the workspace with a clean env.
    pub fn cmd(&self, bin: &str) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::from_std(self.std_cmd(bin));
        c.timeout(std::time::Duration::from_secs(120));
        c
    }

    /// The same as a std Command, for spawning and killing.
    pub fn std_cmd(&self, bin: &str) -> Command {
        let mut c = Command::cargo_bin(bin).unwrap_or_else(|e| panic!("{bin}: {e}"));
        isolate(&mut c, self.root());
        c
    }

    /// Initialises git in the workspace with a test identity.
    pub fn git_init(&self) {
        git(self.root(), &["init", "-q"]);
        identity(self.root());
    }

    /// Runs git in the workspace and returns stdout.
    pub fn git(&self, args: &[&str]) -> String {
        git(self.root(), args)
    }
}

/// Gives the repository at `root` (a clone, a new repository) the test
/// identity and no signing.
pub fn identity(root: &Path) {
    git(root, &["config", "user.name", "Test"]);
    git(root, &["config", "user.email", "test@example.invalid"]);
    git(root, &["config", "commit.gpgsign", "false"]);
}

/// Clears the variables that would leak the developer's setup into a test:
/// every `KB_*` of this process's environment (the class, so a variable the
/// code starts reading later is covered too), then sets the test's own.
pub fn isolate(c: &mut Command, dir: &Path) {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("KB_") {
            c.env_remove(name);
        }
    }
    c.current_dir(dir)
        .env_remove("RAYON_NUM_THREADS")
        .env_remove("XDG_CONFIG_HOME")
        .env("KB_NOW", NOW)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_DATE", NOW)
        .env("GIT_COMMITTER_DATE", NOW);
}

/// Runs git in `dir`, panicking on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").current_dir(dir).env("HOME", dir).args(args).output().expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The SHA-256 of some bytes in hex, as the changelog and the journals
/// record it.
pub fn sha256(bytes: &[u8]) -> String {
    kb::doc::digest::sha256_hex(bytes)
}

/// Parses JSON Lines output into values, checking each against
/// `schemas/<record>.schema.json` when that schema exists.
#[track_caller]
pub fn records(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}"));
            conforms(&v);
            v
        })
        .collect()
}

/// Runs `cmd`, asserts it exits 0, and returns its records (each
/// checked against its schema): the run-succeed-parse chain of most tests.
#[track_caller]
pub fn ok_records(cmd: &mut assert_cmd::Command) -> Vec<Value> {
    records(&cmd.assert().success().get_output().stdout)
}

/// What must hold once the next writer ran after a crash, in a
/// git workspace: the derived files equal a full rebuild, everything is
/// committed (untracked files included), `git fsck` is clean, and no
/// journal, temp file or stale git state (`index.lock`, `MERGE_HEAD`,
/// `.merge_file_*`) is left.
#[track_caller]
pub fn assert_recovered(lib: &Lib, what: &str) {
    crate::append::assert_matches_rebuild(lib);
    assert_eq!(lib.git(&["status", "--porcelain", "--untracked-files=all"]), "", "{what}: uncommitted after recovery");
    lib.git(&["fsck", "--no-progress"]);
    assert!(!lib.path(".journal").exists(), "{what}: journal left");
    for stale in [".git/index.lock", ".git/MERGE_HEAD"] {
        assert!(!lib.root().join(stale).exists(), "{what}: {stale} left");
    }
    let mut left = Vec::new();
    let mut stack = vec![lib.root().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                if name != ".git" {
                    stack.push(e.path());
                }
            } else if name.contains(".tmp.") || name.starts_with(".merge_file_") {
                left.push(e.path());
            }
        }
    }
    assert!(left.is_empty(), "{what}: temp files left: {left:?}");
}

/// Checks a record against its schema's top level: required fields,
/// no unknown fields where the schema forbids them, `const` and `enum`.
/// A schema with `oneOf` (one record name used by two binaries) passes
/// when any branch does.
#[track_caller]
pub fn conforms(rec: &Value) {
    let Some(name) = rec.get("record").and_then(Value::as_str) else { return };
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas").join(format!("{name}.schema.json"));
    let Ok(text) = std::fs::read_to_string(&p) else { return };
    let schema: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let result = match schema.get("oneOf").and_then(Value::as_array) {
        Some(branches) => {
            let errs: Vec<String> = branches.iter().filter_map(|b| check(name, b, rec).err()).collect();
            if errs.len() < branches.len() {
                Ok(())
            } else {
                Err(errs.join("; "))
            }
        }
        None => check(name, &schema, rec),
    };
    if let Err(e) = result {
        panic!("{e}");
    }
}

fn check(name: &str, schema: &Value, rec: &Value) -> Result<(), String> {
    let obj = rec.as_object().ok_or_else(|| format!("{name} record is not an object"))?;
    for req in schema["required"].as_array().into_iter().flatten() {
        if !obj.contains_key(req.as_str().unwrap_or_default()) {
            return Err(format!("{name} record lacks required {req}: {rec}"));
        }
    }
    let props = schema["properties"].as_object().cloned().unwrap_or_default();
    for (k, v) in obj {
        match props.get(k) {
            None if schema["additionalProperties"] == Value::Bool(false) => {
                return Err(format!("{name} record has unknown field {k}: {rec}"));
            }
            None => {}
            Some(p) => {
                if p.get("const").is_some_and(|c| c != v) {
                    return Err(format!("{name}.{k} = {v}, schema says {}", p["const"]));
                }
                if p.get("enum").and_then(Value::as_array).is_some_and(|e| !e.contains(v)) {
                    return Err(format!("{name}.{k} = {v} not in {}", p["enum"]));
                }
            }
        }
    }
    Ok(())
}
/// Copies a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Compares `actual` with the golden file `tests/golden/<name>`, or writes
/// it when `KB_BLESS=1`.
#[track_caller]
pub fn golden(name: &str, actual: &str) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("KB_BLESS").is_some() {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, actual).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&p)
        .unwrap_or_else(|_| panic!("missing golden file {}; run with KB_BLESS=1", p.display()));
    assert_eq!(actual, want, "output differs from {}", p.display());
}

/// Runs `bin args` in `dir` into `head -1` under `set -o pipefail`, so the
/// status is the writer's, not head's; returns it with the writer's stderr.
/// The full output must exceed 64 KiB (a pipe's buffer), else the writer
/// could finish into the buffer and never meet the closed pipe (EPIPE).
pub fn into_head(dir: &Path, bin: &str, args: &[&str]) -> (std::process::ExitStatus, String) {
    let program = assert_cmd::cargo::cargo_bin(bin);
    let mut full = Command::new(&program);
    isolate(&mut full, dir);
    let len = full.args(args).output().expect("running the writer").stdout.len();
    assert!(len > 64 * 1024, "{bin} {args:?} prints {len} bytes, too few to fill a pipe");
    let mut sh = Command::new("bash");
    isolate(&mut sh, dir);
    sh.arg("-c").arg("set -o pipefail; \"$0\" \"$@\" 2>stderr.txt | head -1 >/dev/null").arg(&program).args(args);
    let status = sh.status().expect("running bash");
    let err = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
    let _ = std::fs::remove_file(dir.join("stderr.txt"));
    (status, err)
}

/// Runs `bin args` in `dir` with stdout a pipe whose reading end is
/// already closed, so the first write meets EPIPE whatever the output's
/// size (a `| head -1` pipe only does past 64 KiB); returns the status and
/// stderr.
pub fn into_closed_pipe(dir: &Path, bin: &str, args: &[&str]) -> (std::process::ExitStatus, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let mut c = Command::cargo_bin(bin).expect("the binary");
    isolate(&mut c, dir);
    let out = c.args(args).stdout(writer).output().expect("running the writer");
    (out.status, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The flag names a `kb::cli` module's subcommand table accepts (its
/// source text): the quoted words of the `&["…", …]` lists in its `SPEC`,
/// and of the `const NAME: &[&str]` lists the `SPEC` names.
pub fn table_flags(src: &str) -> Vec<&str> {
    fn quoted(list: &str) -> impl Iterator<Item = &str> {
        let list = list.split(']').next().unwrap_or("");
        list.split('"').skip(1).step_by(2)
    }
    let spec = src.split("pub static SPEC").nth(1).and_then(|s| s.split(";\n").next()).unwrap_or("");
    let mut flags: Vec<&str> = Vec::new();
    let named = spec
        .split(|c: char| !(c.is_ascii_uppercase() || c == '_'))
        .filter(|w| w.len() > 1)
        .filter_map(|w| src.split(&format!("const {w}: &[&str] =")).nth(1));
    let lists = spec.split("&[").skip(1).filter(|p| p.trim_start().starts_with('"'));
    for f in lists.chain(named).flat_map(quoted) {
        if !flags.contains(&f) {
            flags.push(f);
        }
    }
    flags
}

/// A small deterministic PRNG (xorshift64*), so random schedules replay.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Kills `child` with SIGKILL once `reached()` holds, checking only while
/// the child is stopped (SIGSTOP, waited for in /proc), so the kill lands
/// in the state the check saw. Until `near()` holds the child runs freely
/// (checked between yields); from then on it runs in slices of 100 µs
/// between checks, so a busy machine cannot let it run on to its end
/// between a check and the kill (the slices are how long it may run, not
/// a guess at when anything happens: the checks decide). Returns the exit
/// status: signal 9, unless the child exited before `reached()` held.
pub fn kill_when(
    child: &mut std::process::Child,
    mut near: impl FnMut() -> bool,
    mut reached: impl FnMut() -> bool,
) -> std::process::ExitStatus {
    use rustix::process::{kill_process, Pid, Signal};
    let pid = Pid::from_raw(child.id() as i32).expect("a child has a pid");
    while !near() && child.try_wait().unwrap().is_none() {
        std::thread::yield_now();
    }
    let stat = format!("/proc/{}/stat", child.id());
    while child.try_wait().unwrap().is_none() {
        if kill_process(pid, Signal::STOP).is_err() {
            break;
        }
        // Stopped (T), gone or a zombie: nothing runs while we look.
        while std::fs::read_to_string(&stat)
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.chars().next()))
            .is_some_and(|state| !matches!(state, Some('T' | 't' | 'Z' | 'X')))
        {
            std::thread::yield_now();
        }
        if reached() {
            break;
        }
        let _ = kill_process(pid, Signal::CONT);
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    let _ = child.kill();
    child.wait().unwrap()
}

/// What a tree holds, for "nothing else changed" checks: every entry under
/// `root` by its `/`-separated path relative to `root` — a file's bytes, a
/// link's target (never followed), a directory as an empty entry ending
/// in `/`, anything else as `<special>` — except the relative paths in
/// `skip` (a skipped directory is not entered).
pub fn tree(root: &Path, skip: &[&str]) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            if skip.contains(&rel.as_str()) {
                continue;
            }
            let ft = e.file_type().unwrap();
            if ft.is_symlink() {
                out.insert(rel, std::fs::read_link(&p).unwrap().to_string_lossy().into_owned().into_bytes());
            } else if ft.is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                stack.push(p);
            } else if ft.is_file() {
                out.insert(rel, std::fs::read(&p).unwrap());
            } else {
                out.insert(rel, b"<special>".to_vec());
            }
        }
    }
    out
}

/// Every file under `root` (links included, not followed) by its path
/// relative to `root`, with its bytes and mtime: for checks that a command
/// did not even rewrite a file with the same bytes.
pub fn tree_times(root: &Path) -> std::collections::BTreeMap<String, (Vec<u8>, std::time::SystemTime)> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                let bytes = if m.is_symlink() {
                    std::fs::read_link(&p).unwrap().to_string_lossy().into_owned().into_bytes()
                } else {
                    std::fs::read(&p).unwrap()
                };
                out.insert(rel, (bytes, m.modified().unwrap()));
            }
        }
    }
    out
}
