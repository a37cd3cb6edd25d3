//! `kb-lastword`: end-of-session knowledge deltas for AGENTS.md, SOUL.md
//! and USER.md (seed 004 "last-word").

use std::path::Path;

use super::args::{Args, Cmd, Spec};
use crate::error::{Error, Exit};
use crate::lastword::{apply, delta, home::Home, plan, report::Reporter, resolve, status};

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("lastword.txt");

/// kb-lastword's subcommands and the flags each uses.
pub static SPEC: Spec = Spec::new(
    "kb-lastword",
    USAGE,
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

/// Runs the parsed command line.
pub fn run(a: Args) -> Result<Exit, Error> {
    let home = Home::from_env()?;
    let columns = if a.cmd == "status" { STATUS_COLUMNS } else { COLUMNS };
    let mut rep = Reporter::new(a.format()?, columns);
    match a.cmd {
        "plan" => {
            if a.positional.is_empty() {
                let input = delta::read_input(None)?;
                plan::plan(&home, &input, a.get("source").map(str::to_string), &mut rep)?;
            }
            for f in &a.positional {
                // `-` is stdin, as for every other filter.
                let input = delta::read_input((f != "-").then(|| Path::new(f)))?;
                plan::plan(&home, &input, a.get("source").map(str::to_string), &mut rep)?;
            }
        }
        "apply" => apply::apply(
            &home,
            &apply::Options { dry_run: a.on("dry-run"), file: a.get("file").map(str::to_string) },
            &mut rep,
        )?,
        "status" => status::status(&home, &mut rep)?,
        "validate" => {
            for f in &a.positional {
                resolve::validate(&home, &home.resolve(f), &mut rep)?;
            }
        }
        "resolve" => resolve::resolve(&home, &resolve::locate(&home, &a.positional[0])?, a.on("force"), &mut rep)?,
        _ => home.init()?,
    }
    rep.finish()
}
