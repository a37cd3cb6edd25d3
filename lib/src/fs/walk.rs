//! The one directory walker. It never follows a symlink, so it cannot leave
//! the tree it was given or loop through one; it skips and reports
//! symlinks, special files (FIFO, socket, device: opening a FIFO blocks a
//! reader forever) and names that are not UTF-8; a directory reached twice
//! (a bind mount) is entered once. Each level's directories are listed in
//! parallel (rayon) and the results sorted, so the order never depends on
//! the thread count.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs::{self, FileType};
use std::io;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

/// What a directory entry is, read without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// A FIFO, socket or device (never opened).
    Special,
}

impl Kind {
    fn of(t: FileType) -> Kind {
        if t.is_symlink() {
            Kind::Symlink
        } else if t.is_dir() {
            Kind::Dir
        } else if t.is_file() {
            Kind::File
        } else {
            Kind::Special
        }
    }
}

/// One entry of one directory.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Its name; `Err` with the raw name when it is not UTF-8.
    pub name: Result<String, OsString>,
    /// What it is (never following a symlink).
    pub kind: Kind,
}

/// Lists one directory, sorted by name, without following anything.
pub fn list(dir: &Path) -> io::Result<Vec<Listed>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        let kind = Kind::of(e.file_type()?);
        out.push(Listed { name: e.file_name().into_string(), kind });
    }
    out.sort_by(|a, b| match (&a.name, &b.name) {
        (Ok(x), Ok(y)) => x.cmp(y),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(x), Err(y)) => x.cmp(y),
    });
    Ok(out)
}

/// Why the walker left something out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// A symbolic link: never followed.
    Symlink,
    /// A FIFO, socket or device: never opened.
    Special,
    /// A name that is not UTF-8.
    NotUtf8,
    /// A directory that could not be listed (the error's text).
    Unreadable(String),
}

/// Something the walker left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Root-relative, `/`-separated (lossy when not UTF-8).
    pub rel: String,
    /// The full path.
    pub path: PathBuf,
    /// Why.
    pub why: Why,
}

impl Skipped {
    /// A line for people: what was skipped and why.
    pub fn message(&self) -> String {
        match &self.why {
            Why::Symlink => "symlink; not followed".into(),
            Why::Special => "not a regular file (FIFO, socket or device); not read".into(),
            Why::NotUtf8 => "file name is not UTF-8; not indexed".into(),
            Why::Unreadable(e) => e.clone(),
        }
    }
}

