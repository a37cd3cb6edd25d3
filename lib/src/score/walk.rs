//! The documents of a library and every directory that may hold one, so
//! the index cache can watch all of them: a document added to any
//! directory, even one that held no document yet, changes that
//! directory's mtime. The rules are kb::library::scan::document_paths'
//! (`library::kind::holds_documents` picks the directories, `fs::walk::list`
//! lists one without following symlinks, `library::entry::classify` decides
//! what a document is); a test checks both walks agree. An update lists again only the
//! directories whose mtime changed.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use crate::fs::walk;
use crate::library::scan::Problem;
use crate::library::Library;
use crate::library::{entry, kind};

use super::build::mtime_ns;

/// Documents (sorted), directories with their mtime (sorted), problems.
#[derive(Debug, Default)]
pub struct Walk {
    /// Library-relative document paths.
    pub paths: Vec<String>,
    /// Library-relative directories (`""` is the root) and their mtime (ns).
    pub dirs: Vec<(String, u64)>,
    /// Unreadable directories and non-UTF-8 names.
    pub problems: Vec<Problem>,
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// Lists one directory: its documents, and its walked subdirectories.
fn list(lib: &Library, dir: &str, out: &mut Walk) -> Vec<String> {
    let full = lib.path(dir);
    let mut subdirs = Vec::new();
    let listed = match walk::list(&full) {
        Ok(listed) => listed,
        Err(e) => {
            out.problems.push(Problem { path: dir.to_string(), kind: "walk".into(), message: e.to_string() });
            return subdirs;
        }
    };
    if let Ok(m) = fs::metadata(&full) {
        out.dirs.push((dir.to_string(), mtime_ns(&m)));
    }
    let depth = if dir.is_empty() { 1 } else { dir.split('/').count() + 1 };
    for item in listed {
        let name = match item.name {
            Ok(name) => name,
            Err(raw) => {
                if raw.to_string_lossy().ends_with(".md") {
                    out.problems.push(Problem {
                        path: full.join(raw).to_string_lossy().into_owned(),
                        kind: "walk".into(),
                        message: "file name is not UTF-8; not indexed".into(),
                    });
                }
                continue;
            }
        };
        // Symlinks and special files are never followed (fs::walk's rule).
        let rel = join(dir, &name);
        match item.kind {
            walk::Kind::Dir if kind::holds_documents(depth, &name) => subdirs.push(rel),
            walk::Kind::File if entry::classify(&rel).is_some() => out.paths.push(rel),
            walk::Kind::File if is_skill_reference(&rel) && has_frontmatter(&full.join(&name)) => out.paths.push(rel),
            _ => {}
        }
    }
    subdirs
}

/// Whether a path is a file a skill ships for reference:
/// `.skills/<stage>/<skill>/references/…/<name>.md`. They are no document
/// kind of the library (kb::library::entry), but one with frontmatter is
/// knowledge an agent may search for, so kb-score indexes it.
pub fn is_skill_reference(rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    matches!(parts.as_slice(), [".skills", stage, skill, "references", .., name]
        if stage.starts_with('.') && !skill.starts_with('.') && name.ends_with(".md") && !name.starts_with('.'))
}

/// Whether a file starts with a `---` frontmatter line (a BOM allowed).
fn has_frontmatter(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 8];
    let n = fs::File::open(path).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    let h = head[..n].strip_prefix(b"\xef\xbb\xbf".as_slice()).unwrap_or(&head[..n]);
    h.starts_with(b"---\n") || h.starts_with(b"---\r\n")
}

/// Walks the whole library.
pub fn full(lib: &Library) -> Walk {
    let mut out = Walk::default();
    let mut todo = vec![String::new()];
    let mut seen = BTreeSet::new();
    while let Some(d) = todo.pop() {
        if !seen.insert(d.clone()) {
            continue;
        }
        todo.extend(list(lib, &d, &mut out));
    }
    finish(out)
}

