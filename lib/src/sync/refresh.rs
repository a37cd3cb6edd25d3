//! The incremental rebuild after a merge (issue 11 item 1): each side's
//! derived files were right for that side, and a merge keeps one side's
//! bytes, so re-deriving the rows and edges of every document either side
//! changed since the merge base, plus the edges of every logged event,
//! gives what a full rebuild ([`crate::derived::rebuild`]) gives, at the
//! cost of the touched documents only.

use crate::derived;
use crate::entry;
use crate::error::Result;
use crate::index;
use crate::library::Library;
use crate::relations;
use crate::scan;

/// Re-derives the index rows and relation edges of the library-relative
/// `paths` (documents that changed; missing ones were deleted) and adds
/// the edges of the whole event history. Callers hold the library lock.
/// Returns the derived files that changed on disk.
pub fn documents(lib: &Library, paths: &[String]) -> Result<Vec<String>> {
    let mut entries = Vec::new();
    let mut edges = Vec::new();
    for p in paths.iter().filter(|p| entry::classify(p).is_some()) {
        match scan::read_doc(lib, p).0 {
            Some(doc) => {
                edges.push((p.clone(), doc.edges));
                entries.push((p.clone(), Some(doc.entry)));
            }
            None => {
                edges.push((p.clone(), Vec::new()));
                entries.push((p.clone(), None));
            }
        }
    }
    let mut touched = if entries.is_empty() { Vec::new() } else { index::update(lib, &entries)? };
    let events = relations::history(lib)?;
    if relations::update(lib, &edges, &events, || derived::rebuilt_edges(lib))? {
        touched.push(relations::FILE.to_string());
    }
    touched.sort();
    Ok(touched)
}

/// The full rebuild, for when a plain `git merge` left derived files of
/// one side behind (the rebuild marker) and which documents changed is not
/// known.
pub fn all(lib: &Library) -> Result<Vec<String>> {
    Ok(derived::rebuild(lib)?.touched)
}
