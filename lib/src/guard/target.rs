//! What `kb-guard scan PATH...` scans: a file, a skill
//! directory (one holding SKILL.md, judged as a whole), any other directory
//! (walked: each skill under it is one target, each loose file another), or
//! `-` for stdin. The walk never follows symlinks, so loops cannot hang it;
//! FIFOs and devices are reported, never opened.

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::fs::walk::{Dir, Kind};

/// What kind of target a verdict is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind {
    /// A skill directory (holds SKILL.md).
    Skill,
    /// One file.
    File,
    /// Standard input.
    Stdin,
}

impl TargetKind {
    /// The name used in `verdict` records.
    pub fn as_str(self) -> &'static str {
        match self {
            TargetKind::Skill => "skill",
            TargetKind::File => "file",
            TargetKind::Stdin => "stdin",
        }
    }
}

/// What a directory entry is, without following it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed by the walk).
    Symlink,
    /// A FIFO, socket or device, named.
    Special(&'static str),
    /// Could not even be stat'ed.
    Unreadable(String),
}

/// One entry of a target.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Path relative to the target root, `/`-separated (empty for a file target).
    pub rel: String,
    /// Path as shown in records.
    pub display: String,
    /// Path on disk.
    pub fs: PathBuf,
    /// What it is.
    pub kind: EntryKind,
    /// Size in bytes (regular files; 0 for a loose file target found by
    /// the walk, which only a skill's structure checks would read).
    pub size: u64,
    /// Any execute bit set (not read for a loose file found by the walk).
    pub executable: bool,
}

/// One target of a scan.
#[derive(Clone, Debug)]
pub struct Target {
    /// As shown in the verdict record.
    pub display: String,
    /// Skill, file or stdin.
    pub kind: TargetKind,
    /// Root on disk (the skill dir or the file).
    pub root: PathBuf,
    /// Files and directories, sorted by path (skills: all of them).
    pub entries: Vec<Entry>,
}

/// A command-line path that could not be scanned at all.
#[derive(Clone, Debug)]
pub struct PathError {
    /// The path as given.
    pub path: String,
    /// Why.
    pub message: String,
}

/// What the `error` record of a [`PathError`] is about.
#[derive(Debug, serde::Serialize)]
pub struct PathAbout<'a> {
    /// The path as given.
    pub path: &'a str,
}

impl PathError {
    /// The fields its `error` record carries after the message.
    pub fn about(&self) -> PathAbout<'_> {
        PathAbout { path: &self.path }
    }
}

/// A command-line path's target, or why it could not be scanned.
pub type Found = Result<Target, PathError>;

/// Turns the command-line paths into targets, in order.
pub fn collect(paths: &[String]) -> Vec<Found> {
    let mut out = Vec::new();
    for p in paths {
        if p == "-" {
            out.push(Ok(Target {
                display: "-".into(),
                kind: TargetKind::Stdin,
                root: PathBuf::new(),
                entries: Vec::new(),
            }));
            continue;
        }
        let path = Path::new(p);
        match fs::metadata(path) {
            Err(e) => out.push(Err(PathError { path: p.clone(), message: e.to_string() })),
            Ok(m) if m.is_dir() => walk(path, p, &mut out),
            Ok(_) => {
                let entry = entry_for(path, String::new(), p.clone(), true);
                out.push(Ok(Target {
                    display: p.clone(),
                    kind: TargetKind::File,
                    root: path.into(),
                    entries: vec![entry],
                }));
            }
        }
    }
    // Each skill's entries are listed (a stat per file) in parallel: on a
    // tree of many small skills the listing was a serial share of the scan.
    out.par_iter_mut().flatten().filter(|t| t.kind == TargetKind::Skill).for_each(|t| {
        t.entries = skill_entries(&t.root, &t.display);
    });
    out
}

fn join(display: &str, rel: &str) -> String {
    if rel.is_empty() {
        display.to_string()
    } else if display.ends_with('/') {
        format!("{display}{rel}")
    } else {
        format!("{display}/{rel}")
    }
}

/// An entry for `path`; `follow` stats through a symlink (command-line
/// files), otherwise the link itself is described.
fn entry_for(path: &Path, rel: String, display: String, follow: bool) -> Entry {
    let meta = if follow { fs::metadata(path) } else { fs::symlink_metadata(path) };
    let (kind, size, executable) = match meta {
        Err(e) => (EntryKind::Unreadable(e.to_string()), 0, false),
        Ok(m) => {
            let ft = m.file_type();
            let kind = if ft.is_symlink() {
                EntryKind::Symlink
            } else if ft.is_dir() {
                EntryKind::Dir
            } else if ft.is_file() {
                EntryKind::File
            } else {
                EntryKind::Special(special_name(&ft))
            };
            (kind, m.len(), m.permissions().mode() & 0o111 != 0)
        }
    };
    Entry { rel, display, fs: path.to_path_buf(), kind, size, executable }
}

