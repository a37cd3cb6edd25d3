//! kb-lock: hold the library lock around a command; report or sweep locks.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use kb::error::{run_main, Error, Exit};
use kb::lock::{self, State};
use kb::out::jsonl::{Format, Out};
use kb::Library;
use lexopt::prelude::*;

const USAGE: &str = "\
kb-lock: run a command while holding the library lock (.library/.lock)

Usage:
  kb-lock [--root DIR] [--timeout 30s] -- CMD [ARGS...]
  kb-lock status [--root DIR] [--format jsonl|table]
  kb-lock sweep [--root DIR] [--timeout 30s]

The command runs with KB_LOCK_HELD set, so kb-tools writers inside it do
not lock again; kb-lock exits with the command's status, or 2 when the
lock could not be had within --timeout. Waiters are served in arrival
order; --timeout bounds a wait during which the queue does not move.
`sweep` removes dead mkdir locks and killed writers' temp files, and under
the lock finishes a batch a killed writer left (a `recovered` record) and
removes git state a killed git left (`cleared` records).

Options:
  --root DIR        the library (default: KB_ROOT, else the nearest .library)
  --timeout DUR     how long to wait for the lock, e.g. 500ms, 30s, 2m [default: 30s]
  --format FMT      status output: jsonl or table [default: table on a terminal]
  -h, --help        show this help
  -V, --version     show the version

Example:
  kb-lock --timeout 10s -- sh -c 'kb-index rebuild && kb-relate rebuild'
";

struct Args {
    root: Option<PathBuf>,
    timeout: std::time::Duration,
    format: Option<Format>,
    action: Action,
}

enum Action {
    Run(Vec<String>),
    Status,
    Sweep,
}

fn parse_args() -> Result<Args, Error> {
    let mut p = lexopt::Parser::from_env();
    let mut root = None;
    let mut timeout = std::time::Duration::from_secs(30);
    let mut format = None;
    let mut action = None;
    while let Some(arg) = p.next()? {
        match arg {
            Short('h') | Long("help") => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            Short('V') | Long("version") => {
                println!("kb-lock {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            Long("root") => root = Some(PathBuf::from(p.value()?)),
            Long("timeout") => timeout = kb::clock::parse_duration(&p.value()?.string()?)?,
            Long("format") => format = Some(Format::parse(&p.value()?.string()?)?),
            Value(v) if action.is_none() && v == "status" => action = Some(Action::Status),
            Value(v) if action.is_none() && v == "sweep" => action = Some(Action::Sweep),
            Value(v) if action.is_none() => {
                let mut cmd = vec![v.string()?];
                cmd.extend(p.raw_args()?.map(|a| a.to_string_lossy().into_owned()));
                action = Some(Action::Run(cmd));
            }
            _ => return Err(arg.unexpected().into()),
        }
    }
    if let Some(Action::Run(cmd)) = &mut action {
        if cmd.first().is_some_and(|c| c == "--") {
            cmd.remove(0);
        }
    }
    let action =
        action.ok_or_else(|| Error::usage("missing command: kb-lock -- CMD, kb-lock status or kb-lock sweep"))?;
    if matches!(&action, Action::Run(c) if c.is_empty()) {
        return Err(Error::usage("missing command after --"));
    }
    Ok(Args { root, timeout, format, action })
}

fn main() -> ExitCode {
    let mut child_code = None;
    let status = run_main("kb-lock", || {
        let args = parse_args()?;
        let lib = Library::resolve(args.root.as_deref())?;
        let mut out = Out::stdout("kb-lock");
        let format = args.format.unwrap_or_else(Format::default_for_stdout);
        match args.action {
            Action::Run(cmd) => {
                let opts = lock::Options { timeout: args.timeout, cmd: cmd.join(" ") };
                let held = lib.dir.canonicalize().unwrap_or_else(|_| lib.dir.clone());
                let code = lock::with_lock(&lib, &opts, || {
                    let status = Command::new(&cmd[0])
                        .args(&cmd[1..])
                        .env(lock::HELD_VAR, &held)
                        .status()
                        .map_err(|e| Error::io(format!("running {}", cmd[0]), e))?;
                    Ok(exit_code(status))
                })?;
                child_code = Some(code);
            }
            Action::Status => {
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
            Action::Sweep => {
                let swept = lock::sweep(&lib)?;
                for s in &swept {
                    eprintln!(
                        "kb-lock: removed stale lock {} (pid {})",
                        s.path,
                        s.pid.map_or("unknown".into(), |p| p.to_string())
                    );
                    out.record(&serde_json::json!({"record": "swept", "path": s.path, "pid": s.pid}))?;
                }
                if kb::library::journal::pending(&lib) || kb::library::git_state::present(&lib) {
                    let opts = lock::Options { timeout: args.timeout, cmd: "kb-lock sweep".into() };
                    let (cleared, recovered) = lock::with_lock(&lib, &opts, || {
                        let cleared = kb::library::git_state::clear(&lib, kb::library::git_state::WAIT)?;
                        Ok((cleared, kb::library::write::recover(&lib)?))
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
