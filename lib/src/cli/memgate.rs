//! `kb-memgate`: governed long-term memory notes (seed 003, lingxi memory).

use super::args::{Args, Cmd, Spec};
use crate::error::{Error, Exit};
use crate::memgate::{apply, decide, reindex, Paths};
use crate::out::jsonl::Out;

/// The overview `--help` prints.
pub const USAGE: &str = "\
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
  -h, --help        show this help (after a command: that command's)
  -V, --version     show the version

Example:
  echo '{\"mode\":\"remember\",\"input\":{\"user_input\":{\"text\":\"Never use var here\",
    \"evidence_spans\":[{\"start\":0,\"end\":18}]}}}' | kb-memgate decide | kb-memgate apply
";

/// kb-memgate's subcommands and the flags each uses.
pub static SPEC: Spec = Spec::new(
    "kb-memgate",
    USAGE,
    &[
        Cmd::new("decide", "", &["memory-dir"], "one decision record per input on stdin (never writes)"),
        Cmd::new("apply", "", &["memory-dir"], "write notes, INDEX.md and audit for the decisions on stdin"),
        Cmd::new("reindex", "", &["memory-dir", "check"], "INDEX.md and search index from the notes"),
    ],
);

/// Runs the parsed command line.
pub fn run(a: Args) -> Result<Exit, Error> {
    let paths = Paths::new(a.get("memory-dir").map(std::path::Path::new))?;
    let mut out = Out::stdout("kb-memgate");
    let stdin = std::io::stdin().lock();
    match a.cmd {
        "decide" => decide::run(&paths, stdin, &mut out)?,
        "apply" => apply::run(&paths, stdin, &mut out)?,
        _ => {
            let report = reindex::run(&paths, a.on("check"))?;
            out.record(&report)?;
            if a.on("check") && !report.in_sync {
                out.raise(Exit::Negative);
            }
        }
    }
    out.finish()
}
