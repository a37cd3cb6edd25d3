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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io::{BufWriter, Write};
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
const CACHE_VERSION: u32 = 2;

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
    ioc_domains: usize,
    /// Index directory -> its cache file under `dirs/`.
    dirs: BTreeMap<String, String>,
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

fn digest(items: impl Iterator<Item = (String, Option<(u64, u64)>)>) -> String {
    let mut h = Sha256::new();
    for (p, s) in items {
        let (size, mtime) = s.unwrap_or((u64::MAX, u64::MAX));
        h.update(p.as_bytes());
        h.update([0]);
        h.update(size.to_le_bytes());
        h.update(mtime.to_le_bytes());
    }
    format!("{:x}", h.finalize())
}

fn index_dir(path: &str) -> String {
    entry::classify(path).map(|i| i.index_dir).unwrap_or_default()
}

/// Runs the rebuild under the lock.
pub fn run(lib: &Library, opts: &Options) -> Result<Report> {
    lock::with_lock(lib, &opts.lock, || run_locked(lib, opts))
}

fn run_locked(lib: &Library, opts: &Options) -> Result<Report> {
    let (paths, walk_problems) = scan::document_paths(lib);
    let stats: Vec<Option<(u64, u64)>> = paths.par_iter().map(|p| stat(lib, p)).collect();
    let docs_digest = digest(paths.iter().cloned().zip(stats.iter().copied()));
    let state: Option<State> = if opts.incremental { read_state(lib) } else { None };
    let stale_outputs: BTreeSet<String> = state
        .as_ref()
        .map(|st| st.outputs.iter().filter(|(p, s)| stat(lib, p) != Some(**s)).map(|(p, _)| p.clone()).collect())
        .unwrap_or_default();
    if let Some(st) = &state {
        if st.docs_digest == docs_digest && stale_outputs.is_empty() && walk_problems.is_empty() {
            let cleared = consistency::clear(lib)?;
            let committed = opts.commit && cleared && git::commit(lib, &[consistency::LOG.into()], COMMIT_MESSAGE)?;
            return Ok(Report {
                record: "rebuild",
                mode: "no-op",
                documents: st.documents,
                reread: 0,
                touched: Vec::new(),
                marks_cleared: Vec::new(),
                ioc_domains: st.ioc_domains,
                inconsistency_log_cleared: cleared,
                committed,
                problems: st.problems.clone(),
            });
        }
    }
    let mut cache: HashMap<String, Cached> = match &state {
        Some(st) => read_docs(lib, st).unwrap_or_default(),
        None => HashMap::new(),
    };
    let incremental = !cache.is_empty();
    // Reuse every cached document whose stat is unchanged; read the rest.
    let planned: Vec<Option<Cached>> = paths
        .iter()
        .zip(&stats)
        .map(|(p, s)| cache.remove(p).filter(|c| s.is_some() && Some((c.size, c.mtime_ns)) == *s))
        .collect();
    let removed: Vec<String> = cache.into_keys().collect();
    let mut changed_dirs: BTreeSet<String> = removed.iter().map(|p| index_dir(p)).collect();
    let reread_flags: Vec<bool> = planned.iter().map(Option::is_none).collect();
    let mut docs: Vec<Cached> =
        planned.into_par_iter().zip(paths.par_iter()).map(|(c, p)| c.unwrap_or_else(|| read(lib, p))).collect();
    let reread = reread_flags.iter().filter(|r| **r).count();
    changed_dirs.extend(docs.iter().zip(&reread_flags).filter(|(_, r)| **r).map(|(d, _)| index_dir(&d.path)));

    // effectiveness_mark uniqueness: clear the losers, then re-read them.
    let cleared = marks::violations(docs.iter().filter_map(|d| d.entry.as_ref()));
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
            changed_dirs.insert(index_dir(&v.path));
        }
    }
    let entries: Vec<&Entry> = docs.iter().filter_map(|d| d.entry.as_ref()).collect();
    if incremental {
        let mut dirs = changed_dirs.clone();
        dirs.extend(
            stale_outputs
                .iter()
                .filter_map(|o| o.strip_suffix(index::INDEX))
                .map(|d| d.trim_end_matches('/').to_string()),
        );
        let master = reread > 0 || !removed.is_empty() || stale_outputs.contains(index::MASTER);
        touched.extend(index::rebuild_dirs(lib, &entries, &dirs, master)?);
    } else {
        touched.extend(index::rebuild(lib, &entries)?);
    }
    let domains = ioc::tally(entries.iter().copied());
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

    // The cache: one file per index directory, rewritten only when changed.
    let mut by_dir: BTreeMap<String, Vec<&Cached>> = BTreeMap::new();
    for d in &docs {
        by_dir.entry(index_dir(&d.path)).or_default().push(d);
    }
    let old_dirs = state.as_ref().map(|s| s.dirs.clone()).unwrap_or_default();
    let write_dirs: Vec<(&String, &Vec<&Cached>)> = by_dir
        .iter()
        .filter(|(d, _)| !incremental || changed_dirs.contains(*d) || !old_dirs.contains_key(*d))
        .collect();
    if !incremental {
        let _ = fs::remove_dir_all(lib.path(CACHE_DIR));
    }
    write_dirs.par_iter().map(|(dir, docs)| write_dir_cache(lib, dir, docs)).collect::<Result<Vec<()>>>()?;
    for gone in old_dirs.keys().filter(|d| !by_dir.contains_key(*d)) {
        let _ = fs::remove_file(lib.path(&dir_cache(gone)));
    }
    let mut outputs = BTreeMap::new();
    let out_files =
        by_dir.keys().map(|d| index::index_file(d)).chain([index::MASTER.to_string(), ioc::FILE.to_string()]);
    for f in out_files {
        if let Some(s) = stat(lib, &f) {
            outputs.insert(f, s);
        }
    }
    let new_digest = if walk_problems.is_empty() {
        digest(docs.iter().map(|d| (d.path.clone(), (d.size != u64::MAX).then_some((d.size, d.mtime_ns)))))
    } else {
        String::new()
    };
    let st = State {
        version: CACHE_VERSION,
        docs_digest: new_digest,
        outputs,
        problems: problems.clone(),
        documents: entries.len(),
        ioc_domains: domains.len(),
        dirs: by_dir.keys().map(|d| (d.clone(), dir_cache(d))).collect(),
    };
    let text = serde_json::to_string(&st).map_err(|e| crate::error::Error::msg(e.to_string()))?;
    atomic::write(&lib.path(STATE), text.as_bytes())?;

    let mut commit_paths = touched.clone();
    if log_cleared {
        commit_paths.push(consistency::LOG.into());
    }
    let committed = opts.commit && git::commit(lib, &commit_paths, COMMIT_MESSAGE)?;
    touched.sort();
    Ok(Report {
        record: "rebuild",
        mode: if incremental { "incremental" } else { "full" },
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
    let (doc, problems) = scan::read_entry(lib, rel);
    match doc {
        Some((entry, size, mtime)) => Cached {
            path: rel.to_string(),
            size,
            mtime_ns: u64::try_from(mtime).unwrap_or(u64::MAX),
            entry: Some(entry),
            problems,
        },
        None => {
            let (size, mtime_ns) = stat(lib, rel).unwrap_or((u64::MAX, u64::MAX));
            Cached { path: rel.to_string(), size, mtime_ns, entry: None, problems }
        }
    }
}

/// The cache file of an index directory (a digest keeps names flat and safe).
fn dir_cache(dir: &str) -> String {
    let d = format!("{:x}", Sha256::digest(dir.as_bytes()));
    format!("{CACHE_DIR}/dirs/{}.jsonl", &d[..16])
}

fn read_state(lib: &Library) -> Option<State> {
    let text = fs::read_to_string(lib.path(STATE)).ok()?;
    serde_json::from_str::<State>(&text).ok().filter(|s| s.version == CACHE_VERSION)
}

/// Every cached document; `None` when a cache file is missing or broken
/// (then the run is a full one).
fn read_docs(lib: &Library, st: &State) -> Option<HashMap<String, Cached>> {
    let files: Vec<&String> = st.dirs.values().collect();
    let parts: Vec<Option<Vec<Cached>>> = files
        .par_iter()
        .map(|f| {
            let text = fs::read_to_string(lib.path(f)).ok()?;
            text.lines().map(|l| serde_json::from_str::<Cached>(l).ok()).collect()
        })
        .collect();
    let mut out = HashMap::new();
    for part in parts {
        for c in part? {
            out.insert(c.path.clone(), c);
        }
    }
    Some(out)
}

/// Writes one directory's cache file: temp file and rename, no fsync (a
/// lost or torn cache only makes the next run re-read documents).
fn write_dir_cache(lib: &Library, dir: &str, docs: &[&Cached]) -> Result<()> {
    let path = lib.path(&dir_cache(dir));
    let parent = path.parent().unwrap_or(&lib.dir);
    fs::create_dir_all(parent).ctx(|| format!("creating {}", parent.display()))?;
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let mut w = BufWriter::new(fs::File::create(&tmp).ctx(|| format!("creating {}", tmp.display()))?);
    for d in docs {
        serde_json::to_writer(&mut w, d).map_err(|e| crate::error::Error::msg(e.to_string()))?;
        w.write_all(b"\n").ctx(|| format!("writing {}", tmp.display()))?;
    }
    w.flush().ctx(|| format!("writing {}", tmp.display()))?;
    drop(w);
    fs::rename(&tmp, &path).ctx(|| format!("replacing {}", path.display()))
}
