//! First come, first served for the library lock. An OS file
//! lock has no queue: waiters poll, and a waiter that happens to sleep
//! when the lock frees can lose to newcomers again and again until it
//! times out. So a waiter takes a ticket, a file in `.library/.lock.queue/`
//! named by its arrival time and pid, and only the oldest live ticket
//! tries the OS lock; a newcomer goes straight for the lock only while the
//! queue is empty. The OS lock stays the one source of mutual exclusion;
//! the queue only orders the waiting.
//!
//! A ticket is a file, and a file can be planted: a peer committed
//! `.lock.queue/000000000000000000000001-1` (pid 1 is always alive) and
//! every later write waited behind it for good. So a ticket is
//! trusted only when it can be verified ([`verified`]):
//! - its waiter holds an OS lock (`flock`) on it for as long as it waits,
//!   taken before the ticket gets its name (it is made under a pending
//!   name, locked, filled in, then renamed), so a ticket nobody holds is
//!   dead, which no planted file can fake and a kill -9 ends at once;
//! - it says which waiter it is: this host, the pid of its name, and that
//!   process's start time (Linux: field 22 of `/proc/<pid>/stat`, clock
//!   ticks after boot), so a recycled pid does not pass either. Where the
//!   start time cannot be read (no `/proc`) it is recorded as `null` and
//!   the held lock and a live pid on this host decide.
//!
//! Anything else in the queue directory (a ticket nobody holds, from
//! another host, garbage, a stray file) is removed by whoever sees it and
//! by `kb-lock sweep`. A queue on a network file system whose `flock` is
//! local to each client sees other hosts' tickets as not held, and removes
//! them: the waiters there lose their place and take a new ticket, and the
//! OS lock still keeps them apart. The directory itself is never followed
//! if it is a link: a planted `.lock.queue` link made every waiter remove
//! the files of the link's target.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{flock, FlockOperation, OFlags};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The queue directory's name under the library.
pub const DIR: &str = ".lock.queue";

/// What a ticket file holds: the waiter, for [`verified`] to check.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Waiter {
    host: String,
    pid: u32,
    /// The process's start (clock ticks after boot), `None` where unknown.
    start: Option<u64>,
}

/// A waiter's place in the queue, held (OS lock) while it lives; removed
/// when dropped.
#[derive(Debug)]
pub struct Ticket {
    path: PathBuf,
    name: String,
    /// The open ticket carrying this waiter's `flock`.
    file: File,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        // Removed while still held, so nobody sees it unheld. Already
        // gone (removed as unverifiable) is fine.
        if self.queued() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

fn dir(lib: &Path) -> PathBuf {
    lib.join(DIR)
}

/// A ticket's name: `<arrival ns, 24 digits>-<pid>`, or `None`.
fn ticket_pid(name: &str) -> Option<u32> {
    let (seq, pid) = name.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (seq.len() == 24 && digits(seq) && digits(pid)).then(|| pid.parse().ok()).flatten()
}

/// A ticket being made: `.<ticket name>.new`, not in the queue yet.
fn is_pending(name: &str) -> bool {
    name.strip_prefix('.').and_then(|n| n.strip_suffix(".new")).is_some_and(|n| ticket_pid(n).is_some())
}

fn open_flags() -> i32 {
    (OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC).bits() as i32
}

/// Makes the queue directory a real directory: a link or a file in its
/// place (never the tools') is removed, never followed.
fn ensure_dir(d: &Path) -> Result<()> {
    match fs::symlink_metadata(d) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => fs::remove_file(d).map_err(|e| Error::io(format!("removing {} (not a directory)", d.display()), e))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(format!("reading {}", d.display()), e)),
    }
    match fs::create_dir(d) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::io(format!("creating {}", d.display()), e)),
    }
}

/// Joins the queue: a ticket made under a pending name, locked, filled in
/// with this waiter, then renamed into the queue. Created exclusively and
/// opened without following links. A pending ticket removed by someone
/// else before it was locked (it looked dead) fails to rename, and a new
/// one is made.
pub fn take(lib: &Path) -> Result<Ticket> {
    let d = dir(lib);
    ensure_dir(&d)?;
    let pid = std::process::id();
    let me = Waiter { host: super::hostname(), pid, start: super::start_ticks(pid) };
    let mut line = serde_json::to_string(&me).map_err(|e| Error::msg(format!("encoding a queue ticket: {e}")))?;
    line.push('\n');
    loop {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let name = format!("{nanos:024}-{pid}");
        let pending = d.join(format!(".{name}.new"));
        let made = OpenOptions::new().read(true).write(true).create_new(true).custom_flags(open_flags()).open(&pending);
        let mut file = match made {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(format!("creating {}", pending.display()), e)),
        };
        // Blocking: another waiter probing it holds a shared lock for an instant.
        flock(&file, FlockOperation::LockExclusive)
            .map_err(|e| Error::io(format!("locking {}", pending.display()), e.into()))?;
        if let Err(e) = file.write_all(line.as_bytes()) {
            let _ = fs::remove_file(&pending);
            return Err(Error::io(format!("writing {}", pending.display()), e));
        }
        let path = d.join(&name);
        match crate::fs::atomic::rename_onto(&pending, &path, false) {
            Ok(()) => return Ok(Ticket { path, name, file }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                let _ = fs::remove_file(&pending);
                return Err(Error::io(format!("queueing {}", path.display()), e));
            }
        }
    }
}

