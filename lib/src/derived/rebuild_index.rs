//! Seed 000 `--rebuild-index`: every `.index.md` and `.master-index.md` from
//! the documents' frontmatter (frontmatter wins over stale rows), `.ioc.md`,
//! effectiveness_mark uniqueness, a cleared `.inconsistency.log`, and the
//! commit `task-ai(library):maintain rebuild index`, all under the lock.
//! Clearing marks rewrites documents, so it is journaled like a batch
//! (the library's `.journal`, recovered by the next writer or rerun): a
//! kill never leaves a cleared document uncommitted or its index row
//! stale.
//!
//! `--incremental` keeps a cache under `.cache/kb-index/` (internal, never
//! committed): the size and mtime of every document, the mtime of every
//! directory walked, the stat of every index it wrote, and the few entry
//! fields that effectiveness_mark uniqueness and `.ioc.md` need across the
//! whole library (references and marked documents). A run
//! - stats the known directories and documents and the written indexes;
//!   when nothing moved it does nothing (no-op);
//! - else walks, re-reads only documents whose stat changed, and patches
//!   their rows into the indexes with `index::update`, whose rows are the
//!   same pure function of an entry as in a full rebuild, so the bytes are
//!   identical (tests compare them);
//! - falls back to a full rebuild when the cache is missing or an index it
//!   wrote was changed by someone else.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;
use std::fs;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::derived::consistency;
use crate::derived::index;
use crate::derived::ioc;
use crate::derived::marks::{self, Violation};
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::fs::crash::{self, Step};
use crate::fs::stat::{self, Stat};
use crate::library::entry::{self, Category, Entry};
use crate::library::git;
use crate::library::journal;
use crate::library::scan::{self, Problem};
use crate::library::Library;
use crate::lock;

/// The cache directory (DESIGN.md: `.cache` is internal, never committed).
pub const CACHE_DIR: &str = ".cache/kb-index";
const STATE: &str = ".cache/kb-index/state.json";
const FILES: &str = ".cache/kb-index/files.tsv";
const DIRS: &str = ".cache/kb-index/dirs.tsv";
const SUMMARY: &str = ".cache/kb-index/summary.json";
const CACHE_VERSION: u32 = 3;

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
    /// Run first under the lock: the writer's recovery of a batch a
    /// killed writer left (`kb::write::recover`, a layer above this one),
    /// so that a journal this rebuild is about to write never meets one.
    pub recover: fn(&Library) -> Result<()>,
}

/// What a rebuild did (the `rebuild` record).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "record", rename = "rebuild")]
pub struct Report {
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
    outputs: BTreeMap<String, Stat>,
    problems: Vec<Problem>,
    documents: usize,
    ioc_domains: usize,
}

/// One document as the cache remembers it.
#[derive(Clone)]
struct Known {
    stat: Option<Stat>,
    indexed: bool,
}

fn stat(lib: &Library, rel: &str) -> Option<Stat> {
    stat::one(&lib.dir, rel)
}

/// The fields of an entry that library-wide rules need (effectiveness_mark
/// scopes and `.ioc.md`); `None` for entries neither rule looks at.
fn summary_of(e: &Entry) -> Option<Entry> {
    (e.category == Category::Reference || e.effectiveness_mark).then(|| Entry {
        path: e.path.clone(),
        category: e.category,
        topic: e.topic.clone(),
        version: e.version,
        doc_type: e.doc_type.clone(),
        semantic: e.semantic.clone(),
        last_verified_at: e.last_verified_at.clone(),
        updated_at: e.updated_at.clone(),
        effectiveness_mark: e.effectiveness_mark,
        domains: e.domains.clone(),
        ..Entry::default()
    })
}

/// A document read in this run.
struct Read {
    path: String,
    stat: Option<Stat>,
    entry: Option<Entry>,
    problems: Vec<Problem>,
}

fn read(lib: &Library, rel: &str) -> Read {
    let (doc, problems) = scan::read_entry(lib, rel);
    match doc {
        Some((entry, size, mtime)) => Read {
            path: rel.to_string(),
            stat: Some((size, u64::try_from(mtime).unwrap_or(u64::MAX))),
            entry: Some(entry),
            problems,
        },
        None => Read { path: rel.to_string(), stat: stat(lib, rel), entry: None, problems },
    }
}

