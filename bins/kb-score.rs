//! kb-score: search one or many libraries with seed 000's scoring.

use std::path::PathBuf;
use std::process::ExitCode;

use kb::error::{run_main, Error, Exit};
use kb::out::jsonl::{Format, Out};
use kb::score::{self, query::Query, rank::Filters, sources, tiers::Tier};
use lexopt::prelude::*;

const USAGE: &str = "\
kb-score: search the library (seed 000 `library search`), and other libraries (seed 001)

Usage:
  kb-score QUERY... [--type T] [--topic T] [--notebook NB] [--limit 10] [--no-recommend]
                    [--tier 1|2|3] [--budget TOKENS] [--source NAME=DIR]... [--format jsonl|table]

Score = base × (0.5 + 0.3 × used_by_norm + 0.2 × freshness); base is 1.0 topic exact,
0.8 topic contains, 0.6 keyword, up to 0.5 full text (BM25). Graph recommendations
(BFS, 2 hops, × 0.5 per hop, 20 nodes) follow the direct hits. Prints `hit` records
and a final `summary` record; exit 1 when nothing matched.

Options:
  --type T          only documents whose type is one of T's |-separated segments
  --topic T         only documents whose topic contains T
  --notebook NB     only documents whose frontmatter sources.notebook is NB
  --limit N         direct hits to return [default: 10]
  --no-recommend    no graph recommendations
  --tier N          1 index rows, 2 plus .summary.md snippets, 3 plus full content [default: 1]
  --budget TOKENS   stop before the hits' estimated tokens exceed TOKENS
  --source NAME=DIR also search the library at DIR, attributed to NAME (repeatable; read-only)
  --no-registries   ignore ~/.sdlc/global-libraries.json and .sdlc/libraries.json
  --verify          check every document's size and mtime before trusting the index cache
                    (by default: directories, relations, changelog and the hits themselves)
  --root DIR        the local library (default: KB_ROOT, else the nearest .library)
  --format FMT      jsonl or table [default: table on a terminal]
  -h, --help        show this help
  -V, --version     show the version

Example:
  kb-score 'jwt auth' --type 'software|security' --tier 2 --budget 2000 --format table
";

struct Args {
    query: Vec<String>,
    opts: score::Options,
    spec: sources::Spec,
    format: Option<Format>,
}

fn parse_args() -> Result<Args, Error> {
    let mut p = lexopt::Parser::from_env();
    let mut query = Vec::new();
    let mut opts = score::Options::default();
    let mut spec =
        sources::Spec { registries: true, home: std::env::var_os("HOME").map(PathBuf::from), ..Default::default() };
    let (mut ty, mut topic, mut notebook) = (None, None, None);
    let mut format = None;
    while let Some(arg) = p.next()? {
        match arg {
            Short('h') | Long("help") => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            Short('V') | Long("version") => {
                println!("kb-score {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            Long("type") => ty = Some(p.value()?.string()?),
            Long("topic") => topic = Some(p.value()?.string()?),
            Long("notebook") => notebook = Some(p.value()?.string()?),
            Long("limit") => opts.limit = number(&p.value()?.string()?, "--limit")?,
            Long("no-recommend") => opts.recommend = false,
            Long("tier") => opts.tier = Tier::parse(&p.value()?.string()?)?,
            Long("budget") => opts.budget = Some(number(&p.value()?.string()?, "--budget")?),
            Long("source") => spec.cli.push(sources::parse_source_flag(&p.value()?.string()?)?),
            Long("no-registries") => spec.registries = false,
            Long("verify") => opts.verify = true,
            Long("root") => spec.root = Some(PathBuf::from(p.value()?)),
            Long("format") => format = Some(Format::parse(&p.value()?.string()?)?),
            Value(v) => query.push(v.string()?),
            _ => return Err(arg.unexpected().into()),
        }
    }
    if query.is_empty() {
        return Err(Error::usage("missing QUERY: kb-score 'words to search for'"));
    }
    opts.filters = Filters::new(ty.as_deref(), topic.as_deref(), notebook.as_deref());
    Ok(Args { query, opts, spec, format })
}

fn number(s: &str, flag: &str) -> Result<usize, Error> {
    s.trim().parse().map_err(|_| Error::usage(format!("{flag} wants a whole number, got '{s}'")))
}

fn main() -> ExitCode {
    run_main("kb-score", || {
        let args = parse_args()?;
        let q = Query::parse(&args.query.join(" "))?;
        let now = kb::clock::now()?;
        let resolved = sources::resolve(&args.spec)?;
        for e in &resolved.errors {
            eprintln!("kb-score: warning: source '{}' skipped: {}: {}", e.source, e.path, e.message);
        }
        let outcome = score::search(&resolved.sources, resolved.errors, &q, &args.opts, now.as_second())?;
        for w in &outcome.warnings {
            eprintln!("kb-score: warning: {w}");
        }
        if let Some(local) = resolved.sources.iter().find(|s| !s.external) {
            let event = score::audit_event(&outcome, kb::clock::format(now));
            if let Err(e) = score::audit::append(&local.lib, &event) {
                eprintln!("kb-score: warning: audit log not written: {e}");
            }
        }
        let mut out = Out::stdout("kb-score");
        match args.format.unwrap_or_else(Format::default_for_stdout) {
            Format::Jsonl => {
                for e in &outcome.errors {
                    out.record(e)?;
                }
                for h in &outcome.hits {
                    out.record(h)?;
                }
                out.record(&outcome.summary)?;
            }
            Format::Table => out.text(&score::table::render(&outcome.hits, &outcome.summary))?,
        }
        if outcome.hits.is_empty() {
            out.raise(Exit::Negative);
        }
        out.finish()
    })
}
