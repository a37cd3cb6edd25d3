//! INDEX.md's SHA-256 for the audit line, kept running so that apply of a
//! new note costs its row and not the whole file (hashing
//! INDEX.md twice per apply, before and after, was what still grew from
//! 1,000 to 10,000 notes).
//!
//! `.index.digest` beside INDEX.md holds SHA-256's chaining value after the
//! file's whole 64-byte blocks (kb::doc::digest::Running) and the file's
//! identity when it was saved: size, mtime, ctime and inode. While INDEX.md
//! still has that identity it is the file apply last wrote, so its digest
//! is the saved state finished with the last (< 64) bytes, read from the
//! file, and appending a row folds in just that row. The digests in the
//! audit line are then the same full-file SHA-256 as before (`sha256sum
//! INDEX.md` agrees), not a digest of something else. Any other write to
//! INDEX.md (a hand edit, `reindex`, a replace that rewrites a row, a
//! restore from git) changes its identity, and apply hashes the whole file
//! once and saves the state again. The file is derived: missing, damaged
//! or stale, it costs that one full hash, never a wrong digest.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};

use serde::{Deserialize, Serialize};

use super::store::Paths;
use crate::doc::digest::Running;

/// What `.index.digest` holds.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Saved {
    /// INDEX.md's identity when saved: size, mtime ns, ctime ns, inode.
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    ino: u64,
    /// The chaining value after the first `folded` bytes, hex.
    state: String,
    folded: u64,
    /// Whether a row can be appended to the file as it stands
    /// (kb::memgate::index_md::appendable held when it was saved).
    appendable: bool,
}

/// INDEX.md's digest state as it is now.
#[derive(Debug, Clone)]
pub struct Known {
    running: Running,
    /// The bytes after the folded blocks (fewer than 64).
    tail: Vec<u8>,
    /// Whether a row can be appended to the file.
    pub appendable: bool,
}

impl Known {
    /// The state of a file holding `text` (one full hash).
    pub fn of_text(text: &str, appendable: bool) -> Known {
        let mut running = Running::default();
        let tail = running.update(text.as_bytes()).to_vec();
        Known { running, tail, appendable }
    }

    /// The file's SHA-256, lower-case hex.
    pub fn digest(&self) -> String {
        self.running.hex(&self.tail)
    }

    /// The state after `row` is appended (a row keeps the file appendable).
    pub fn append(&mut self, row: &str) {
        let joined = [self.tail.as_slice(), row.as_bytes()].concat();
        self.tail = self.running.update(&joined).to_vec();
    }
}

/// INDEX.md's identity: size, mtime, ctime, inode (None when it cannot be
/// stat'ed, which never matches a saved state).
fn identity(paths: &Paths) -> Option<(u64, i64, i64, u64)> {
    let m = fs::symlink_metadata(&paths.index_md).ok()?;
    if !m.is_file() {
        return None;
    }
    let mtime = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos() as i64;
    #[cfg(unix)]
    let (ctime, ino) = {
        use std::os::unix::fs::MetadataExt;
        (m.ctime().saturating_mul(1_000_000_000).saturating_add(m.ctime_nsec()), m.ino())
    };
    #[cfg(not(unix))]
    let (ctime, ino) = (0, 0);
    Some((m.len(), mtime, ctime, ino))
}

/// The saved state, when INDEX.md is still the file it was saved for.
pub fn load(paths: &Paths) -> Option<Known> {
    let saved: Saved = serde_json::from_slice(&fs::read(&paths.index_digest).ok()?).ok()?;
    let (size, mtime_ns, ctime_ns, ino) = identity(paths)?;
    if (size, mtime_ns, ctime_ns, ino) != (saved.size, saved.mtime_ns, saved.ctime_ns, saved.ino) {
        return None;
    }
    let running = Running::from_state_hex(&saved.state, saved.folded)?;
    let rest = size.checked_sub(saved.folded).filter(|&r| r < 64)?;
    let mut f = File::open(&paths.index_md).ok()?;
    f.seek(SeekFrom::Start(saved.folded)).ok()?;
    let mut tail = Vec::with_capacity(rest as usize);
    f.take(64).read_to_end(&mut tail).ok()?;
    (tail.len() as u64 == rest).then_some(Known { running, tail, appendable: saved.appendable })
}

/// Saves the state of INDEX.md as just written. Best effort: a state
/// that is not saved leaves the previous one, which names INDEX.md's
/// previous identity (this write changed it), so it is never trusted and
/// the next apply hashes the file whole; failing the apply after its
/// note and row landed would be worse.
pub fn save(paths: &Paths, k: &Known) {
    let Some((size, mtime_ns, ctime_ns, ino)) = identity(paths) else { return };
    if size != k.running.len + k.tail.len() as u64 {
        return;
    }
    let saved = Saved {
        size,
        mtime_ns,
        ctime_ns,
        ino,
        state: k.running.state_hex(),
        folded: k.running.len,
        appendable: k.appendable,
    };
    // Derived and checked against INDEX.md's identity on every read, so a
    // lost write costs one full hash: not synced, but the rename keeps a
    // reader from seeing half a file.
    let bytes = serde_json::to_vec(&saved).unwrap_or_default();
    if let Ok(staged) = crate::fs::atomic::stage(&paths.index_digest, &bytes, false) {
        if crate::fs::atomic::rename_onto(&staged.tmp, &paths.index_digest, false).is_err() {
            let _ = fs::remove_file(&staged.tmp);
        }
    }
}
