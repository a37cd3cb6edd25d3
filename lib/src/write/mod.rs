//! Seed 000's `library write`, all eight steps in one process: validate,
//! lock, atomic write (overwrite or append), changelog line, incremental
//! `.index.md` and `.master-index.md`, relations, release, git commit of the
//! touched paths only. A batch shares one lock and one commit.
//!
//! The writer is its own layer, above `derived` and `guard`, because each
//! write scans the content with the guard and updates the derived indexes.

use std::collections::HashMap;
use std::fs;

use rayon::prelude::*;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::clock;
use crate::derived::index;
use crate::derived::rebuild_all;
use crate::doc::digest;
use crate::doc::frontmatter;
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::fs::crash::{self, Step};
use crate::guard;
use crate::library::changelog::{self, Event};
use crate::library::entry::{self, Category, Entry, SUFFIX_STATUS};
use crate::library::git;
use crate::library::git_state;
pub mod fields;
pub mod integrate;
pub mod journal;
use crate::library::relations;
use crate::library::Library;
use crate::lock;

/// Default content limit per write (1 MiB); `--max-bytes` changes it.
pub const DEFAULT_MAX_BYTES: usize = 1 << 20;

/// Overwrite the file or append to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Replace the whole content.
    Overwrite,
    /// Add to the end of the existing content.
    Append,
}

/// One validated write request.
#[derive(Debug, Clone)]
pub struct Request {
    /// Normalised library-relative path.
    pub path: String,
    /// The content to write or append.
    pub content: String,
    /// Overwrite or append.
    pub mode: Mode,
    /// The notebook (agent session) writing it.
    pub notebook: Option<String>,
    /// Why risky content is written anyway (recorded in the changelog).
    pub allow_risky: Option<String>,
}

/// How a batch is carried out.
#[derive(Debug, Clone)]
pub struct Options {
    /// Commit the touched paths when the library is a git repository.
    pub commit: bool,
    /// Largest content accepted per request.
    pub max_bytes: usize,
    /// Lock timeout and holder command.
    pub lock: lock::Options,
}

impl Default for Options {
    fn default() -> Options {
        Options { commit: true, max_bytes: DEFAULT_MAX_BYTES, lock: lock::Options::default() }
    }
}

/// The `write` record printed for each request that was written.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "write")]
pub struct Written {
    /// Library-relative path.
    pub path: String,
    /// created, updated or appended.
    pub action: String,
    /// Size of the file after the write.
    pub bytes: u64,
    /// SHA-256 of the file after the write.
    pub sha256: String,
    /// When it was written.
    pub ts: String,
    /// The guard's verdict on the content when it is not `safe`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<&'static str>,
    /// What the guard found, for a caution (or an allowed risky) write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// The outcome of one request: written, or rejected with a reason.
pub type Outcome = std::result::Result<Written, String>;

/// What a whole batch did.
#[derive(Debug, Default)]
pub struct BatchResult {
    /// One outcome per request, in input order, with the request's line.
    pub outcomes: Vec<(usize, Outcome)>,
    /// Whether a git commit was made.
    pub committed: bool,
    /// A commit that failed after the writes landed (writes are kept).
    pub commit_error: Option<String>,
    /// Extended guard rule files that could not be loaded (the scan ran
    /// with the core rules and every valid file; reported, never silent).
    pub guard_errors: Vec<String>,
    /// What recovering a batch a killed writer left did, if there was one.
    pub recovered: Option<journal::Recovered>,
    /// Stale git state (a killed git's `index.lock`) removed first.
    pub cleared: Vec<git_state::Cleared>,
}

/// The keys of a request line (`schemas/write-request.schema.json`):
/// its own, and the `verdict` kb-guard filter adds on its way here.
pub const REQUEST_KEYS: &[&str] = &["path", "content", "mode", "notebook", "allow_risky", "verdict"];

/// One line of a batch's input: its number, and its object or why it is none.
pub type InputLine = (usize, std::result::Result<Map<String, Value>, crate::out::jsonl::LineError>);

/// A batch's input lines ([`InputLine`]) as
/// requests, in input order: each checked on its own ([`parse_request`]:
/// its path's parts looked at, its name folded), so all at once.
pub fn parse_requests(
    lib: &Library,
    lines: Vec<InputLine>,
    max_bytes: usize,
) -> Vec<(usize, std::result::Result<Request, String>)> {
    lines
        .into_par_iter()
        .map(|(line, obj)| {
            let req = match obj {
                // An upstream refusal (kb-guard filter's error record) stays a
                // refusal, with its own message.
                Ok(obj) if obj.get("record").and_then(|r| r.as_str()) == Some("error") => {
                    let msg = obj.get("message").and_then(|m| m.as_str()).unwrap_or("refused upstream");
                    Err(format!("refused: {msg}"))
                }
                Ok(obj) => parse_request(lib, &obj, max_bytes),
                Err(e) => Err(e.message),
            };
            (line, req)
        })
        .collect()
}

/// Turns a JSONL request object into a request, or says what is wrong.
/// An unknown key is refused, not ignored: `"mdoe": "append"` would
/// otherwise overwrite the file it meant to append to.
pub fn parse_request(
    lib: &Library,
    obj: &Map<String, Value>,
    max_bytes: usize,
) -> std::result::Result<Request, String> {
    if let Some(k) = obj.keys().find(|k| !REQUEST_KEYS.contains(&k.as_str())) {
        let near = crate::text::closest(k, REQUEST_KEYS.iter().copied())
            .map(|s| format!("; did you mean '{s}'?"))
            .unwrap_or_default();
        return Err(format!("unknown key '{k}'{near} (keys: {})", REQUEST_KEYS.join(", ")));
    }
    let path = match obj.get("path") {
        Some(Value::String(p)) => p.as_str(),
        Some(_) => return Err("'path' must be a string".into()),
        None => return Err("missing field 'path'".into()),
    };
    let content = match obj.get("content") {
        Some(Value::String(c)) => c.clone(),
        Some(_) => return Err("'content' must be a string".into()),
        None => return Err("missing field 'content'".into()),
    };
    let mode = match obj.get("mode") {
        None | Some(Value::Null) => Mode::Overwrite,
        Some(Value::String(m)) if m == "overwrite" => Mode::Overwrite,
        Some(Value::String(m)) if m == "append" => Mode::Append,
        Some(other) => return Err(format!("unknown mode {other} (expected \"overwrite\" or \"append\")")),
    };
    let text_field = |k: &str| -> std::result::Result<Option<String>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
            Some(Value::String(_)) => Ok(None),
            Some(_) => Err(format!("'{k}' must be a string")),
        }
    };
    let notebook = text_field("notebook")?;
    let allow_risky = text_field("allow_risky")?;
    request(lib, path, content, mode, notebook, allow_risky, max_bytes)
}

