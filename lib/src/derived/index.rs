//! The generated indexes (seed 000 step 5 and `--rebuild-index`): one
//! `.index.md` per directory that holds documents and the flat
//! `.master-index.md`. Both are pure functions of the documents'
//! frontmatter, rows sorted by file, so updating one row incrementally gives
//! the same bytes as a full rebuild.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use rayon::prelude::*;

use crate::error::Result;
use crate::fs::atomic;
use crate::library::entry::{self, Entry};
use crate::library::scan;
use crate::library::Library;

/// A directory index's file name.
pub const INDEX: &str = ".index.md";
/// The flat index's file name.
pub const MASTER: &str = ".master-index.md";
/// The first line of every generated index; files without it are not ours.
pub const MARK: &str = "<!-- kb-tools: generated from frontmatter; do not edit (kb-index rebuild) -->";

const DIR_HEADER: &str = "| file | topic | version | type | keywords | quality_status | last_verified_at | trust_tier |\n|---|---|---|---|---|---|---|---|\n";
const MASTER_HEADER: &str = "| path | category | topic | type | keywords | source | quality_status | trust_tier |\n|---|---|---|---|---|---|---|---|\n";

/// Rows of one index, keyed by their first cell.
type Rows = BTreeMap<String, String>;

/// A table cell: `|` escaped, line ends as spaces, and control or
/// direction-changing characters shown escaped, so a title cannot drive
/// the terminal or viewer that shows the index.
fn cell(s: &str) -> String {
    crate::out::printable(&path_cell(s), false).into_owned()
}

/// The first cell, a file's path, which readers match against the files:
/// kept as it is (the writer's name rules refuse control characters, and
/// sync refuses them from peers).
fn path_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn opt(s: &Option<String>) -> String {
    s.as_deref().map(cell).unwrap_or_default()
}

fn dir_key(e: &Entry) -> String {
    let dir = entry::classify(&e.path).map(|i| i.index_dir).unwrap_or_default();
    if dir.is_empty() {
        e.path.clone()
    } else {
        e.path[dir.len() + 1..].to_string()
    }
}

/// The row of an entry in its directory's `.index.md`.
pub fn dir_row(e: &Entry) -> (String, String) {
    let key = dir_key(e);
    let row = format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
        path_cell(&key),
        cell(&e.topic),
        e.version.map(|v| v.to_string()).unwrap_or_default(),
        opt(&e.doc_type),
        cell(&e.keywords.join(", ")),
        opt(&e.quality_status),
        opt(&e.last_verified_at),
        opt(&e.trust_tier),
    );
    (key, row)
}

/// The row of an entry in `.master-index.md`.
pub fn master_row(e: &Entry) -> (String, String) {
    let row = format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
        path_cell(&e.path),
        e.category.as_str(),
        cell(&e.topic),
        opt(&e.doc_type),
        cell(&e.keywords.join(", ")),
        opt(&e.source),
        opt(&e.quality_status),
        opt(&e.trust_tier),
    );
    (e.path.clone(), row)
}

fn render(title: &str, header: &str, rows: &Rows) -> String {
    let mut out = format!("{MARK}\n# {title}\n\n{header}");
    for row in rows.values() {
        out.push_str(row);
    }
    out
}

fn dir_title(dir: &str) -> String {
    if dir.is_empty() {
        "Index of the library root".into()
    } else {
        format!("Index of {dir}")
    }
}

/// Parses a generated index back into rows; `None` when it is missing a
/// part of the exact generated shape (then it is rebuilt, not trusted).
fn parse(text: &str, title: &str, header: &str) -> Option<Rows> {
    let head = format!("{MARK}\n# {title}\n\n{header}");
    let body = text.strip_prefix(head.as_str())?;
    // Collected first: rows come sorted, so the map is bulk-built in linear time.
    let mut rows = Vec::new();
    for line in body.split_inclusive('\n') {
        if !line.ends_with('\n') {
            return None;
        }
        let inner = line.strip_prefix("| ")?;
        let key = inner.split(" | ").next()?.replace("\\|", "|");
        rows.push((key, line.to_string()));
    }
    Some(rows.into_iter().collect())
}

fn index_path(dir: &str) -> String {
    if dir.is_empty() {
        INDEX.to_string()
    } else {
        format!("{dir}/{INDEX}")
    }
}

