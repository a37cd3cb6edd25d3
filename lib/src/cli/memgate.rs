//! `kb-memgate`: governed long-term memory notes (seed 003, lingxi memory).

use super::args::{typed_flags, Args, Cmd, Spec};
use crate::error::{Error, Exit};
use crate::memgate::{apply, decide, dense, reindex, Paths};
use crate::out::jsonl::Out;

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("memgate.txt");

/// kb-memgate's subcommands and the flags each uses.
pub static SPEC: Spec = Spec::new(
    "kb-memgate",
    USAGE,
    Flags::NAMES,
    &[
        Cmd::new(
            "decide",
            "",
            &["memory-dir", "model", "format"],
            "one decision record per input on stdin (never writes)",
        ),
        Cmd::new(
            "apply",
            "",
            &["memory-dir", "model", "format"],
            "write notes, INDEX.md and audit for the decisions on stdin",
        ),
        Cmd::new(
            "reindex",
            "",
            &["memory-dir", "check", "model", "format"],
            "INDEX.md and search index from the notes",
        ),
    ],
)
.hints(&[
    (
        "remember",
        "to remember, pipe decide into apply: kb-memgate decide < input.jsonl | kb-memgate apply (just remember does)",
    ),
    ("answer", "to apply answered decisions: kb-memgate apply < answered.jsonl (just remember-answer does)"),
]);

typed_flags! { USAGE;
    /// kb-memgate's flags.
    pub struct Flags {
        memory_dir: Option<std::path::PathBuf> = "memory-dir",
        check: bool = "check",
        model: Option<std::path::PathBuf> = "model",
        format: Option<crate::out::jsonl::Format> = "format",
    }
}

/// Runs the parsed command line.
pub fn run(a: Args) -> Result<Exit, Error> {
    let f = Flags::from_args(&a)?;
    let paths = Paths::new(f.memory_dir.as_deref())?;
    let model = dense::model_dir(f.model.as_deref());
    let mut out = Out::stdout("kb-memgate");
    if super::args::generic_table(f.format, a.cmd, &[]) {
        out.as_tables();
    }
    let stdin = std::io::stdin().lock();
    match a.cmd {
        "decide" => decide::run(&paths, model.as_deref(), stdin, &mut out)?,
        "apply" => apply::run(&paths, model.as_deref(), stdin, &mut out)?,
        _ => {
            let (recovered, report) = reindex::run(&paths, f.check, model.as_deref())?;
            if let Some(r) = recovered {
                out.record(&r)?;
            }
            out.record(&report)?;
            if f.check && !report.in_sync {
                out.raise(Exit::Negative);
            }
        }
    }
    out.finish()
}
