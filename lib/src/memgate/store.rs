//! The memory directory of seed 003: where notes, INDEX.md, the archive,
//! the search index, the lock and the audit log live, and how notes are
//! read from it. The seed puts it in `.cursor/.lingxi/memory/`, Cursor's
//! folder; other agents' users get `.agents/.lingxi/memory/`. Which one is
//! the user's choice (`memory.store` in their own config, kb::config),
//! never a project file's, and it is always inside a project.

use std::fs;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::note::{self, Note};
use super::search::{self, DocEntry, View};
use super::similarity;
use crate::error::{Context, Error, Result};
use crate::text::segment::{Bytes, SideOf};

/// The most notes (written or removed) a side segment holds before apply
/// writes the index whole again: keeps both the side a reader decodes and
/// the amortised rewrite small.
pub const MAX_CHANGES: usize = 128;

/// Seed 003's store folder, for Cursor (`memory.store: cursor`).
pub const CURSOR_STORE: &str = ".cursor/.lingxi";
/// The store folder for any other agent, and the default
/// (`memory.store: project`).
pub const PROJECT_STORE: &str = ".agents/.lingxi";

/// What makes a folder a project kb-memgate may keep notes in. `.cursor`
/// and `.claude` alone are not: both agents keep a folder of that name in
/// the home directory too.
pub const PROJECT_MARKERS: &[&str] = &[".git", ".library", ".agents", "AGENTS.md", "CLAUDE.md", CURSOR_STORE];

/// The store folder (holding `memory/` and `workspace/`) relative to a
/// project, as the user's own configuration chooses: `cursor`,
/// `project` (the default) or a relative folder of their own.
pub fn store_rel(config: &crate::config::Config) -> Result<PathBuf> {
    match config.memory.store.as_deref().map(str::trim) {
        None | Some("project") => Ok(PathBuf::from(PROJECT_STORE)),
        Some("cursor") => Ok(PathBuf::from(CURSOR_STORE)),
        Some(dir) => {
            let rel = crate::library::normalise(dir).map_err(|e| {
                Error::msg(format!(
                    "memory.store in {}: {e} (expected cursor, project or a folder inside the project)",
                    crate::config::path().map_or_else(|| crate::config::FILE.into(), |p| p.display().to_string())
                ))
            })?;
            Ok(PathBuf::from(rel))
        }
    }
}

/// The memory directory relative to a project.
pub fn memory_rel(config: &crate::config::Config) -> Result<PathBuf> {
    Ok(store_rel(config)?.join("memory"))
}

/// The project `cwd` is in: `cwd` or its nearest ancestor holding one of
/// [`PROJECT_MARKERS`]. Outside any project this is an error, so no
/// command makes a store in a folder that merely happened to be current.
pub fn project(cwd: &Path) -> Result<PathBuf> {
    cwd.ancestors()
        .find(|d| PROJECT_MARKERS.iter().any(|m| d.join(m).symlink_metadata().is_ok()))
        .map(Path::to_path_buf)
        .ok_or_else(|| {
            Error::msg(format!(
                "no project found in {} or its parents (looked for {}); run kb-memgate in your project, \
                 or name the store with --memory-dir DIR",
                cwd.display(),
                PROJECT_MARKERS.join(", ")
            ))
        })
}

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
    /// `.search.side`, the side segment: the notes apply wrote or removed
    /// since `.search.idx` was written whole.
    pub search_side: PathBuf,
    /// `.dense.vec`, the notes' vectors under a sentence encoder
    /// (kb::memgate::dense), written by reindex.
    pub dense: PathBuf,
    /// `.index.digest`, INDEX.md's running SHA-256 (kb::memgate::index_digest).
    pub index_digest: PathBuf,
    /// `.search.log`, the change log of index version 03, removed when
    /// the index is written.
    pub search_log: PathBuf,
    /// `../workspace/audit.log` (the seed's `.cursor/.lingxi/workspace/audit.log`).
    pub audit: PathBuf,
}

