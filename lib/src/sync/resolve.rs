//! `kb-append resolve PATH --keep ours|theirs|FILE`:
//! ends a kept conflict. The document gets the chosen content, its kept
//! copies go, a changelog `resolve` event records the choice, the derived
//! files follow, and the whole is one commit.

use std::path::PathBuf;

use serde::Serialize;

use crate::clock;
use crate::doc::digest;
use crate::error::{Error, Result};
use crate::library::changelog::{self, Event};
use crate::library::entry::{self, Category, Entry};
use crate::library::Library;
use crate::lock;
use crate::sync::{conflicts, refresh};

/// Which content the document ends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keep {
    /// The content in place (the side sync chose).
    Ours,
    /// The kept copy (there must be exactly one).
    Theirs,
    /// The content of a file (a hand merge, or one of several copies).
    File(PathBuf),
}

impl Keep {
    /// Parses `--keep`: `ours`, `theirs`, or a file path.
    pub fn parse(s: &str) -> Keep {
        match s {
            "ours" => Keep::Ours,
            "theirs" => Keep::Theirs,
            other => Keep::File(PathBuf::from(other)),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Keep::Ours => "ours",
            Keep::Theirs => "theirs",
            Keep::File(_) => "file",
        }
    }
}

/// The `resolve` record.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "record", rename = "resolve")]
pub struct Resolved {
    /// The document.
    pub path: String,
    /// ours, theirs or file.
    pub keep: &'static str,
    /// SHA-256 of the document afterwards.
    pub sha256: String,
    /// The kept copies removed.
    pub removed: Vec<String>,
    /// Whether a git commit was made.
    pub committed: bool,
}

/// Resolves the kept conflicts of `path`. Callers pass the lock options;
/// `commit` commits the result when the library is in git.
pub fn resolve(lib: &Library, path: &str, keep: &Keep, commit: bool, lock_opts: &lock::Options) -> Result<Resolved> {
    // The same path rules as any write: no internal or refused
    // name, nothing through a symlink, the kept copies included.
    let path = lib.writable(path)?;
    let chosen = match keep {
        Keep::File(f) => Some(
            crate::fs::nofollow::read_input(f, crate::library::scan::MAX_DOC_BYTES)
                .map_err(|e| Error::io(format!("reading {}", f.display()), e))?,
        ),
        _ => None,
    };
    lock::with_lock(lib, lock_opts, || {
        lib.check_inside(conflicts::DIR)?;
        let copies = conflicts::of(lib, &path);
        for c in &copies {
            lib.check_inside(&c.kept)?;
        }
        if copies.is_empty() {
            return Err(Error::msg(format!("'{path}' has no kept conflict (kb-index status lists them)")));
        }
        let full = lib.path(&path);
        let bytes = match (keep, &chosen) {
            (Keep::File(_), Some(b)) => b.clone(),
            (Keep::Theirs, _) => match copies.as_slice() {
                [one] => crate::fs::nofollow::read(&lib.path(&one.kept), crate::library::scan::MAX_DOC_BYTES)
                    .map_err(|e| Error::io(format!("reading {}", one.kept), e))?,
                many => {
                    let names: Vec<&str> = many.iter().map(|c| c.kept.as_str()).collect();
                    return Err(Error::usage(format!(
                        "'{path}' has {} kept versions ({}); give --keep FILE",
                        many.len(),
                        names.join(", ")
                    )));
                }
            },
            // Keep what is there; a file that cannot be read must not be
            // "kept" as empty bytes.
            _ => crate::fs::nofollow::read(&full, crate::library::scan::MAX_DOC_BYTES)
                .map_err(|e| Error::io(format!("reading {}", full.display()), e))?,
        };
        crate::fs::atomic::write_if_changed(&full, &bytes)?;
        let removed = conflicts::remove(lib, &copies)?;
        let text = String::from_utf8_lossy(&bytes);
        let info = entry::classify(&path);
        let event = Event {
            ts: clock::format(clock::now()?),
            event: "resolve".into(),
            path: path.clone(),
            action: Some(format!("keep-{}", keep.name())),
            category: Some(info.and_then(|i| i.category).map_or("file", Category::as_str).to_string()),
            topic: Entry::from_text(&path, &text).map(|e| e.topic),
            sha256: Some(digest::sha256_hex(&bytes)),
            bytes: Some(bytes.len() as u64),
            reason: Some(format!("removed {}", removed.join(", "))),
            ..Event::default()
        };
        changelog::append(lib, std::slice::from_ref(&event))?;
        let mut touched = vec![path.clone(), changelog::FILE.to_string()];
        touched.extend(removed.iter().cloned());
        touched.extend(refresh::documents(lib, std::slice::from_ref(&path), Some(&[]))?);
        let committed =
            commit && crate::library::git::commit(lib, &touched, &format!("task-ai(library):resolve {path}"))?;
        Ok(Resolved { path: path.clone(), keep: keep.name(), sha256: digest::sha256_hex(&bytes), removed, committed })
    })
}
