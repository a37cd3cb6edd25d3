//! The nine binaries' command lines and what each subcommand runs. A
//! binary in `bins/` only hands its arguments to [`main`] with its module's
//! `SPEC` and `run`; everything a test would want to call lives here.

pub mod args;

pub mod append;
pub mod guard;
pub mod index;
pub mod lastword;
pub mod lock;
pub mod mcp;
pub mod memgate;
pub mod relate;
pub mod score;

use std::process::ExitCode;

use crate::error::{Error, Exit, Result};
use crate::out::warn;
use args::{Args, Parsed, Spec};

/// Every binary's table, for completions.
pub static SPECS: [&Spec; 9] = [
    &append::SPEC,
    &guard::SPEC,
    &index::SPEC,
    &lastword::SPEC,
    &lock::SPEC,
    &mcp::SPEC,
    &memgate::SPEC,
    &relate::SPEC,
    &score::SPEC,
];

/// Parses the process's arguments against `spec`, prints help or the
/// version, or runs `run`; errors are printed once by the shared edge.
pub fn main(spec: &Spec, run: fn(Args) -> Result<Exit>) -> ExitCode {
    run_main(spec.bin, || match args::parse(spec, std::env::args_os().skip(1))? {
        Parsed::Print(text) => {
            print!("{text}");
            Ok(Exit::Success)
        }
        Parsed::Run(a) => run(a),
    })
}

/// The one edge every binary's `main` goes through: runs `body`, prints an
/// error once as `name: message`, and maps the outcome to a status. A closed
/// stdout pipe is a quiet success. The message quotes what the run was
/// given (a command word, a file name, a note's text): its control and
/// direction-changing characters are shown escaped and it stays one line,
/// so an error cannot drive the terminal or forge a line of its own.
pub fn run_main(name: &str, body: impl FnOnce() -> Result<Exit>) -> ExitCode {
    match body() {
        Ok(exit) => ExitCode::from(exit as u8),
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            warn(name, &e.to_string());
            if matches!(e, Error::Usage(_)) {
                eprintln!("{name}: try '{name} --help'");
            }
            ExitCode::from(Exit::Failure as u8)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag a subcommand names is in the usage's Options section, and
    /// every flag there is used by some subcommand (STYLE.md §4).
    #[test]
    fn tables_and_usage_agree() {
        for spec in SPECS {
            for cmd in spec.cmds {
                for f in cmd.flags {
                    let known = spec.options().iter().any(|x| x.name == *f);
                    assert!(known, "{} {}: --{f} not in the usage's Options", spec.bin, cmd.name);
                }
            }
            for f in spec.options() {
                assert!(spec.cmds.iter().any(|c| c.flags.contains(&f.name)), "{}: --{} unused", spec.bin, f.name);
                assert!(!f.help.is_empty(), "{}: --{} has no help", spec.bin, f.name);
            }
        }
    }

    /// Every flag a binary's usage declares is a field of its typed
    /// struct, so none is parsed and then silently ignored (the other way,
    /// a field whose flag is not declared, does not compile).
    #[test]
    fn every_declared_flag_is_read_by_a_typed_field() {
        for spec in SPECS {
            let fields = spec.flags;
            let declared: Vec<&str> = spec.options().iter().map(|f| f.name).collect();
            let mut missing: Vec<&str> = declared.iter().copied().filter(|d| !fields.contains(d)).collect();
            missing.sort();
            assert!(missing.is_empty(), "{}: declared but no field reads {missing:?}", spec.bin);
            assert_eq!(fields.len(), declared.len(), "{}", spec.bin);
        }
    }
}
