//! kb-memgate: governed long-term memory notes (seed 003, lingxi memory).

use std::path::PathBuf;
use std::process::ExitCode;

use kb::error::{run_main, Error, Exit};
use kb::memgate::{apply, decide, reindex, Paths};
use kb::out::jsonl::Out;
use lexopt::prelude::*;

const USAGE: &str = "\
kb-memgate: governed long-term memory notes (seed 003: candidate → govern → gate → write → audit)

Usage:
  kb-memgate decide  [--memory-dir DIR] < inputs.jsonl     one decision record per input
  kb-memgate apply   [--memory-dir DIR] < decisions.jsonl  write notes, INDEX.md, audit
  kb-memgate reindex [--memory-dir DIR] [--check]          INDEX.md and search index from the notes

decide never writes. apply writes silent decisions, and gated ones that
carry an \"answer\" (confirm, cancel, new_instead, show_diff; veto:
keep_existing, replace, cancel); an unanswered gated decision comes back
with \"status\": \"pending\" and its question. All writes hold DIR/.lock.

Options:
  --memory-dir DIR  the memory directory [default: .cursor/.lingxi/memory];
                    the audit log is DIR/../workspace/audit.log
  --check           reindex: only report; exit 1 when INDEX.md disagrees
  -h, --help        show this help
  -V, --version     show the version

Example:
  echo '{\"mode\":\"remember\",\"input\":{\"user_input\":{\"text\":\"Never use var here\",
    \"evidence_spans\":[{\"start\":0,\"end\":18}]}}}' | kb-memgate decide | kb-memgate apply
";

enum Cmd {
    Decide,
    Apply,
    Reindex,
}

struct Args {
    cmd: Cmd,
    dir: Option<PathBuf>,
    check: bool,
}

fn parse_args() -> Result<Args, Error> {
    let mut p = lexopt::Parser::from_env();
    let (mut cmd, mut dir, mut check) = (None, None, false);
    while let Some(arg) = p.next()? {
        match arg {
            Short('h') | Long("help") => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            Short('V') | Long("version") => {
                println!("kb-memgate {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            Long("memory-dir") => dir = Some(PathBuf::from(p.value()?)),
            Long("check") => check = true,
            Value(v) if cmd.is_none() => {
                cmd = Some(match v.string()?.as_str() {
                    "decide" => Cmd::Decide,
                    "apply" => Cmd::Apply,
                    "reindex" => Cmd::Reindex,
                    other => return Err(Error::usage(format!("unknown command '{other}' (decide, apply, reindex)"))),
                })
            }
            _ => return Err(arg.unexpected().into()),
        }
    }
    let cmd = cmd.ok_or_else(|| Error::usage("missing command: decide, apply or reindex"))?;
    if check && !matches!(cmd, Cmd::Reindex) {
        return Err(Error::usage("--check goes with reindex"));
    }
    Ok(Args { cmd, dir, check })
}

fn main() -> ExitCode {
    run_main("kb-memgate", || {
        let args = parse_args()?;
        let paths = Paths::new(args.dir.as_deref())?;
        let mut out = Out::stdout("kb-memgate");
        let stdin = std::io::stdin().lock();
        match args.cmd {
            Cmd::Decide => decide::run(&paths, stdin, &mut out)?,
            Cmd::Apply => apply::run(&paths, stdin, &mut out)?,
            Cmd::Reindex => {
                let report = reindex::run(&paths, args.check)?;
                out.record(&report)?;
                if args.check && !report.in_sync {
                    out.raise(Exit::Negative);
                }
            }
        }
        out.finish()
    })
}
