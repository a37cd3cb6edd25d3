//! Seed 000's `library write`, all eight steps in one process: validate,
//! lock, atomic write (overwrite or append), changelog line, incremental
//! `.index.md` and `.master-index.md`, relations, release, git commit of the
//! touched paths only. A batch shares one lock and one commit.

use std::fs;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::clock;
use crate::derived::index;
use crate::derived::rebuild_all;
use crate::doc::digest;
use crate::doc::frontmatter;
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::guard;
use crate::library::changelog::{self, Event};
use crate::library::entry::{self, Category, Entry, SUFFIX_STATUS};
use crate::library::git;
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
pub struct Written {
    /// Always `write`.
    pub record: &'static str,
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
}

/// Turns a JSONL request object into a request, or says what is wrong.
pub fn parse_request(
    lib: &Library,
    obj: &Map<String, Value>,
    max_bytes: usize,
) -> std::result::Result<Request, String> {
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

/// The content of a write: `--content`, `--content-file`, else stdin
/// (UTF-8, within the limit).
pub fn content_from_args(content: Option<&str>, file: Option<&std::path::Path>, max_bytes: usize) -> Result<String> {
    match (content, file) {
        (Some(_), Some(_)) => Err(Error::usage("give --content or --content-file, not both")),
        (Some(c), None) => content_from_bytes(c.as_bytes().to_vec(), "--content", max_bytes),
        (None, Some(f)) => {
            let bytes = crate::fs::nofollow::read_input(f, max_bytes as u64)
                .map_err(|e| Error::io(format!("reading {}", f.display()), e))?;
            content_from_bytes(bytes, &f.display().to_string(), max_bytes)
        }
        (None, None) => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes).map_err(|e| Error::io("reading stdin", e))?;
            content_from_bytes(bytes, "stdin", max_bytes)
        }
    }
}

/// Runs a batch of requests (line number, request or the reason it was
/// rejected) under one lock, with one changelog append, one index and
/// relations update, and one commit.
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
    lock::with_lock(lib, &opts.lock, || {
        // The logs every write appends to: a link in their place is refused
        // before any document changes.
        for log in [changelog::FILE, relations::FILE] {
            lib.check_inside(log)?;
        }
        let mut events = Vec::new();
        let mut changed: Vec<(String, Option<Entry>)> = Vec::new();
        let mut edges = Vec::new();
        let mut touched_docs: Vec<String> = Vec::new();
        let mut progress = crate::out::progress::Progress::new("kb-append: writing", requests.len());
        for (line, req) in requests {
            progress.tick();
            let outcome = match req {
                Ok(req) => apply(lib, &engine, &req).map(|(written, event, text)| {
                    let entry = Entry::from_text(&req.path, &text);
                    if let Some(e) = &entry {
                        edges.push((req.path.clone(), relations::doc_edges(e, &text)));
                    }
                    changed.retain(|(p, _)| p != &req.path);
                    changed.push((req.path.clone(), entry));
                    if !touched_docs.contains(&req.path) {
                        touched_docs.push(req.path.clone());
                    }
                    events.push(event);
                    written
                }),
                Err(msg) => Err(msg),
            };
            result.outcomes.push((line, outcome));
        }
        if events.is_empty() {
            return Ok(());
        }
        let message = opts.commit.then(|| commit_message(&events));
        (result.committed, result.commit_error) =
            record(lib, &events, &changed, edges, touched_docs, message.as_deref())?;
        Ok(())
    })?;
    Ok(result)
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
    touched.push(changelog::FILE.to_string());
    touched.extend(index::update(lib, changed)?);
    let mut last_edges: Vec<(String, Vec<relations::Edge>)> = Vec::new();
    for (p, e) in edges {
        last_edges.retain(|(q, _)| q != &p);
        last_edges.push((p, e));
    }
    if relations::update(lib, &last_edges, events, || rebuild_all::rebuilt_edges(lib))? {
        touched.push(relations::FILE.to_string());
    }
    match message {
        Some(m) => match git::commit(lib, &touched, m) {
            Ok(c) => Ok((c, None)),
            Err(e) => Ok((false, Some(e.to_string()))),
        },
        None => Ok((false, None)),
    }
}

/// Where the extended guard rules live (hot-loaded by every batch).
pub const GUARD_RULES: &str = ".evolving-rules/security/active";

