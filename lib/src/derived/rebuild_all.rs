//! The full rebuild of every derived file from documents and logs alone
//! (DESIGN.md "Many machines": derived files are never merged, only
//! rebuilt). Incremental writers must leave the same bytes as this.

use crate::derived::index;
use crate::error::Result;
use crate::library::relations;
use crate::library::scan::{self, Problem};
use crate::library::Library;

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
    if crate::fs::atomic::write_if_changed(&lib.path(relations::FILE), relations::render(&edges).as_bytes())? {
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

/// What `kb-relate rebuild` reports.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RelationsRebuilt {
    /// Always `relations`.
    pub record: &'static str,
    /// Edges in the file.
    pub edges: usize,
    /// Edges per kind.
    pub kinds: std::collections::BTreeMap<String, usize>,
    /// Whether the file changed.
    pub changed: bool,
    /// Files that could not be read (their edges are missing).
    pub problems: Vec<Problem>,
}

/// Seed 000 `--rebuild-relations`: `.relations.jsonl` from the changelog
/// (with its archives), frontmatter `related:` and Markdown links, in
/// sorted order, under the lock.
pub fn rebuild_relations(lib: &Library, opts: &crate::lock::Options) -> Result<RelationsRebuilt> {
    crate::lock::with_lock(lib, opts, || {
        let scan = scan::library(lib);
        let edges = relations::all_edges(scan.docs.iter().map(|d| d.edges.as_slice()), lib)?;
        let changed =
            crate::fs::atomic::write_if_changed(&lib.path(relations::FILE), relations::render(&edges).as_bytes())?;
        let mut kinds = std::collections::BTreeMap::new();
        for e in &edges {
            *kinds.entry(e.kind.clone()).or_insert(0) += 1;
        }
        Ok(RelationsRebuilt { record: "relations", edges: edges.len(), kinds, changed, problems: scan.problems })
    })
}
