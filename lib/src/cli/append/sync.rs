//! `kb-append init`, `sync`, `resolve` and the two git merge drivers: the
//! library as a git repository shared with peers.

use serde_json::json;

use super::flags::Flags;
use crate::cli::args::Args;
use crate::error::{Error, Exit};
use crate::out::jsonl::Out;
use crate::write::Options;
use crate::{sync, Library};

/// `init`: create the layout and commit the files it wrote, so a fresh
/// library starts with a clean tree.
pub fn init(f: &Flags, opts: &Options, out: &mut Out) -> Result<(), Error> {
    let lib = Library::for_init(f.root.as_deref())?;
    let created = sync::init(&lib)?.created;
    let files: Vec<String> = created.iter().filter(|p| lib.path(p).is_file()).cloned().collect();
    let committed = opts.commit && crate::library::git::commit(&lib, &files, "task-ai(library):init")?;
    out.record(&json!({"record": "init", "dir": lib.dir, "created": created, "committed": committed}))
}

/// `sync`: commit, fetch, merge and push.
pub fn sync(f: &Flags, lib: &Library, opts: Options, out: &mut Out) -> Result<(), Error> {
    let o = sync::Options {
        remote: f.remote.last().cloned(),
        branch: f.branch.clone(),
        push: !f.no_push,
        lock: opts.lock,
        limits: limits(f)?,
        min_interval: f.min_interval.as_deref().map(crate::clock::parse_duration).transpose()?,
        prune_idle: f.prune_idle.as_deref().map(days_or_duration).transpose()?,
        max_refs: f.max_refs.unwrap_or(sync::Options::default().max_refs),
        ..Default::default()
    };
    // `--remote A --remote B`: a relay, one record per sync made.
    let remotes = &f.remote;
    let results = if remotes.len() > 1 { sync::relay(lib, &o, remotes) } else { vec![sync::sync(lib, &o)] };
    for result in results {
        match result {
            // A peer's commit was refused: reported, exit 2.
            Ok(report) if !report.rejected.is_empty() => {
                for r in &report.rejected {
                    crate::out::warn("kb-append", &format!("sync rejected {}: {}", r.path, r.reason));
                }
                out.record(&report)?;
                out.raise(Exit::Failure);
            }
            Ok(report) => out.record(&report)?,
            Err(e) => out.error(&e.to_string(), json!({"command": "sync"}))?,
        }
    }
    Ok(())
}

/// `--prune-idle`: a bare number is days (refs idle for seconds are
/// never what anyone means), else a duration such as `12h`.
fn days_or_duration(s: &str) -> Result<std::time::Duration, Error> {
    match s.trim().parse::<u64>() {
        Ok(days) => Ok(std::time::Duration::from_secs(days.saturating_mul(86_400))),
        Err(_) => crate::clock::parse_duration(s),
    }
}

/// The boundary's caps and choices from the flags.
fn limits(f: &Flags) -> Result<sync::admit::Limits, Error> {
    let mut l = sync::admit::Limits::default();
    if let Some(n) = f.max_commit_files {
        l.max_files = n;
    }
    if let Some(n) = f.max_commit_bytes {
        l.max_bytes = n;
    }
    if let Some(n) = f.max_file_bytes {
        l.max_file_bytes = n;
    }
    if let Some(n) = f.max_deletes {
        l.max_deletes = n;
    }
    l.accept_deletes = f.accept_deletes;
    l.merge_outside = f.merge_outside;
    Ok(l)
}

/// `resolve PATH --keep ours|theirs|FILE`: end a kept conflict.
pub fn resolve(a: &Args, f: &Flags, lib: &Library, opts: &Options, out: &mut Out) -> Result<(), Error> {
    let [path] = a.positional.as_slice() else {
        return Err(Error::usage("resolve takes exactly one PATH"));
    };
    let keep = f.keep.as_deref().ok_or_else(|| Error::usage("resolve needs --keep ours|theirs|FILE"))?;
    match sync::resolve::resolve(lib, path, &sync::resolve::Keep::parse(keep), opts.commit, &opts.lock) {
        Ok(r) => out.record(&r),
        Err(e) => out.error(&e.to_string(), json!({"command": "resolve"})),
    }
}

/// `merge-log` and `merge-derived`: what git runs as merge drivers.
pub fn merge_driver(a: &Args) -> Result<(), Error> {
    match (a.cmd, a.positional.as_slice()) {
        ("merge-log", [base, ours, theirs]) => sync::drivers::merge_log_files(base, ours, theirs),
        ("merge-log", _) => Err(Error::usage("merge-log takes BASE OURS THEIRS")),
        (_, [_, _, _, path]) => sync::drivers::merge_derived(path),
        _ => Err(Error::usage("merge-derived takes BASE OURS THEIRS PATH")),
    }
}
