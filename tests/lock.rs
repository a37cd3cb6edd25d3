//! kb-lock: holding, waiting, timing out, dying holders, status and the
//! sweep of seed-style mkdir locks.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::{records, Lib};

fn wait_until_held(lib: &Lib) {
    let start = Instant::now();
    loop {
        let out =
            lib.cmd("kb-lock").args(["status", "--format", "jsonl"]).assert().success().get_output().stdout.clone();
        if records(&out)[0]["state"] == "held" {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "lock never became held");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_second_holder_times_out_and_a_killed_holder_frees_the_lock() {
    let lib = Lib::new();
    let out = lib.cmd("kb-lock").args(["status", "--format", "jsonl"]).assert().success().get_output().stdout.clone();
    assert_eq!(records(&out)[0]["state"], "free");

    let mut holder = lib.std_cmd("kb-lock").args(["--", "sleep", "30"]).stdout(Stdio::null()).spawn().unwrap();
    wait_until_held(&lib);
    let out = lib.cmd("kb-lock").args(["status", "--format", "jsonl"]).assert().success().get_output().stdout.clone();
    let rec = &records(&out)[0];
    assert_eq!(rec["holder"]["pid"], holder.id());
    assert_eq!(rec["holder"]["cmd"], "sleep 30");

    let start = Instant::now();
    lib.cmd("kb-lock")
        .args(["--timeout", "300ms", "--", "true"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("timed out after 300ms waiting for the library lock"))
        .stderr(predicates::str::contains(format!("held by pid {}", holder.id())));
    assert!(start.elapsed() >= Duration::from_millis(300));
    // A writer waits too, and gives up the same way.
    lib.cmd("kb-append").args(["write", "notes/a.md", "--content", "x", "--timeout", "200ms"]).assert().code(2);
    assert!(!lib.path("notes/a.md").exists());

    // kb-lock runs its command in a process group of its own; killed
    // without a chance to forward the signal, it leaves that `sleep`
    // behind holding the test's stderr for 30 s, so it is killed after.
    let children = format!("/proc/{0}/task/{0}/children", holder.id());
    let sleep = std::fs::read_to_string(children).unwrap().trim().to_string();
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(std::process::Command::new("kill").args(["-KILL", &sleep]).status().unwrap().success(), "{sleep}");
    let start = Instant::now();
    lib.cmd("kb-lock").args(["--timeout", "5s", "--", "true"]).assert().success();
    assert!(start.elapsed() < Duration::from_secs(2), "the kernel frees a dead holder's lock at once");
}

#[test]
fn the_command_status_is_passed_through_and_writers_inside_do_not_relock() {
    let lib = Lib::new();
    lib.cmd("kb-lock").args(["--", "sh", "-c", "exit 7"]).assert().code(7);
    let kb_append = lib.std_cmd("kb-append").get_program().to_owned();
    lib.cmd("kb-lock")
        .args(["--timeout", "2s", "--"])
        .arg(kb_append)
        .args(["write", "notes/inside.md", "--content", "# inside\n", "--timeout", "1s"])
        .assert()
        .success();
    assert_eq!(lib.read("notes/inside.md"), "# inside\n");
    // A command that is not there exits 127, as in a shell (not 2, a lock timeout).
    lib.cmd("kb-lock").args(["--", "/nonexistent/cmd"]).assert().code(127);
}

#[test]
fn sweep_removes_dead_mkdir_locks_and_keeps_live_ones() {
    let lib = Lib::new();
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    std::fs::create_dir_all(lib.path(".lock")).unwrap();
    std::fs::write(lib.path(".lock/pid"), dead_pid.to_string()).unwrap();
    std::fs::create_dir_all(lib.path(".memory/.references/.lock")).unwrap();
    std::fs::write(lib.path(".memory/.references/.lock/pid"), std::process::id().to_string()).unwrap();

    let out = lib.cmd("kb-lock").args(["status", "--format", "jsonl"]).assert().success().get_output().stdout.clone();
    assert_eq!(
        records(&out)[0],
        serde_json::json!({"record": "lock", "state": "legacy", "pid": dead_pid, "alive": false})
    );
    let out = lib.cmd("kb-lock").arg("sweep").assert().success().get_output().stdout.clone();
    assert_eq!(records(&out), vec![serde_json::json!({"record": "swept", "path": ".lock", "pid": dead_pid})]);
    assert!(!lib.path(".lock").exists());
    assert!(lib.path(".memory/.references/.lock").is_dir(), "a live mkdir lock stays");
    // Writers reclaim a dead mkdir lock on their own, as the seed says.
    std::fs::create_dir_all(lib.path(".lock")).unwrap();
    std::fs::write(lib.path(".lock/pid"), dead_pid.to_string()).unwrap();
    lib.cmd("kb-append").args(["write", "notes/b.md", "--content", "b", "--timeout", "2s"]).assert().success();
}

#[test]
fn a_missing_library_is_a_clear_error() {
    let lib = Lib::empty();
    lib.cmd("kb-lock").arg("status").assert().code(2).stderr(predicates::str::contains("no .library found"));
    lib.cmd("kb-lock").arg("--bogus").assert().code(2);
}

#[test]
fn help_lists_every_flag_the_parser_accepts() {
    let lib = Lib::new();
    let help = lib.cmd("kb-lock").arg("--help").assert().success().get_output().stdout.clone();
    let help = String::from_utf8(help).unwrap();
    let src = include_str!("../lib/src/cli/lock.rs");
    for flag in crate::util::table_flags(src) {
        assert!(help.contains(&format!("--{flag}")), "--{flag} missing from --help");
    }
    lib.cmd("kb-lock").arg("--version").assert().success().stdout(predicates::str::starts_with("kb-lock "));
}

/// The holder's command line is whatever the holder ran: a waiter's
/// timeout message and `status` show its escapes as text, so a command
/// line cannot retitle or clear the terminal of everyone who waits.
#[test]
fn a_holders_command_line_reaches_waiters_escaped() {
    let lib = Lib::new();
    let mut holder = lib
        .std_cmd("kb-lock")
        .args(["--", "sh", "-c", "sleep 30", "\u{1b}]0;pwned\u{7}\u{1b}[2J"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until_held(&lib);
    let out = lib.cmd("kb-lock").args(["--timeout", "300ms", "--", "true"]).assert().code(2).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("(sh -c sleep 30 \\u{1b}]0;pwned\\u{7}\\u{1b}[2J)\n"), "{err:?}");
    let out = lib.cmd("kb-lock").args(["status", "--format", "table"]).assert().success().get_output().clone();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.ends_with(": sh -c sleep 30 \\u{1b}]0;pwned\\u{7}\\u{1b}[2J\n"), "{table:?}");
    // SIGTERM, which kb-lock forwards to the command's group.
    std::process::Command::new("kill").args(["-TERM", &holder.id().to_string()]).status().unwrap();
    holder.wait().unwrap();
}