/// The names a batch has written so far (each path and its directories)
/// by their folded form: `Library::writable` compares a new name with the
/// disk, where the batch's own files are not yet, so two new twins
/// (`Notes/a.md` and `notes/b.md`, `café` in two Unicode forms) in one
/// batch are caught here.
#[derive(Default)]
struct BatchNames(std::collections::HashMap<String, String>);

impl BatchNames {
    fn prefixes(path: &str) -> impl Iterator<Item = &str> {
        path.match_indices('/').map(|(i, _)| &path[..i]).chain(std::iter::once(path))
    }

    /// Each of `path`'s names (it and its directories) with its fold, as
    /// [`Self::twin`] and [`Self::add`] look them up: folded before, for
    /// every request at once.
    fn keys(path: &str) -> Vec<(String, String)> {
        Self::prefixes(path).map(|p| (p.to_string(), crate::library::names::fold(p))).collect()
    }

    /// The earlier name a path (or one of its directories) is a twin of,
    /// given its [`Self::keys`].
    fn twin(&self, keys: &[(String, String)]) -> Option<String> {
        keys.iter().find_map(|(p, folded)| self.0.get(folded).filter(|seen| *seen != p).cloned())
    }

    fn add(&mut self, keys: &[(String, String)]) {
        for (p, folded) in keys {
            self.0.entry(folded.clone()).or_insert_with(|| p.clone());
        }
    }
}

/// Validates one request's parts (path rules, size) into a request.
pub fn request(
    lib: &Library,
    path: &str,
    content: String,
    mode: Mode,
    notebook: Option<String>,
    allow_risky: Option<String>,
    max_bytes: usize,
) -> std::result::Result<Request, String> {
    let path = lib.writable(path).map_err(|e| e.to_string())?;
    if let Some(why) = notebook.as_deref().and_then(crate::library::cursors::notebook_refusal) {
        return Err(why);
    }
    if content.len() > max_bytes {
        return Err(format!("content of '{path}' is {} bytes, over the limit of {max_bytes}", content.len()));
    }
    Ok(Request { path, content, mode, notebook, allow_risky })
}

