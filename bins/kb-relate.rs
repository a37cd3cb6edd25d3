//! kb-relate: how documents connect and how well they work (seed 000
//! rebuild-relations, graph neighbours, usage, lifecycle, skill promotion).

use std::path::PathBuf;
use std::process::ExitCode;

use kb::derived::rebuild_all;
use kb::error::{run_main, Error, Exit};
use kb::library::graph::{self, Graph};
use kb::library::scan;
use kb::maintain::tier_up;
use kb::out::jsonl::{self, Format, Out};
use kb::report::{lifecycle, usage};
use kb::{clock, lock, Library};
use lexopt::prelude::*;
use serde_json::json;

const USAGE: &str = "\
kb-relate: the relation graph, usage and effectiveness of library documents

Usage:
  kb-relate rebuild                          rewrite .relations.jsonl from changelog, related:, links
  kb-relate neighbors PATH [--hops 2] [--max 20]   BFS over the relation graph
  kb-relate usage [--format jsonl|table]     usage_count, failure_rate, effectiveness_mark suggestions
  kb-relate lifecycle [--write] [--no-commit]   thinking-pattern states; --write records them
  kb-relate promote [--dry-run] [--no-commit]   T3 -> T4 for used, never-failed active skills

Options:
  --root DIR       the library (default: KB_ROOT, else the nearest .library)
  --hops N         neighbors: maximum hops [default: 2]
  --max N          neighbors: maximum documents returned [default: 20]
  --format FMT     jsonl or table [default: table on a terminal]
  --write          lifecycle: set `state:` in each pattern's frontmatter
  --dry-run        promote: report without writing
  --no-commit      do not git commit
  --timeout DUR    how long to wait for the library lock [default: 30s]
  -h, --help       show this help
  -V, --version    show the version

Example:
  kb-relate neighbors .memory/.references/jwt-auth-v1.md --hops 2 --format table
";

#[derive(Default)]
struct Args {
    root: Option<PathBuf>,
    command: Option<String>,
    positional: Vec<String>,
    hops: Option<usize>,
    max: Option<usize>,
    format: Option<Format>,
    write: bool,
    dry_run: bool,
    no_commit: bool,
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
                println!("kb-relate {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            Long("root") => a.root = Some(PathBuf::from(p.value()?)),
            Long("hops") => a.hops = Some(p.value()?.parse()?),
            Long("max") => a.max = Some(p.value()?.parse()?),
            Long("format") => a.format = Some(Format::parse(&p.value()?.string()?)?),
            Long("write") => a.write = true,
            Long("dry-run") => a.dry_run = true,
            Long("no-commit") => a.no_commit = true,
            Long("timeout") => a.timeout = Some(p.value()?.string()?),
            Value(v) if a.command.is_none() => a.command = Some(v.string()?),
            Value(v) => a.positional.push(v.string()?),
            _ => return Err(arg.unexpected().into()),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    run_main("kb-relate", || {
        let a = parse_args()?;
        let lib = Library::resolve(a.root.as_deref())?;
        let mut lock_opts = lock::Options::default();
        if let Some(t) = &a.timeout {
            lock_opts.timeout = clock::parse_duration(t)?;
        }
        let table = a.format.unwrap_or_else(Format::default_for_stdout) == Format::Table;
        let mut out = Out::stdout("kb-relate");
        match a.command.as_deref().ok_or_else(|| Error::usage("missing command (see --help)"))? {
            "rebuild" => out.record(&rebuild_all::rebuild_relations(&lib, &lock_opts)?)?,
            "neighbors" => {
                let [path] = a.positional.as_slice() else { return Err(Error::usage("neighbors takes one PATH")) };
                let path = kb::library::normalise(path)?;
                let reached = Graph::load(&lib)?.bfs(
                    std::slice::from_ref(&path),
                    a.hops.unwrap_or(graph::MAX_GRAPH_HOPS),
                    a.max.unwrap_or(graph::MAX_GRAPH_EXPAND),
                );
                if table {
                    let rows: Vec<Vec<String>> =
                        reached.iter().map(|r| vec![format!("H{}", r.hop), r.path.clone(), r.via.clone()]).collect();
                    out.text(&jsonl::table(&["Hop", "Path", "Via"], &rows))?;
                } else {
                    for r in &reached {
                        out.record(&json!({"record": "neighbor", "path": r.path, "hop": r.hop, "via": r.via}))?;
                    }
                }
                out.raise(if reached.is_empty() { Exit::Negative } else { Exit::Success });
            }
            "usage" => {
                let used = usage::load(&lib)?;
                if table {
                    let rows: Vec<Vec<String>> = used
                        .values()
                        .map(|u| {
                            let mark = if u.suggest_mark { "suggest" } else { "" };
                            vec![u.path.clone(), u.usage_count.to_string(), format!("{}%", u.failure_rate), mark.into()]
                        })
                        .collect();
                    out.text(&jsonl::table(&["Path", "Used", "Failure", "Mark"], &rows))?;
                } else {
                    used.values().try_for_each(|u| out.record(u))?;
                }
            }
            "lifecycle" => {
                let patterns = lifecycle::load(&lib)?;
                let written =
                    if a.write { lifecycle::write(&lib, &patterns, !a.no_commit, &lock_opts)? } else { Vec::new() };
                for p in &patterns {
                    let mut rec = serde_json::to_value(p).map_err(|e| Error::msg(e.to_string()))?;
                    rec["written"] = json!(written.contains(&p.path));
                    out.record(&rec)?;
                }
                out.record(&json!({"record": "lifecycle-summary", "counts": lifecycle::counts(&patterns),
                    "needs_review": patterns.iter().filter(|p| p.needs_review).count()}))?;
            }
            "promote" => {
                let entries: Vec<_> = scan::library(&lib).docs.into_iter().map(|d| d.entry).collect();
                let cands = tier_up::candidates(&entries, &usage::load(&lib)?);
                if !a.dry_run {
                    tier_up::apply(&lib, &cands, !a.no_commit, &lock_opts)?;
                }
                cands.iter().try_for_each(|c| out.record(c))?;
            }
            other => return Err(Error::usage(format!("unknown command '{other}'"))),
        }
        out.finish()
    })
}