/// Runs the rebuild under the lock.
pub fn run(lib: &Library, opts: &Options) -> Result<Report> {
    lock::with_lock(lib, &opts.lock, || run_locked(lib, opts))
}

/// The rebuild, in phases: recover, the no-op fast path, what to read,
/// the reads folded into the library-wide summary (clearing duplicate
/// effectiveness marks), the derived files, the problems, then the commit
/// and the cache.
fn run_locked(lib: &Library, opts: &Options) -> Result<Report> {
    (opts.recover)(lib)?;
    let cache = if opts.incremental { Cache::load(lib) } else { None };
    let probe = cache.as_ref().map(|c| c.probe(lib));
    if let (Some(c), Some(Probe::NoOp)) = (&cache, &probe) {
        return no_op(lib, opts, c);
    }
    let mut plan = Plan::new(lib, cache, probe);
    let mut reads = read_all(lib, &plan);
    let reread = reads.len();
    let (cleared, mut touched) = fold(lib, opts, &mut plan, &mut reads)?;
    let journaled = !touched.is_empty();
    touched.extend(write_derived(lib, &plan, &mut reads)?);
    let domains = ioc::tally(plan.summary.values());
    if write_ioc(lib, &domains)? {
        touched.push(ioc::FILE.to_string());
    }
    let log_cleared = consistency::clear(lib)?;
    let problems = problems(&mut plan, &reads);
    let documents = plan.known.values().filter(|k| k.indexed).count();
    let state = State {
        version: CACHE_VERSION,
        outputs: outputs(lib, &plan.known),
        problems: problems.clone(),
        documents,
        ioc_domains: domains.len(),
    };
    let committed = commit(lib, opts, &touched, journaled)?;
    // Last: the journal's removal changed the root directory's mtime.
    Cache::save(lib, &state, &plan.known, &plan.dirs, &plan.summary)?;
    touched.sort();
    touched.dedup();
    Ok(Report {
        mode: if plan.incremental { "incremental" } else { "full" },
        documents,
        reread,
        touched,
        marks_cleared: cleared,
        ioc_domains: domains.len(),
        inconsistency_log_cleared: log_cleared,
        committed,
        problems,
    })
}

/// Nothing changed since the cached rebuild: only the inconsistency log is
/// cleared (and committed).
fn no_op(lib: &Library, opts: &Options, c: &Cache) -> Result<Report> {
    let cleared = consistency::clear(lib)?;
    let committed = opts.commit && cleared && git::commit(lib, &[consistency::LOG.into()], COMMIT_MESSAGE)?;
    Ok(Report {
        mode: "no-op",
        documents: c.state.documents,
        reread: 0,
        touched: Vec::new(),
        marks_cleared: Vec::new(),
        ioc_domains: c.state.ioc_domains,
        inconsistency_log_cleared: cleared,
        committed,
        problems: c.state.problems.clone(),
    })
}

/// What a rebuild works from: the documents there are, what the cache
/// knew of them, and which to read again.
struct Plan {
    paths: Vec<String>,
    dirs: Vec<String>,
    walk_problems: Vec<Problem>,
    incremental: bool,
    known: BTreeMap<String, Known>,
    summary: BTreeMap<String, Entry>,
    old_problems: Vec<Problem>,
    /// Documents to read, by index into `paths`.
    to_read: Vec<usize>,
    /// Documents the cache knew that are gone.
    removed: Vec<String>,
}