/// Content bytes from a file or stdin must be UTF-8 and within the limit.
pub fn content_from_bytes(bytes: Vec<u8>, what: &str, max_bytes: usize) -> Result<String> {
    if bytes.len() > max_bytes {
        return Err(Error::msg(format!("{what} is {} bytes, over the limit of {max_bytes}", bytes.len())));
    }
    String::from_utf8(bytes).map_err(|_| Error::msg(format!("{what} is not UTF-8")))
}

/// The content of a write: `--content`, `--content-file` (`-` for stdin),
/// else stdin (UTF-8, within the limit).
pub fn content_from_args(content: Option<&str>, file: Option<&std::path::Path>, max_bytes: usize) -> Result<String> {
    let (bytes, what) = bytes_from_args(content, file, max_bytes)?;
    content_from_bytes(bytes, &what, max_bytes)
}

/// The same bytes, not necessarily text (a skill's `assets/logo.png`),
/// with what they came from for messages.
pub fn bytes_from_args(
    content: Option<&str>,
    file: Option<&std::path::Path>,
    max_bytes: usize,
) -> Result<(Vec<u8>, String)> {
    let (bytes, what) = match (content, file) {
        (Some(_), Some(_)) => return Err(Error::usage("give --content or --content-file, not both")),
        (Some(c), None) => (c.as_bytes().to_vec(), "--content".to_string()),
        // `-` names stdin, as for rg, jq and kb-guard; a file named `-` is `./-`.
        (None, Some(f)) if f.as_os_str() != "-" => {
            // A FIFO or device is an error, never a hang.
            let bytes = crate::fs::nofollow::read_input(f, max_bytes as u64)
                .map_err(|e| Error::io(format!("reading {}", f.display()), e))?;
            (bytes, f.display().to_string())
        }
        (None, _) => {
            // At most the limit is read: a 2 GB pipe is refused, not held.
            let bytes = crate::fs::nofollow::read_capped(std::io::stdin().lock(), max_bytes as u64, "stdin")
                .map_err(|e| Error::io("reading stdin", e))?;
            (bytes, "stdin".to_string())
        }
    };
    if bytes.len() > max_bytes {
        return Err(Error::msg(format!("{what} is {} bytes, over the limit of {max_bytes}", bytes.len())));
    }
    Ok((bytes, what))
}

