//! Seed 000 `--rebuild-index`: every `.index.md` and `.master-index.md` from
//! the documents' frontmatter (frontmatter wins over stale rows), `.ioc.md`,
//! effectiveness_mark uniqueness, a cleared `.inconsistency.log`, and the
//! commit `task-ai(library):maintain rebuild index`, all under the lock.
//!
//! `--incremental` keeps a cache under `.cache/kb-index/`: the entry of every
//! document with the size and mtime it was read at, and a digest of the whole
//! (path, size, mtime) list. A run re-reads only documents whose stat
//! changed, then renders every derived file from the full entry set with the
//! same functions as a full rebuild, so the bytes are identical. When the
//! digest and every output file's stat match, nothing is rendered at all.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::time::UNIX_EPOCH;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::atomic;
use crate::consistency;
use crate::entry::{self, Entry};
use crate::error::{Context, Result};
use crate::frontmatter;
use crate::git;
use crate::index;
use crate::ioc;
use crate::library::Library;
use crate::lock;
use crate::marks::{self, Violation};
use crate::scan::{self, Problem};

/// The cache directory (DESIGN.md: `.cache` is internal, never committed).
pub const CACHE_DIR: &str = ".cache/kb-index";
const STATE: &str = ".cache/kb-index/state.json";
const DOCS: &str = ".cache/kb-index/docs.jsonl";
const CACHE_VERSION: u32 = 1;

/// The commit message of the seed.
pub const COMMIT_MESSAGE: &str = "task-ai(library):maintain rebuild index";

/// How to rebuild.
#[derive(Debug, Clone)]
pub struct Options {
    /// Re-read only what changed since the last run.
    pub incremental: bool,
    /// Commit the changed files when the library is a git repository.
    pub commit: bool,
    /// Lock waiting.
    pub lock: lock::Options,
}

/// What a rebuild did (the `rebuild` record).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Always `rebuild`.
    pub record: &'static str,
    /// full, incremental or no-op.
    pub mode: &'static str,
    /// Documents indexed.
    pub documents: usize,
    /// Documents read from disk in this run.
    pub reread: usize,
    /// Derived files (and documents whose mark was cleared) that changed.
    pub touched: Vec<String>,
    /// effectiveness_mark values cleared.
    pub marks_cleared: Vec<Violation>,
    /// Domains listed in `.ioc.md`.
    pub ioc_domains: usize,
    /// Whether `.inconsistency.log` was there and is now cleared.
    pub inconsistency_log_cleared: bool,
    /// Whether a git commit was made.
    pub committed: bool,
    /// Files that could not be read or parsed (still indexed by path when possible).
    pub problems: Vec<Problem>,
}

#[derive(Serialize, Deserialize, Default)]
struct State {
    version: u32,
    docs_digest: String,
    outputs: BTreeMap<String, (u64, u64)>,
    problems: Vec<Problem>,
    documents: usize,
}

#[derive(Serialize, Deserialize)]
struct Cached {
    path: String,
    size: u64,
    mtime_ns: u64,
    entry: Option<Entry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    problems: Vec<Problem>,
}

fn stat(lib: &Library, rel: &str) -> Option<(u64, u64)> {
    let m = fs::metadata(lib.path(rel)).ok()?;
    let ns = m.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    Some((m.len(), u64::try_from(ns).unwrap_or(u64::MAX)))
}

fn digest(paths: &[String], stats: &[Option<(u64, u64)>]) -> String {
    let mut h = Sha256::new();
    for (p, s) in paths.iter().zip(stats) {
        let (size, mtime) = s.unwrap_or((u64::MAX, u64::MAX));
        h.update(p.as_bytes());
        h.update([0]);
        h.update(size.to_le_bytes());
        h.update(mtime.to_le_bytes());
    }
    format!("{:x}", h.finalize())
}

