//! Opening library files without following links or blocking:
//! a symlink planted in a library (by hand or by a peer) must never send a
//! read or a write outside it, and a FIFO or device in place of a file must
//! be an error, never a hang. Every open here uses `O_NOFOLLOW` (the last
//! component) and `O_NONBLOCK` (a FIFO opens at once), then checks the
//! opened file is a regular one; [`check_chain`] covers the directories
//! above it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use rustix::fs::OFlags;

/// The message of a special file met where a regular one belongs.
pub const NOT_REGULAR: &str = "not a regular file (a FIFO, device or socket); kb-tools reads and writes only files";

fn flags() -> i32 {
    (OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC).bits() as i32
}

/// Turns the errors of a no-follow open into what happened. A name that
/// is not there is no link (`O_NOFOLLOW` fails a link with `ELOOP`, even
/// a dangling one): no second look for a new file.
fn explain(path: &Path, e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::NotFound {
        return e;
    }
    let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if link {
        io::Error::other(format!("{} is a symlink; kb-tools never follows links in a library", path.display()))
    } else {
        e
    }
}

fn regular(path: &Path, f: File) -> io::Result<File> {
    regular_with(path, f).map(|(f, _)| f)
}

/// [`regular`], with the metadata it read (one `fstat` serves the caller too).
fn regular_with(path: &Path, f: File) -> io::Result<(File, std::fs::Metadata)> {
    let meta = f.metadata()?;
    if meta.is_file() {
        Ok((f, meta))
    } else if meta.is_dir() {
        Err(io::Error::new(io::ErrorKind::IsADirectory, format!("{} is a directory", path.display())))
    } else {
        Err(io::Error::other(format!("{} is {NOT_REGULAR}", path.display())))
    }
}

/// Opens a regular file for reading: never through a final symlink, never
/// blocking on a FIFO.
pub fn open_read(path: &Path) -> io::Result<File> {
    let f = OpenOptions::new().read(true).custom_flags(flags()).open(path).map_err(|e| explain(path, e))?;
    regular(path, f)
}

/// Reads a whole regular file (no symlink, no FIFO), at most `limit`
/// bytes: a longer file is an error naming the limit.
pub fn read(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    read_with(path, limit).map(|(bytes, _)| bytes)
}

/// [`read`], with the file's metadata as it was opened (its mode, for a
/// writer that keeps it): no second look at the path.
pub fn read_with(path: &Path, limit: u64) -> io::Result<(Vec<u8>, std::fs::Metadata)> {
    let f = OpenOptions::new().read(true).custom_flags(flags()).open(path).map_err(|e| explain(path, e))?;
    let (f, meta) = regular_with(path, f)?;
    // Sized to the file: one read call, not a doubling series from 32
    // bytes (kb-score reads its best hits' text at query time).
    let size = meta.len().min(limit).saturating_add(1);
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    f.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::other(format!("{} is over the limit of {limit} bytes", path.display())));
    }
    Ok((bytes, meta))
}

/// Opens (creating it) a regular file for reading and writing, as the lock
/// and the append-only logs are: a symlink or special file in its place is
/// an error.
pub fn open_rw(path: &Path, append: bool) -> io::Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .write(!append)
        .append(append)
        .create(true)
        .truncate(false)
        .custom_flags(flags())
        .open(path)
        .map_err(|e| explain(path, e))?;
    regular(path, f)
}

/// The symlink a library-relative path goes through, if any: each of its
/// components below `base` (the final one included) is checked, so a write
/// never lands through a link, even one that points back inside.
pub fn link_in_chain(base: &Path, rel: &str) -> Option<String> {
    let mut probe = base.to_path_buf();
    let mut shown = String::new();
    for part in rel.split('/').filter(|p| !p.is_empty()) {
        probe.push(part);
        if !shown.is_empty() {
            shown.push('/');
        }
        shown.push_str(part);
        match std::fs::symlink_metadata(&probe) {
            Ok(m) if m.file_type().is_symlink() => return Some(shown),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// `rel` made absolute under `root`, or why it is not a path inside it
/// reached without a link: relative, in plain `/`-separated parts (no
/// absolute path, no `..`, no `.`, no empty part, no NUL byte or
/// backslash), and no part that exists (the last one included) a symlink
/// ([`link_in_chain`]; a part that does not exist cannot be a link, and
/// nothing below it exists). For paths read from a file someone else may
/// have written: a journal (`fs::journal::inside`), a registry in the
/// workspace.
pub fn inside(root: &Path, rel: &str) -> Result<std::path::PathBuf, String> {
    if rel.is_empty() {
        return Err("is empty".into());
    }
    if rel.starts_with('/') {
        return Err(format!("is absolute; the path must be relative to {}", root.display()));
    }
    if rel.contains('\\') {
        return Err("contains a backslash; paths are '/'-separated".into());
    }
    if rel.contains('\0') {
        return Err("contains a NUL byte".into());
    }
    for part in rel.split('/') {
        match part {
            "" => return Err("has an empty part".into()),
            "." => return Err("has a '.' part".into()),
            ".." => return Err("has a '..' part".into()),
            _ => {}
        }
    }
    match link_in_chain(root, rel) {
        Some(link) => Err(format!("goes through the symlink '{link}'")),
        None => Ok(root.join(rel)),
    }
}

/// [`link_in_chain`] as an error message for `rel`.
pub fn check_chain(base: &Path, rel: &str) -> Result<(), String> {
    match link_in_chain(base, rel) {
        Some(link) => {
            let leaves = match (base.canonicalize(), base.join(&link).canonicalize()) {
                (Ok(b), Ok(t)) => !t.starts_with(b),
                _ => true,
            };
            let note = if leaves { "; this one leaves the library" } else { "" };
            Err(format!(
                "refused: '{rel}' goes through the symlink '{link}'; kb-tools never reads or writes through links in a library{note}"
            ))
        }
        None => Ok(()),
    }
}

/// Reads a file the user named as input (`--content-file`, `--keep FILE`):
/// links are followed (the user chose the path) but a FIFO or device is an
/// error instead of a hang or an endless read, and at most `limit` bytes
/// are read.
pub fn read_input(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let f =
        OpenOptions::new().read(true).custom_flags((OFlags::NONBLOCK | OFlags::CLOEXEC).bits() as i32).open(path)?;
    let f = regular(path, f)?;
    read_capped(f, limit, &path.display().to_string())
}

/// Reads `r` (stdin, an opened input) to its end, or to `limit` bytes and
/// an error naming `what` and the limit when there is more: an endless
/// stream (`yes |`, a 2 GB pipe) costs `limit` bytes of memory, not its
/// length.
pub fn read_capped(r: impl Read, limit: u64, what: &str) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    r.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::other(format!("{what} is over the limit of {limit} bytes")));
    }
    Ok(bytes)
}