/// Runs a batch of requests (line number, request or the reason it was
/// rejected) under one lock, with one durability barrier for all its files
/// (group commit), one changelog append, one index and relations update,
/// and one commit. A batch a killed writer left is recovered first.
pub fn batch(
    lib: &Library,
    requests: Vec<(usize, std::result::Result<Request, String>)>,
    opts: &Options,
) -> Result<BatchResult> {
    let mut result = BatchResult::default();
    if requests.iter().all(|(_, r)| r.is_err()) {
        result.outcomes = requests.into_iter().filter_map(|(l, r)| r.err().map(|e| (l, Err(e)))).collect();
        return Ok(result);
    }
    let (engine, load_errors) = guard::library_engine(lib)?;
    result.guard_errors = load_errors.into_iter().map(|e| format!("guard rules {}: {}", e.source, e.message)).collect();
    // The guard scan depends on the request alone: all of them, in
    // parallel, before the lock (the lock is held only for the writing).
    let requests: Vec<(usize, Scanned)> = requests
        .into_par_iter()
        .map(|(line, r)| {
            (
                line,
                r.map(|req| {
                    let report = guard::scan_text_with(&engine, &req.path, &req.content);
                    (req, report)
                }),
            )
        })
        .collect();
    // One instant for the whole batch: its files land together.
    let ts = clock::now().map(clock::format)?;
    lock::with_lock(lib, &opts.lock, || {
        // The logs every write appends to: a link in their place is refused
        // before any document changes.
        for log in [changelog::FILE, relations::FILE] {
            lib.check_inside(log)?;
        }
        if opts.commit {
            result.cleared = git_state::clear(lib, git_state::WAIT)?;
        }
        result.recovered = recover(lib)?;
        let applied = apply_each(lib, &requests, &ts);
        let keys: Vec<Vec<(String, String)>> = requests
            .par_iter()
            .map(|(_, r)| r.as_ref().map_or_else(|_| Vec::new(), |(req, _)| BatchNames::keys(&req.path)))
            .collect();
        let mut plan = Plan::default();
        let mut progress = crate::out::progress::Progress::new("kb-append: writing", requests.len());
        let mut names = BatchNames::default();
        for (((line, req), applied), keys) in requests.into_iter().zip(applied).zip(keys) {
            progress.tick();
            let outcome = match req {
                Ok((req, _)) if names.twin(&keys).is_some() => {
                    Err(format!(
                        "refused: '{}' differs only in case or Unicode form from '{}' earlier in this batch (the two collide on case-insensitive or normalising file systems)",
                        req.path,
                        names.twin(&keys).unwrap_or_default()
                    ))
                }
                Ok((req, _)) => applied.unwrap_or_else(|| Err(format!("'{}' was not applied", req.path))).map(|a| {
                    names.add(&keys);
                    plan.add(&req.path, a, result.outcomes.len())
                }),
                Err(msg) => Err(msg),
            };
            result.outcomes.push((line, outcome));
        }
        let Some(journal) = plan.land(lib, opts.commit, &mut result.outcomes)? else { return Ok(()) };
        // Each file's entry was parsed by `apply`; its links (a Markdown
        // parse each) are read in parallel, in file order.
        let edges: Vec<(String, Vec<relations::Edge>)> = plan
            .files
            .par_iter()
            .filter_map(|f| f.entry.as_ref().map(|e| (f.path.clone(), relations::doc_edges(e, &f.text))))
            .collect();
        let changed: Vec<(String, Option<Entry>)> =
            plan.files.iter_mut().map(|f| (f.path.clone(), f.entry.take())).collect();
        let touched = plan.files.iter().map(|f| f.path.clone()).collect();
        let message = opts.commit.then(|| commit_message(&journal.events));
        // The checkpoint waits on the disk while the changelog, indexes,
        // relations and commit are made: it only has to be done before the
        // journal that holds the files' bytes goes.
        let targets: Vec<std::path::PathBuf> = plan.files.iter().map(|f| lib.path(&f.path)).collect();
        let targets: Vec<&std::path::Path> = targets.iter().map(|p| p.as_path()).collect();
        // The changelog, indexes and relations are written unsynced: the
        // journal holds their lines and recovery rebuilds the rest, so they
        // are made durable together after, before the journal goes.
        let ((recorded, logs), synced) = std::thread::scope(|s| {
            let sync = journal.replays().then(|| s.spawn(|| atomic::checkpoint(&targets)));
            let recorded =
                atomic::deferring(|| record(lib, &journal.events, &changed, edges, touched, message.as_deref()));
            let synced = sync.map(|t| t.join().unwrap_or_else(|_| Err(Error::msg("the checkpoint thread panicked"))));
            (recorded, synced)
        });
        (result.committed, result.commit_error) = recorded?;
        atomic::checkpoint(&logs.iter().map(|p| p.as_path()).collect::<Vec<_>>())?;
        if let Some(synced) = synced {
            synced?;
            crash::at(Step::Checkpoint);
        }
        journal::end(lib)
    })?;
    Ok(result)
}

/// A request with its guard report, or why it was rejected.
type Scanned = std::result::Result<(Request, guard::Report), String>;

/// Finishes every kind of group a killed writer left under the library
/// lock: a batch (rolled forward or back, see `journal`; returned for the
/// caller to report) and an integrate run (`integrate`, told
/// on stderr). The one entry point: writers, sync and `kb-lock sweep`
/// call it first thing under the lock, so each finishes either kind.
/// (kb-memgate's and kb-lastword's journals live under their own
/// directories and locks; their writers finish them.)
pub fn recover(lib: &Library) -> Result<Option<journal::Recovered>> {
    let batch = journal::recover(lib, commit_message)?;
    integrate::finish_pending(lib)?;
    Ok(batch)
}

/// Whether a killed writer left a group [`recover`] finishes (only then
/// does `kb-lock sweep` take the lock).
pub fn pending(lib: &Library) -> bool {
    journal::pending(lib) || lib.path(integrate::FILE).exists()
}

/// [`recover`], told on stderr: the hook `kb::derived::rebuild_index`
/// runs under its lock (it sits below this layer and cannot call it).
pub fn recover_noted(lib: &Library) -> Result<()> {
    journal::note(recover(lib)?);
    Ok(())
}

/// The files a batch will put in place: the final bytes of each path (a
/// path written twice keeps its last bytes) and the events of each write.
#[derive(Default)]
struct Plan {
    files: Vec<PlannedFile>,
    /// Where each path is in `files` (a batch of thousands looks up every
    /// request's path).
    at: HashMap<String, usize>,
    /// Events in request order, with the index of their file in `files`.
    events: Vec<(usize, Event)>,
}

struct PlannedFile {
    path: String,
    /// The SHA-256 of its bytes before the batch, empty when it did not exist.
    before: String,
    /// Its permissions on disk, which its new bytes keep (`None`: new).
    mode: Option<fs::Permissions>,
    text: String,
    /// The entry of `text` (parsed once, by `apply`).
    entry: Option<Entry>,
    /// Indexes into the batch's outcomes of the requests that wrote it.
    outcomes: Vec<usize>,
}

