//! kb-lastword: end-of-session knowledge deltas for AGENTS.md, SOUL.md and
//! USER.md (seed 004 "last-word").

use std::io::Read;
use std::process::ExitCode;

use kb::error::{run_main, Context, Error};
use kb::lastword::{apply, home::Home, plan, report::Reporter, resolve, status};
use kb::out::jsonl::Format;
use lexopt::prelude::*;

const USAGE: &str = "\
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
  -h, --help       show this help
  -V, --version    show the version

Example:
  echo '{\"path\":\"~/.config/agents/USER.md\",\"heading\":\"Editor\",\"content\":\"- Helix\"}' \\
    | kb-lastword plan --source s1 && kb-lastword apply --file USER.md
";

#[derive(Default)]
struct Args {
    cmd: String,
    files: Vec<String>,
    source: Option<String>,
    dry_run: bool,
    file: Option<String>,
    force: bool,
    format: Option<Format>,
}

fn parse_args() -> Result<Args, Error> {
    let mut p = lexopt::Parser::from_env();
    let mut a = Args::default();
    while let Some(arg) = p.next()? {
        match arg {
            Short('h') | Long("help") => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            Short('V') | Long("version") => {
                println!("kb-lastword {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            Long("source") => a.source = Some(p.value()?.string()?),
            Long("dry-run") => a.dry_run = true,
            Long("file") => a.file = Some(p.value()?.string()?),
            Long("force") => a.force = true,
            Long("format") => a.format = Some(Format::parse(&p.value()?.string()?)?),
            Value(v) if a.cmd.is_empty() => a.cmd = v.string()?,
            Value(v) => a.files.push(v.string()?),
            _ => return Err(arg.unexpected().into()),
        }
    }
    let want_files = match a.cmd.as_str() {
        "plan" => None,
        "validate" | "resolve" => Some(true),
        "apply" | "status" | "init" => Some(false),
        "" => return Err(Error::usage("missing command: plan, apply, status, validate, resolve or init")),
        c => return Err(Error::usage(format!("unknown command '{c}'"))),
    };
    match want_files {
        Some(true) if a.files.is_empty() => return Err(Error::usage(format!("{} needs a FILE", a.cmd))),
        Some(true) if a.cmd == "resolve" && a.files.len() > 1 => return Err(Error::usage("resolve takes one FILE")),
        Some(false) if !a.files.is_empty() => return Err(Error::usage(format!("{} takes no FILE", a.cmd))),
        _ => {}
    }
    Ok(a)
}

const COLUMNS: &[&str] = &["record", "path", "heading", "level", "operation", "status", "error"];
const STATUS_COLUMNS: &[&str] =
    &["record", "file", "entries", "no-op", "update", "clear", "delete", "url", "invalid", "staging"];

fn main() -> ExitCode {
    run_main("kb-lastword", || {
        let a = parse_args()?;
        let home = Home::from_env()?;
        let columns = if a.cmd == "status" { STATUS_COLUMNS } else { COLUMNS };
        let mut rep = Reporter::new(a.format.unwrap_or_else(Format::default_for_stdout), columns);
        match a.cmd.as_str() {
            "plan" => {
                if a.files.is_empty() {
                    let mut input = String::new();
                    std::io::stdin().read_to_string(&mut input).ctx(|| "reading stdin")?;
                    plan::plan(&home, &input, a.source.clone(), &mut rep)?;
                }
                for f in &a.files {
                    let input = std::fs::read_to_string(f).ctx(|| format!("reading {f}"))?;
                    plan::plan(&home, &input, a.source.clone(), &mut rep)?;
                }
            }
            "apply" => apply::apply(&home, &apply::Options { dry_run: a.dry_run, file: a.file }, &mut rep)?,
            "status" => status::status(&home, &mut rep)?,
            "validate" => {
                for f in &a.files {
                    resolve::validate(&home, &home.resolve(f), &mut rep)?;
                }
            }
            "resolve" => resolve::resolve(&home, &resolve::locate(&home, &a.files[0])?, a.force, &mut rep)?,
            _ => home.init()?,
        }
        rep.finish()
    })
}