impl Paths {
    /// The paths for a memory directory: the one named, else the store
    /// the user's configuration chooses in the project the working
    /// directory is in (an error outside any project). The default store
    /// is refused when any part of it below the project (the store folder,
    /// `memory`, its `notes/` and `archive/`, and the audit log's
    /// `workspace/`) is a symlink (a peer's `.cursor/.lingxi`
    /// link made kb-memgate write its notes, INDEX.md and audit log into
    /// the link's target); a store named with `--memory-dir` is the
    /// user's choice.
    pub fn new(dir: Option<&Path>) -> Result<Paths> {
        let (paths, hint) = Paths::resolve(dir)?;
        if let Some(hint) = hint {
            eprintln!("kb-memgate: {hint}");
        }
        Ok(paths)
    }

    /// [`Paths::new`] without its stderr: the paths, and the hint to give
    /// a kb-memgate user whose notes sit in Cursor's store while the
    /// configured one is empty (`kb-lock sweep` has no use for it).
    pub fn resolve(dir: Option<&Path>) -> Result<(Paths, Option<String>)> {
        let mut hint = None;
        let dir = match dir {
            Some(d) => d.to_path_buf(),
            None => {
                let cwd = std::env::current_dir().map_err(|e| Error::io("reading the working directory", e))?;
                let root = project(&cwd)?;
                let store = store_rel(&crate::config::Config::load()?)?;
                for rel in ["memory/notes", "memory/archive", "workspace"] {
                    let rel = store.join(rel);
                    let rel = rel.to_string_lossy();
                    crate::library::unlinked(&root, &rel, "kb-memgate's memory store", "--memory-dir DIR")?;
                }
                if store == Path::new(PROJECT_STORE)
                    && !root.join(PROJECT_STORE).exists()
                    && root.join(CURSOR_STORE).join("memory/INDEX.md").is_file()
                {
                    hint = Some(format!(
                        "notes are in {CURSOR_STORE}/memory (Cursor's store) but the store is \
                         {PROJECT_STORE}/memory; to use Cursor's, put `memory: {{store: cursor}}` in {}",
                        crate::config::path().map_or_else(|| crate::config::FILE.into(), |p| p.display().to_string())
                    ));
                }
                root.join(store).join("memory")
            }
        };
        let dir = if dir.is_absolute() {
            dir
        } else {
            std::env::current_dir().map_err(|e| Error::io("reading the working directory", e))?.join(dir)
        };
        let parent = dir.parent().map_or_else(|| dir.clone(), Path::to_path_buf);
        let paths = Paths {
            notes: dir.join("notes"),
            archive: dir.join("archive"),
            index_md: dir.join("INDEX.md"),
            search: dir.join(".search.idx"),
            search_side: dir.join(".search.side"),
            dense: dir.join(".dense.vec"),
            index_digest: dir.join(".index.digest"),
            search_log: dir.join(".search.log"),
            audit: parent.join("workspace").join("audit.log"),
            dir,
        };
        Ok((paths, hint))
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
    // Never through a symlink, never blocking on a FIFO.
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

/// The search index opened for reading: the main segment and its side.
pub struct Opened {
    /// The main segment, mapped when current, else built from a scan.
    pub main: Bytes,
    /// The side segment to lay over it.
    pub side: Option<Bytes>,
    /// Whether the on-disk index was missing or stale (suggest `reindex`).
    pub stale: bool,
}

impl Opened {
    /// The view of the notes as they are: the index with its side.
    pub fn view(&self) -> Option<View<'_>> {
        let v = View::open(&self.main).ok()?;
        match &self.side {
            Some(s) => v.with_side(s).ok(),
            None => Some(v),
        }
    }
}

/// The on-disk index and its side segment when, together, they are
/// current with notes/ at `dir_mtime`. Anything else (missing, an old
/// format, damaged, a side of another index, older than notes/) is None:
/// the index is derived, so the caller rebuilds it from the notes.
fn current(paths: &Paths, dir_mtime: i64) -> Option<(memmap2::Mmap, Option<memmap2::Mmap>)> {
    let map = crate::fs::map::map(&paths.search).ok()?;
    let side = match crate::fs::map::map(&paths.search_side) {
        Ok(m) => Some(m),
        Err(_) if !paths.search_side.exists() => None,
        Err(_) => return None,
    };
    let v = View::open(&map).ok()?;
    let v = match &side {
        Some(s) => v.with_side(s).ok()?,
        None => v,
    };
    let at = v.dir_mtime_ns;
    drop(v);
    (at == dir_mtime).then_some((map, side))
}

/// Opens the search index for reading; a missing or stale one is rebuilt
/// in memory (and `stale` tells the caller to suggest `reindex`).
pub fn open_index(paths: &Paths) -> Result<Opened> {
    let dir_mtime = mtime_ns(&paths.notes);
    if let Some((map, side)) = current(paths, dir_mtime) {
        return Ok(Opened { main: Bytes::Map(map), side: side.map(Bytes::Map), stale: false });
    }
    let (notes, problems) = scan(paths)?;
    if let Some(e) = problems.into_iter().next() {
        return Err(e);
    }
    let entries: Vec<DocEntry> = notes.iter().map(Loaded::entry).collect();
    let stale = !entries.is_empty();
    Ok(Opened { main: Bytes::Owned(search::encode(dir_mtime, &entries)), side: None, stale })
}

/// Removes a derived file (missing is fine).
fn remove(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e).ctx(|| format!("removing {}", path.display())),
        _ => Ok(()),
    }
}

