//! The persistent index cache, so a warm query does not rescan the
//! library. A query trusts it when what the writers record is unchanged
//! (`.relations.jsonl`, the changelog and its archive: every kb-append
//! write logs there, so a write is seen at once), the library's top
//! [`TOP_LEVELS`] levels of directories have their indexed mtimes, and
//! the documents it returns have their indexed size and mtime. Every
//! other directory (a document added, removed or saved by rename deep in
//! the tree by hand) is checked when the last full check is
//! [`RECHECK_SECS`] old or more, and always with `--verify`: a query's
//! cost follows its postings, not the number of directories (a full check
//! stats every one: 0.1 s at 8,000), and a hand edit is seen within
//! [`RECHECK_SECS`]. A stale cache is rebuilt incrementally (only changed
//! documents are read again); a corrupt or truncated one is rebuilt from
//! scratch, never trusted. Two processes building at once is safe: each
//! writes a private temp file and renames it over the cache, so readers
//! see one whole index or the other.
//!
//! The local library's cache lives in its `.cache/kb-score/`; an external
//! library (seed 001: strictly read-only) gets its cache in the local
//! library's cache dir, else in the user cache dir, never inside itself.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rayon::prelude::*;

use crate::doc::digest;
use crate::error::Result;
use crate::fs::atomic;
use crate::library::scan::Problem;
use crate::library::Library;

use super::build::{self, stamp};
use super::index::{self, View};
use super::side;
use crate::text::segment::Bytes;

/// The cache directory inside a library.
pub const DIR: &str = ".cache/kb-score";

/// How the index of a query was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The cache was current.
    Warm,
    /// The cache was stale and was updated incrementally.
    Updated,
    /// There was no usable cache; the index was built from scratch.
    Built,
}

/// Maps a cache file read-only (kb::fs::map::map: the cache is only ever
/// replaced by rename, never truncated in place). `None` (missing or
/// unreadable) rebuilds it: the cache is derived, nothing is lost.
fn map(path: &Path) -> Option<memmap2::Mmap> {
    crate::fs::map::map(path).ok()
}

/// Where the cache of `lib` lives. `local` is the querying project's own
/// library (None when there is none); `external` says `lib` is not it.
pub fn path_for(lib: &Library, local: Option<&Library>, external: bool) -> Option<PathBuf> {
    let name = format!("index-v{}.bin", index::FORMAT_VERSION);
    if !external {
        return Some(lib.path(DIR).join(name));
    }
    let canon = lib.dir.canonicalize().unwrap_or_else(|_| lib.dir.clone());
    let key = &digest::sha256_hex(canon.to_string_lossy().as_bytes())[..16];
    let file = format!("ext-{key}-v{}.bin", index::FORMAT_VERSION);
    match local {
        Some(l) => Some(l.path(DIR).join(file)),
        None => user_cache_dir().map(|d| d.join(file)),
    }
}

/// `$XDG_CACHE_HOME/kb-tools/score`, else `~/.cache/kb-tools/score`.
pub fn user_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("kb-tools").join("score"))
}

/// How many levels of directories below the library root every query
/// checks (the root and its categories: `notes/x`, `.memory/.references`).
pub const TOP_LEVELS: usize = 2;

/// Seconds after which a query checks every directory again; the
/// environment's `KB_SCORE_RECHECK_SECS` overrides it (0: every query).
pub const RECHECK_SECS: u64 = 2;

fn recheck() -> Duration {
    let secs = std::env::var("KB_SCORE_RECHECK_SECS").ok().and_then(|v| v.trim().parse().ok());
    Duration::from_secs(secs.unwrap_or(RECHECK_SECS))
}

/// How many levels below the library root a library-relative directory is.
fn depth(dir: &str) -> usize {
    if dir.is_empty() {
        0
    } else {
        dir.bytes().filter(|&b| b == b'/').count() + 1
    }
}

/// The check of every query: the writers' records (`.relations.jsonl` and
/// the changelog: every kb-append write logs an event) are unchanged, and
/// so are the watched directories, all of them or (`all` false) the top
/// [`TOP_LEVELS`] levels (a document added, removed or replaced by
/// rename, which is how kb-append and most editors save, changes its
/// directory's mtime).
pub fn is_current(lib: &Library, v: &View, all: bool) -> bool {
    let same = |(d, m): &(String, u64)| fs::metadata(lib.path(d)).is_ok_and(|x| build::mtime_ns(&x) == *m);
    v.info.stamps.iter().all(|(f, s, m)| stamp(&lib.path(f)) == (*s, *m))
        && match all {
            true => v.info.dirs.par_iter().all(same),
            // A few dozen: threads would cost more than the stats.
            false => v.info.dirs.iter().filter(|(d, _)| depth(d) <= TOP_LEVELS).all(same),
        }
}

/// The file whose mtime is the start of the last full check that found
/// the cache at `cache` current (beside it: one per cache).
fn checked_path(cache: &Path) -> PathBuf {
    let mut name = cache.file_name().unwrap_or_default().to_os_string();
    name.push(".checked");
    cache.with_file_name(name)
}

