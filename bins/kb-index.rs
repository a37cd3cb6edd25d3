//! kb-index: what is in the library (seed 000 list, status, rebuild-index,
//! check-staleness and the maintain modes built on them).

use std::path::PathBuf;
use std::process::ExitCode;

use kb::derived::{consistency, rebuild_index};
use kb::error::{run_main, Error, Exit};
use kb::library::scan;
use kb::maintain::schedule;
use kb::out::jsonl::{Format, Out};
use kb::report::{listing, stale, status, usage};
use kb::{clock, lock, Library};
use lexopt::prelude::*;

const USAGE: &str = "\
kb-index: list, audit and rebuild the library's indexes

Usage:
  kb-index list [--type T1|T2] [--topic T] [--format jsonl|table]
  kb-index rebuild [--incremental] [--no-commit]
  kb-index check                     index rows vs files; logs .inconsistency.log; exit 1 on problems
  kb-index stale [--days N]          stale references and provisional experiences (report only)
  kb-index status [--format jsonl|table]   the six audit dimensions; exit 1 when one needs attention
  kb-index quick                     re-index what changed since .last-maintained
  kb-index scheduled [--force] [--no-commit]   the 24 h-gated daily maintenance
  kb-index commit full|scheduled     commit every library change with the seed's message
  kb-index cron install|uninstall [--just PATH --justfile PATH]

Options:
  --root DIR        the library (default: KB_ROOT, else the nearest .library)
  --type T          list: only these types (pipe-separated segments)
  --topic T         list: only this topic
  --format FMT      jsonl or table [default: table on a terminal]
  --incremental     rebuild: re-read only documents changed since the last rebuild
  --no-commit       do not git commit
  --days N          stale: flag references older than N days, whatever their threshold
  --force           scheduled: ignore the 24 h gate
  --just PATH       cron: the just binary [default: just]
  --justfile PATH   cron: the justfile holding `maintain`
  --timeout DUR     how long to wait for the library lock [default: 30s]
  -h, --help        show this help
  -V, --version     show the version

Example:
  kb-index list --type 'software|data-pipeline' --format table
";

#[derive(Default)]
struct Args {
    root: Option<PathBuf>,
    command: Option<String>,
    positional: Vec<String>,
    types: Option<String>,
    topic: Option<String>,
    format: Option<Format>,
    incremental: bool,
    no_commit: bool,
    days: Option<u64>,
    force: bool,
    just: Option<String>,
    justfile: Option<String>,
    timeout: Option<String>,
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
                println!("kb-index {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            Long("root") => a.root = Some(PathBuf::from(p.value()?)),
            Long("type") => a.types = Some(p.value()?.string()?),
            Long("topic") => a.topic = Some(p.value()?.string()?),
            Long("format") => a.format = Some(Format::parse(&p.value()?.string()?)?),
            Long("incremental") => a.incremental = true,
            Long("no-commit") => a.no_commit = true,
            Long("days") => a.days = Some(p.value()?.parse()?),
            Long("force") => a.force = true,
            Long("just") => a.just = Some(p.value()?.string()?),
            Long("justfile") => a.justfile = Some(p.value()?.string()?),
            Long("timeout") => a.timeout = Some(p.value()?.string()?),
            Value(v) if a.command.is_none() => a.command = Some(v.string()?),
            Value(v) => a.positional.push(v.string()?),
            _ => return Err(arg.unexpected().into()),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    run_main("kb-index", || {
        let a = parse_args()?;
        let lib = Library::resolve(a.root.as_deref())?;
        let mut lock_opts = lock::Options::default();
        if let Some(t) = &a.timeout {
            lock_opts.timeout = clock::parse_duration(t)?;
        }
        let table = a.format.unwrap_or_else(Format::default_for_stdout) == Format::Table;
        let mut out = Out::stdout("kb-index");
        match a.command.as_deref().unwrap_or("list") {
            "list" => {
                let (now, filter, scan) =
                    (clock::now()?, listing::Filter::new(a.types.as_deref(), a.topic.as_deref()), scan::library(&lib));
                let used = usage::load(&lib)?;
                let entries: Vec<_> = scan.docs.iter().map(|d| &d.entry).filter(|e| filter.matches(e)).collect();
                if table {
                    out.text(&listing::tables(&entries, now, &used))?;
                } else {
                    for e in entries {
                        out.record(&listing::record(e, now, &used))?;
                    }
                }
                for p in &scan.problems {
                    let msg = format!("{}: {} ({})", p.path, p.message, p.kind);
                    if table {
                        eprintln!("kb-index: {msg}");
                        out.raise(Exit::Failure);
                    } else {
                        out.error(&msg, serde_json::to_value(p).unwrap_or_default())?;
                    }
                }
            }
            "rebuild" => {
                let opts = rebuild_index::Options { incremental: a.incremental, commit: !a.no_commit, lock: lock_opts };
                let r = rebuild_index::run(&lib, &opts)?;
                for p in &r.problems {
                    eprintln!("kb-index: {}: {} ({})", p.path, p.message, p.kind);
                }
                out.record(&r)?;
            }
            "check" => {
                let problems = consistency::check(&lib, &scan::library(&lib))?;
                lock::with_lock(&lib, &lock_opts, || consistency::log(&lib, &problems))?;
                for p in &problems {
                    eprintln!("kb-index: {}: {}: {}", p.kind, p.path, p.message);
                    out.record(p)?;
                }
                out.raise(if problems.is_empty() { Exit::Success } else { Exit::Negative });
            }
            "stale" => {
                let entries: Vec<_> = scan::library(&lib).docs.into_iter().map(|d| d.entry).collect();
                let first = stale::first_writes(&kb::library::relations::history(&lib)?);
                for s in stale::all(&entries, &first, clock::now()?, a.days) {
                    out.record(&s)?;
                }
            }
            "status" => {
                let dims = status::audit(&lib, &lock_opts)?;
                if table {
                    out.text(&status::render(&dims))?;
                } else {
                    dims.iter().try_for_each(|d| out.record(d))?;
                }
                out.raise(if dims.iter().any(|d| d.attention) { Exit::Negative } else { Exit::Success });
            }
            "quick" => out.record(&schedule::quick(&lib, &lock_opts)?)?,
            "scheduled" => out.record(&schedule::scheduled(&lib, a.force, !a.no_commit, &lock_opts)?)?,
            "commit" => {
                let [kind] = a.positional.as_slice() else {
                    return Err(Error::usage("commit takes full or scheduled"));
                };
                let msg = schedule::commit_message(kind)?;
                let committed = schedule::commit_all(&lib, &msg)?;
                out.record(&serde_json::json!({"record": "commit", "message": msg, "committed": committed}))?;
            }
            "cron" => match a.positional.first().map(String::as_str) {
                Some("install") => {
                    let jf = a.justfile.as_deref().ok_or_else(|| Error::usage("cron install needs --justfile"))?;
                    out.record(&schedule::cron_install(&lib, a.just.as_deref().unwrap_or("just"), jf)?)?
                }
                Some("uninstall") => out.record(&schedule::cron_uninstall(&lib)?)?,
                _ => return Err(Error::usage("cron takes install or uninstall")),
            },
            other => return Err(Error::usage(format!("unknown command '{other}'"))),
        }
        out.finish()
    })
}
