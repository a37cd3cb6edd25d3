//! `kb-append`: the library's only writer (seed 000 `library write`). Four
//! programs share one flag namespace — the writer, skills, sync with its
//! merge drivers, and compaction — so this file only dispatches; each
//! family's parsing lives in a module of `append/`.

mod answer;
mod flags;
mod meta;
mod quarantine;
mod skill;
mod spec;
mod sync;
mod write;

pub use spec::SPEC;

use super::args::{lock_options, Args};
use crate::error::{Error, Exit};
use crate::maintain::compact;
use crate::out::jsonl::Out;
use crate::write::Options;
use crate::Library;
pub use flags::Flags;

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("append.txt");

/// Runs the parsed command line.
pub fn run(a: Args) -> Result<Exit, Error> {
    let f = Flags::from_args(&a)?;
    let mut opts = Options { commit: !f.no_commit, lock: lock_options(f.timeout.as_deref())?, ..Options::default() };
    if let Some(m) = f.max_bytes {
        opts.max_bytes = m;
    }
    let mut out = Out::stdout("kb-append");
    if super::args::generic_table(f.format, a.cmd, &["skill list", "quarantine"]) {
        out.as_tables();
    }
    let lib = || Library::resolve(f.root.as_deref());
    match a.cmd {
        "" if f.justfile => return meta::justfile(),
        "" | "skill" => return Err(missing(&a)),
        "quarantine" if !a.positional.is_empty() => {
            return Err(Error::usage(format!("unknown quarantine action '{}' (release, drop)", a.positional[0])))
        }
        "man" => meta::man(&a, &mut out)?,
        "completions" => meta::completions(&a, &mut out)?,
        "init" => sync::init(&f, &opts, &mut out)?,
        "write" => write::write(&a, &f, &lib()?, &opts, &mut out)?,
        "batch" => write::batch(&lib()?, &opts, &mut out)?,
        "event" => write::event(&a, &f, &lib()?, &opts, &mut out)?,
        "promote-answer" => answer::run(&a, &f, &lib()?, &opts, &mut out)?,
        "compact" => {
            let days = match f.older_than.as_deref() {
                Some(d) => (crate::clock::parse_duration(d)?.as_secs() / 86_400) as i64,
                None => 90,
            };
            out.record(&compact::compact(&lib()?, days, opts.commit, &opts.lock)?)?;
        }
        c if c.starts_with("skill ") => skill::run(&a, &f, &lib()?, &opts, &mut out)?,
        "sync" => sync::sync(&f, &lib()?, opts, &mut out)?,
        "resolve" => sync::resolve(&a, &f, &lib()?, &opts, &mut out)?,
        "quarantine" | "quarantine release" | "quarantine drop" => {
            quarantine::quarantine(&a, &f, &lib()?, &opts, &mut out)?
        }
        "merge-log" | "merge-derived" => sync::merge_driver(&a)?,
        other => return Err(Error::usage(format!("unknown command '{other}'"))),
    }
    out.finish()
}

/// The error for a missing command or skill action.
fn missing(a: &Args) -> Error {
    const ACTIONS: &str = "create, edit, patch, delete, write-file, remove-file, promote, list, nudge, review";
    Error::usage(match a.positional.first() {
        Some(w) => format!("unknown skill action '{w}' ({ACTIONS})"),
        None if a.cmd == "skill" => format!("skill needs an action: {ACTIONS}"),
        None => {
            "missing command (init, write, batch, event, compact, skill, sync, resolve, quarantine; see --help)".into()
        }
    })
}