/// Walks again only what changed since `old_paths` / `old_dirs` were
/// taken: directories whose mtime differs are listed again (new
/// subdirectories walked whole); the others keep their documents.
pub fn update(lib: &Library, old_paths: &[&str], old_dirs: &[(String, u64)]) -> Walk {
    let mut by_dir: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for p in old_paths {
        by_dir.entry(p.rsplit_once('/').map_or("", |(d, _)| d)).or_default().push(p);
    }
    let known: BTreeMap<&str, u64> = old_dirs.iter().map(|(d, m)| (d.as_str(), *m)).collect();
    let mut out = Walk::default();
    // Walk the tree through known directories; list only the changed ones.
    let mut todo = vec![String::new()];
    let mut seen = BTreeSet::new();
    let children: BTreeMap<&str, Vec<&str>> = {
        let mut c: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (d, _) in old_dirs.iter().filter(|(d, _)| !d.is_empty()) {
            c.entry(d.rsplit_once('/').map_or("", |(p, _)| p)).or_default().push(d);
        }
        c
    };
    while let Some(d) = todo.pop() {
        if !seen.insert(d.clone()) {
            continue;
        }
        // No stat (gone): never equal to a known mtime, so it is walked again.
        let now = fs::metadata(lib.path(&d)).ok().map(|m| mtime_ns(&m));
        match (now, known.get(d.as_str())) {
            (Some(n), Some(&m)) if n == m => {
                out.dirs.push((d.clone(), n));
                out.paths.extend(by_dir.get(d.as_str()).into_iter().flatten().map(|p| p.to_string()));
                todo.extend(children.get(d.as_str()).into_iter().flatten().map(|c| c.to_string()));
            }
            (Some(_), _) => todo.extend(list(lib, &d, &mut out)),
            (None, _) => {}
        }
    }
    finish(out)
}

/// Lists again the directories `dirs` (a side index's changed ones): their
/// documents, and every subdirectory not in `known` walked whole (it is
/// new). Known subdirectories are left to their own mtime check.
pub fn relist(lib: &Library, dirs: &[&str], known: &std::collections::HashSet<&str>) -> Walk {
    let mut out = Walk::default();
    let mut todo: Vec<String> = dirs.iter().map(|d| d.to_string()).collect();
    let mut seen = BTreeSet::new();
    while let Some(d) = todo.pop() {
        if !seen.insert(d.clone()) {
            continue;
        }
        todo.extend(list(lib, &d, &mut out).into_iter().filter(|s| !known.contains(s.as_str())));
    }
    finish(out)
}

fn finish(mut w: Walk) -> Walk {
    w.paths.sort();
    w.paths.dedup();
    w.dirs.sort();
    w.dirs.dedup_by(|a, b| a.0 == b.0);
    w.problems.sort_by(|a, b| a.path.cmp(&b.path));
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::library::scan;

    #[test]
    fn agrees_with_kb_scan_and_watches_empty_directories() {
        let root = std::env::temp_dir().join(format!("kb-score-walk-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let lib = Library { dir: root.join(".library") };
        for (p, t) in [
            ("notes/a.md", "# A"),
            ("notes/deep/b.md", "# B"),
            (".memory/.references/x-v1.md", "# X"),
            (".memory/.references/.index.md", "generated"),
            (".skills/.active/tool/SKILL.md", "# T"),
            (".skills/.active/tool/references/r.md", "# R"),
            (".changelog-archive/2026-01.md", "# old"),
            (".git/notes.md", "# git"),
            ("notes/.git/c.md", "# nested git"),
            ("notes/readme.txt", "not markdown"),
        ] {
            let f = lib.path(p);
            fs::create_dir_all(f.parent().unwrap()).unwrap();
            fs::write(f, t).unwrap();
        }
        fs::create_dir_all(lib.path("notes/empty")).unwrap();
        let w = full(&lib);
        assert_eq!(w.paths, scan::document_paths(&lib).0);
        assert!(w.dirs.iter().any(|(d, _)| d == "notes/empty"), "{:?}", w.dirs);
        assert!(!w.dirs.iter().any(|(d, _)| d.starts_with(".git") || d.starts_with(".changelog-archive")));

        // An update lists only changed directories and finds new documents.
        fs::write(lib.path("notes/empty/new.md"), "# N").unwrap();
        let old: Vec<&str> = w.paths.iter().map(String::as_str).collect();
        let u = update(&lib, &old, &w.dirs);
        assert_eq!(u.paths, scan::document_paths(&lib).0);
        assert!(u.paths.contains(&"notes/empty/new.md".to_string()));
        fs::remove_dir_all(&root).unwrap();
    }
}
