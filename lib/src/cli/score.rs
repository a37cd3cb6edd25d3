//! `kb-score`: search one or many libraries with seed 000's scoring.

use std::path::PathBuf;

use super::args::{Args as Cli, Cmd, Spec};
use crate::error::{Error, Exit};
use crate::out::jsonl::{Format, Out};
use crate::score::{self, query::Query, rank::Filters, sources, tiers::Tier};

/// The overview `--help` prints.
pub const USAGE: &str = "\
kb-score: search the library (seed 000 `library search`), and other libraries (seed 001)

Usage:
  kb-score QUERY... [--type T] [--topic T] [--notebook NB] [--limit 10] [--no-recommend]
                    [--tier 1|2|3] [--budget TOKENS] [--source NAME=DIR]... [--format jsonl|table]

Score = base × (0.5 + 0.3 × used_by_norm + 0.2 × freshness). base is a match quality
in [0, 1]: the larger of the seed tier (1.0 topic exact, 0.8 topic contains, 0.6 keyword,
scaled by the share of the query a topic or keyword covers) and 0.5 × the BM25F text
evidence; ties go to the stronger text. Graph recommendations (BFS, 2 hops, × 0.5 per
hop, 20 nodes) follow the direct hits. Read-only. Prints `hit` records and a final
`summary` record; exit 1 when nothing matched.

Options:
  --type T          only documents whose type is one of T's |-separated segments
  --topic T         only documents whose topic contains T
  --notebook NB     only documents whose frontmatter sources.notebook is NB
  --limit N         direct hits to return [default: 10]
  --no-recommend    no graph recommendations
  --tier N          1 index rows, 2 plus .summary.md snippets, 3 plus full content [default: 1]
  --budget TOKENS   keep the hits' estimated tokens within TOKENS (the last hit cut to fit)
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

/// Every flag goes with the query.
const QUERY: &[&str] = &[
    "type",
    "topic",
    "notebook",
    "limit",
    "no-recommend",
    "tier",
    "budget",
    "source",
    "no-registries",
    "verify",
    "root",
    "format",
];

/// kb-score has no subcommands.
pub static SPEC: Spec = Spec::new("kb-score", USAGE, &[Cmd::new("", "QUERY...", QUERY, "search the library")]);

struct Args {
    query: Vec<String>,
    opts: score::Options,
    spec: sources::Spec,
    format: Format,
}

/// The command line as search options.
fn settle(a: Cli) -> Result<Args, Error> {
    let mut opts = score::Options::default();
    let mut spec = sources::Spec {
        registries: !a.on("no-registries"),
        home: std::env::var_os("HOME").map(PathBuf::from),
        ..Default::default()
    };
    if let Some(n) = a.num("limit")? {
        opts.limit = n;
    }
    opts.recommend = !a.on("no-recommend");
    if let Some(t) = a.get("tier") {
        opts.tier = Tier::parse(t)?;
    }
    opts.budget = a.num("budget")?;
    for s in a.all("source") {
        spec.cli.push(sources::parse_source_flag(&s)?);
    }
    opts.verify = a.on("verify");
    spec.root = a.get("root").map(PathBuf::from);
    let format = a.format()?;
    opts.filters = Filters::new(a.get("type"), a.get("topic"), a.get("notebook"));
    Ok(Args { query: a.positional, opts, spec, format })
}

/// Runs the parsed command line.
pub fn run(a: Cli) -> Result<Exit, Error> {
    let args = settle(a)?;
    let q = Query::parse(&args.query.join(" "))?;
    let now = crate::clock::now()?;
    let resolved = sources::resolve(&args.spec)?;
    for e in &resolved.errors {
        eprintln!("kb-score: warning: source '{}' skipped: {}: {}", e.source, e.path, e.message);
    }
    let outcome = score::search(&resolved.sources, resolved.errors, &q, &args.opts, now.as_second())?;
    for w in &outcome.warnings {
        eprintln!("kb-score: warning: {w}");
    }
    // Search is read-only: only a query where a source failed leaves an
    // audit line (seed 001), one O_APPEND write without the lock.
    let event = score::audit_event(&outcome, crate::clock::format(now));
    if let Some(local) = resolved.sources.iter().find(|s| !s.external).filter(|_| score::audit::is_event(&event)) {
        if let Err(e) = score::audit::append(&local.lib, &event) {
            eprintln!("kb-score: warning: audit log not written: {e}");
        }
    }
    let mut out = Out::stdout("kb-score");
    match args.format {
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
}
