//! `kb-score`: search one or many libraries with seed 000's scoring.

use std::path::PathBuf;

use super::args::{format_or_default, typed_flags, Args as Cli, Cmd, Spec};
use crate::error::{Error, Exit};
use crate::out::jsonl::{Format, Out};
use crate::out::warn;
use crate::score::{self, loading::Tier, query::Query, rank::Filters, sources};

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("score.txt");

/// kb-score has no subcommands.
pub static SPEC: Spec =
    Spec::new("kb-score", USAGE, Flags::NAMES, &[Cmd::new("", "QUERY...", Flags::NAMES, "search the library")])
        .dash_words();

typed_flags! { USAGE;
    /// kb-score's flags.
    pub struct Flags {
        type_: Option<String> = "type",
        topic: Option<String> = "topic",
        notebook: Option<String> = "notebook",
        limit: Option<usize> = "limit",
        no_recommend: bool = "no-recommend",
        tier: Option<String> = "tier",
        budget: Option<usize> = "budget",
        source: Vec<String> = "source",
        no_registries: bool = "no-registries",
        verify: bool = "verify",
        model: Option<PathBuf> = "model",
        no_dense: bool = "no-dense",
        root: Option<PathBuf> = "root",
        format: Option<Format> = "format",
    }
}

struct Args {
    query: Vec<String>,
    opts: score::Options,
    spec: sources::Spec,
    format: Format,
}

/// The command line as search options.
fn settle(a: Cli) -> Result<Args, Error> {
    let f = Flags::from_args(&a)?;
    let mut opts = score::Options::default();
    let mut spec = sources::Spec {
        registries: !f.no_registries,
        home: std::env::var_os("HOME").map(PathBuf::from),
        ..Default::default()
    };
    if let Some(n) = f.limit {
        opts.limit = n;
        opts.tail_cut = None;
    }
    opts.recommend = !f.no_recommend;
    if let Some(t) = &f.tier {
        opts.tier = Tier::parse(t)?;
    }
    opts.budget = f.budget;
    for s in &f.source {
        spec.cli.push(sources::parse_source_flag(s)?);
    }
    opts.verify = f.verify;
    if !f.no_dense {
        opts.model = crate::text::bert::model_dir(f.model.as_deref());
    }
    spec.root = f.root;
    opts.filters = Filters::new(f.type_.as_deref(), f.topic.as_deref(), f.notebook.as_deref());
    Ok(Args { query: a.positional, opts, spec, format: format_or_default(f.format) })
}

/// Runs the parsed command line.
pub fn run(a: Cli) -> Result<Exit, Error> {
    let args = settle(a)?;
    let q = Query::parse(&args.query.join(" "))?;
    let now = crate::clock::now()?;
    let resolved = sources::resolve(&args.spec)?;
    for e in &resolved.errors {
        warn("kb-score", &format!("warning: source '{}' skipped: {}: {}", e.source, e.path, e.message));
    }
    let outcome = score::search(&resolved.sources, resolved.errors, &q, &args.opts, now.as_second())?;
    for w in &outcome.warnings {
        warn("kb-score", &format!("warning: {w}"));
    }
    // Search is read-only: only a query where a source failed leaves an
    // audit line (seed 001), one O_APPEND write without the lock.
    let event = score::audit_event(&outcome, crate::clock::format(now));
    if let Some(local) = resolved.sources.iter().find(|s| !s.external).filter(|_| score::audit::is_event(&event)) {
        if let Err(e) = score::audit::append(&local.lib, &event) {
            warn("kb-score", &format!("warning: audit log not written: {e}"));
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
