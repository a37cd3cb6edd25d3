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

use crate::error::{run_main, Exit, Result};
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
}
