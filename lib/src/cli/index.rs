//! `kb-index`: what is in the library (seed 000 list, status, rebuild-index,
//! check-staleness and the maintain modes built on them).

use super::args::{format_or_default, lock_options, typed_flags, Args};
use crate::derived::{consistency, rebuild_index};
use crate::error::{Context, Error, Exit};
use crate::library::scan;
use crate::maintain::schedule;
use crate::out::jsonl::Format;
use crate::out::jsonl::Out;
use crate::out::printable;
use crate::report::{changes, listing, stale, status};
use crate::{clock, lock, Library};

mod spec;
pub use spec::SPEC;

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("index.txt");

typed_flags! { USAGE;
    /// kb-index's flags.
    pub struct Flags {
        root: Option<std::path::PathBuf> = "root",
        type_: Option<String> = "type",
        topic: Option<String> = "topic",
        format: Option<Format> = "format",
        incremental: bool = "incremental",
        no_commit: bool = "no-commit",
        days: Option<u64> = "days",
        force: bool = "force",
        just: Option<String> = "just",
        justfile: Option<String> = "justfile",
        notebook: Option<String> = "notebook",
        timeout: Option<String> = "timeout",
    }
}

/// Runs the parsed command line.
pub fn run(a: Args) -> Result<Exit, Error> {
    let f = Flags::from_args(&a)?;
    let lib = Library::resolve(f.root.as_deref())?;
    let (lock_opts, table) = (lock_options(f.timeout.as_deref())?, format_or_default(f.format) == Format::Table);
    let mut out = Out::stdout("kb-index");
    if super::args::generic_table(f.format, a.cmd, &["", "list", "stale", "status"]) {
        out.as_tables();
    }
    match a.cmd {
        "" | "list" => {
            listing::print(&lib, &listing::Filter::new(f.type_.as_deref(), f.topic.as_deref()), table, &mut out)?
        }
        "rebuild" => {
            let opts = rebuild_index::Options {
                incremental: f.incremental,
                commit: !f.no_commit,
                lock: lock_opts,
                recover: crate::write::recover_noted,
            };
            let r = rebuild_index::run(&lib, &opts)?;
            for p in &r.problems {
                eprintln!("kb-index: {}", printable(&format!("{}: {} ({})", p.path, p.message, p.kind), false));
            }
            out.record(&r)?;
        }
        "changes" => {
            let nb = f.notebook.as_deref().ok_or_else(|| Error::usage("changes needs --notebook NB"))?;
            changes::read(&lib, nb, &lock_opts)?.print(&mut out)?;
        }
        "check" => {
            let problems = consistency::check(&lib, &scan::library(&lib))?;
            lock::with_lock(&lib, &lock_opts, || consistency::log(&lib, &problems))?;
            for p in &problems {
                eprintln!("kb-index: {}", printable(&format!("{}: {}: {}", p.kind, p.path, p.message), false));
                out.record(p)?;
            }
            out.raise(if problems.is_empty() { Exit::Success } else { Exit::Negative });
        }
        "stale" => {
            let entries: Vec<_> = scan::library(&lib).docs.into_iter().map(|d| d.entry).collect();
            let first = stale::first_writes(&crate::library::relations::history(&lib)?);
            let found = stale::all(&entries, &first, clock::now()?, f.days);
            if table {
                out.text(&stale::table(&found))?;
            } else {
                found.iter().try_for_each(|s| out.record(s))?;
            }
        }
        "status" => status::print(&status::audit(&lib, &lock_opts)?, table, &mut out)?,
        "quick" => out.record(&schedule::quick(&lib, &lock_opts)?)?,
        "scheduled" => out.record(&schedule::scheduled(&lib, f.force, !f.no_commit, &lock_opts)?)?,
        "commit" => {
            let [kind] = a.positional.as_slice() else {
                return Err(Error::usage("commit takes full or scheduled"));
            };
            let msg = schedule::commit_message(kind)?;
            let committed = schedule::commit_all(&lib, &msg)?;
            out.record(&serde_json::json!({"record": "commit", "message": msg, "committed": committed}))?;
        }
        "cron install" => {
            let jf = f.justfile.as_deref().ok_or_else(|| Error::usage("cron install needs --justfile"))?;
            let exe = std::env::current_exe().ctx(|| "locating kb-index")?;
            let bin_dir = exe.parent().unwrap_or(std::path::Path::new("/"));
            let just = f.just.as_deref().unwrap_or("just");
            out.record(&schedule::cron_install(&lib, &schedule::CronCommand { just, justfile: jf, bin_dir })?)?
        }
        "cron uninstall" => out.record(&schedule::cron_uninstall(&lib)?)?,
        other => return Err(Error::usage(format!("unknown command '{other}'"))),
    }
    out.finish()
}