impl Plan {
    fn new(lib: &Library, cache: Option<Cache>, probe: Option<Probe>) -> Plan {
        // A cache whose indexes someone else changed is not trusted.
        let cache = cache.filter(|c| c.state.outputs.iter().all(|(p, s)| stat(lib, p) == Some(*s)));
        let incremental = cache.is_some();
        // With every directory unchanged the set of documents is the cached
        // one and the probe's stats are current: no walk is needed.
        let (paths, dirs, walk_problems, stats) = match (&cache, probe) {
            (Some(c), Some(Probe::Edited(stats))) => {
                let walk_problems = c.state.problems.iter().filter(|p| p.kind == "walk").cloned().collect();
                let paths = c.files.iter().map(|(p, _)| p.clone()).collect();
                (paths, c.dirs.iter().map(|(d, _)| d.clone()).collect(), walk_problems, stats)
            }
            _ => {
                let (paths, dirs, problems) = scan::walk(lib);
                let stats: Vec<Option<Stat>> = if incremental {
                    stat::many(&lib.dir, &paths.iter().map(String::as_str).collect::<Vec<_>>())
                } else {
                    vec![None; paths.len()]
                };
                (paths, dirs, problems, stats)
            }
        };
        let summary = if incremental { load_summary(lib) } else { None };
        let incremental = incremental && summary.is_some();
        let (known, summary, old_problems): (BTreeMap<String, Known>, _, _) = match (cache, summary) {
            (Some(c), Some(summary)) if incremental => (c.files.into_iter().collect(), summary, c.state.problems),
            _ => (BTreeMap::new(), BTreeMap::new(), Vec::new()),
        };
        let to_read: Vec<usize> = (0..paths.len())
            .filter(|&i| {
                let (p, s) = (&paths[i], &stats[i]);
                !incremental || s.is_none() || known.get(p.as_str()).is_none_or(|k| k.stat != *s)
            })
            .collect();
        let removed: Vec<String> = if known.len() == paths.len() && known.keys().eq(paths.iter()) {
            Vec::new()
        } else {
            let walked: HashSet<&str> = paths.iter().map(String::as_str).collect();
            known.keys().filter(|p| !walked.contains(p.as_str())).cloned().collect()
        };
        Plan { paths, dirs, walk_problems, incremental, known, summary, old_problems, to_read, removed }
    }

    /// Folds one read into the library-wide summary and what is known.
    fn apply(&mut self, r: &Read) {
        self.summary.remove(&r.path);
        if let Some(s) = r.entry.as_ref().and_then(summary_of) {
            self.summary.insert(r.path.clone(), s);
        }
        self.known.insert(r.path.clone(), Known { stat: r.stat, indexed: r.entry.is_some() });
    }
}

/// Reads the planned documents in parallel.
fn read_all(lib: &Library, plan: &Plan) -> Vec<Read> {
    let progress = crate::out::progress::Progress::new("kb-index: reading", plan.to_read.len());
    let reads = plan
        .to_read
        .par_iter()
        .map(|&i| {
            let r = read(lib, &plan.paths[i]);
            progress.count();
            r
        })
        .collect();
    drop(progress);
    reads
}

/// Folds the changes into the library-wide summary, then enforces
/// effectiveness_mark uniqueness: clears the losers (a journaled batch)
/// and reads them again. Returns the marks cleared and the documents the
/// clearing changed.
fn fold(
    lib: &Library,
    opts: &Options,
    plan: &mut Plan,
    reads: &mut Vec<Read>,
) -> Result<(Vec<Violation>, Vec<String>)> {
    for p in &plan.removed {
        plan.summary.remove(p);
        plan.known.remove(p);
    }
    for r in reads.iter() {
        plan.apply(r);
    }
    let cleared = marks::violations(plan.summary.values());
    let touched = clear_marks(lib, &cleared, opts.commit)?;
    for v in &cleared {
        let again = read(lib, &v.path);
        plan.apply(&again);
        match reads.iter_mut().find(|r| r.path == v.path) {
            Some(slot) => *slot = again,
            None => reads.push(again),
        }
    }
    Ok((cleared, touched))
}

/// Updates (or, in full, rewrites) the indexes; returns the files written.
/// The reads' full entries are dropped after: the summary carries the rest.
fn write_derived(lib: &Library, plan: &Plan, reads: &mut [Read]) -> Result<Vec<String>> {
    let mut touched = Vec::new();
    if plan.incremental {
        let mut changes: Vec<(String, Option<Entry>)> =
            reads.iter().map(|r| (r.path.clone(), r.entry.clone())).collect();
        changes.extend(plan.removed.iter().map(|p| (p.clone(), None)));
        if !changes.is_empty() {
            touched.extend(index::update(lib, &changes)?);
        }
    } else {
        let refs: Vec<&Entry> = reads.iter().filter_map(|r| r.entry.as_ref()).collect();
        touched.extend(index::rebuild(lib, &refs)?);
    }
    crash::at(Step::Index);
    reads.iter_mut().for_each(|r| r.entry = None);
    Ok(touched)
}

