//! `kb-lock`: hold the library lock around a command; report or sweep locks.

use std::process::{Command, ExitCode};

use super::args::{self, Cmd, Parsed, Spec};
use crate::error::{run_main, Exit};
use crate::lock::{self, State};
use crate::out::jsonl::{Format, Out};
use crate::Library;

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("lock.txt");

/// kb-lock's commands: run one (everything from the first word on), status, sweep.
pub static SPEC: Spec = Spec::new(
    "kb-lock",
    USAGE,
    &[
        Cmd::new("", "-- CMD [ARGS...]", &["root", "timeout"], "run CMD while holding the library lock"),
        Cmd::new("status", "", &["root", "format"], "who holds the lock"),
        Cmd::new("sweep", "", &["root"], SWEEP),
    ],
)
.trailing();

const SWEEP: &str = "remove dead mkdir locks and temp files; recover a killed batch; clear stale git state";

/// Exit status when the command is not found (a shell's).
pub const NOT_FOUND: u8 = 127;
/// Exit status when the command exists but cannot be run.
pub const CANNOT_RUN: u8 = 126;

/// kb-lock's whole run: the child's status passes through unchanged.
pub fn main() -> ExitCode {
    let mut child_code = None;
    let status = run_main("kb-lock", || {
        let a = match args::parse(&SPEC, std::env::args_os().skip(1))? {
            Parsed::Print(t) => {
                print!("{t}");
                return Ok(Exit::Success);
            }
            Parsed::Run(a) => a,
        };
        let lib = Library::resolve(a.root())?;
        let mut out = Out::stdout("kb-lock");
        let format = a.format()?;
        match a.cmd {
            "" => {
                let cmd = a.positional.clone();
                let timeout = match a.get("timeout") {
                    Some(t) => crate::clock::parse_duration(t)?,
                    None => std::time::Duration::from_secs(30),
                };
                let opts = lock::Options { timeout, cmd: cmd.join(" ") };
                let held = lib.dir.canonicalize().unwrap_or_else(|_| lib.dir.clone());
                let code = lock::with_lock(&lib, &opts, || {
                    let mut c = Command::new(&cmd[0]);
                    c.args(&cmd[1..]).env(lock::HELD_VAR, &held);
                    // Signals to kb-lock go to the command; the lock is held
                    // until it has exited (issue 21).
                    match lock::child::run_forwarding(c) {
                        Ok(status) => Ok(exit_code(status)),
                        Err(e) => {
                            let code = match e.kind() {
                                std::io::ErrorKind::NotFound => NOT_FOUND,
                                _ => CANNOT_RUN,
                            };
                            eprintln!(
                                "kb-lock: {}: {}",
                                cmd[0],
                                if code == NOT_FOUND { "command not found".to_string() } else { e.to_string() }
                            );
                            Ok(code)
                        }
                    }
                })?;
                child_code = Some(code);
            }
            "status" => {
                let state = lock::status(&lib)?;
                let rec = match &state {
                    State::Free => serde_json::json!({"record": "lock", "state": "free"}),
                    State::Held(h) => serde_json::json!({"record": "lock", "state": "held", "holder": h}),
                    State::Legacy { pid, alive } => {
                        serde_json::json!({"record": "lock", "state": "legacy", "pid": pid, "alive": alive})
                    }
                };
                match format {
                    Format::Jsonl => out.record(&rec)?,
                    Format::Table => out.text(&describe(&state))?,
                }
            }
            _ => {
                let swept = lock::sweep(&lib)?;
                for s in &swept {
                    eprintln!(
                        "kb-lock: removed stale lock {} (pid {})",
                        s.path,
                        s.pid.map_or("unknown".into(), |p| p.to_string())
                    );
                    out.record(s)?;
                }
                if crate::write::journal::pending(&lib) || crate::library::git_state::present(&lib) {
                    let opts = lock::Options { cmd: "kb-lock sweep".into(), ..lock::Options::default() };
                    let (cleared, recovered) = lock::with_lock(&lib, &opts, || {
                        let cleared = crate::library::git_state::clear(&lib, crate::library::git_state::WAIT)?;
                        Ok((cleared, crate::write::recover(&lib)?))
                    })?;
                    for c in &cleared {
                        out.record(c)?;
                    }
                    if let Some(r) = recovered {
                        out.record(&r)?;
                    }
                }
            }
        }
        out.finish()
    });
    match child_code {
        Some(code) => ExitCode::from(code),
        None => status,
    }
}

fn describe(state: &State) -> String {
    match state {
        State::Free => "free\n".into(),
        State::Held(Some(h)) => format!("held by pid {} on {} since {}: {}\n", h.pid, h.host, h.since, h.cmd),
        State::Held(None) => "held (holder unknown)\n".into(),
        State::Legacy { pid, alive } => format!(
            "legacy mkdir lock, pid {} ({})\n",
            pid.map_or("unknown".into(), |p| p.to_string()),
            if *alive { "alive" } else { "dead: run kb-lock sweep" }
        ),
    }
}

/// The child's status as ours: its code, or 128 + signal like a shell.
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(sig)) => 128u8.wrapping_add(sig as u8),
        _ => Exit::Failure as u8,
    }
}