/// Whether the last full check of `cache` started less than [`recheck`]
/// ago (a mark in the future, after a clock change, does not count).
fn checked_recently(cache: Option<&Path>, now: SystemTime) -> bool {
    let Some(c) = cache else { return false };
    let Ok(at) = fs::metadata(checked_path(c)).and_then(|m| m.modified()) else { return false };
    now.duration_since(at).is_ok_and(|age| age < recheck())
}

/// Records that a full check which started at `at` found `cache` current
/// (or made it so). A cache dir that cannot be written only means the
/// next query checks everything again.
fn mark_checked(cache: Option<&Path>, at: SystemTime) {
    if let Some(c) = cache {
        let _ = fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(checked_path(c))
            .and_then(|f| f.set_modified(at));
    }
}

/// Whether the given documents still have the size and mtime indexed.
pub fn docs_current(lib: &Library, v: &View, docs: &[u32]) -> bool {
    docs.par_iter().all(|&d| stamp(&lib.path(v.path(d))) == v.stamp(d))
}

/// The paths of those of `docs` whose size or mtime changed since indexing.
fn stale(lib: &Library, v: &View, docs: &[u32]) -> Vec<String> {
    docs.par_iter().filter(|&&d| stamp(&lib.path(v.path(d))) != v.stamp(d)).map(|&d| v.path(d).to_string()).collect()
}

/// The side index beside a main index file (kb::score::side).
pub fn side_path(main: &Path) -> PathBuf {
    main.with_file_name(format!("side-v{}.bin", index::FORMAT_VERSION))
}

/// The main and side files of the format versions before this one, beside
/// the cache file `main` (named `…-v<version>.bin`).
fn older_versions(main: &Path) -> Vec<PathBuf> {
    let name = main.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let Some(stem) = name.strip_suffix(&format!("-v{}.bin", index::FORMAT_VERSION)) else { return Vec::new() };
    (1..index::FORMAT_VERSION)
        .flat_map(|v| [main.with_file_name(format!("{stem}-v{v}.bin")), main.with_file_name(format!("side-v{v}.bin"))])
        .collect()
}

/// What [`with_index`] reports besides the closure's result.
pub struct Report {
    /// Warm, updated or built.
    pub status: Status,
    /// Documents read from disk.
    pub read: usize,
    /// Unreadable documents met while building.
    pub problems: Vec<Problem>,
    /// Why the cache could not be used or written, if so.
    pub warnings: Vec<String>,
}

/// An index opened once and kept, for a process that answers many
/// queries (kb-mcp): the maps stay open and the next query revalidates
/// them with a few stats instead of mapping and parsing them again.
#[derive(Default)]
pub struct Held {
    open: Option<Open>,
}

/// The cache file held, its main and side index, and the files' stamps
/// when they were taken (another process may rename a new one in).
struct Open {
    path: PathBuf,
    main: Bytes,
    side: Option<Bytes>,
    stamps: ((u64, u64), (u64, u64)),
}

impl Held {
    fn keep(&mut self, path: &Path, main: Bytes, side: Option<Bytes>) {
        let stamps = (stamp(path), stamp(&side_path(path)));
        self.open = Some(Open { path: path.to_path_buf(), main, side, stamps });
    }

    fn take(&mut self, cache: Option<&Path>) -> (Option<Bytes>, Option<Bytes>) {
        match (self.open.take(), cache) {
            (Some(o), Some(c)) if o.path == c && o.stamps == (stamp(c), stamp(&side_path(c))) => (Some(o.main), o.side),
            (_, Some(c)) => {
                let m = map(c).map(Bytes::Map);
                let s = m.as_ref().and_then(|_| map(&side_path(c))).map(Bytes::Map);
                (m, s)
            }
            _ => (None, None),
        }
    }
}

/// Runs `f` over the current index of `lib`, from the cache at `cache`
/// when it is current, else after (re)building and saving it. `f` returns
/// its result and the documents it used: when one of those was edited in
/// place since indexing, the index is updated and `f` runs again. With
/// `verify_all`, every document's size and mtime is checked first.
pub fn with_index<R>(
    lib: &Library,
    cache: Option<&Path>,
    verify_all: bool,
    f: impl Fn(&View) -> (R, Vec<u32>),
) -> Result<(R, Report)> {
    with_held(&mut Held::default(), lib, cache, verify_all, f)
}

