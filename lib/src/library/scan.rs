//! Reads every document of a library in parallel (rayon), in a stable path
//! order, turning unreadable files into problems instead of stopping. The
//! full rebuilds of the indexes and relations are built on it.

use std::fs;
use std::path::Path;
use std::time::UNIX_EPOCH;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::fs::walk::Why;
use crate::library::entry::{self, Entry};
use crate::library::kind;
use crate::library::relations::{self, Edge};
use crate::library::Library;

/// Documents larger than this are indexed by path only and reported.
pub const MAX_DOC_BYTES: u64 = 8 << 20;

/// One document read from disk.
#[derive(Debug, Clone)]
pub struct Doc {
    /// Its entry (path facts and frontmatter).
    pub entry: Entry,
    /// The edges its text declares.
    pub edges: Vec<Edge>,
    /// Size in bytes.
    pub size: u64,
    /// Modification time in nanoseconds since the epoch.
    pub mtime_ns: u128,
}

/// A file that could not be read or understood.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Problem {
    /// Library-relative path (or the walk error's path).
    pub path: String,
    /// What kind of problem: unreadable, not-utf8, too-large, frontmatter, walk.
    pub kind: String,
    /// What went wrong.
    pub message: String,
}

/// The result of scanning a whole library.
#[derive(Debug, Default)]
pub struct Scan {
    /// Documents sorted by path.
    pub docs: Vec<Doc>,
    /// Problems sorted by path.
    pub problems: Vec<Problem>,
}

/// Library-relative paths of every document, sorted, plus walk problems.
pub fn document_paths(lib: &Library) -> (Vec<String>, Vec<Problem>) {
    let (paths, _, problems) = walk(lib);
    (paths, problems)
}

/// The walk behind [`document_paths`], also returning every directory it
/// entered (library-relative, `""` for the root) so an incremental reader
/// can tell from their mtimes that no file was added or removed.
pub fn walk(lib: &Library) -> (Vec<String>, Vec<String>, Vec<Problem>) {
    let w = crate::fs::walk::walk(&lib.dir, kind::holds_documents);
    let paths = w.files.into_iter().filter(|rel| entry::classify(rel).is_some()).collect();
    let problems = w
        .skipped
        .iter()
        .filter(|s| s.why != Why::NotUtf8 || s.rel.ends_with(".md"))
        .map(|s| Problem {
            path: if s.why == Why::NotUtf8 { s.path.to_string_lossy().into_owned() } else { s.rel.clone() },
            kind: "walk".into(),
            message: s.message(),
        })
        .collect();
    (paths, w.dirs, problems)
}

/// Reads and parses every document in parallel; output order is by path
/// whatever the thread count.
pub fn library(lib: &Library) -> Scan {
    let (paths, mut problems) = document_paths(lib);
    let progress = crate::out::progress::Progress::new("reading documents", paths.len());
    let results: Vec<(Option<Doc>, Vec<Problem>)> = paths
        .par_iter()
        .map(|rel| {
            let r = read_doc(lib, rel);
            progress.count();
            r
        })
        .collect();
    drop(progress);
    let mut docs = Vec::with_capacity(results.len());
    for (doc, probs) in results {
        docs.extend(doc);
        problems.extend(probs);
    }
    problems.sort_by(|a, b| a.path.cmp(&b.path));
    Scan { docs, problems }
}

/// Reads one document. A file that cannot be read is a problem and no doc;
/// one that is not UTF-8 or too large is still indexed, with a problem.
pub fn read_doc(lib: &Library, rel: &str) -> (Option<Doc>, Vec<Problem>) {
    read_with(lib, rel, true)
}

/// Reads one changed document for an incremental update: `None` when it
/// is gone (a deletion) or refused by the walker's rules (a symlink, as
/// the full rebuild skips it). A document that exists but cannot be read
/// is an error, never a deletion: the update would drop its row and edges
///. Non-UTF-8 or too large still reads, as in the full scan.
pub fn read_present(lib: &Library, rel: &str) -> crate::Result<Option<Doc>> {
    let (doc, problems) = read_doc(lib, rel);
    if doc.is_some() {
        return Ok(doc);
    }
    match (problems.iter().find(|p| p.kind == "unreadable"), fs::symlink_metadata(lib.path(rel))) {
        (_, Err(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        (Some(p), _) => Err(crate::Error::msg(format!("reading {rel}: {}", p.message))),
        _ => Ok(None),
    }
}

/// Reads one document's entry, size and mtime without its edges (no
/// Markdown parse): all an index rebuild needs.
pub fn read_entry(lib: &Library, rel: &str) -> (Option<(Entry, u64, u128)>, Vec<Problem>) {
    let (doc, problems) = read_with(lib, rel, false);
    (doc.map(|d| (d.entry, d.size, d.mtime_ns)), problems)
}

fn read_with(lib: &Library, rel: &str, with_edges: bool) -> (Option<Doc>, Vec<Problem>) {
    let (meta, text, mut problems) = match read_text(lib, rel) {
        Ok(read) => read,
        Err(p) => return (None, vec![p]),
    };
    // A file system without mtimes gives 0: the stat only decides whether
    // a cache is reused, and 0 never matches a real stamp.
    let mtime_ns = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
    let Some(entry) = Entry::from_text(rel, &text) else { return (None, problems) };
    if let Some(err) = &entry.frontmatter_error {
        problems.push(Problem { path: rel.to_string(), kind: "frontmatter".into(), message: err.clone() });
    }
    let edges = if with_edges { relations::doc_edges(&entry, &text) } else { Vec::new() };
    (Some(Doc { entry, edges, size: meta.len(), mtime_ns }), problems)
}

/// A document's metadata and text, the way every reader of the library
/// takes it: larger than [`MAX_DOC_BYTES`] is read as empty and not UTF-8
/// is read lossily (each with a problem); unreadable is the error.
pub fn read_text(lib: &Library, rel: &str) -> Result<(fs::Metadata, String, Vec<Problem>), Problem> {
    let full = lib.path(rel);
    let problem = |kind: &str, message: String| Problem { path: rel.to_string(), kind: kind.into(), message };
    // No link is followed and no FIFO blocks.
    lib.check_inside(rel).map_err(|e| problem("symlink", e.to_string()))?;
    let file = crate::fs::nofollow::open_read(&full).map_err(|e| problem("unreadable", e.to_string()))?;
    let meta = file.metadata().map_err(|e| problem("unreadable", e.to_string()))?;
    let mut problems = Vec::new();
    let text = if meta.len() > MAX_DOC_BYTES {
        problems.push(problem("too-large", format!("{} bytes; indexed by path only", meta.len())));
        String::new()
    } else {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_DOC_BYTES), &mut bytes)
            .map_err(|e| problem("unreadable", e.to_string()))?;
        String::from_utf8(bytes).unwrap_or_else(|e| {
            problems.push(problem("not-utf8", "content is not UTF-8; read lossily".into()));
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        })
    };
    Ok((meta, text, problems))
}

/// A path relative to the library, `/`-separated; `None` when not UTF-8.
pub fn rel_path(root: &Path, p: &Path) -> Option<String> {
    let rel = p.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}