/// Writes `.ioc.md` (or removes it when no domain is cited); whether it changed.
fn write_ioc(lib: &Library, domains: &[ioc::Domain]) -> Result<bool> {
    match ioc::render(domains) {
        Some(text) => atomic::write_if_changed(&lib.path(ioc::FILE), text.as_bytes()),
        None => match fs::remove_file(lib.path(ioc::FILE)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(format!("removing {}", ioc::FILE), e)),
        },
    }
}

/// The walk's problems, plus each document's (kept from the cache for
/// documents not re-read this time).
fn problems(plan: &mut Plan, reads: &[Read]) -> Vec<Problem> {
    let fresh: HashSet<&str> =
        reads.iter().map(|r| r.path.as_str()).chain(plan.removed.iter().map(String::as_str)).collect();
    let walked: HashSet<&str> = plan.paths.iter().map(String::as_str).collect();
    let mut problems = std::mem::take(&mut plan.walk_problems);
    problems.extend(
        std::mem::take(&mut plan.old_problems)
            .into_iter()
            .filter(|p| p.kind != "walk" && !fresh.contains(p.path.as_str()) && walked.contains(p.path.as_str())),
    );
    problems.extend(reads.iter().flat_map(|r| r.problems.iter().cloned()));
    problems.sort_by(|a, b| a.path.cmp(&b.path).then_with(|| a.kind.cmp(&b.kind)));
    problems.dedup();
    problems
}

/// The stats of the files this rebuild wrote, so a later incremental run
/// can tell whether someone else changed them.
fn outputs(lib: &Library, known: &BTreeMap<String, Known>) -> BTreeMap<String, Stat> {
    let mut index_files: BTreeSet<String> = known
        .iter()
        .filter(|(_, k)| k.indexed)
        .filter_map(|(p, _)| entry::classify(p))
        .map(|i| index::index_file(&i.index_dir))
        .collect();
    index_files.insert(index::MASTER.to_string());
    index_files.insert(ioc::FILE.to_string());
    index_files.into_iter().filter_map(|f| stat(lib, &f).map(|s| (f, s))).collect()
}

/// Commits what the rebuild changed and ends a marks journal.
fn commit(lib: &Library, opts: &Options, touched: &[String], journaled: bool) -> Result<bool> {
    // The log and `.ioc.md` always: a rebuild killed inside its commit
    // (after `git add`) left them changed on disk, and its rerun finds
    // nothing to clear or rewrite; unchanged, git commits nothing of them.
    // A deletion that killed commit staged is in neither the work tree nor
    // git's index, so it is unstaged first (git::commit would skip it).
    let always = [consistency::LOG.to_string(), ioc::FILE.to_string()];
    if opts.commit {
        git::unstage(lib, &always);
    }
    let mut commit_paths = touched.to_vec();
    commit_paths.extend(always);
    let committed = opts.commit && git::commit(lib, &commit_paths, COMMIT_MESSAGE)?;
    if committed {
        crash::at(Step::Committed);
    }
    if journaled {
        journal::end(lib)?;
    }
    Ok(committed)
}

/// Clears the marks of `cleared` as one journaled batch (like
/// `kb-relate lifecycle --write`): every new text staged and synced, the
/// journal (carrying this rebuild's commit message) made durable, then the
/// documents renamed in. The caller ends the journal after its commit; a
/// kill from the journal on is finished by the next writer (or rerun),
/// which commits the cleared documents with their index rows. Returns the
/// documents changed; with any, the journal is in place.
fn clear_marks(lib: &Library, cleared: &[Violation], commit: bool) -> Result<Vec<String>> {
    let changes: Vec<(&str, &str)> = cleared.iter().map(|v| (v.path.as_str(), "false")).collect();
    let planned = journal::set_field(lib, &changes, "effectiveness_mark", commit, COMMIT_MESSAGE)?;
    Ok(planned.into_iter().map(|(p, _)| p).collect())
}

/// What [`Cache::probe`] found.
enum Probe {
    /// Nothing changed.
    NoOp,
    /// The same documents, some edited: every document's current stat, in
    /// the cache's path order.
    Edited(Vec<Option<Stat>>),
    /// A directory changed: documents may have come or gone; walk.
    Moved,
}

/// The incremental cache as loaded.
struct Cache {
    state: State,
    /// Sorted by path.
    files: Vec<(String, Known)>,
    dirs: Vec<(String, Option<Stat>)>,
}

