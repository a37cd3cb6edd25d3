//! First come, first served for the library lock (issue 22). An OS file
//! lock has no queue: waiters poll, and a waiter that happens to sleep
//! when the lock frees can lose to newcomers again and again until it
//! times out. So a waiter takes a ticket, a file in `.library/.lock.queue/`
//! named by its arrival time and pid, and only the oldest live ticket
//! tries the OS lock; a newcomer goes straight for the lock only while the
//! queue is empty. A ticket whose process died (kill -9) is removed by
//! whoever sees it, so a crash never blocks the queue. The OS lock stays
//! the one source of mutual exclusion; the queue only orders the waiting.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The queue directory's name under the library.
pub const DIR: &str = ".lock.queue";

/// A waiter's place in the queue; removed when dropped.
#[derive(Debug)]
pub struct Ticket {
    path: PathBuf,
    name: String,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        // Already gone (a sweep took a dead-looking ticket) is fine.
        let _ = fs::remove_file(&self.path);
    }
}

fn dir(lib: &Path) -> PathBuf {
    lib.join(DIR)
}

/// Joins the queue. The directory must be a real directory (never a
/// symlink someone planted), and the ticket is created exclusively, which
/// never follows a symlink either.
pub fn take(lib: &Path) -> Result<Ticket> {
    let d = dir(lib);
    match fs::symlink_metadata(&d) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(Error::msg(format!("{} is not a directory; remove it", d.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match fs::create_dir(&d) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io(format!("creating {}", d.display()), e)),
        },
        Err(e) => return Err(Error::io(format!("reading {}", d.display()), e)),
    }
    let pid = std::process::id();
    loop {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let name = format!("{nanos:024}-{pid}");
        let path = d.join(&name);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut f) => {
                // The holder's host, for a person reading the queue; the
                // name alone orders and identifies the ticket.
                let _ = writeln!(f, "{}", super::hostname());
                return Ok(Ticket { path, name });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(format!("creating {}", path.display()), e)),
        }
    }
}

/// The live tickets, oldest first; dead ones are removed on the way.
fn live(lib: &Path) -> Result<Vec<String>> {
    let d = dir(lib);
    let rd = match fs::read_dir(&d) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(format!("reading {}", d.display()), e)),
    };
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|e| Error::io(format!("reading {}", d.display()), e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        match name.rsplit_once('-').and_then(|(_, p)| p.parse::<u32>().ok()) {
            Some(pid) if super::pid_alive(pid) => out.push(name),
            // A dead waiter's ticket, or a stray file: out of the way.
            _ => {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The oldest live ticket: whose turn it is to try the lock (`None`:
/// nobody waits, a newcomer may try at once).
pub fn head(lib: &Path) -> Result<Option<String>> {
    Ok(live(lib)?.into_iter().next())
}

impl Ticket {
    /// The ticket's name in the queue directory.
    pub fn name(&self) -> &str {
        &self.name
    }
}