/// Writes an index's rows, or removes the file when there are none.
/// Returns whether anything on disk changed.
fn store(lib: &Library, rel: &str, title: &str, header: &str, rows: &Rows) -> Result<bool> {
    let p = lib.path(rel);
    if rows.is_empty() && rel != MASTER {
        return match fs::remove_file(&p) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(crate::error::Error::io(format!("removing {}", p.display()), e)),
        };
    }
    atomic::write_if_changed(&p, render(title, header, rows).as_bytes())
}

/// Incremental update after writes: `changed` holds each touched document's
/// new entry (`None` when it was deleted). Only the touched directories'
/// indexes and the master index are read and written. Callers hold the
/// library lock. Returns the library-relative index files that changed.
pub fn update(lib: &Library, changed: &[(String, Option<Entry>)]) -> Result<Vec<String>> {
    let mut by_dir: BTreeMap<String, Vec<(&str, Option<&Entry>)>> = BTreeMap::new();
    for (path, e) in changed {
        if let Some(info) = entry::classify(path) {
            by_dir.entry(info.index_dir).or_default().push((path, e.as_ref()));
        }
    }
    let mut touched = Vec::new();
    for (dir, items) in &by_dir {
        let rel = index_path(dir);
        let title = dir_title(dir);
        // A derived file: missing, unreadable or hand-edited, it is rebuilt
        // from the documents (and replaced whole by `store`).
        let existing = fs::read_to_string(lib.path(&rel)).ok();
        let mut rows = match existing.as_deref().map(|t| parse(t, &title, DIR_HEADER)) {
            Some(Some(rows)) => rows,
            // The changed documents' rows come from `items` below: only
            // the others are read (a first batch into a directory reads none).
            _ => dir_rows_from_disk(lib, dir, &items.iter().map(|(p, _)| *p).collect())?,
        };
        for (path, e) in items {
            match e {
                Some(e) => {
                    let (k, r) = dir_row(e);
                    rows.insert(k, r);
                }
                None => {
                    let key = entry::classify(path).map(|_| {
                        if dir.is_empty() {
                            path.to_string()
                        } else {
                            path[dir.len() + 1..].to_string()
                        }
                    });
                    if let Some(k) = key {
                        rows.remove(&k);
                    }
                }
            }
        }
        if store(lib, &rel, &title, DIR_HEADER, &rows)? {
            touched.push(rel);
        }
    }
    // Derived, as above: anything but our own shape is rebuilt.
    let existing = fs::read_to_string(lib.path(MASTER)).ok();
    let mut master = match existing.as_deref().map(|t| parse(t, "Master index", MASTER_HEADER)) {
        Some(Some(rows)) => rows,
        // The changed documents' rows come from `changed` below; the
        // others are read (entries only, in parallel), as a rebuild would.
        _ => {
            let skip: BTreeSet<&str> = changed.iter().map(|(p, _)| p.as_str()).collect();
            let (paths, _) = scan::document_paths(lib);
            let entries: Vec<Entry> = paths
                .par_iter()
                .filter(|p| !skip.contains(p.as_str()))
                .filter_map(|p| scan::read_entry(lib, p).0.map(|(e, _, _)| e))
                .collect();
            master_rows(&entries.iter().collect::<Vec<_>>())
        }
    };
    for (path, e) in changed {
        match e {
            Some(e) => {
                let (k, r) = master_row(e);
                master.insert(k, r);
            }
            None => {
                master.remove(path);
            }
        }
    }
    if store(lib, MASTER, "Master index", MASTER_HEADER, &master)? {
        touched.push(MASTER.to_string());
    }
    Ok(touched)
}