fn special_name(ft: &fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_fifo() {
        "fifo"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_block_device() {
        "block device"
    } else if ft.is_char_device() {
        "character device"
    } else {
        "special file"
    }
}

/// Walks a directory given on the command line (kb::fs::walk, tree
/// order): each directory holding a SKILL.md becomes one skill target
/// (with everything under it), every other file its own target. `.git`
/// directories and a library's own `.cache/` are skipped.
fn walk(root: &Path, display: &str, out: &mut Vec<Result<Target, PathError>>) {
    if is_skill(root) {
        out.push(Ok(skill(root, display.to_string())));
        return;
    }
    let enter = |d: &Dir| d.name != ".git" && !is_library_cache(d.path) && !is_skill(d.path);
    for it in crate::fs::walk::entries(root, enter) {
        if let Some(message) = it.error {
            out.push(Err(PathError { path: it.path.display().to_string(), message }));
            continue;
        }
        let shown = join(display, &it.rel);
        if it.depth == 0 {
            continue;
        }
        if it.kind == Kind::Dir {
            if !it.entered && it.name() != ".git" && !is_library_cache(&it.path) && is_skill(&it.path) {
                out.push(Ok(skill(&it.path, shown)));
            }
            continue;
        }
        // Loose files and links: a link is read through (it was found, not
        // followed into a walk); a broken or looping one is reported. A
        // regular file as listed needs no stat of its own: `read` checks it
        // again on the open file (a stat per file was a sixth of a
        // 12,000-file library's system calls).
        let entry = if it.kind == Kind::File {
            Entry {
                rel: String::new(),
                display: shown.clone(),
                fs: it.path.clone(),
                kind: EntryKind::File,
                size: 0,
                executable: false,
            }
        } else {
            entry_for(&it.path, String::new(), shown.clone(), it.kind == Kind::Symlink)
        };
        if entry.kind == EntryKind::Dir {
            continue; // a link to a directory: the walk does not follow links
        }
        out.push(Ok(Target { display: shown, kind: TargetKind::File, root: it.path, entries: vec![entry] }));
    }
}

fn is_skill(dir: &Path) -> bool {
    dir.join("SKILL.md").symlink_metadata().is_ok()
}

/// A library's `.cache/` (beside its `.changelog`) holds only the tools'
/// binary caches, rebuilt from the documents; judging those bytes finds
/// nothing an author wrote and flags every library (`binary_data`).
/// Kept conflicts and rules, also tool-owned, are still scanned: their
/// bytes come from peers.
fn is_library_cache(dir: &Path) -> bool {
    use crate::library::{changelog, kind};
    dir.file_name().is_some_and(|n| n == kind::CACHE_DIR)
        && dir.parent().is_some_and(|p| p.join(changelog::FILE).symlink_metadata().is_ok())
}

/// A skill target: every entry under `root` (kb::fs::walk, tree order),
/// links not followed; a directory that cannot be listed is an
/// unreadable entry after its own.
/// Its entries are listed later, by [`collect`].
fn skill(root: &Path, display: String) -> Target {
    Target { display, kind: TargetKind::Skill, root: root.to_path_buf(), entries: Vec::new() }
}

/// The skill at `root` as it will be once each change in `over` lands:
/// a `(path inside the skill, Some(stand-in))` pair is read from its
/// stand-in (the synced temp file a writer staged beside it, which is
/// itself left out), a `(path, None)` is removed. So the guard judges a
/// change before it is in place and a dangerous one never lands
/// (kb-append skill).
pub fn skill_overlaid(root: &Path, display: &str, over: &[(String, Option<PathBuf>)]) -> Target {
    let mut entries = skill_entries(root, display);
    entries.retain(|e| !over.iter().any(|(rel, fs)| e.rel == *rel || fs.as_ref() == Some(&e.fs)));
    for (rel, fs) in over {
        if let Some(fs) = fs {
            entries.push(entry_for(fs, rel.clone(), join(display, rel), false));
        }
    }
    entries.sort_by(|a, b| a.rel.cmp(&b.rel));
    Target { display: display.to_string(), kind: TargetKind::Skill, root: root.to_path_buf(), entries }
}

/// Every entry under a skill's `root`.
fn skill_entries(root: &Path, display: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    for it in crate::fs::walk::entries(root, |_| true) {
        let shown = join(display, &it.rel);
        if it.depth > 0 {
            entries.push(entry_for(&it.path, it.rel.clone(), shown.clone(), false));
        }
        if let Some(message) = it.error {
            let kind = EntryKind::Unreadable(message);
            entries.push(Entry { display: shown, rel: it.rel, fs: it.path, kind, size: 0, executable: false });
        }
    }
    entries
}

/// File contents: read into memory, or mapped when large.
pub use crate::fs::map::Bytes as Data;

/// Files this large or larger are mapped rather than read.
pub const MAP_AT: u64 = 64 << 20;

/// Reads a regular file, refusing anything else. Opened non-blocking (a
/// FIFO swapped in cannot block the scan, a terminal is never made the
/// controlling one) and checked on the open file: one path lookup, not a
/// stat and an open, and no gap between the check and the read.
pub fn read(path: &Path) -> io::Result<Data> {
    use std::os::unix::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let mut f = fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    if meta.len() >= MAP_AT {
        return crate::fs::map::map_foreign(&f).map(Data::Map);
    }
    // Through `take`, which gives no size hint: `File::read_to_end` would
    // stat the file and seek again for the size known here, two system
    // calls per file (a sixth of a 12,000-file library's).
    let mut buf = Vec::with_capacity(meta.len() as usize);
    (&mut f).take(u64::MAX).read_to_end(&mut buf)?;
    Ok(Data::Owned(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO handed to `read` (as when one is swapped in after the walk
    /// saw a file) is refused at once: opening it never waits for a writer.
    #[test]
    fn read_refuses_a_fifo_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let err = read(&fifo).err().unwrap();
        assert_eq!(err.to_string(), "not a regular file");
        let file = dir.path().join("f.md");
        fs::write(&file, "text").unwrap();
        assert_eq!(&*read(&file).unwrap(), b"text");
        assert_eq!(read(dir.path()).err().unwrap().to_string(), "not a regular file");
    }
}
