//! The file primitives of a write-ahead journal, shared by the three that
//! exist: the library's batch journal (`write::journal`), kb-lastword's
//! apply (`lastword::journal`) and kb-memgate's apply (`memgate::journal`).
//! Each keeps its own records (changelog and git, reporter, audit lines and
//! INDEX.md) and its own JSON format; what they share is how a journal is
//! written, read and removed, how a planned file's current digest is taken,
//! how a staged temp is put in place, and how a roll forward decides, file
//! by file, whether a planned change landed, is still to be put, or meets a
//! file someone else changed (which stops it).

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::atomic;
use crate::error::{Context, Error, Result};

/// The digest (`hash`, a SHA-256 in hex) of a file's bytes, at most
/// `limit` of them; `None` when it does not exist. Never through a link:
/// the caller checked the path, and a link planted since is an error.
pub fn digest(path: &Path, limit: u64, hash: fn(&[u8]) -> String) -> Result<Option<String>> {
    match super::nofollow::read(path, limit) {
        Ok(b) => Ok(Some(hash(&b))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!("reading {}", path.display()), e)),
    }
}

/// Removes a file; `false` when it was not there. Used for a journal
/// whose group is wholly recorded, a leftover temp and a planned removal.
pub fn remove(path: &Path) -> Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(format!("removing {}", path.display()), e)),
    }
}

/// Puts one planned change in place: renames the synced temp `tmp` onto
/// `path`, or, without a temp, removes `path` (already gone is fine).
pub fn put(path: &Path, tmp: Option<&Path>) -> Result<()> {
    match tmp {
        Some(tmp) => std::fs::rename(tmp, path).ctx(|| format!("replacing {}", path.display())),
        None => remove(path).map(|_| ()),
    }
}

/// Makes the intent record durable as one JSON line (atomic write: temp,
/// fsync, rename, fsync the directory).
pub fn write<T: Serialize>(path: &Path, journal: &T) -> Result<()> {
    let text = serde_json::to_string(journal).map_err(|e| Error::msg(format!("cannot encode the journal: {e}")))?;
    atomic::write(path, format!("{text}\n").as_bytes())
}

/// Reads the journal at `path`, if any. One that does not parse, or has
/// another `version` than `reads`, is an error naming `tool`: it is
/// written atomically, so it is never torn, and guessing would lose or
/// invent changes.
pub fn read<T: DeserializeOwned>(path: &Path, tool: &str, version: fn(&T) -> u32, reads: u32) -> Result<Option<T>> {
    let Some(bytes) = super::read::optional(path)? else { return Ok(None) };
    let j: T = serde_json::from_slice(&bytes)
        .map_err(|e| Error::msg(format!("{} is not a {tool} journal ({e}); move it away to go on", path.display())))?;
    let v = version(&j);
    if v != reads {
        return Err(Error::msg(format!("{} has version {v}, this {tool} reads {reads}", path.display())));
    }
    Ok(Some(j))
}

/// What a roll forward does with one planned file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// It has its planned digest: the change landed.
    Landed,
    /// It still has its old digest and its temp is good: put it in place.
    Put,
    /// Neither (changed by someone else since), or an earlier file was:
    /// it keeps its bytes.
    Kept,
}

/// Decides the planned files of a group in order: once one file is
/// neither landed nor still old, it and every later file keep their bytes.
#[derive(Debug, Default)]
pub struct RollForward {
    stopped: bool,
}

impl RollForward {
    /// The fate of the next planned file: `now` its digest, `before` and
    /// `after` the planned ones, `tmp_ok` whether the temp to put (if the
    /// change has one) is there and good.
    pub fn next(
        &mut self,
        now: &Option<String>,
        before: &Option<String>,
        after: &Option<String>,
        tmp_ok: bool,
    ) -> Fate {
        if now == after {
            Fate::Landed
        } else if !self.stopped && now == before && tmp_ok {
            Fate::Put
        } else {
            self.stopped = true;
            Fate::Kept
        }
    }
}
