//! `kb-append skill …`: the skill actions of `kb::skills`, under the
//! permissions a `skill review` set, narrowed by this call's own flags.

use super::flags::Flags;
use crate::cli::args::Args;
use crate::error::Error;
use crate::out::jsonl::Out;
use crate::skills::{self, permissions::Permissions};
use crate::write::{self, Options};
use crate::Library;

/// Runs `skill ACTION …` and prints its records.
pub fn run(a: &Args, f: &Flags, lib: &Library, opts: &Options, out: &mut Out) -> Result<(), Error> {
    let file = f.content_file.as_deref();
    let content = || write::bytes_from_args(f.content.as_deref(), file, opts.max_bytes).map(|(b, _)| b);
    let permissions = Permissions::from_env().narrow(&Permissions::new(f.allow_edit.clone(), !f.no_create));
    let s = skills::Options { commit: opts.commit, lock: opts.lock.clone(), permissions };
    let flags = skills::action::Flags {
        stage: f.stage.clone(),
        old_string: f.old_string.clone(),
        new_string: f.new_string.clone(),
        file_path: f.file_path.clone(),
        to: f.to.clone(),
        format: f.format,
        calls: f.calls,
        interval: f.interval,
        replace_all: f.replace_all,
    };
    let action = a.cmd.trim_start_matches("skill ").to_string();
    let words: Vec<String> = std::iter::once(action).chain(a.positional.iter().cloned()).collect();
    let recs = skills::action::run(lib, &words, &flags, f.notebook.as_deref(), content, &s)?;
    skills::action::print(out, recs)
}
