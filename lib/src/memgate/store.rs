//! The memory directory of seed 003 (`.cursor/.lingxi/memory/`): where
//! notes, INDEX.md, the archive, the search index, the lock and the audit
//! log live, and how notes are read from it.

use std::fs;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::note::{self, Note};
use super::search::{self, DocEntry, View};
use super::similarity;
use crate::error::{Context, Error, Result};

/// The seed's default memory directory, relative to the project root.
pub const DEFAULT_DIR: &str = ".cursor/.lingxi/memory";

/// Every path memgate touches, derived from the memory directory.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The memory directory itself (holds `.lock`).
    pub dir: PathBuf,
    /// `notes/`.
    pub notes: PathBuf,
    /// `archive/`: notes removed by merge or replace, recoverable.
    pub archive: PathBuf,
    /// `INDEX.md`.
    pub index_md: PathBuf,
    /// `.search.idx`, the derived neighbour index.
    pub search: PathBuf,
    /// `../workspace/audit.log` (the seed's `.cursor/.lingxi/workspace/audit.log`).
    pub audit: PathBuf,
}

impl Paths {
    /// The paths for a memory directory (default: the seed's).
    pub fn new(dir: Option<&Path>) -> Result<Paths> {
        let dir = match dir {
            Some(d) => d.to_path_buf(),
            None => PathBuf::from(DEFAULT_DIR),
        };
        let dir = if dir.is_absolute() {
            dir
        } else {
            std::env::current_dir().map_err(|e| Error::io("reading the working directory", e))?.join(dir)
        };
        let parent = dir.parent().map_or_else(|| dir.clone(), Path::to_path_buf);
        Ok(Paths {
            notes: dir.join("notes"),
            archive: dir.join("archive"),
            index_md: dir.join("INDEX.md"),
            search: dir.join(".search.idx"),
            audit: parent.join("workspace").join("audit.log"),
            dir,
        })
    }

    /// The path of a note file by id.
    pub fn note(&self, id: &str) -> PathBuf {
        self.notes.join(note::file_name(id))
    }

    /// The File column value / audit `file` of a note.
    pub fn rel(&self, id: &str) -> String {
        format!("memory/notes/{}", note::file_name(id))
    }
}

/// Modification time in nanoseconds (0 when unknown: it only keys the
/// search-index cache, and 0 never matches, so the cost is a rebuild).
pub fn mtime_ns(path: &Path) -> i64 {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64)
}

/// A note read from disk, with the stamps the index keeps.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The parsed note.
    pub note: Note,
    /// Its file name.
    pub file: String,
    /// Its raw bytes.
    pub bytes: Vec<u8>,
    /// mtime in ns.
    pub mtime_ns: i64,
}

impl Loaded {
    /// The index entry for this note.
    pub fn entry(&self) -> DocEntry {
        DocEntry {
            id: self.note.id.clone(),
            file: self.file.clone(),
            size: self.bytes.len() as u64,
            mtime_ns: self.mtime_ns,
            features: similarity::features(&self.note.body.search_text(), &self.note.body.one_liner),
        }
    }
}

/// Reads one note file; `Ok(None)` when it does not exist.
pub fn read_note(paths: &Paths, file: &str) -> Result<Option<Loaded>> {
    let p = paths.notes.join(file);
    // Never through a symlink, never blocking on a FIFO (issue 21).
    let bytes = match crate::fs::nofollow::read(&p, crate::library::scan::MAX_DOC_BYTES) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(format!("reading {}", p.display()), e)),
    };
    let text = String::from_utf8_lossy(&bytes);
    let stem = file.strip_suffix(".md").unwrap_or(file);
    let note = note::parse(&text, stem).map_err(|e| Error::msg(format!("{}: {e}", p.display())))?;
    // The file is the note: a Meta Id naming another note would make an
    // archive delete that other note's file.
    if note.id != stem {
        return Err(Error::msg(format!(
            "{}: its Meta Id '{}' does not match its file name",
            p.display(),
            crate::library::names::shown(&note.id)
        )));
    }
    Ok(Some(Loaded { note, file: file.to_string(), mtime_ns: mtime_ns(&p), bytes }))
}

