//! Pending files (seed 004 §2, §6 step 3d and 4): the YAML queues of
//! declared entries per target file. Read leniently (a broken entry is
//! staged, not fatal), written whole and atomically under the lock, and
//! removed once every entry in them has been applied.

use std::path::Path;

use super::delta::{self, Bad, Entry, File, Problem};
use super::home::Home;
use super::staging::{self, Staged};
use crate::error::{Context, Result};

/// A pending file as read.
#[derive(Debug, Default)]
pub struct Queue {
    /// The entries that parsed.
    pub file: File,
    /// Entries that did not.
    pub bad: Vec<Bad>,
    /// File-level problems (not YAML, wrong shape).
    pub problems: Vec<Problem>,
    /// The text as read (staged verbatim when it cannot be parsed).
    pub text: String,
}

/// The largest pending file read: far above any session's deltas, it
/// only bounds what a planted file can make kb-lastword hold in memory.
pub const MAX_BYTES: u64 = 64 << 20;

/// Reads a pending file; a missing file is an empty queue. Never through
/// a symlink and never blocking on a FIFO: a planted
/// `.agents/AGENTS.md.yaml` link must not copy its target into staging.
pub fn read(path: &Path) -> Result<Queue> {
    let bytes = match crate::fs::nofollow::read(path, MAX_BYTES) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Queue::default()),
        Err(e) => return Err(crate::Error::io(format!("reading {}", path.display()), e)),
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        // Staged as it reads, like any other pending file that does not parse.
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    let (file, bad, problems) = delta::parse_text(&text);
    Ok(Queue { file, bad, problems, text })
}

/// Writes a queue back, or removes the file when no entry is left (seed
/// 004 §6 step 4: "成功 → 删除 .yaml").
pub fn write(path: &Path, file: &File) -> Result<()> {
    if file.entries.is_empty() {
        return match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(crate::Error::io(format!("removing {}", path.display()), e)),
        };
    }
    let text = render(file)?.unwrap_or_default();
    crate::fs::atomic::write(path, &text)
}

/// A pending file's bytes, or `None` when no entry is left (the file goes).
pub fn render(file: &File) -> Result<Option<Vec<u8>>> {
    if file.entries.is_empty() {
        return Ok(None);
    }
    let text = format!("# kb-lastword pending deltas: `kb-lastword apply` writes them\n{}", file.to_yaml()?);
    Ok(Some(text.into_bytes()))
}

/// Stages what cannot be read in a queue (the whole text when it is not a
/// delta file, else its bad entries) and returns the staging path, if any.
/// Callers hold the lock and rewrite the queue afterwards.
pub fn stage_unreadable(home: &Home, path: &Path, q: &Queue) -> Result<Option<std::path::PathBuf>> {
    unreadable(home, path, q).map(|st| staging::write(home, &st)).transpose()
}

/// What [`stage_unreadable`] stages, not yet written.
pub fn unreadable(home: &Home, path: &Path, q: &Queue) -> Option<Staged> {
    if !q.problems.is_empty() {
        let msg: Vec<String> = q.problems.iter().map(|p| p.to_string()).collect();
        let st = Staged {
            queue: Some(path.to_path_buf()),
            error: format!("pending file {} could not be read: {}", home.show(path), msg.join("; ")),
            raw: vec![q.text.clone()],
            ..Staged::default()
        };
        return Some(st);
    }
    if q.bad.is_empty() {
        return None;
    }
    let st = Staged {
        source: q.file.source.clone(),
        queue: Some(path.to_path_buf()),
        error: format!(
            "{} invalid entr{} in {}",
            q.bad.len(),
            if q.bad.len() == 1 { "y" } else { "ies" },
            home.show(path)
        ),
        entries: q.bad.iter().map(|b| staging::with_error(b.raw.clone(), &b.problem.to_string())).collect(),
        ..Staged::default()
    };
    Some(st)
}

/// Appends entries to a pending file (caller holds the lock). Anything
/// unreadable already in the file is staged first, so it is not lost.
pub fn append(home: &Home, path: &Path, source: Option<&str>, entries: &[Entry]) -> Result<()> {
    if let Some(dir) = path.parent() {
        home.check_queue_dir(dir)?;
    }
    let q = read(path)?;
    stage_unreadable(home, path, &q)?;
    let mut file = if q.problems.is_empty() { q.file } else { File::default() };
    if file.source.is_none() {
        file.source = source.map(str::to_string);
    }
    file.entries.extend(entries.iter().cloned());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).ctx(|| format!("creating {}", dir.display()))?;
    }
    write(path, &file)
}