/// Runs the rebuild under the lock.
pub fn run(lib: &Library, opts: &Options) -> Result<Report> {
    lock::with_lock(lib, &opts.lock, || run_locked(lib, opts))
}

fn run_locked(lib: &Library, opts: &Options) -> Result<Report> {
    let (paths, walk_problems) = scan::document_paths(lib);
    let stats: Vec<Option<(u64, u64)>> = paths.par_iter().map(|p| stat(lib, p)).collect();
    let docs_digest = digest(&paths, &stats);
    let state: Option<State> = if opts.incremental { read_state(lib) } else { None };
    if let Some(st) = &state {
        let outputs_same = st.outputs.iter().all(|(p, s)| stat(lib, p) == Some(*s));
        if st.docs_digest == docs_digest && outputs_same && walk_problems.is_empty() {
            let cleared = consistency::clear(lib)?;
            let committed = opts.commit && cleared && git::commit(lib, &[consistency::LOG.into()], COMMIT_MESSAGE)?;
            let ioc_domains = fs::read_to_string(lib.path(ioc::FILE)).map(|t| index::table_rows(&t).len()).unwrap_or(0);
            return Ok(Report {
                record: "rebuild",
                mode: "no-op",
                documents: st.documents,
                reread: 0,
                touched: Vec::new(),
                marks_cleared: Vec::new(),
                ioc_domains,
                inconsistency_log_cleared: cleared,
                committed,
                problems: st.problems.clone(),
            });
        }
    }
    let cache: BTreeMap<String, Cached> = if state.is_some() { read_docs(lib) } else { BTreeMap::new() };
    let mode = if state.is_some() && !cache.is_empty() { "incremental" } else { "full" };
    let read_back: Vec<(Cached, bool)> = paths
        .par_iter()
        .zip(stats.par_iter())
        .map(|(p, s)| match (cache.get(p), s) {
            (Some(c), Some((size, mtime))) if c.size == *size && c.mtime_ns == *mtime => (
                Cached {
                    path: c.path.clone(),
                    size: c.size,
                    mtime_ns: c.mtime_ns,
                    entry: c.entry.clone(),
                    problems: c.problems.clone(),
                },
                false,
            ),
            _ => (read(lib, p), true),
        })
        .collect();
    drop(cache);
    let reread = read_back.iter().filter(|(_, r)| *r).count();
    let mut docs: Vec<Cached> = read_back.into_iter().map(|(c, _)| c).collect();

    // effectiveness_mark uniqueness: clear the losers, then re-read them.
    let entries: Vec<Entry> = docs.iter().filter_map(|d| d.entry.clone()).collect();
    let cleared = marks::violations(&entries);
    let mut touched = Vec::new();
    for v in &cleared {
        let full = lib.path(&v.path);
        let text = fs::read_to_string(&full).ctx(|| format!("reading {}", v.path))?;
        if let Some(new) = frontmatter::set_field(&text, "effectiveness_mark", "false") {
            atomic::write(&full, new.as_bytes())?;
            touched.push(v.path.clone());
        }
        if let Ok(i) = docs.binary_search_by(|d| d.path.cmp(&v.path)) {
            docs[i] = read(lib, &v.path);
        }
    }
    let entries: Vec<Entry> = docs.iter().filter_map(|d| d.entry.clone()).collect();
    let refs: Vec<&Entry> = entries.iter().collect();
    touched.extend(index::rebuild(lib, &refs)?);
    let domains = ioc::tally(&entries);
    let ioc_changed = match ioc::render(&domains) {
        Some(text) => atomic::write_if_changed(&lib.path(ioc::FILE), text.as_bytes())?,
        None => match fs::remove_file(lib.path(ioc::FILE)) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(crate::error::Error::io(format!("removing {}", ioc::FILE), e)),
        },
    };
    if ioc_changed {
        touched.push(ioc::FILE.to_string());
    }
    let log_cleared = consistency::clear(lib)?;
    let mut problems = walk_problems.clone();
    problems.extend(docs.iter().flat_map(|d| d.problems.iter().cloned()));
    problems.sort_by(|a, b| a.path.cmp(&b.path));

    // The cache: outputs are every index file the entries call for.
    let mut outputs = BTreeMap::new();
    let mut out_files: Vec<String> =
        entries.iter().filter_map(|e| entry::classify(&e.path)).map(|i| index::index_file(&i.index_dir)).collect();
    out_files.sort();
    out_files.dedup();
    out_files.push(index::MASTER.to_string());
    out_files.push(ioc::FILE.to_string());
    for f in out_files {
        if let Some(s) = stat(lib, &f) {
            outputs.insert(f, s);
        }
    }
    let final_paths: Vec<String> = docs.iter().map(|d| d.path.clone()).collect();
    let final_stats: Vec<Option<(u64, u64)>> =
        final_paths.iter().zip(&docs).map(|(_, d)| Some((d.size, d.mtime_ns))).collect();
    let new_digest = if walk_problems.is_empty() && final_paths == paths {
        digest(&final_paths, &final_stats)
    } else {
        String::new()
    };
    write_cache(
        lib,
        (reread > 0 || !cleared.is_empty()).then_some(docs.as_slice()),
        &State {
            version: CACHE_VERSION,
            docs_digest: new_digest,
            outputs,
            problems: problems.clone(),
            documents: entries.len(),
        },
    )?;

    let mut commit_paths = touched.clone();
    if log_cleared {
        commit_paths.push(consistency::LOG.into());
    }
    let committed = opts.commit && git::commit(lib, &commit_paths, COMMIT_MESSAGE)?;
    touched.sort();
    Ok(Report {
        record: "rebuild",
        mode,
        documents: entries.len(),
        reread,
        touched,
        marks_cleared: cleared,
        ioc_domains: domains.len(),
        inconsistency_log_cleared: log_cleared,
        committed,
        problems,
    })
}

