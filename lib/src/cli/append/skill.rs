//! `kb-append skill …`: the skill actions of `kb::skills`, under the
//! permissions a `skill review` set, narrowed by this call's own flags.

use crate::cli::args::Args;
use crate::error::Error;
use crate::out::jsonl::Out;
use crate::skills::{self, permissions::Permissions};
use crate::write::{self, Options};
use crate::Library;

/// Runs `skill ACTION …` and prints its records.
pub fn run(a: &Args, lib: &Library, opts: &Options, out: &mut Out) -> Result<(), Error> {
    let file = a.get("content-file").map(std::path::Path::new);
    let content = || write::bytes_from_args(a.get("content"), file, opts.max_bytes).map(|(b, _)| b);
    let permissions = Permissions::from_env().narrow(&Permissions::new(a.all("allow-edit"), !a.on("no-create")));
    let s = skills::Options { commit: opts.commit, lock: opts.lock.clone(), permissions };
    let mut flags = skills::cli::Flags::default();
    for f in ["stage", "old-string", "new-string", "file-path", "to", "format", "calls", "interval"] {
        if let Some(v) = a.get(f) {
            flags.set(f, v.to_string())?;
        }
    }
    flags.replace_all = a.on("replace-all");
    let action = a.cmd.trim_start_matches("skill ").to_string();
    let words: Vec<String> = std::iter::once(action).chain(a.positional.iter().cloned()).collect();
    let recs = skills::cli::run(lib, &words, &flags, a.get("notebook"), content, &s)?;
    skills::cli::print(out, recs)
}