/// Whether the ticket at `path` (named `name`) belongs to a live waiter:
/// a regular file that someone holds an OS lock on, naming this host, the
/// pid of its name and that process's start time (see the module doc).
fn verified(path: &Path, name: &str) -> bool {
    let Some(pid) = ticket_pid(name) else { return false };
    let Ok(f) = crate::fs::nofollow::open_read(path) else { return false };
    if flock(&f, FlockOperation::NonBlockingLockShared).is_ok() {
        // Nobody holds it (a dead waiter's, or planted).
        return false;
    }
    let mut text = String::new();
    if (&f).take(4096).read_to_string(&mut text).is_err() {
        return false;
    }
    let Ok(w) = serde_json::from_str::<Waiter>(text.trim()) else { return false };
    let start_ok = match (w.start, super::start_ticks(pid)) {
        (Some(said), Some(now)) => said == now,
        // No start time where it can be read: not verifiable.
        (None, Some(_)) => false,
        // Gone since it was read, or nowhere to read it: the pid decides.
        (_, None) => super::pid_alive(pid),
    };
    w.host == super::hostname() && w.pid == pid && start_ok
}

/// Whether `path` is held by an OS lock (a pending ticket being made).
fn held(path: &Path) -> bool {
    crate::fs::nofollow::open_read(path).is_ok_and(|f| flock(&f, FlockOperation::NonBlockingLockShared).is_err())
}

/// Goes through the queue directory: returns the verified tickets, oldest
/// first, and removes everything else (see the module doc) but pending
/// tickets still held. `removed` gets each name removed and the pid its
/// name gave. A link or file in the directory's place is an empty queue.
fn scan(lib: &Path, mut removed: impl FnMut(String, Option<u32>)) -> Result<Vec<String>> {
    let d = dir(lib);
    if !fs::symlink_metadata(&d).is_ok_and(|m| m.is_dir()) {
        return Ok(Vec::new());
    }
    let rd = match fs::read_dir(&d) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(format!("reading {}", d.display()), e)),
    };
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|e| Error::io(format!("reading {}", d.display()), e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        let keep = if is_pending(&name) { held(&path) } else { verified(&path, &name) };
        if keep {
            if !is_pending(&name) {
                out.push(name);
            }
            continue;
        }
        // Not ours to follow or descend into: a directory stays.
        if e.file_type().is_ok_and(|t| !t.is_dir()) && fs::remove_file(&path).is_ok() {
            removed(name.clone(), ticket_pid(&name));
        }
    }
    out.sort();
    Ok(out)
}

/// The oldest verified ticket: whose turn it is to try the lock (`None`:
/// nobody waits, a newcomer may try at once). Unverifiable ones are
/// removed on the way.
pub fn head(lib: &Path) -> Result<Option<String>> {
    Ok(scan(lib, |_, _| {})?.into_iter().next())
}

/// Removes every ticket that cannot be verified (for `kb-lock sweep`);
/// returns each removed name (queue-relative) and the pid its name gave.
pub fn sweep(lib: &Path) -> Result<Vec<(String, Option<u32>)>> {
    let mut gone = Vec::new();
    scan(lib, |name, pid| gone.push((name, pid)))?;
    Ok(gone)
}

impl Ticket {
    /// The ticket's name in the queue directory.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the ticket is still in the queue: its name still names
    /// this file (a ticket removed as unverifiable has lost its place).
    pub fn queued(&self) -> bool {
        match (fs::symlink_metadata(&self.path), self.file.metadata()) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(ticket_pid("000000000000000000000001-1"), Some(1));
        for bad in ["1-1", "000000000000000000000001-", "000000000000000000000001-x", "x", ""] {
            assert_eq!(ticket_pid(bad), None, "{bad}");
        }
        assert!(is_pending(".000000000000000000000001-42.new"));
        assert!(!is_pending("000000000000000000000001-42.new"));
    }
}