/// The library-wide summary (references and marked documents by path).
/// Like the cache below, it is derived: missing, unreadable or not ours,
/// `None` makes the caller rebuild it from the documents.
fn load_summary(lib: &Library) -> Option<BTreeMap<String, Entry>> {
    let list: Vec<Entry> = serde_json::from_slice(&fs::read(lib.path(SUMMARY)).ok()?).ok()?;
    Some(list.into_iter().map(|e| (e.path.clone(), e)).collect())
}

impl Cache {
    /// `None` (any file missing, unreadable, of another version or not
    /// parsing) means a full rebuild that rewrites the cache: it is derived
    /// from the documents, so no read error here can lose anything.
    fn load(lib: &Library) -> Option<Cache> {
        let state: State = serde_json::from_str(&fs::read_to_string(lib.path(STATE)).ok()?)
            .ok()
            .filter(|s: &State| s.version == CACHE_VERSION)?;
        let files_text = fs::read_to_string(lib.path(FILES)).ok()?;
        let mut files = Vec::with_capacity(files_text.len() / 64);
        for line in files_text.lines() {
            let mut it = line.splitn(4, '\t');
            let (size, mtime, indexed, path) = (it.next()?, it.next()?, it.next()?, it.next()?);
            let stat = if size == "-" { None } else { Some((size.parse().ok()?, mtime.parse().ok()?)) };
            files.push((path.to_string(), Known { stat, indexed: indexed == "1" }));
        }
        let dirs_text = fs::read_to_string(lib.path(DIRS)).ok()?;
        let mut dirs = Vec::new();
        for line in dirs_text.lines() {
            let (mtime, dir) = line.split_once('\t')?;
            dirs.push((dir.to_string(), if mtime == "-" { None } else { Some((0, mtime.parse().ok()?)) }));
        }
        Some(Cache { state, files, dirs })
    }

    /// What moved since the cache was written. A file created, renamed or
    /// deleted changes its directory's mtime, so unchanged directories mean
    /// the same documents; then each document's size and mtime and each
    /// written index's stat tell whether anything changed at all.
    fn probe(&self, lib: &Library) -> Probe {
        if !self.dirs.par_iter().all(|(d, s)| stat(lib, d) == *s) {
            return Probe::Moved;
        }
        let paths: Vec<&str> = self.files.iter().map(|(p, _)| p.as_str()).collect();
        let stats = stat::many(&lib.dir, &paths);
        let same = stats.iter().zip(&self.files).all(|(s, (_, k))| *s == k.stat);
        if same && self.state.outputs.iter().all(|(p, s)| stat(lib, p) == Some(*s)) {
            Probe::NoOp
        } else {
            Probe::Edited(stats)
        }
    }

    /// Writes the cache with `atomic::write` (synced, temp names that
    /// `kb-lock sweep` knows), so a crash leaves the old cache or the new
    /// one. Directory mtimes are taken last, after every write of this run.
    fn save(
        lib: &Library,
        state: &State,
        files: &BTreeMap<String, Known>,
        dirs: &[String],
        summary: &BTreeMap<String, Entry>,
    ) -> Result<()> {
        let sorted = files.iter();
        let mut text = String::with_capacity(sorted.len() * 80);
        for (p, k) in sorted {
            let _ = match k.stat {
                Some((s, m)) => writeln!(text, "{s}\t{m}\t{}\t{p}", u8::from(k.indexed)),
                None => writeln!(text, "-\t-\t{}\t{p}", u8::from(k.indexed)),
            };
        }
        put(lib, FILES, text.as_bytes())?;
        let list: Vec<&Entry> = summary.values().collect();
        put(lib, SUMMARY, &serde_json::to_vec(&list).map_err(|e| Error::msg(e.to_string()))?)?;
        put(lib, STATE, &serde_json::to_vec(state).map_err(|e| Error::msg(e.to_string()))?)?;
        let mut text = String::new();
        for d in dirs {
            match stat(lib, d) {
                Some((_, m)) => text.push_str(&format!("{m}\t{d}\n")),
                None => text.push_str(&format!("-\t{d}\n")),
            }
        }
        put(lib, DIRS, text.as_bytes())
    }
}

fn put(lib: &Library, rel: &str, bytes: &[u8]) -> Result<()> {
    atomic::write(&lib.path(rel), bytes)
}
