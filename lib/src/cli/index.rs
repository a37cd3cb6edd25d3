//! `kb-index`: what is in the library (seed 000 list, status, rebuild-index,
//! check-staleness and the maintain modes built on them).

use super::args::{Args, Cmd, Spec};
use crate::derived::{consistency, rebuild_index};
use crate::error::{Context, Error, Exit};
use crate::library::scan;
use crate::maintain::schedule;
use crate::out::jsonl::Out;
use crate::out::printable;
use crate::report::{changes, listing, stale, status};
use crate::{clock, lock, Library};

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("index.txt");

const LIST: &[&str] = &["root", "type", "topic", "format"];
const LOCKED: &[&str] = &["root", "timeout"];
const CRON: &[&str] = &["root", "just", "justfile"];
const STALE: &[&str] = &["root", "days", "format"];
const STATUS: &[&str] = &["root", "format", "timeout"];

/// kb-index's subcommands and the flags each uses.
pub static SPEC: Spec = Spec::new(
    "kb-index",
    USAGE,
    &[
        Cmd::new("", "", LIST, "list (the default command)"),
        Cmd::new("list", "", LIST, "library contents per category"),
        Cmd::new(
            "rebuild",
            "",
            &["root", "incremental", "no-commit", "timeout"],
            "regenerate every .index.md, .master-index.md and .ioc.md",
        ),
        Cmd::new("check", "", LOCKED, "index rows vs files; logs .inconsistency.log; exit 1 on problems"),
        Cmd::new("stale", "", STALE, "stale references and provisional experiences (report only)"),
        Cmd::new("status", "", STATUS, "the six audit dimensions; exit 1 when one needs attention"),
        Cmd::new("quick", "", LOCKED, "re-index what changed since .last-maintained"),
        Cmd::new("scheduled", "", &["root", "force", "no-commit", "timeout"], "the 24 h-gated daily maintenance"),
        Cmd::new("commit", "full|scheduled", &["root"], "commit every library change as task-ai(library):maintain ..."),
        Cmd::new("cron install", "", CRON, "add the daily `just maintain scheduled` line to the crontab"),
        Cmd::new(
            "changes",
            "",
            &["root", "notebook", "timeout"],
            "what was written, referenced or archived since the notebook's last read",
        ),
        Cmd::new("cron uninstall", "", &["root"], "remove this library's cron line"),
    ],
);

/// Runs the parsed command line.
pub fn run(a: Args) -> Result<Exit, Error> {
    let (lib, lock_opts, table) = (Library::resolve(a.root())?, a.lock_options()?, a.table()?);
    let mut out = Out::stdout("kb-index");
    match a.cmd {
        "" | "list" => listing::print(&lib, &listing::Filter::new(a.get("type"), a.get("topic")), table, &mut out)?,
        "rebuild" => {
            let opts = rebuild_index::Options {
                incremental: a.on("incremental"),
                commit: !a.on("no-commit"),
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
            let nb = a.get("notebook").ok_or_else(|| Error::usage("changes needs --notebook NB"))?;
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
            let found = stale::all(&entries, &first, clock::now()?, a.num("days")?);
            if table {
                out.text(&stale::table(&found))?;
            } else {
                found.iter().try_for_each(|s| out.record(s))?;
            }
        }
        "status" => status::print(&status::audit(&lib, &lock_opts)?, table, &mut out)?,
        "quick" => out.record(&schedule::quick(&lib, &lock_opts)?)?,
        "scheduled" => out.record(&schedule::scheduled(&lib, a.on("force"), !a.on("no-commit"), &lock_opts)?)?,
        "commit" => {
            let [kind] = a.positional.as_slice() else {
                return Err(Error::usage("commit takes full or scheduled"));
            };
            let msg = schedule::commit_message(kind)?;
            let committed = schedule::commit_all(&lib, &msg)?;
            out.record(&serde_json::json!({"record": "commit", "message": msg, "committed": committed}))?;
        }
        "cron install" => {
            let jf = a.get("justfile").ok_or_else(|| Error::usage("cron install needs --justfile"))?;
            let exe = std::env::current_exe().ctx(|| "locating kb-index")?;
            let bin_dir = exe.parent().unwrap_or(std::path::Path::new("/"));
            let just = a.get("just").unwrap_or("just");
            out.record(&schedule::cron_install(&lib, &schedule::CronCommand { just, justfile: jf, bin_dir })?)?
        }
        "cron uninstall" => out.record(&schedule::cron_uninstall(&lib)?)?,
        other => return Err(Error::usage(format!("unknown command '{other}'"))),
    }
    out.finish()
}