impl Plan {
    /// Adds what one request made to its path's file; returns its record.
    fn add(&mut self, path: &str, a: Applied, outcome: usize) -> Written {
        let Applied { written, event, text, entry, before, mode } = a;
        let i = match self.at.get(path) {
            Some(&i) => {
                self.files[i].text = text;
                self.files[i].entry = entry;
                i
            }
            None => {
                let f = PlannedFile { path: path.to_string(), before, mode, text, entry, outcomes: Vec::new() };
                self.files.push(f);
                self.at.insert(path.to_string(), self.files.len() - 1);
                self.files.len() - 1
            }
        };
        self.files[i].outcomes.push(outcome);
        self.events.push((i, event));
        written
    }

    /// Step 3 as a group commit: every file is staged under a temp name,
    /// the journal records the intent with every new text (the batch's one
    /// durability barrier: one fsync of one file), then all are renamed
    /// into place unsynced; the caller checkpoints them before it ends the
    /// journal. A batch whose texts are over [`journal::REPLAY_LIMIT`]
    /// syncs each temp before the journal instead, which holds no text, and
    /// syncs each directory after the renames. A file that cannot be
    /// staged turns its requests into errors and drops their events.
    /// Returns the journal (`None`: nothing to write).
    fn land(
        &mut self,
        lib: &Library,
        commit: bool,
        outcomes: &mut [(usize, Outcome)],
    ) -> Result<Option<journal::Journal>> {
        let mut staged = Vec::new();
        let mut kept = Vec::new();
        let replay = self.files.iter().map(|f| f.text.len()).sum::<usize>() <= journal::REPLAY_LIMIT;
        let sync_each = !replay && atomic::sync_each(self.files.len());
        // One by one: staged in parallel, the creates contend for their
        // directory's lock in the kernel and cost more system time
        // (bench/RESULTS.md).
        for (i, f) in self.files.iter().enumerate() {
            match atomic::stage_as(&lib.path(&f.path), f.text.as_bytes(), sync_each, f.mode.clone()) {
                Ok(s) => {
                    crash::at(Step::WriteTemp);
                    staged.push(s);
                    kept.push(i);
                }
                Err(e) => {
                    for &o in &f.outcomes {
                        outcomes[o].1 = Err(e.to_string());
                    }
                }
            }
        }
        let files = std::mem::take(&mut self.files);
        let mut renumber = vec![None; files.len()];
        for (new, &old) in kept.iter().enumerate() {
            renumber[old] = Some(new);
        }
        self.events =
            std::mem::take(&mut self.events).into_iter().filter_map(|(i, e)| renumber[i].map(|n| (n, e))).collect();
        self.files = files.into_iter().enumerate().filter(|(i, _)| renumber[*i].is_some()).map(|(_, f)| f).collect();
        self.at.clear();
        if staged.is_empty() {
            return Ok(None);
        }
        let result = (|| {
            if !replay {
                atomic::barrier(&staged, sync_each)?;
            }
            let mut j = journal::new(lib, commit)?;
            j.boot = replay.then(atomic::boot_id).flatten();
            // A file's last event carries the sha256 of its final bytes.
            let mut sha = vec![None; self.files.len()];
            for (i, e) in &self.events {
                sha[*i] = e.sha256.clone();
            }
            for ((f, s), sha) in self.files.iter().zip(&staged).zip(sha) {
                let tmp = s.tmp.strip_prefix(&lib.dir).unwrap_or(&s.tmp).to_string_lossy().into_owned();
                let sha256 = sha.unwrap_or_else(|| digest::sha256_hex(f.text.as_bytes()));
                let replay = replay.then(|| journal::Replay { before: f.before.clone(), text: f.text.clone() });
                j.files.push(journal::Planned { path: f.path.clone(), tmp, sha256, replay });
            }
            j.events = self.events.iter().map(|(_, e)| e.clone()).collect();
            journal::begin(lib, &j)?;
            Ok(j)
        })();
        let j = match result {
            Ok(j) => j,
            Err(e) => {
                for s in &staged {
                    let _ = fs::remove_file(&s.tmp);
                }
                return Err(e);
            }
        };
        // From here a failure leaves the journal for the next writer.
        if replay {
            atomic::rename_in(&staged, || crash::at(Step::Rename))?;
        } else {
            atomic::put_in_place(&staged, || crash::at(Step::Rename))?;
        }
        crash::at(Step::Renamed);
        Ok(Some(j))
    }
}