fn read(lib: &Library, rel: &str) -> Cached {
    let (size, mtime_ns) = stat(lib, rel).unwrap_or((u64::MAX, u64::MAX));
    let (doc, problems) = scan::read_doc(lib, rel);
    Cached { path: rel.to_string(), size, mtime_ns, entry: doc.map(|d| d.entry), problems }
}

fn read_state(lib: &Library) -> Option<State> {
    let text = fs::read_to_string(lib.path(STATE)).ok()?;
    serde_json::from_str::<State>(&text).ok().filter(|s| s.version == CACHE_VERSION)
}

fn read_docs(lib: &Library) -> BTreeMap<String, Cached> {
    let Ok(f) = fs::File::open(lib.path(DOCS)) else { return BTreeMap::new() };
    let lines: Vec<String> = BufReader::new(f).lines().map_while(|l| l.ok()).collect();
    let parsed: Vec<Option<Cached>> = lines.par_iter().map(|l| serde_json::from_str(l).ok()).collect();
    if parsed.iter().any(Option::is_none) {
        return BTreeMap::new();
    }
    parsed.into_iter().flatten().map(|c| (c.path.clone(), c)).collect()
}

fn write_cache(lib: &Library, docs: Option<&[Cached]>, state: &State) -> Result<()> {
    if let Some(docs) = docs {
        write_docs(lib, docs)?;
    }
    let st = serde_json::to_string(state).map_err(|e| crate::error::Error::msg(e.to_string()))?;
    atomic::write(&lib.path(STATE), st.as_bytes())
}

fn write_docs(lib: &Library, docs: &[Cached]) -> Result<()> {
    let lines: Vec<String> = docs.par_iter().map(|d| serde_json::to_string(d).unwrap_or_default()).collect();
    let mut buf = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        buf.write_all(l.as_bytes()).ctx(|| "buffering the cache")?;
        buf.push(b'\n');
    }
    atomic::write(&lib.path(DOCS), &buf)
}
