//! `kb-lastword`: end-of-session knowledge deltas for AGENTS.md, SOUL.md
//! and USER.md (seed 004 "last-word").

use std::path::Path;

use super::args::{format_or_default, typed_flags, Args, Cmd, Spec};
use crate::error::{Error, Exit};
use crate::lastword::{apply, delta, home::Home, plan, report::Reporter, resolve, status};
use crate::out::jsonl::Format;

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("lastword.txt");

/// kb-lastword's subcommands and the flags each uses.
pub static SPEC: Spec = Spec::new(
    "kb-lastword",
    USAGE,
    Flags::NAMES,
    &[
        Cmd::new(
            "plan",
            "[FILE...]",
            &["source", "format"],
            "queue entries (YAML or JSONL; stdin without FILE or for -)",
        ),
        Cmd::new("apply", "", &["dry-run", "file", "format"], "write pending entries into the Markdown files"),
        Cmd::new("status", "", &["format"], "pending files, counts by operation, staging"),
        Cmd::new("validate", "FILE...", &["format"], "check a delta file's syntax and uniqueness"),
        Cmd::new("resolve", "FILE", &["force", "format"], "re-check a staged file; move it back when clean"),
        Cmd::new("init", "", &[], "write config.yaml, schema.yaml, staging/"),
    ],
);

const COLUMNS: &[&str] = &["record", "path", "heading", "level", "operation", "status", "error"];
const STATUS_COLUMNS: &[&str] =
    &["record", "file", "entries", "no-op", "update", "clear", "delete", "url", "invalid", "staging"];

typed_flags! { USAGE;
    /// kb-lastword's flags.
    pub struct Flags {
        source: Option<String> = "source",
        dry_run: bool = "dry-run",
        file: Option<String> = "file",
        force: bool = "force",
        format: Option<Format> = "format",
    }
}

/// Runs the parsed command line.
pub fn run(a: Args) -> Result<Exit, Error> {
    let f = Flags::from_args(&a)?;
    let home = Home::from_env()?;
    let columns = if a.cmd == "status" { STATUS_COLUMNS } else { COLUMNS };
    let mut rep = Reporter::new(format_or_default(f.format), columns);
    match a.cmd {
        "plan" => {
            if a.positional.is_empty() {
                let input = delta::read_input(None)?;
                plan::plan(&home, &input, f.source.clone(), &mut rep)?;
            }
            for file in &a.positional {
                // `-` is stdin, as for every other filter.
                let input = delta::read_input((file != "-").then(|| Path::new(file)))?;
                plan::plan(&home, &input, f.source.clone(), &mut rep)?;
            }
        }
        "apply" => apply::apply(&home, &apply::Options { dry_run: f.dry_run, file: f.file.clone() }, &mut rep)?,
        "status" => status::status(&home, &mut rep)?,
        "validate" => {
            for file in &a.positional {
                resolve::validate(&home, &home.resolve(file), &mut rep)?;
            }
        }
        "resolve" => resolve::resolve(&home, &resolve::locate(&home, &a.positional[0])?, f.force, &mut rep)?,
        _ => home.init()?,
    }
    rep.finish()
}
