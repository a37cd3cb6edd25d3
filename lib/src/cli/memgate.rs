//! `kb-memgate`: governed long-term memory notes (seed 003, lingxi memory).

use super::args::{Args, Cmd, Spec};
use crate::error::{Error, Exit};
use crate::memgate::{apply, decide, dense, reindex, Paths};
use crate::out::jsonl::Out;

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("memgate.txt");

/// kb-memgate's subcommands and the flags each uses.
pub static SPEC: Spec = Spec::new(
    "kb-memgate",
    USAGE,
    &[
        Cmd::new("decide", "", &["memory-dir", "model"], "one decision record per input on stdin (never writes)"),
        Cmd::new("apply", "", &["memory-dir", "model"], "write notes, INDEX.md and audit for the decisions on stdin"),
        Cmd::new("reindex", "", &["memory-dir", "check", "model"], "INDEX.md and search index from the notes"),
    ],
)
.hints(&[
    (
        "remember",
        "to remember, pipe decide into apply: kb-memgate decide < input.jsonl | kb-memgate apply (just remember does)",
    ),
    ("answer", "to apply answered decisions: kb-memgate apply < answered.jsonl (just remember-answer does)"),
]);

/// Runs the parsed command line.
pub fn run(a: Args) -> Result<Exit, Error> {
    let paths = Paths::new(a.get("memory-dir").map(std::path::Path::new))?;
    let model = dense::model_dir(a.get("model").map(std::path::Path::new));
    let mut out = Out::stdout("kb-memgate");
    let stdin = std::io::stdin().lock();
    match a.cmd {
        "decide" => decide::run(&paths, model.as_deref(), stdin, &mut out)?,
        "apply" => apply::run(&paths, model.as_deref(), stdin, &mut out)?,
        _ => {
            let (recovered, report) = reindex::run(&paths, a.on("check"), model.as_deref())?;
            if let Some(r) = recovered {
                out.record(&r)?;
            }
            out.record(&report)?;
            if a.on("check") && !report.in_sync {
                out.raise(Exit::Negative);
            }
        }
    }
    out.finish()
}
