//! The full rebuild of every derived file from documents and logs alone
//! (DESIGN.md "Many machines": derived files are never merged, only
//! rebuilt). Incremental writers must leave the same bytes as this.

use crate::error::Result;
use crate::index;
use crate::library::Library;
use crate::relations;
use crate::scan::{self, Problem};

/// What a rebuild changed and what it could not read.
#[derive(Debug, Default)]
pub struct Rebuilt {
    /// Library-relative derived files that changed on disk.
    pub touched: Vec<String>,
    /// Files that could not be read or parsed (still reported, never fatal).
    pub problems: Vec<Problem>,
    /// How many documents were indexed.
    pub documents: usize,
}

/// Rebuilds every `.index.md`, `.master-index.md` and `.relations.jsonl`.
/// Callers hold the library lock.
pub fn rebuild(lib: &Library) -> Result<Rebuilt> {
    let scan = scan::library(lib);
    let entries: Vec<_> = scan.docs.iter().map(|d| &d.entry).collect();
    let mut touched = index::rebuild(lib, &entries)?;
    let edges = relations::all_edges(scan.docs.iter().map(|d| d.edges.as_slice()), lib)?;
    if crate::atomic::write_if_changed(&lib.path(relations::FILE), relations::render(&edges).as_bytes())? {
        touched.push(relations::FILE.to_string());
    }
    Ok(Rebuilt { touched, problems: scan.problems, documents: scan.docs.len() })
}

/// The relation set a rebuild would write, for incremental writers that
/// find `.relations.jsonl` untrustworthy.
pub fn rebuilt_edges(lib: &Library) -> Result<std::collections::BTreeSet<relations::Edge>> {
    let scan = scan::library(lib);
    relations::all_edges(scan.docs.iter().map(|d| d.edges.as_slice()), lib)
}