/// The rows of one directory read from its documents, for an index that is
/// missing or not in the generated shape. Only that directory is read
/// (skill stages: each skill's `SKILL.md`).
/// A directory that is gone has no rows; one that cannot be listed, or a
/// document in it that cannot be read, is an error (not a missing row).
fn dir_rows_from_disk(lib: &Library, dir: &str, skip: &BTreeSet<&str>) -> Result<Rows> {
    let mut paths = Vec::new();
    let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
    let listing = match fs::read_dir(lib.path(dir)) {
        Ok(rd) => rd.collect::<std::io::Result<Vec<_>>>(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    };
    for e in listing.map_err(|e| crate::Error::io(format!("listing {}", lib.path(dir).display()), e))? {
        // The walker skips names that are not UTF-8 (a problem of the full scan).
        let Ok(name) = e.file_name().into_string() else { continue };
        paths.push(format!("{prefix}{name}"));
        paths.push(format!("{prefix}{name}/SKILL.md"));
    }
    let mut rows = Rows::new();
    let wanted = |p: &&String| {
        !skip.contains(p.as_str()) && entry::classify(p).is_some_and(|i| i.index_dir == dir) && lib.path(p).is_file()
    };
    for p in paths.iter().filter(wanted) {
        if let Some(doc) = scan::read_present(lib, p)? {
            let (k, r) = dir_row(&doc.entry);
            rows.insert(k, r);
        }
    }
    Ok(rows)
}

fn master_rows(entries: &[&Entry]) -> Rows {
    entries.iter().map(|e| master_row(e)).collect()
}

/// The full rebuild: every directory index and the master index from the
/// entries given (a whole-library scan), removing generated indexes of
/// directories that no longer hold documents. Callers hold the library
/// lock. Returns the index files that changed.
pub fn rebuild(lib: &Library, entries: &[&Entry]) -> Result<Vec<String>> {
    let mut by_dir: BTreeMap<String, Rows> = BTreeMap::new();
    for e in entries {
        if let Some(info) = entry::classify(&e.path) {
            let (k, r) = dir_row(e);
            by_dir.entry(info.index_dir).or_default().insert(k, r);
        }
    }
    let mut touched = Vec::new();
    let wanted: BTreeSet<String> = by_dir.keys().map(|d| index_path(d)).collect();
    for existing in generated_indexes(lib) {
        if !wanted.contains(&existing) {
            fs::remove_file(lib.path(&existing))
                .map_err(|e| crate::error::Error::io(format!("removing {existing}"), e))?;
            touched.push(existing);
        }
    }
    for (dir, rows) in &by_dir {
        let rel = index_path(dir);
        if store(lib, &rel, &dir_title(dir), DIR_HEADER, rows)? {
            touched.push(rel);
        }
    }
    if store(lib, MASTER, "Master index", MASTER_HEADER, &master_rows(entries))? {
        touched.push(MASTER.to_string());
    }
    touched.sort();
    Ok(touched)
}

/// Every `.index.md` in the library that kb-tools generated.
pub fn generated_indexes(lib: &Library) -> Vec<String> {
    let walk = crate::fs::walk::walk(&lib.dir, |_, n| n != ".git");
    walk.files
        .into_iter()
        .filter(|rel| rel.rsplit('/').next() == Some(INDEX))
        .filter(|rel| fs::read_to_string(lib.path(rel)).is_ok_and(|t| t.starts_with(MARK)))
        .collect()
}

/// The path of a directory's `.index.md` (the root's is `.index.md`).
pub fn index_file(dir: &str) -> String {
    index_path(dir)
}

/// The rows (keyed by first cell) of any index table: every `| ... |` line
/// after the header and separator rows. Reads hand-written indexes too, so
/// `kb-index check` can compare them with the files on disk.
pub fn table_rows(text: &str) -> Rows {
    let mut rows = Rows::new();
    let mut header_seen = false;
    for line in text.lines() {
        let Some(inner) = line.strip_prefix('|') else {
            header_seen = false;
            continue;
        };
        if !header_seen {
            header_seen = true;
            continue;
        }
        if inner.chars().all(|c| matches!(c, '-' | ':' | '|' | ' ')) {
            continue;
        }
        let first = inner.split(" |").next().unwrap_or("").trim();
        rows.insert(first.replace("\\|", "|"), format!("{line}\n"));
    }
    rows
}

/// The incremental form of [`rebuild`]: rewrites only the indexes of
/// `dirs` (removing those left without documents) and, when `master` is
/// set, `.master-index.md`, from the full entry set. The files it writes
/// are byte-identical to what `rebuild` writes for them. Callers hold the
/// library lock. Returns the index files that changed.
pub fn rebuild_dirs(lib: &Library, entries: &[&Entry], dirs: &BTreeSet<String>, master: bool) -> Result<Vec<String>> {
    let mut by_dir: BTreeMap<&str, Rows> = dirs.iter().map(|d| (d.as_str(), Rows::new())).collect();
    if !dirs.is_empty() {
        for e in entries {
            if let Some(info) = entry::classify(&e.path) {
                if let Some(rows) = by_dir.get_mut(info.index_dir.as_str()) {
                    let (k, r) = dir_row(e);
                    rows.insert(k, r);
                }
            }
        }
    }
    let mut touched = Vec::new();
    for (dir, rows) in &by_dir {
        let rel = index_path(dir);
        if store(lib, &rel, &dir_title(dir), DIR_HEADER, rows)? {
            touched.push(rel);
        }
    }
    if master && store(lib, MASTER, "Master index", MASTER_HEADER, &master_rows(entries))? {
        touched.push(MASTER.to_string());
    }
    touched.sort();
    Ok(touched)
}