/// Steps 4–6 and 8 after files were written under the lock: the changelog
/// lines, the `.index.md`/`.master-index.md` rows of the changed documents
/// (`None` = removed), their relations, and a commit of every touched path
/// when `message` is given. Shared by every writer (batch writes, skills).
/// Returns whether a commit was made and a commit error (the writes stay).
pub fn record(
    lib: &Library,
    events: &[Event],
    changed: &[(String, Option<Entry>)],
    edges: Vec<(String, Vec<relations::Edge>)>,
    mut touched: Vec<String>,
    message: Option<&str>,
) -> Result<(bool, Option<String>)> {
    changelog::append(lib, events)?;
    crash::at(Step::Changelog);
    touched.push(changelog::FILE.to_string());
    touched.extend(index::update(lib, changed)?);
    crash::at(Step::Index);
    let mut last_edges: Vec<(String, Vec<relations::Edge>)> = Vec::new();
    for (p, e) in edges {
        last_edges.retain(|(q, _)| q != &p);
        last_edges.push((p, e));
    }
    if relations::update(lib, &last_edges, events, || rebuild_all::rebuilt_edges(lib))? {
        touched.push(relations::FILE.to_string());
    }
    crash::at(Step::Relations);
    match message {
        Some(m) => match git::commit(lib, &touched, m) {
            Ok(c) => {
                crash::at(Step::Committed);
                Ok((c, None))
            }
            Err(e) => Ok((false, Some(e.to_string()))),
        },
        None => Ok((false, None)),
    }
}

/// What one request makes: its record, its changelog event, the file's
/// new text and its entry, and the file's digest before the batch.
struct Applied {
    written: Written,
    event: Event,
    text: String,
    entry: Option<Entry>,
    /// The SHA-256 of the bytes on disk, empty when the file is new;
    /// meaningful for a path's first request in the batch only.
    before: String,
    /// The file's permissions on disk (`None`: it is not there).
    mode: Option<fs::Permissions>,
}

/// Step 1 for every request, in parallel over paths: one path's requests
/// in order, each on the text the one before it made (`pending`), the
/// paths at once. Each accepted request's result, at its index (`None`
/// for a request rejected before). The batch then takes them in request
/// order as one loop would have made them: a path refused as another's
/// twin stays refused for the rest of the batch, so no later request of
/// it needed the text of a refused one.
fn apply_each(
    lib: &Library,
    requests: &[(usize, Scanned)],
    ts: &str,
) -> Vec<Option<std::result::Result<Applied, String>>> {
    let mut paths: Vec<Vec<usize>> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for (i, (_, r)) in requests.iter().enumerate() {
        if let Ok((req, _)) = r {
            let n = paths.len();
            let p = *at.entry(req.path.as_str()).or_insert(n);
            if p == n {
                paths.push(Vec::new());
            }
            paths[p].push(i);
        }
    }
    // Under the lock each directory is looked at once for a link on its
    // way (nothing else writes the library now): a request in a clean
    // one needs no walk of its own (`apply`).
    let mut dirs: Vec<&str> = at.keys().map(|p| p.rsplit_once('/').map_or("", |(d, _)| d)).collect();
    dirs.sort_unstable();
    dirs.dedup();
    let clean: std::collections::HashSet<&str> =
        dirs.into_iter().filter(|d| crate::fs::nofollow::link_in_chain(&lib.dir, d).is_none()).collect();
    let done: Vec<Vec<(usize, std::result::Result<Applied, String>)>> = paths
        .par_iter()
        .map(|reqs| {
            let mut pending: Option<(String, Option<fs::Metadata>)> = None;
            let mut out = Vec::with_capacity(reqs.len());
            for &i in reqs {
                let Ok((req, report)) = &requests[i].1 else { continue };
                let dir_clean = clean.contains(req.path.rsplit_once('/').map_or("", |(d, _)| d));
                let a = apply(lib, report, req, pending.as_ref(), dir_clean, ts);
                if let Ok((a, meta)) = &a {
                    pending = Some((a.text.clone(), meta.clone()));
                }
                out.push((i, a.map(|(a, _)| a)));
            }
            out
        })
        .collect();
    let mut each: Vec<Option<std::result::Result<Applied, String>>> = (0..requests.len()).map(|_| None).collect();
    for (i, a) in done.into_iter().flatten() {
        each[i] = Some(a);
    }
    each
}