/// Writes the search index whole for the current notes/ from `entries`,
/// and drops the side segment it absorbs (a side left by a crash between
/// the two names the old index and is ignored) and a version-03 log.
pub fn write_index(paths: &Paths, entries: &[DocEntry]) -> Result<()> {
    let bytes = search::encode(mtime_ns(&paths.notes), entries);
    crate::fs::atomic::write(&paths.search, &bytes)?;
    remove(&paths.search_side)?;
    remove(&paths.search_log)
}

/// Brings the search index up to date after a change that removed the
/// notes `del` and wrote `put`, under the caller's lock. `before` is the
/// notes-dir mtime before the change: when the index was current then,
/// the change rewrites only the side segment (the notes changed since the
/// index was written whole, at most [`MAX_CHANGES`]; past that the index
/// is written whole); otherwise the notes are scanned.
pub fn record_change(paths: &Paths, before: i64, del: Vec<String>, put: Option<DocEntry>) -> Result<()> {
    let at = mtime_ns(&paths.notes);
    if let Some((map, side)) = current(paths, before) {
        let v = View::open(&map).map_err(|e| Error::msg(format!("the search index is corrupted: {e}")))?;
        let v = match &side {
            Some(s) => v.with_side(s).map_err(|e| Error::msg(format!("the search side index is corrupted: {e}")))?,
            None => v,
        };
        let mut dead: std::collections::BTreeSet<u32> = v.dead().iter().copied().collect();
        let mut extra: Vec<DocEntry> = v.extra().to_vec();
        for id in del.iter().chain(put.as_ref().map(|e| &e.id)) {
            extra.retain(|e| &e.id != id);
            if let Some(i) = v.find_main(id) {
                dead.insert(i as u32);
            }
        }
        extra.extend(put);
        let (built, dead): (u64, Vec<u32>) = (v.built(), dead.into_iter().collect());
        if extra.len() + dead.len() <= MAX_CHANGES {
            let bytes = search::encode_side(at, &extra, SideOf { main_built: built, dead });
            return crate::fs::atomic::write(&paths.search_side, &bytes);
        }
        let v = View::open(&map).map_err(|e| Error::msg(format!("the search index is corrupted: {e}")))?;
        return write_index(paths, &v.with_changes(dead, extra).entries());
    }
    let (notes, problems) = scan(paths)?;
    if let Some(e) = problems.into_iter().next() {
        return Err(e);
    }
    write_index(paths, &notes.iter().map(Loaded::entry).collect::<Vec<_>>())
}

/// Reads INDEX.md (empty when missing).
pub fn read_index_md(paths: &Paths) -> Result<String> {
    Ok(crate::fs::read::optional_text(&paths.index_md)?.unwrap_or_default())
}
