//! `kb-relate`: how documents connect and how well they work (seed 000
//! rebuild-relations, graph neighbours, usage, lifecycle, skill promotion).

use serde_json::json;

use super::args::{format_or_default, lock_options, typed_flags, Args, Cmd, Spec};
use crate::derived::rebuild_all;
use crate::error::{Error, Exit};
use crate::library::graph;
use crate::library::scan;
use crate::maintain::raise_trust;
use crate::out::jsonl::Format;
use crate::out::jsonl::{self, Out};
use crate::report::{lifecycle, usage};
use crate::Library;

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("relate.txt");

/// kb-relate's subcommands and the flags each uses.
pub static SPEC: Spec = Spec::new(
    "kb-relate",
    USAGE,
    Flags::NAMES,
    &[
        Cmd::new(
            "rebuild",
            "",
            &["root", "timeout", "format"],
            "rewrite .relations.jsonl from changelog, related:, links",
        ),
        Cmd::new("neighbors", "PATH", &["root", "hops", "max", "format"], "BFS over the relation graph"),
        Cmd::new("usage", "", &["root", "format"], "usage_count, failure_rate, effectiveness_mark suggestions"),
        Cmd::new("lifecycle", "", LIFECYCLE, "thinking-pattern states; --write records them"),
        Cmd::new("promote", "", PROMOTE, "T3 -> T4 for used, never-failed active skills"),
    ],
);

const LIFECYCLE: &[&str] = &["root", "write", "no-commit", "format", "timeout"];
const PROMOTE: &[&str] = &["root", "dry-run", "no-commit", "timeout", "format"];

typed_flags! { USAGE;
    /// kb-relate's flags.
    pub struct Flags {
        root: Option<std::path::PathBuf> = "root",
        hops: Option<usize> = "hops",
        max: Option<usize> = "max",
        format: Option<Format> = "format",
        write: bool = "write",
        dry_run: bool = "dry-run",
        no_commit: bool = "no-commit",
        timeout: Option<String> = "timeout",
    }
}

/// Runs the parsed command line.
pub fn run(a: Args) -> Result<Exit, Error> {
    let f = Flags::from_args(&a)?;
    let lib = Library::resolve(f.root.as_deref())?;
    let (lock_opts, table) = (lock_options(f.timeout.as_deref())?, format_or_default(f.format) == Format::Table);
    let mut out = Out::stdout("kb-relate");
    if super::args::generic_table(f.format, a.cmd, &["neighbors", "usage", "lifecycle"]) {
        out.as_tables();
    }
    match a.cmd {
        "rebuild" => out.record(&rebuild_all::rebuild_relations(&lib, &lock_opts)?)?,
        "neighbors" => {
            let [path] = a.positional.as_slice() else { return Err(Error::usage("neighbors takes one PATH")) };
            let path = crate::library::normalise(path)?;
            if !lib.path(&path).exists() {
                return Err(Error::msg(format!("'{path}' is not in the library {}", lib.dir.display())));
            }
            let hops = f.hops.unwrap_or(graph::MAX_GRAPH_HOPS);
            let g = graph::load(&lib)?;
            let reached = g.neighbors(&path, hops, f.max.unwrap_or(graph::MAX_GRAPH_EXPAND));
            if table {
                let rows: Vec<Vec<String>> =
                    reached.iter().map(|r| vec![format!("H{}", r.hop), r.path.into(), r.via.into()]).collect();
                out.text(&jsonl::table(&["Hop", "Path", "Via"], &rows))?;
            } else {
                reached.iter().try_for_each(|r| out.record(r))?;
            }
            if reached.is_empty() {
                crate::out::warn("kb-relate", &format!("{path} has no neighbours within {hops} hops"));
                out.raise(Exit::Negative);
            }
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
                if f.write { lifecycle::write(&lib, &patterns, !f.no_commit, &lock_opts)? } else { Vec::new() };
            lifecycle::print(&patterns, &written, table, &mut out)?;
        }
        "promote" => {
            let entries: Vec<_> = scan::library(&lib).docs.into_iter().map(|d| d.entry).collect();
            let cands = raise_trust::candidates(&entries, &usage::load(&lib)?);
            if f.dry_run {
                // A dry run promotes nothing: `promoted` stays false and
                // `would_promote` says what a real run would do.
                for c in &cands {
                    let mut rec = serde_json::to_value(c).map_err(|e| Error::msg(e.to_string()))?;
                    rec["promoted"] = json!(false);
                    rec["would_promote"] = json!(c.promoted);
                    rec["dry_run"] = json!(true);
                    out.record(&rec)?;
                }
            } else {
                raise_trust::apply(&lib, &cands, !f.no_commit, &lock_opts)?;
                cands.iter().try_for_each(|c| out.record(c))?;
            }
        }
        other => return Err(Error::usage(format!("unknown command '{other}'"))),
    }
    out.finish()
}