/// [`with_index`] keeping the index open in `held` across calls.
///
/// Order of trust: the main index with its side index (when the side was
/// made against this main index), checked by the directory mtimes and the
/// watched files' stamps; when something changed, a new side index
/// (kb::score::side: only the changed documents are read, the main index
/// is not rewritten); when a side cannot stand for the change, the main
/// index is rebuilt incrementally and the side index dropped.
pub fn with_held<R>(
    held: &mut Held,
    lib: &Library,
    cache: Option<&Path>,
    verify_all: bool,
    f: impl Fn(&View) -> (R, Vec<u32>),
) -> Result<(R, Report)> {
    let lap = build::profiler("query");
    // A full check counts from its start: an edit made while it runs is
    // looked for again by the next one.
    let start = SystemTime::now();
    let full = verify_all || !checked_recently(cache, start);
    let mut warnings = Vec::new();
    let (mapped, side_mapped) = held.take(cache);
    if let (None, Some(dir)) = (&mapped, cache.and_then(Path::parent)) {
        // Created before the build records directory mtimes, so the new
        // directory does not make the fresh cache look stale.
        let _ = fs::create_dir_all(dir);
    }
    let mut main_ok = false;
    let mut stale_docs: Vec<String> = Vec::new();
    if let Some(bytes) = &mapped {
        match View::open(bytes) {
            Ok(main) => {
                main_ok = true;
                let merged = side_mapped.as_deref().and_then(|s| View::merged(bytes, s).ok());
                let v = merged.as_ref().unwrap_or(&main);
                lap("open");
                let current = is_current(lib, v, full);
                lap("check");
                if current {
                    let all: Vec<u32> = if verify_all { (0..v.docs() as u32).collect() } else { Vec::new() };
                    stale_docs = stale(lib, v, &all);
                    if stale_docs.is_empty() {
                        let (r, used) = f(v);
                        stale_docs = stale(lib, v, &used);
                        if stale_docs.is_empty() {
                            if full {
                                mark_checked(cache, start);
                            }
                            drop(merged);
                            if let (Some(p), Some(m)) = (cache, mapped) {
                                held.keep(p, m, side_mapped);
                            }
                            return Ok((r, Report { status: Status::Warm, read: 0, problems: Vec::new(), warnings }));
                        }
                    }
                }
            }
            Err(why) => warnings.push(format!("cache {} rejected: {why}; rebuilding", show(cache))),
        }
    }
    // A side index, when one can stand for what changed.
    if let (true, Some(main_bytes), Some(p)) = (main_ok, mapped.as_deref(), cache) {
        let prev = side_mapped.as_deref().and_then(|s| View::merged(main_bytes, s).ok());
        if let Some(side) = side::build(lib, main_bytes, prev.as_ref().and_then(View::side), &stale_docs)? {
            drop(prev);
            let sp = side_path(p);
            match save(&sp, &side.bytes) {
                Ok(()) => mark_checked(cache, start),
                Err(e) => warnings.push(format!("cannot write cache {}: {e}", sp.display())),
            }
            lap("side saved");
            let side_bytes = Bytes::Owned(side.bytes);
            let v = View::merged(main_bytes, &side_bytes)
                .map_err(|e| crate::Error::msg(format!("internal: side index unreadable: {e}")))?;
            let (r, _) = f(&v);
            drop(v);
            if let Some(m) = mapped {
                held.keep(p, m, Some(side_bytes));
            }
            return Ok((r, Report { status: Status::Updated, read: side.read, problems: side.problems, warnings }));
        }
    }
    let old = if main_ok { mapped.as_deref().and_then(|b| View::open(b).ok()) } else { None };
    let built = build::build(lib, old.as_ref())?;
    let status = if old.is_some() { Status::Updated } else { Status::Built };
    drop(old);
    drop(mapped);
    drop(side_mapped);
    if let Some(p) = cache {
        match save(p, &built.bytes) {
            Ok(()) => mark_checked(cache, start),
            Err(e) => warnings.push(format!("cannot write cache {}: {e}", p.display())),
        }
        // The side index was made against the replaced main index.
        let _ = fs::remove_file(side_path(p));
        if status == Status::Built {
            // Files of older format versions are never read again (their
            // names carry the version): a cache of 85 MB at 100,000
            // documents should not linger. Derived, so a failure is harmless.
            for old in older_versions(p) {
                let _ = fs::remove_file(old);
            }
        }
    }
    let bytes = Bytes::Owned(built.bytes);
    let v = View::open(&bytes).map_err(|e| crate::Error::msg(format!("internal: built index unreadable: {e}")))?;
    let (r, _) = f(&v);
    drop(v);
    if let Some(p) = cache {
        held.keep(p, bytes, None);
    }
    Ok((r, Report { status, read: built.read, problems: built.problems, warnings }))
}

fn show(p: Option<&Path>) -> String {
    p.map_or_else(String::new, |p| p.display().to_string())
}

/// Saves index bytes with the one atomic write (a temp file `kb-lock
/// sweep` knows, synced, renamed onto it), so readers see the old or the new index
/// whole.
fn save(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().ok_or_else(|| crate::Error::msg(format!("{} has no parent", path.display())))?;
    fs::create_dir_all(dir).map_err(|e| crate::Error::io(format!("creating {}", dir.display()), e))?;
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        atomic::write(&ignore, b"*\n")?;
    }
    atomic::write(path, bytes)
}