/// Steps 1 and 3 for one request: the guard scan (seed 000: external
/// content is sanitised before storage; dangerous content is refused unless
/// `allow_risky` says why), mkdir -p, then the atomic write of the final
/// content. Returns the record, the changelog event and the text.
fn apply(
    lib: &Library,
    engine: &guard::Engine,
    req: &Request,
) -> std::result::Result<(Written, Event, String), String> {
    let full = lib.path(&req.path);
    // Checked again under the lock: the library may have changed since the
    // request was validated.
    lib.check_inside(&req.path).map_err(|e| e.to_string())?;
    let report = guard::scan_text_with(engine, &req.path, &req.content);
    if report.verdict == guard::Verdict::Dangerous && req.allow_risky.is_none() {
        return Err(format!(
            "refused: the guard judged the content dangerous ({}); pass --allow-risky REASON to write it anyway",
            report.reason()
        ));
    }
    let flagged = report.verdict != guard::Verdict::Safe;
    let old = match crate::fs::nofollow::read(&full, u64::MAX) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => return Err(format!("'{}' is a directory", req.path)),
        Err(e) => return Err(format!("cannot read '{}': {e}", req.path)),
    };
    if let Ok(meta) = fs::symlink_metadata(&full) {
        if meta.is_dir() {
            return Err(format!("'{}' is a directory", req.path));
        }
        if meta.permissions().readonly() {
            return Err(format!("'{}' is read-only", req.path));
        }
    }
    let (text, action) = match (req.mode, old) {
        (Mode::Append, Some(old)) => {
            let mut old =
                String::from_utf8(old).map_err(|_| format!("cannot append to '{}': it is not UTF-8", req.path))?;
            if !old.is_empty() && !old.ends_with('\n') {
                old.push('\n');
            }
            old.push_str(&req.content);
            (old, "appended")
        }
        (_, old) => (with_quality_status(&req.path, &req.content), if old.is_some() { "updated" } else { "created" }),
    };
    atomic::write(&full, text.as_bytes()).map_err(|e| e.to_string())?;
    let ts = clock::now().map(clock::format).map_err(|e| e.to_string())?;
    let sha = digest::sha256_hex(text.as_bytes());
    let info = entry::classify(&req.path);
    let entry = Entry::from_text(&req.path, &text);
    let event = Event {
        ts: ts.clone(),
        event: "write".into(),
        path: req.path.clone(),
        action: Some(action.into()),
        notebook: req.notebook.clone(),
        category: Some(info.as_ref().and_then(|i| i.category).map_or("file", Category::as_str).to_string()),
        topic: Some(entry.map(|e| e.topic).unwrap_or_else(|| file_stem(&req.path))),
        sha256: Some(sha.clone()),
        bytes: Some(text.len() as u64),
        reason: req.allow_risky.clone(),
    };
    let written = Written {
        record: "write",
        path: req.path.clone(),
        action: action.into(),
        bytes: text.len() as u64,
        sha256: sha,
        ts,
        verdict: flagged.then(|| report.verdict.as_str()),
        warning: flagged.then(|| report.reason()),
    };
    Ok((written, event, text))
}

/// Seed 000's quality_status table: an experience file whose frontmatter
/// lacks `quality_status` gets the one its suffix implies.
pub fn with_quality_status(path: &str, content: &str) -> String {
    let Some(info) = entry::classify(path) else { return content.to_string() };
    if info.category != Some(Category::Experience) {
        return content.to_string();
    }
    let status = info.suffix.as_deref().and_then(|s| SUFFIX_STATUS.iter().find(|(k, _)| *k == s)).map(|(_, v)| *v);
    match status.and_then(|s| frontmatter::with_field(content, "quality_status", s)) {
        Some(text) => text,
        None => content.to_string(),
    }
}

fn file_stem(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.strip_suffix(".md").unwrap_or(name).to_string()
}

/// The seed's commit message `task-ai(library):<category> <action> <topic>`;
/// a batch of several writes gets a summary line and one such line each.
pub fn commit_message(events: &[Event]) -> String {
    let line = |e: &Event| {
        format!(
            "task-ai(library):{} {} {}",
            e.category.as_deref().unwrap_or("file"),
            e.action.as_deref().unwrap_or(&e.event),
            e.topic.as_deref().unwrap_or(&e.path)
        )
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
    if notebook.trim().is_empty() {
        return Err(Error::usage("--notebook must name the notebook"));
    }
    let info = entry::classify(&path);
    let text = crate::fs::nofollow::read(&lib.path(&path), crate::library::scan::MAX_DOC_BYTES)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default();
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
        changelog::append(lib, std::slice::from_ref(&ev))?;
        relations::update(lib, &[], std::slice::from_ref(&ev), || rebuild_all::rebuilt_edges(lib))?;
        // Like every writer, commit what changed (a clean tree after an event).
        if opts.commit {
            let category = ev.category.as_deref().unwrap_or("file");
            let topic = ev.topic.as_deref().unwrap_or_default();
            let touched = [changelog::FILE.to_string(), relations::FILE.to_string()];
            git::commit(lib, &touched, &format!("task-ai(library):{category} {kind} {topic}"))?;
        }
        Ok(())
    })?;
    Ok(ev)
}