/// The note file names under notes/ (`MEM-*.md`), sorted.
pub fn note_files(paths: &Paths) -> Result<Vec<String>> {
    let rd = match fs::read_dir(&paths.notes) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(format!("listing {}", paths.notes.display()), e)),
    };
    // An entry that vanishes while listed is gone; a name that is not UTF-8 is no MEM- id.
    let mut out: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("MEM-") && n.ends_with(".md"))
        .collect();
    out.sort();
    Ok(out)
}

/// Reads every note in parallel (order = file name). Notes that cannot be
/// read are returned as problems, not dropped silently.
pub fn scan(paths: &Paths) -> Result<(Vec<Loaded>, Vec<Error>)> {
    let files = note_files(paths)?;
    let results: Vec<Result<Option<Loaded>>> = files.par_iter().map(|f| read_note(paths, f)).collect();
    let (mut notes, mut problems) = (Vec::new(), Vec::new());
    for r in results {
        match r {
            Ok(Some(l)) => notes.push(l),
            Ok(None) => {}
            Err(e) => problems.push(e),
        }
    }
    Ok((notes, problems))
}

/// The search index bytes: mapped from `.search.idx` when it is current,
/// else built in memory from the notes.
pub enum IndexBytes {
    /// The on-disk index, current with notes/.
    Mapped(memmap2::Mmap),
    /// Built from a scan because the on-disk one was missing or stale.
    Built(Vec<u8>),
}

impl IndexBytes {
    /// The bytes to open a [`View`] on.
    pub fn bytes(&self) -> &[u8] {
        match self {
            IndexBytes::Mapped(m) => m,
            IndexBytes::Built(b) => b,
        }
    }
}

/// Opens the search index for reading; a missing or stale one is rebuilt
/// in memory (and `stale` tells the caller to suggest `reindex`).
pub fn open_index(paths: &Paths) -> Result<(IndexBytes, bool)> {
    let dir_mtime = mtime_ns(&paths.notes);
    if paths.search.exists() {
        let map = crate::fs::map::map(&paths.search)?;
        if View::open(&map).is_some_and(|v| v.dir_mtime_ns == dir_mtime) {
            return Ok((IndexBytes::Mapped(map), false));
        }
    }
    let (notes, problems) = scan(paths)?;
    if let Some(e) = problems.into_iter().next() {
        return Err(e);
    }
    let entries: Vec<DocEntry> = notes.iter().map(Loaded::entry).collect();
    let stale = !entries.is_empty();
    Ok((IndexBytes::Built(search::encode(dir_mtime, &entries)), stale))
}

/// Writes the search index for the current notes/ from `entries`.
pub fn write_index(paths: &Paths, entries: &[DocEntry]) -> Result<()> {
    let bytes = search::encode(mtime_ns(&paths.notes), entries);
    crate::fs::atomic::write(&paths.search, &bytes)
}

/// Reads the on-disk index's entries if it is current with notes/ as it
/// was before a change (`expected_mtime`), else `None` (missing or
/// unreadable: the derived index is rebuilt from the notes).
pub fn index_entries(paths: &Paths, expected_mtime: i64) -> Option<Vec<DocEntry>> {
    let bytes = fs::read(&paths.search).ok()?;
    let v = View::open(&bytes)?;
    (v.dir_mtime_ns == expected_mtime).then(|| v.entries())
}

/// Reads INDEX.md (empty when missing).
pub fn read_index_md(paths: &Paths) -> Result<String> {
    match fs::read_to_string(&paths.index_md) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e).ctx(|| format!("reading {}", paths.index_md.display())),
    }
}
