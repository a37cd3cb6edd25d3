//! Index consistency (seed 000 `status` dimension 1, `kb-index check`):
//! every row of every `.index.md` and of `.master-index.md` names a file
//! that exists, every document has its rows, and generated rows agree with
//! the frontmatter. Each problem is appended to `.inconsistency.log` as
//! `timestamp | kind | path` (the seed's `missing-file` and the other kinds
//! found here); `kb-index rebuild` clears the log.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use serde::Serialize;

use crate::clock;
use crate::derived::index;
use crate::error::Result;
use crate::fs::atomic;
use crate::library::changelog;
use crate::library::entry::{self, Entry};
use crate::library::scan::Scan;
use crate::library::Library;

/// The log's name under the library.
pub const LOG: &str = ".inconsistency.log";

/// One inconsistency.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(tag = "record", rename = "inconsistency")]
pub struct Inconsistency {
    /// missing-file (a row without a file), missing-row (a document without
    /// a row), missing-index, stale-row (row disagrees with frontmatter),
    /// or a scan problem: frontmatter, unreadable, not-utf8, too-large,
    /// walk, changelog-line, changelog-torn.
    pub kind: String,
    /// The library-relative path concerned.
    pub path: String,
    /// The index file holding the row, for row problems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    /// What is wrong, for people.
    pub message: String,
}

fn inc(kind: &str, path: &str, index: Option<&str>, message: String) -> Inconsistency {
    Inconsistency { kind: kind.into(), path: path.into(), index: index.map(str::to_string), message }
}

/// Compares the indexes on disk with a scan of the documents and reads the
/// changelog's bad lines. Sorted by kind, then path.
pub fn check(lib: &Library, scan: &Scan) -> Result<Vec<Inconsistency>> {
    let mut out = Vec::new();
    let mut by_dir: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
    for d in &scan.docs {
        let dir = entry::classify(&d.entry.path).map(|i| i.index_dir).unwrap_or_default();
        by_dir.entry(dir).or_default().push(&d.entry);
    }
    // Every .index.md on disk, generated or not.
    let mut index_dirs: BTreeSet<String> = BTreeSet::new();
    let walk = crate::fs::walk::walk(&lib.dir, |_, n| {
        n != ".git" && n != crate::library::kind::CACHE_DIR && n != crate::library::kind::ARCHIVE_DIR
    });
    for rel in walk.files {
        if let Some(dir) = rel.strip_suffix(index::INDEX).filter(|d| d.is_empty() || d.ends_with('/')) {
            index_dirs.insert(dir.trim_end_matches('/').to_string());
        }
    }
    for dir in index_dirs.union(&by_dir.keys().cloned().collect()) {
        let file = index::index_file(dir);
        let docs = by_dir.get(dir).map(Vec::as_slice).unwrap_or_default();
        let Ok(text) = fs::read_to_string(lib.path(&file)) else {
            out.push(inc("missing-index", &file, None, format!("{} documents have no index", docs.len())));
            continue;
        };
        let rows = index::table_rows(&text);
        let want: BTreeMap<String, String> = docs.iter().map(|e| index::dir_row(e)).collect();
        compare(lib, &file, dir, &rows, &want, text.starts_with(index::MARK), &mut out);
    }
    match fs::read_to_string(lib.path(index::MASTER)) {
        Ok(text) => {
            let rows = index::table_rows(&text);
            let want: BTreeMap<String, String> = scan.docs.iter().map(|d| index::master_row(&d.entry)).collect();
            compare(lib, index::MASTER, "", &rows, &want, text.starts_with(index::MARK), &mut out);
        }
        Err(_) if scan.docs.is_empty() => {}
        Err(_) => out.push(inc("missing-index", index::MASTER, None, "the master index is missing".into())),
    }
    for p in &scan.problems {
        out.push(inc(&p.kind, &p.path, None, p.message.clone()));
    }
    let log = changelog::read(lib)?;
    for b in &log.bad {
        out.push(inc("changelog-line", changelog::FILE, None, format!("line {}: {}", b.line, b.message)));
    }
    if log.torn {
        out.push(inc("changelog-torn", changelog::FILE, None, "the last line is torn (no newline); ignored".into()));
    }
    out.sort();
    Ok(out)
}

fn compare(
    lib: &Library,
    file: &str,
    dir: &str,
    rows: &BTreeMap<String, String>,
    want: &BTreeMap<String, String>,
    generated: bool,
    out: &mut Vec<Inconsistency>,
) {
    let full = |key: &str| if dir.is_empty() { key.to_string() } else { format!("{dir}/{key}") };
    for (key, row) in rows {
        match want.get(key) {
            None if !lib.path(&full(key)).exists() => out.push(inc(
                "missing-file",
                &full(key),
                Some(file),
                format!("{file} lists a file that does not exist"),
            )),
            None => {}
            Some(w) if generated && w != row => {
                out.push(inc("stale-row", &full(key), Some(file), format!("{file} row disagrees with the frontmatter")))
            }
            Some(_) => {}
        }
    }
    for key in want.keys().filter(|k| !rows.contains_key(*k)) {
        out.push(inc("missing-row", &full(key), Some(file), format!("{file} has no row for it")));
    }
}

/// Appends `timestamp | kind | path` lines for the problems to
/// `.inconsistency.log`. Callers hold the lock.
pub fn log(lib: &Library, problems: &[Inconsistency]) -> Result<()> {
    let ts = clock::format(clock::now()?);
    let text: String = problems.iter().map(|p| format!("{ts} | {} | {}\n", p.kind, p.path)).collect();
    atomic::append_lines(&lib.path(LOG), &text)
}

/// Clears the log (every issue was resolved by a rebuild). Returns whether
/// there was one.
pub fn clear(lib: &Library) -> Result<bool> {
    match fs::remove_file(lib.path(LOG)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(crate::error::Error::io(format!("removing {LOG}"), e)),
    }
}
