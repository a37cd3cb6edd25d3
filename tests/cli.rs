//! Command lines that refuse what they do not use. Each
//! subcommand takes only its own flags; the rest exit 2 with a hint.

use crate::util::{records, Lib};

/// Runs `bin args` in an initialised library and returns (code, stdout, stderr).
fn run(lib: &Lib, bin: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let out = lib.cmd(bin).args(args).write_stdin("").output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn flags_of_other_subcommands_are_refused_with_a_hint() {
    let lib = Lib::new();
    let cases: &[(&str, &[&str], &str)] = &[
        ("kb-index", &["stale", "--topic", "foo"], "stale does not take --topic (it belongs to list)"),
        (
            "kb-append",
            &["write", "x.md", "--to", "drafts", "--content", "x"],
            "write does not take --to (it belongs to skill promote)",
        ),
        ("kb-guard", &["scan", "-", "--corpus", "/x"], "scan does not take --corpus (it belongs to rules validate)"),
        ("kb-append", &["init", "--keep", "theirs", "--no-push"], "init does not take --keep (it belongs to resolve)"),
        ("kb-relate", &["usage", "--hops", "2"], "usage does not take --hops (it belongs to neighbors)"),
        ("kb-memgate", &["decide", "--check"], "decide does not take --check (it belongs to reindex)"),
        ("kb-lastword", &["status", "--dry-run"], "status does not take --dry-run (it belongs to apply)"),
        ("kb-lock", &["status", "--timeout", "1s"], "status does not take --timeout (it belongs to -- CMD [ARGS...])"),
    ];
    for (bin, args, want) in cases {
        let (code, out, err) = run(&lib, bin, args);
        assert_eq!(code, Some(2), "{bin} {args:?}: {err}");
        assert!(err.starts_with(&format!("{bin}: {want}")), "{bin} {args:?}: {err}");
        assert!(err.contains(&format!("try '{bin} --help'")), "{err}");
        assert_eq!(out, "", "nothing done");
    }
    assert!(!lib.path("x.md").exists());
}

#[test]
fn unknown_flags_and_commands_get_a_suggestion() {
    let lib = Lib::new();
    let (code, _, err) = run(&lib, "kb-index", &["list", "--tpoic", "x"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("kb-index: unknown flag '--tpoic'; did you mean '--topic'?"), "{err}");
    let (code, _, err) = run(&lib, "kb-index", &["stael"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("kb-index: unknown command 'stael'; did you mean 'stale'?"), "{err}");
    let (code, _, err) = run(&lib, "kb-append", &["write"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("kb-append: write needs PATH"), "{err}");
    let (code, _, err) = run(&lib, "kb-index", &["stale", "extra"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("kb-index: stale takes no arguments; unexpected 'extra'"), "{err}");
    let (code, _, err) = run(&lib, "kb-guard", &["rules"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("kb-guard: 'rules' needs a subcommand: rules list, rules validate"), "{err}");
}

#[test]
fn help_per_subcommand() {
    let lib = Lib::new();
    let (code, out, _) = run(&lib, "kb-index", &["stale", "--help"]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("kb-index stale: stale references and provisional experiences"), "{out}");
    assert!(out.contains("--days N") && out.contains("--format FMT") && !out.contains("--topic"), "{out}");
    let (_, out, _) = run(&lib, "kb-append", &["skill", "patch", "-h"]);
    assert!(out.starts_with("kb-append skill patch: ") && out.contains("--old-string S"), "{out}");
    let (_, out, _) = run(&lib, "kb-index", &["--help"]);
    assert!(out.starts_with("kb-index: list, audit and rebuild"), "the overview: {out}");
}

#[test]
fn kb_lock_tells_a_missing_command_from_a_lock_timeout() {
    let lib = Lib::new();
    let (code, _, err) = run(&lib, "kb-lock", &["--", "no-such-command-kb"]);
    assert_eq!(code, Some(127), "{err}");
    assert_eq!(err, "kb-lock: no-such-command-kb: command not found\n");
    let (code, _, _) = run(&lib, "kb-lock", &["--", "sh", "-c", "exit 3"]);
    assert_eq!(code, Some(3), "the command's own status passes through");
    // A lock timeout exits 2 (tests/lock.rs holds the lock and checks it).
}

#[test]
fn neighbors_of_a_missing_document_says_why() {
    let lib = Lib::new();
    let (code, _, err) = run(&lib, "kb-relate", &["neighbors", "missing.md"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("kb-relate: 'missing.md' is not in the library "), "{err}");
    lib.cmd("kb-append").args(["write", "notes/alone.md", "--content", "# Alone\n"]).assert().success();
    let (code, out, err) = run(&lib, "kb-relate", &["neighbors", "notes/alone.md"]);
    assert_eq!((code, out.as_str()), (Some(1), ""));
    assert_eq!(err, "kb-relate: notes/alone.md has no neighbours within 2 hops\n");
}

#[test]
fn format_table_is_honoured_by_stale_and_lifecycle() {
    let lib = Lib::new();
    lib.put(".memory/.references/old-v1.md", "---\ntopic: old\nlast_verified_at: 2025-01-01\n---\n# Old\n");
    lib.put(".memory/.thinking/patterns/divide.md", "---\ntopic: divide\n---\n# Divide\n");
    let (code, out, _) = run(&lib, "kb-index", &["stale", "--format", "table"]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("Path"), "{out}");
    assert!(out.contains(".memory/.references/old-v1.md  reference  past-threshold  424"), "{out}");
    let (_, jsonl, _) = run(&lib, "kb-index", &["stale", "--format", "jsonl"]);
    assert_eq!(records(jsonl.as_bytes())[0]["record"], "stale");
    let (code, out, _) = run(&lib, "kb-relate", &["lifecycle", "--format", "table"]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("Path") && out.contains(".memory/.thinking/patterns/divide.md"), "{out}");
}

#[test]
fn bash_completions_come_from_the_same_tables() {
    let lib = Lib::new();
    let (code, out, _) = run(&lib, "kb-append", &["completions", "bash"]);
    assert_eq!(code, Some(0));
    for bin in
        ["kb-append", "kb-guard", "kb-index", "kb-lastword", "kb-lock", "kb-mcp", "kb-memgate", "kb-relate", "kb-score"]
    {
        assert!(out.contains(&format!(" {bin}\n")), "{bin}");
    }
    // Sourced in bash, completing `kb-index stale --` offers stale's flags only.
    let script = format!(
        "{out}\nCOMP_WORDS=(kb-index stale --); COMP_CWORD=2; _kb_index; printf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
    );
    let got = std::process::Command::new("bash").args(["-c", &script]).output().unwrap();
    let words = String::from_utf8_lossy(&got.stdout).into_owned();
    assert_eq!(words, "--root\n--days\n--format\n--help\n", "{}", String::from_utf8_lossy(&got.stderr));
}

/// PATH with the built binaries first.
fn bin_path() -> String {
    let bins = assert_cmd::cargo::cargo_bin("kb-append");
    format!("{}:{}", bins.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default())
}

/// Runs `sh -c CMD` in `dir` on a pseudo-terminal (`script`) with the
/// progress bar allowed from the first item, and returns everything the
/// terminal received; `None` (said on stderr) when `script` is missing.
fn on_a_terminal(dir: &std::path::Path, cmd: &str) -> Option<String> {
    if std::process::Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: `script` (util-linux) is not installed, so no pseudo-terminal");
        return None;
    }
    let mut c = std::process::Command::new("script");
    crate::util::isolate(&mut c, dir);
    c.env("PATH", bin_path()).env("KB_PROGRESS_AFTER_MS", "0");
    let out = c.args(["-qec", cmd, "/dev/null"]).output().unwrap();
    let screen = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{cmd}: {screen}");
    Some(screen)
}

/// on a terminal, a single write shows no progress bar (it used
/// to print "writing: 1/1"), even with the one-second wait turned off.
#[test]
fn a_single_write_on_a_terminal_shows_no_progress() {
    let lib = Lib::new();
    let Some(screen) = on_a_terminal(lib.root(), "kb-append write notes/t.md --content x --no-commit") else { return };
    assert!(screen.contains("\"record\":\"write\""), "{screen}");
    assert!(!screen.contains("writing"), "no progress for one write: {screen}");
}

/// the long runs show an indicatif bar on a terminal: `kb-index
/// rebuild`, a cold `kb-score`, `kb-guard scan` of a tree, a `kb-append
/// batch` of many writes; into a pipe the same runs print none.
#[test]
fn long_runs_show_progress_on_a_terminal_only() {
    let lib = Lib::example();
    let mut batch = String::new();
    for i in 0..20 {
        batch.push_str(&format!("{{\"path\":\"notes/n{i}.md\",\"content\":\"# n{i}\\n\"}}\n"));
    }
    std::fs::write(lib.root().join("batch.jsonl"), &batch).unwrap();
    let runs = [
        ("kb-index rebuild --no-commit", "kb-index: reading"),
        ("kb-score jwt --format jsonl", "kb-score: indexing"),
        ("kb-guard scan .library --format jsonl", "kb-guard: scanning"),
        ("kb-append batch --no-commit < batch.jsonl", "kb-append: writing"),
    ];
    for (cmd, label) in runs {
        let mut c = std::process::Command::new("sh");
        crate::util::isolate(&mut c, lib.root());
        let piped = c.env("PATH", bin_path()).env("KB_PROGRESS_AFTER_MS", "0").args(["-c", cmd]).output().unwrap();
        assert!(piped.status.success(), "{cmd}: {}", String::from_utf8_lossy(&piped.stderr));
        let err = String::from_utf8_lossy(&piped.stderr);
        assert!(!err.contains(label) && !err.contains('\r'), "{cmd} into a pipe: {err}");
    }
    let _ = std::fs::remove_dir_all(lib.root().join(".library/.cache"));
    for (cmd, label) in runs {
        let Some(screen) = on_a_terminal(lib.root(), cmd) else { return };
        assert!(screen.contains(label), "{cmd}: no '{label}' on the terminal:\n{screen}");
        assert!(screen.contains("/"), "{cmd}: a done/total count: {screen}");
    }
}

/// `--format table` is accepted wherever records are printed: a command
/// with no table of its own shows its records as one table per kind, a
/// column per field; without the flag it still prints JSON Lines.
#[test]
fn format_table_is_accepted_wherever_records_are_printed() {
    let lib = Lib::new();
    let (code, out, err) = run(&lib, "kb-append", &["write", "notes/a.md", "--content", "x", "--format", "table"]);
    assert_eq!(code, Some(0), "{err}");
    let sha = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881";
    let want = format!(
        "write\nPATH        ACTION   BYTES  SHA256{}  TS\n{}\nnotes/a.md  created  1      {sha}  2026-03-01T12:00:00Z\n",
        " ".repeat(58),
        "─".repeat(10 + 2 + 7 + 2 + 5 + 2 + 64 + 2 + 20)
    );
    assert_eq!(out, want);
    let (code, out, _) = run(&lib, "kb-append", &["write", "notes/b.md", "--content", "x"]);
    assert_eq!(code, Some(0));
    assert_eq!(records(out.as_bytes())[0]["record"], "write");
    // Every subcommand that prints records takes the flag.
    for (bin, args) in [
        ("kb-index", &["check", "--format", "jsonl"][..]),
        ("kb-relate", &["rebuild", "--format", "jsonl"][..]),
        ("kb-lock", &["sweep", "--format", "jsonl"][..]),
        ("kb-memgate", &["reindex", "--check", "--format", "jsonl", "--memory-dir", "mem"][..]),
    ] {
        let (code, _, err) = run(&lib, bin, args);
        assert_ne!(code, Some(2), "{bin} {args:?}: {err}");
    }
}