/// Step 1 for one request: the guard scan (seed 000: external content is
/// sanitised before storage; dangerous content is refused unless
/// `allow_risky` says why) and the final content (`pending`: what this
/// batch already put in the path, and the file's metadata on disk as its
/// first request read it). `Plan::land` writes it. Returned with the
/// metadata, which the path's next request gets as `pending`.
fn apply(
    lib: &Library,
    report: &guard::Report,
    req: &Request,
    pending: Option<&(String, Option<fs::Metadata>)>,
    dir_clean: bool,
    ts: &str,
) -> std::result::Result<(Applied, Option<fs::Metadata>), String> {
    let full = lib.path(&req.path);
    // Checked again under the lock: the library may have changed since the
    // request was validated. Its directory was (`dir_clean`), and the file
    // itself is opened without following a link: only a path whose
    // directory has a link on its way, or whose open fails, is walked.
    if !dir_clean {
        lib.check_inside(&req.path).map_err(|e| e.to_string())?;
    }
    let read = match pending {
        Some((text, meta)) => Ok(Some((text.as_bytes().to_vec(), meta.clone()))),
        None => match crate::fs::nofollow::read_with(&full, u64::MAX) {
            Ok((bytes, meta)) => Ok(Some((bytes, Some(meta)))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => {
                lib.check_inside(&req.path).map_err(|e| e.to_string())?;
                Err(e)
            }
        },
    };
    // The one judgement sync applies to a peer's content too (guard::gate).
    if let Some(why) = guard::gate::refused(report).filter(|_| req.allow_risky.is_none()) {
        return Err(format!("refused: {why}; pass --allow-risky REASON to write it anyway"));
    }
    let flagged = report.verdict != guard::Verdict::Safe;
    let (old, meta) = match read {
        Ok(Some((b, meta))) => (Some(b), meta),
        Ok(None) => (None, None),
        Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => return Err(format!("'{}' is a directory", req.path)),
        Err(e) => return Err(format!("cannot read '{}': {e}", req.path)),
    };
    let before = old.as_deref().filter(|_| pending.is_none()).map(digest::sha256_hex).unwrap_or_default();
    if let Some(meta) = &meta {
        if meta.is_dir() {
            return Err(format!("'{}' is a directory", req.path));
        }
        if meta.permissions().readonly() {
            return Err(format!("'{}' is read-only", req.path));
        }
    }
    let mode = meta.as_ref().map(|m| m.permissions());
    let (text, parsed, action) = match (req.mode, old) {
        (Mode::Append, Some(old)) => {
            let mut old =
                String::from_utf8(old).map_err(|_| format!("cannot append to '{}': it is not UTF-8", req.path))?;
            if !old.is_empty() && !old.ends_with('\n') {
                old.push('\n');
            }
            old.push_str(&req.content);
            (old, None, "appended")
        }
        (_, old) => {
            let (text, parsed) = with_quality_status(&req.path, &req.content);
            (text, parsed, if old.is_some() { "updated" } else { "created" })
        }
    };
    let ts = ts.to_string();
    let sha = digest::sha256_hex(text.as_bytes());
    let info = entry::classify(&req.path);
    let entry = match parsed {
        Some(parsed) => Entry::from_parsed(&req.path, &text, parsed),
        None => Entry::from_text(&req.path, &text),
    };
    let event = Event {
        ts: ts.clone(),
        event: "write".into(),
        path: req.path.clone(),
        action: Some(action.into()),
        notebook: req.notebook.clone(),
        category: Some(info.as_ref().and_then(|i| i.category).map_or("file", Category::as_str).to_string()),
        topic: Some(entry.as_ref().map(|e| e.topic.clone()).unwrap_or_else(|| file_stem(&req.path))),
        sha256: Some(sha.clone()),
        bytes: Some(text.len() as u64),
        reason: req.allow_risky.clone(),
        machine: None,
    };
    let written = Written {
        path: req.path.clone(),
        action: action.into(),
        bytes: text.len() as u64,
        sha256: sha,
        ts,
        verdict: flagged.then(|| report.verdict.as_str()),
        warning: flagged.then(|| report.reason()),
    };
    Ok((Applied { written, event, text, entry, before, mode }, meta))
}

/// Seed 000's quality_status table: an experience file whose frontmatter
/// lacks `quality_status` gets the one its suffix implies. With the text's
/// frontmatter when it was parsed to decide (its entry needs no second
/// parse).
pub fn with_quality_status(path: &str, content: &str) -> (String, Option<frontmatter::Parsed>) {
    let Some(info) = entry::classify(path) else { return (content.to_string(), None) };
    if info.category != Some(Category::Experience) {
        return (content.to_string(), None);
    }
    let status = info.suffix.as_deref().and_then(|s| SUFFIX_STATUS.iter().find(|(k, _)| *k == s)).map(|(_, v)| *v);
    let Some(status) = status else { return (content.to_string(), None) };
    let parsed = frontmatter::parse(content);
    match frontmatter::with_field_parsed(content, &parsed, "quality_status", status) {
        Some((text, parsed)) => (text, Some(parsed)),
        None => (content.to_string(), Some(parsed)),
    }
}

fn file_stem(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.strip_suffix(".md").unwrap_or(name).to_string()
}

/// The seed's commit message `task-ai(library):<category> <action> <topic>`;
/// a batch of several writes gets a summary line and one such line each.
/// The topic is the author's: shown on one line with its control
/// characters escaped, so it cannot add trailers (`Signed-off-by:`) or
/// escapes to the commit.
pub fn commit_message(events: &[Event]) -> String {
    let line = |e: &Event| {
        let topic = e.topic.as_deref().unwrap_or(&e.path);
        let mut l = format!(
            "task-ai(library):{} {} {}",
            e.category.as_deref().unwrap_or("file"),
            e.action.as_deref().unwrap_or(&e.event),
            crate::out::printable(topic, false)
        );
        // A recovered skill promote says its stages, as the promote's own commit does.
        if let (Some("skill"), Some("promote"), Some(r)) = (e.category.as_deref(), e.action.as_deref(), &e.reason) {
            l = format!("{l} {}", crate::out::printable(&r.replace(" -> ", "->"), false));
        }
        l
    };
    match events {
        [one] => line(one),
        many => {
            let mut m = format!("task-ai(library):batch {} writes\n\n", many.len());
            for e in many {
                m.push_str(&line(e));
                m.push('\n');
            }
            m
        }
    }
}

/// `kb-append event`: logs a `referenced`, `replan` or `accept` line for a
/// document (the inputs of effectiveness, lifecycle and promotion) and
/// keeps the relations in step.
pub fn event(lib: &Library, kind: &str, path: &str, notebook: &str, opts: &Options) -> Result<Event> {
    if !matches!(kind, "referenced" | "replan" | "accept") {
        return Err(Error::usage(format!("unknown event '{kind}' (expected referenced, replan or accept)")));
    }
    let path = crate::library::normalise(path)?;
    lib.check_inside(&path)?;
    if !fs::symlink_metadata(lib.path(&path)).is_ok_and(|m| m.is_file()) {
        return Err(Error::msg(format!("'{path}' is not a file in the library")));
    }
    if let Some(why) = crate::library::cursors::notebook_refusal(notebook) {
        return Err(Error::usage(format!("--notebook: {why}")));
    }
    let info = entry::classify(&path);
    // The text only names the topic: bytes that are not UTF-8 read lossily
    // on purpose; a file that cannot be read is an error.
    let bytes = crate::fs::nofollow::read(&lib.path(&path), crate::library::scan::MAX_DOC_BYTES)
        .map_err(|e| Error::io(format!("reading {path}"), e))?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let ev = Event {
        ts: clock::format(clock::now()?),
        event: kind.into(),
        path: path.clone(),
        notebook: Some(notebook.to_string()),
        category: Some(info.and_then(|i| i.category).map_or("file", Category::as_str).to_string()),
        topic: Some(Entry::from_text(&path, &text).map(|e| e.topic).unwrap_or_else(|| file_stem(&path))),
        ..Event::default()
    };
    lock::with_lock(lib, &opts.lock, || {
        if opts.commit {
            git_state::note(&git_state::clear(lib, git_state::WAIT)?);
        }
        journal::note(recover(lib)?);
        // The journal makes the line, its relation edge and the commit one
        // step: a kill between them is finished by the next writer.
        let mut j = journal::new(lib, opts.commit)?;
        j.events.push(ev.clone());
        journal::begin(lib, &j)?;
        changelog::append(lib, std::slice::from_ref(&ev))?;
        crash::at(Step::Changelog);
        relations::update(lib, &[], std::slice::from_ref(&ev), || rebuild_all::rebuilt_edges(lib))?;
        // Like every writer, commit what changed (a clean tree after an event).
        if opts.commit {
            let category = ev.category.as_deref().unwrap_or("file");
            // An event may name no topic; the message then ends at the kind.
            let topic = ev.topic.as_deref().unwrap_or_default();
            let touched = [changelog::FILE.to_string(), relations::FILE.to_string()];
            git::commit(lib, &touched, &format!("task-ai(library):{category} {kind} {topic}"))?;
        }
        journal::end(lib)
    })?;
    Ok(ev)
}
