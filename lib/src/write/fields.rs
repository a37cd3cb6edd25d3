//! Setting one frontmatter field in several documents, as one journaled
//! batch: the thinking-pattern lifecycle's `state` and skill promotion's
//! `trust_tier`. The reports compute what to set; this writer sets it.

use crate::derived::index;
use crate::error::Result;
use crate::fs::crash::{self, Step};
use crate::library::entry::Entry;
use crate::library::git;
use crate::library::Library;
use crate::lock;

use super::journal;

/// Sets one frontmatter field in several documents under the lock, keeps
/// the indexes in step and commits them. Shared by the lifecycle's `--write`
/// and skill promotion. Journaled like a batch (`journal::set_field`, which
/// a rebuild's effectiveness_mark clearing uses too): the documents land,
/// then are indexed and committed; a kill from the
/// journal on leaves each document old or new, and the next writer indexes
/// and commits those that landed (a rerun sets the rest).
pub fn set(
    lib: &Library,
    changes: &[(&str, &str)],
    key: &str,
    commit: bool,
    message: &str,
    opts: &lock::Options,
) -> Result<Vec<String>> {
    if changes.is_empty() {
        return Ok(Vec::new());
    }
    lock::with_lock(lib, opts, || {
        journal::note(crate::write::recover(lib)?);
        let planned = journal::set_field(lib, changes, key, commit, message)?;
        if planned.is_empty() {
            return Ok(Vec::new());
        }
        let written: Vec<String> = planned.iter().map(|(p, _)| p.clone()).collect();
        let updated: Vec<(String, Option<Entry>)> =
            planned.iter().map(|(p, new)| (p.clone(), Entry::from_text(p, new))).collect();
        let mut paths = written.clone();
        paths.extend(index::update(lib, &updated)?);
        crash::at(Step::Index);
        let committed = if commit { git::commit(lib, &paths, message).map(drop) } else { Ok(()) };
        if committed.is_ok() && commit {
            crash::at(Step::Committed);
        }
        journal::end(lib)?;
        committed?;
        Ok(written)
    })
}