/// The result of a walk; every list sorted.
#[derive(Debug, Default, Clone)]
pub struct Walk {
    /// Root-relative regular files.
    pub files: Vec<String>,
    /// Root-relative directories entered (`""` is the root).
    pub dirs: Vec<String>,
    /// What was left out.
    pub skipped: Vec<Skipped>,
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// Walks `root`. `enter(depth, name)` decides whether a directory found at
/// `depth` (1 = directly under the root) is entered; one not entered is
/// neither listed nor reported.
pub fn walk(root: &Path, enter: impl Fn(usize, &str) -> bool + Sync) -> Walk {
    let mut out = Walk::default();
    let mut seen = BTreeSet::new();
    let mut level = vec![String::new()];
    let mut depth = 1;
    while !level.is_empty() {
        level.retain(|d| identity(&root.join(d)).is_none_or(|id| seen.insert(id)));
        let listed: Vec<(String, io::Result<Vec<Listed>>)> =
            level.par_iter().map(|d| (d.clone(), list(&root.join(d)))).collect();
        let mut next = Vec::new();
        for (dir, items) in listed {
            let items = match items {
                Ok(items) => items,
                Err(e) => {
                    let why = Why::Unreadable(format!("cannot list {}: {e}", root.join(&dir).display()));
                    out.skipped.push(Skipped { rel: dir.clone(), path: root.join(&dir), why });
                    continue;
                }
            };
            for item in items {
                let name = match &item.name {
                    Ok(n) => n.clone(),
                    Err(raw) => {
                        let rel = join(&dir, &raw.to_string_lossy());
                        out.skipped.push(Skipped { rel, path: root.join(&dir).join(raw), why: Why::NotUtf8 });
                        continue;
                    }
                };
                let rel = join(&dir, &name);
                match item.kind {
                    Kind::File => out.files.push(rel),
                    Kind::Dir if enter(depth, &name) => next.push(rel),
                    Kind::Dir => {}
                    Kind::Symlink => out.skipped.push(Skipped { path: root.join(&rel), rel, why: Why::Symlink }),
                    Kind::Special => out.skipped.push(Skipped { path: root.join(&rel), rel, why: Why::Special }),
                }
            }
            out.dirs.push(dir);
        }
        level = next;
        depth += 1;
    }
    out.files.sort();
    out.dirs.sort();
    out.skipped.sort_by(|a, b| a.rel.cmp(&b.rel));
    out
}

/// A directory's (device, inode), so one reached twice is entered once.
#[cfg(unix)]
fn identity(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    // No identity: the directory is entered (the depth limit still stops a loop).
    let m = fs::symlink_metadata(p).ok()?;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(_: &Path) -> Option<(u64, u64)> {
    None
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        for p in ["a/x.md", "a/b/y.md", "c/z.md", ".hidden/h.md", "top.md"] {
            let f = root.join(p);
            fs::create_dir_all(f.parent().unwrap()).unwrap();
            fs::write(f, p).unwrap();
        }
        (t, root)
    }

    #[test]
    fn sorted_files_and_dirs_and_the_filter() {
        let (_t, root) = tree();
        let w = walk(&root, |_, _| true);
        assert_eq!(w.files, [".hidden/h.md", "a/b/y.md", "a/x.md", "c/z.md", "top.md"]);
        assert_eq!(w.dirs, ["", ".hidden", "a", "a/b", "c"]);
        assert!(w.skipped.is_empty());
        let w = walk(&root, |depth, name| !(depth == 1 && name.starts_with('.')) && name != "b");
        assert_eq!(w.files, ["a/x.md", "c/z.md", "top.md"]);
    }

    #[test]
    fn symlink_loops_and_escapes_are_reported_not_followed() {
        let (t, root) = tree();
        let outside = t.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret.md"), "s").unwrap();
        symlink(&root, root.join("a/loop")).unwrap();
        symlink("self", root.join("self")).unwrap();
        symlink(&outside, root.join("c/out")).unwrap();
        symlink(outside.join("secret.md"), root.join("c/secret.md")).unwrap();
        let w = walk(&root, |_, _| true);
        assert_eq!(w.files, [".hidden/h.md", "a/b/y.md", "a/x.md", "c/z.md", "top.md"]);
        let skipped: Vec<(&str, &Why)> = w.skipped.iter().map(|s| (s.rel.as_str(), &s.why)).collect();
        assert_eq!(
            skipped,
            [
                ("a/loop", &Why::Symlink),
                ("c/out", &Why::Symlink),
                ("c/secret.md", &Why::Symlink),
                ("self", &Why::Symlink)
            ]
        );
    }

    #[test]
    fn a_fifo_is_skipped_without_opening_it() {
        let (_t, root) = tree();
        let fifo = root.join("a/pipe.md");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("skipped: mkfifo is not available to make a FIFO");
            return;
        }
        // Opening the FIFO for reading would block this test forever.
        let w = walk(&root, |_, _| true);
        assert!(!w.files.contains(&"a/pipe.md".to_string()));
        assert_eq!(w.skipped.len(), 1);
        assert_eq!((w.skipped[0].rel.as_str(), &w.skipped[0].why), ("a/pipe.md", &Why::Special));
    }

    #[test]
    fn unreadable_and_not_utf8_are_reported() {
        use std::os::unix::ffi::OsStrExt;
        let (_t, root) = tree();
        fs::write(root.join("c").join(std::ffi::OsStr::from_bytes(b"bad-\xff.md")), "x").unwrap();
        let w = walk(&root, |_, _| true);
        assert_eq!(w.skipped.len(), 1);
        assert_eq!(w.skipped[0].why, Why::NotUtf8);
        assert!(w.skipped[0].rel.starts_with("c/bad-"));
        let gone = walk(&root.join("missing"), |_, _| true);
        assert!(matches!(gone.skipped[0].why, Why::Unreadable(_)), "{gone:?}");
        assert!(gone.dirs.is_empty() && gone.files.is_empty());
    }
}
