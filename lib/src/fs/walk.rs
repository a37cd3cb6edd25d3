//! The one directory walker. It never follows a symlink, so it cannot leave
//! the tree it was given or loop through one; it skips and reports
//! symlinks, special files (FIFO, socket, device: opening a FIFO blocks a
//! reader forever) and names that are not UTF-8; a directory reached twice
//! (a bind mount) is entered once. Each level's directories are listed in
//! parallel (rayon) and the results sorted, so the order never depends on
//! the thread count.
//!
//! Two views of one traversal: [`entries`] returns everything found in
//! tree order (the guard's targets, skill trees, the lock sweep, kept
//! conflicts pick from it), [`walk`] the sorted files and directories with
//! what was left out (the library scan, the derived-file checks).

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

/// A directory the walk found, offered to the `enter` filter.
#[derive(Debug, Clone, Copy)]
pub struct Dir<'a> {
    /// 1 = directly under the root.
    pub depth: usize,
    /// Its name (lossy when not UTF-8).
    pub name: &'a str,
    /// Whether its name is UTF-8.
    pub utf8: bool,
    /// The full path.
    pub path: &'a Path,
}

/// One thing the walk found, whatever it is.
#[derive(Debug, Clone)]
pub struct Item {
    /// Root-relative, `/`-separated (lossy when not UTF-8); `""` is the root.
    pub rel: String,
    /// The full path (exact, also when the name is not UTF-8).
    pub path: PathBuf,
    /// 0 for the root, 1 directly under it.
    pub depth: usize,
    /// What it is, never following a symlink (the root itself is followed).
    pub kind: Kind,
    /// Whether its name is UTF-8.
    pub utf8: bool,
    /// A directory the walk listed (the filter chose it and it was not
    /// reached before).
    pub entered: bool,
    /// A directory that could not be listed: why.
    pub error: Option<String>,
}

impl Item {
    /// Its name: the last part of `rel` (`""` for the root).
    pub fn name(&self) -> &str {
        self.rel.rsplit('/').next().unwrap_or("")
    }
}

/// Walks `root` and returns everything found, the root first, in tree
/// order: sorted by path component by component, so a directory comes
/// just before what is in it (the order of a sorted depth-first walk).
/// `enter` decides which directories are listed (a directory not entered
/// is still returned, with `entered` false). Nothing is followed but the
/// root; callers pick what they need (`depth >= 2`, files only, …).
///
/// Each level's directories are stat'ed, listed and their subdirectories
/// offered to `enter` in parallel; only the bind-mount check (which
/// directory was reached first) is serial, in level order, so the result
/// does not depend on the thread count. The tree order is assembled from
/// each directory's sorted listing, not sorted afterwards: on a library of
/// 12,000 files the sort of whole paths was a third of the walk.
pub fn entries(root: &Path, enter: impl Fn(&Dir) -> bool + Sync) -> Vec<Item> {
    let (kind, error) = match fs::metadata(root) {
        Ok(m) => (Kind::of(m.file_type()), None),
        Err(e) => (Kind::Dir, Some(format!("cannot list {}: {e}", root.display()))),
    };
    let entered = kind == Kind::Dir && error.is_none();
    let root_item = Item { rel: String::new(), path: root.to_path_buf(), depth: 0, kind, utf8: true, entered, error };
    let mut items = vec![root_item];
    // For each item, where its children are in `items` (pushed together).
    let mut kids: Vec<std::ops::Range<usize>> = std::iter::once(0..0).collect();
    let mut seen = BTreeSet::new();
    let mut level: Vec<usize> = if entered { vec![0] } else { Vec::new() };
    while !level.is_empty() {
        let listed: Vec<Listing> = level
            .par_iter()
            .map(|&i| {
                let dir = &items[i];
                (i, identity(&dir.path), list(&dir.path).map(|found| children(dir, found, &enter)))
            })
            .collect();
        let mut next = Vec::new();
        for (i, id, found) in listed {
            // A directory reached before (a bind mount) is not entered again.
            if !id.is_none_or(|id| seen.insert(id)) {
                items[i].entered = false;
                continue;
            }
            let found = match found {
                Ok(found) => found,
                Err(e) => {
                    items[i].error = Some(format!("cannot list {}: {e}", items[i].path.display()));
                    continue;
                }
            };
            let first = items.len();
            next.extend(found.iter().enumerate().filter(|(_, it)| it.entered).map(|(k, _)| first + k));
            items.extend(found);
            kids[i] = first..items.len();
            kids.resize(items.len(), 0..0);
        }
        level = next;
    }
    tree_order(items, &kids)
}

/// A directory of one level: its index, its identity and its children.
type Listing = (usize, Option<(u64, u64)>, io::Result<Vec<Item>>);

/// The items of one listed directory `dir`, in order of their names
/// (component order; lossy for names that are not UTF-8), each
/// subdirectory offered to `enter`.
fn children(dir: &Item, found: Vec<Listed>, enter: &(impl Fn(&Dir) -> bool + Sync)) -> Vec<Item> {
    let depth = dir.depth + 1;
    let mut out: Vec<Item> = found
        .into_iter()
        .map(|f| {
            let (name, utf8, path) = match f.name {
                Ok(n) => {
                    let path = dir.path.join(&n);
                    (n, true, path)
                }
                Err(raw) => (raw.to_string_lossy().into_owned(), false, dir.path.join(&raw)),
            };
            let entered = f.kind == Kind::Dir && enter(&Dir { depth, name: &name, utf8, path: &path });
            Item { rel: join(&dir.rel, &name), path, depth, kind: f.kind, utf8, entered, error: None }
        })
        .collect();
    // `list` puts names that are not UTF-8 last; the tree order compares
    // their lossy text (a stable sort, so equal texts keep listing order).
    if out.iter().any(|it| !it.utf8) {
        out.sort_by(|a, b| a.name().cmp(b.name()));
    }
    out
}

