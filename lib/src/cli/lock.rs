//! `kb-lock`: hold the library lock around a command; report or sweep locks.

use std::process::ExitCode;

use super::args::{self, format_or_default, typed_flags, Cmd, Parsed, Spec};
use super::run_main;
use crate::error::Exit;
use crate::lock;
use crate::out::jsonl::{Format, Out};
use crate::Library;

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("lock.txt");

/// kb-lock's commands: run one (everything from the first word on), status, sweep.
pub static SPEC: Spec = Spec::new(
    "kb-lock",
    USAGE,
    Flags::NAMES,
    &[
        Cmd::new("", "-- CMD [ARGS...]", &["root", "timeout"], "run CMD while holding the library lock"),
        Cmd::new("status", "", &["root", "format"], "who holds the lock"),
        Cmd::new("sweep", "", &["root", "memory-dir", "format"], SWEEP),
    ],
)
.trailing();

const SWEEP: &str =
    "remove dead mkdir locks and temp files; finish what a killed writer left (library, memory, last word); clear stale git state";

typed_flags! { USAGE;
    /// kb-lock's flags.
    pub struct Flags {
        root: Option<std::path::PathBuf> = "root",
        timeout: Option<String> = "timeout",
        memory_dir: Option<std::path::PathBuf> = "memory-dir",
        format: Option<Format> = "format",
    }
}

/// Exit statuses when the command is not found or cannot be run (a shell's).
pub use crate::lock::child::{CANNOT_RUN, NOT_FOUND};

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
        let f = Flags::from_args(&a)?;
        let mut out = Out::stdout("kb-lock");
        if a.cmd == "sweep" && Library::find(f.root.as_deref())?.is_none() {
            // A project with a memory store or a last-word queue and no
            // library still has their journals to finish.
            crate::out::warn("kb-lock", "no .library here: finishing kb-memgate's and kb-lastword's journals only");
            for rec in crate::recover::sweep(None, f.memory_dir.as_deref())? {
                out.record(&rec)?;
            }
            return out.finish();
        }
        let lib = Library::resolve(f.root.as_deref())?;
        if args::generic_table(f.format, a.cmd, &["status"]) {
            out.as_tables();
        }
        let format = format_or_default(f.format);
        match a.cmd {
            "" => {
                let cmd = a.positional.clone();
                let timeout = match f.timeout.as_deref() {
                    Some(t) => crate::clock::parse_duration(t)?,
                    None => std::time::Duration::from_secs(30),
                };
                let opts = lock::Options { timeout, cmd: cmd.join(" ") };
                let held = lib.dir.canonicalize().unwrap_or_else(|_| lib.dir.clone());
                // Signals to kb-lock go to the command; the lock is held
                // until it has exited.
                let code = lock::with_lock(&lib, &opts, || Ok(lock::child::run_status(&cmd, lock::HELD_VAR, &held)))?;
                child_code = Some(code);
            }
            "status" => {
                let state = lock::status(&lib)?;
                match format {
                    Format::Jsonl => out.record(&state.record())?,
                    Format::Table => out.text(&state.describe())?,
                }
            }
            _ => {
                for rec in crate::recover::sweep(Some(&lib), f.memory_dir.as_deref())? {
                    out.record(&rec)?;
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
