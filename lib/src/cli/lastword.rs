//! `kb-lastword`: end-of-session knowledge deltas for AGENTS.md, SOUL.md
//! and USER.md (seed 004 "last-word").

use std::io::Read;

use super::args::{Args, Cmd, Spec};
use crate::error::{Context, Error, Exit};
use crate::lastword::{apply, home::Home, plan, report::Reporter, resolve, status};

/// The overview `--help` prints.
pub const USAGE: &str = "\
kb-lastword: heading-keyed knowledge deltas applied to AGENTS.md, SOUL.md, USER.md

Usage:
  kb-lastword plan [--source ID] [FILE...]      queue entries (YAML or JSONL; stdin without FILE)
  kb-lastword apply [--dry-run] [--file NAME]   write pending entries into the Markdown files
  kb-lastword status                            pending files, counts by operation, staging
  kb-lastword validate FILE...                  check a delta file's syntax and uniqueness
  kb-lastword resolve [--force] FILE            re-check a staged file; move it back when clean
  kb-lastword init                              write config.yaml, schema.yaml, staging/

Files: ~/.config/agents/last-word/{AGENTS,SOUL,USER}.md.yaml, ./.agents/AGENTS.md.yaml,
last-word/staging/*.yaml; ~ is KB_LASTWORD_HOME when set, else HOME.
Exit: 0 done; 1 entries staged or a file invalid; 2 bad input or runtime error.

Options:
  --source ID      session id recorded on planned entries [default: the input's, else session-<time>]
  --dry-run        print a unified diff of what apply would write; change nothing
  --file NAME      apply only entries whose target file is NAME (USER.md) or that path
  --force          resolve: accept a person's edit of a section and apply over it
  --format FMT     jsonl or table [default: table on a terminal, else jsonl]
  -h, --help       show this help (after a command: that command's)
  -V, --version    show the version

Example:
  echo '{\"path\":\"~/.config/agents/USER.md\",\"heading\":\"Editor\",\"content\":\"- Helix\"}' \\
    | kb-lastword plan --source s1 && kb-lastword apply --file USER.md
";

/// kb-lastword's subcommands and the flags each uses.
pub static SPEC: Spec = Spec::new(
    "kb-lastword",
    USAGE,
    &[
        Cmd::new("plan", "[FILE...]", &["source", "format"], "queue entries (YAML or JSONL; stdin without FILE)"),
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
                let mut input = String::new();
                std::io::stdin().read_to_string(&mut input).ctx(|| "reading stdin")?;
                plan::plan(&home, &input, a.get("source").map(str::to_string), &mut rep)?;
            }
            for f in &a.positional {
                let input = std::fs::read_to_string(f).ctx(|| format!("reading {f}"))?;
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