/// `items` depth first, each directory's children (`kids`) in their
/// order right after it: the order of `rel` compared component by
/// component.
fn tree_order(items: Vec<Item>, kids: &[std::ops::Range<usize>]) -> Vec<Item> {
    let mut order = Vec::with_capacity(items.len());
    let mut stack = vec![0];
    while let Some(i) = stack.pop() {
        order.push(i);
        stack.extend(kids[i].clone().rev());
    }
    let mut slots: Vec<Option<Item>> = items.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// Walks `root`. `enter(depth, name)` decides whether a directory found at
/// `depth` (1 = directly under the root) is entered; one not entered is
/// neither listed nor reported. A name that is not UTF-8 is reported, not
/// entered.
pub fn walk(root: &Path, enter: impl Fn(usize, &str) -> bool + Sync) -> Walk {
    let mut out = Walk::default();
    for it in entries(root, |d| d.utf8 && enter(d.depth, d.name)) {
        let why = match (&it.error, it.utf8, it.kind) {
            (Some(e), _, _) => Why::Unreadable(e.clone()),
            (None, false, _) => Why::NotUtf8,
            (None, true, Kind::File) if it.depth > 0 => {
                out.files.push(it.rel);
                continue;
            }
            (None, true, Kind::Dir) if it.entered => {
                out.dirs.push(it.rel);
                continue;
            }
            (None, true, Kind::Symlink) => Why::Symlink,
            (None, true, Kind::Special) => Why::Special,
            (None, true, _) if it.depth > 0 => continue,
            (None, true, _) => Why::Unreadable(format!("cannot list {}: not a directory", it.path.display())),
        };
        out.skipped.push(Skipped { rel: it.rel, path: it.path, why });
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
    fn entries_come_in_tree_order_with_what_was_not_entered() {
        let (_t, root) = tree();
        fs::write(root.join("a-b.md"), "x").unwrap();
        symlink("top.md", root.join("a/link.md")).unwrap();
        let items = entries(&root, |d| d.name != "b");
        let got: Vec<(&str, usize, Kind, bool)> =
            items.iter().map(|i| (i.rel.as_str(), i.depth, i.kind, i.entered)).collect();
        // Tree order: "a/…" before "a-b.md" (component order, not byte order).
        assert_eq!(
            got,
            [
                ("", 0, Kind::Dir, true),
                (".hidden", 1, Kind::Dir, true),
                (".hidden/h.md", 2, Kind::File, false),
                ("a", 1, Kind::Dir, true),
                ("a/b", 2, Kind::Dir, false),
                ("a/link.md", 2, Kind::Symlink, false),
                ("a/x.md", 2, Kind::File, false),
                ("a-b.md", 1, Kind::File, false),
                ("c", 1, Kind::Dir, true),
                ("c/z.md", 2, Kind::File, false),
                ("top.md", 1, Kind::File, false),
            ]
        );
        assert_eq!(items[5].path, root.join("a/link.md"));
        assert!(items.iter().all(|i| i.error.is_none() && i.utf8));
        let file = entries(&root.join("top.md"), |_| true);
        assert_eq!((file.len(), file[0].kind, file[0].entered), (1, Kind::File, false));
        let w = walk(&root.join("top.md"), |_, _| true);
        assert!(matches!(w.skipped[0].why, Why::Unreadable(_)) && w.dirs.is_empty(), "{w:?}");
    }

    /// The order assembled from each listing is the order of the paths
    /// compared component by component, whatever the names: ones that sort
    /// around `/` (`a-b`, `a.b`, `a b`), upper case, non-ASCII, and a name
    /// that is not UTF-8 (compared by its lossy text).
    #[test]
    fn tree_order_is_component_order_for_any_names() {
        use std::os::unix::ffi::OsStrExt;
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        let names = ["a", "a-b", "a.b", "a b", "ab", "A", "é", "z0", "_", "~"];
        for x in names {
            for y in names {
                fs::create_dir_all(root.join(x).join(y)).unwrap();
                fs::write(root.join(x).join(y).join("f.md"), "x").unwrap();
                fs::write(root.join(x).join(format!("{y}.md")), "x").unwrap();
            }
        }
        fs::write(root.join("a").join(std::ffi::OsStr::from_bytes(b"\xff-x")), "x").unwrap();
        fs::write(root.join("a").join(std::ffi::OsStr::from_bytes(b"\xfe-x")), "x").unwrap();
        let items = entries(&root, |d| d.name != "a b" || d.depth != 2);
        let mut sorted: Vec<&str> = items.iter().map(|i| i.rel.as_str()).collect();
        sorted.sort_by(|a, b| a.split('/').cmp(b.split('/')));
        let got: Vec<&str> = items.iter().map(|i| i.rel.as_str()).collect();
        assert_eq!(got, sorted);
        assert_eq!(got.len(), 1 + 10 + 10 * 20 + 9 * 10 + 2);
        let raw: Vec<&Path> = items.iter().filter(|i| !i.utf8).map(|i| i.path.as_path()).collect();
        assert_eq!(
            raw,
            [
                root.join("a").join(std::ffi::OsStr::from_bytes(b"\xfe-x")),
                root.join("a").join(std::ffi::OsStr::from_bytes(b"\xff-x"))
            ]
        );
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
