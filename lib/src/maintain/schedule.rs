//! Seed 000 `maintain --mode quick` and `--scheduled [--force]`, the commits
//! that close `--full` and `--scheduled`, and the daily cron entry.
//!
//! - quick: the changelog entries after `.last-maintained` (epoch ms) name
//!   the documents to re-index; their index rows and relations are updated
//!   incrementally, then `.last-maintained` is set to now.
//! - scheduled: gated to once per 24 h by `.last-scheduled` (epoch s;
//!   `--force` bypasses it, a gated run does no work): 30-day staleness
//!   count, T3 → T4 promotion, core-rule scan state (which evolve layers
//!   are due: `just evolve scheduled` runs them), compact when `.last-compact` is ≥ 30 days old,
//!   rebuild-index, rebuild-relations, commit
//!   `library(scheduled): daily maintenance <date>`.
//!
//! Each step takes the lock itself; run under `kb-lock --` (as the justfile
//! does) the whole run holds one lock.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};

use serde::Serialize;
use serde_json::{json, Value};

use crate::clock;
use crate::derived::index;
use crate::derived::rebuild_all;
use crate::derived::rebuild_index;
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::library::changelog;
use crate::library::entry::Entry;
use crate::library::git;
use crate::library::relations;
use crate::library::scan;
use crate::library::Library;
use crate::lock;
use crate::maintain::compact;
use crate::maintain::raise_trust;
use crate::report::stale;
use crate::report::usage;

/// Seed: the quick mode's stamp (epoch milliseconds).
pub const LAST_MAINTAINED: &str = ".last-maintained";
/// Seed: the scheduled mode's stamp (epoch seconds).
pub const LAST_SCHEDULED: &str = ".last-scheduled";
/// Seed: where cron sends the scheduled run's output.
pub const SCHEDULED_LOG: &str = ".scheduled.log";
/// Seed: scheduled runs at most once per this many seconds.
pub const GATE_SECS: i64 = 24 * 3600;
/// Seed: scheduled compacts when the last compaction is this old.
pub const COMPACT_EVERY_DAYS: i64 = 30;
/// Seed: compaction archives lines older than this.
pub const COMPACT_OLDER_THAN_DAYS: i64 = 90;
/// Seed: scheduled counts references older than this.
pub const SCHEDULED_STALE_DAYS: u64 = 30;

/// A stamp file's number; `None` when the file is missing (never run).
/// Unreadable or not a number is an error naming it: read as "never", it
/// would rerun (and re-count) work on every call.
fn read_stamp(lib: &Library, rel: &str) -> Result<Option<i64>> {
    let Some(text) = crate::fs::read::optional_text(&lib.path(rel))? else { return Ok(None) };
    text.trim().parse().map(Some).map_err(|_| crate::Error::msg(format!("{rel}: not a number: {:?}", text.trim())))
}

/// What `kb-index quick` did.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "record", rename = "maintain")]
pub struct Quick {
    /// Always `quick`.
    pub mode: &'static str,
    /// The previous stamp (epoch ms, 0 when missing).
    pub since_ms: i64,
    /// Changelog events newer than it.
    pub events: usize,
    /// The documents they name, re-indexed.
    pub paths: Vec<String>,
    /// Derived files that changed.
    pub touched: Vec<String>,
    /// The new stamp.
    pub last_maintained: i64,
}

/// Seed `--mode quick`.
pub fn quick(lib: &Library, opts: &lock::Options) -> Result<Quick> {
    let now = clock::now()?;
    lock::with_lock(lib, opts, || {
        let since = read_stamp(lib, LAST_MAINTAINED)?.unwrap_or(0);
        let log = changelog::read(lib)?;
        let events: Vec<changelog::Event> = log
            .events
            .into_iter()
            .map(|(_, e)| e)
            .filter(|e| e.instant().is_some_and(|t| t.as_millisecond() > since))
            .collect();
        let paths: BTreeSet<String> = events.iter().map(|e| e.path.clone()).collect();
        let mut entries: Vec<(String, Option<Entry>)> = Vec::new();
        let mut edges = Vec::new();
        for p in &paths {
            let doc = scan::read_present(lib, p)?;
            edges.push((p.clone(), doc.as_ref().map(|d| d.edges.clone()).unwrap_or_default()));
            entries.push((p.clone(), doc.map(|d| d.entry)));
        }
        let mut touched = if entries.is_empty() { Vec::new() } else { index::update(lib, &entries)? };
        if !events.is_empty() && relations::update(lib, &edges, &events, || rebuild_all::rebuilt_edges(lib))? {
            touched.push(relations::FILE.to_string());
        }
        let stamp = now.as_millisecond();
        atomic::write(&lib.path(LAST_MAINTAINED), format!("{stamp}\n").as_bytes())?;
        Ok(Quick {
            mode: "quick",
            since_ms: since,
            events: events.len(),
            paths: paths.into_iter().collect(),
            touched,
            last_maintained: stamp,
        })
    })
}

/// What `kb-index scheduled` did.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "record", rename = "maintain")]
pub struct Scheduled {
    /// Always `scheduled`.
    pub mode: &'static str,
    /// Whether the steps ran (false: gated, no work done).
    pub ran: bool,
    /// When gated: the earliest next run (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_run: Option<String>,
    /// The seven steps' results, in order.
    pub steps: Vec<Value>,
    /// Whether the final commit was made.
    pub committed: bool,
}

/// Seed `--scheduled [--force]`.
pub fn scheduled(lib: &Library, force: bool, commit: bool, opts: &lock::Options) -> Result<Scheduled> {
    let now = clock::now()?;
    let last = read_stamp(lib, LAST_SCHEDULED)?;
    if let (false, Some(last)) = (force, last) {
        if now.as_second() - last < GATE_SECS {
            // A stamp beyond jiff's range has no printable next run.
            let next = jiff::Timestamp::from_second(last + GATE_SECS).map(clock::format).ok();
            return Ok(Scheduled {
                mode: "scheduled",
                ran: false,
                next_run: next,
                steps: Vec::new(),
                committed: false,
            });
        }
    }
    let mut steps = Vec::new();
    let scan = scan::library(lib);
    let entries: Vec<Entry> = scan.docs.into_iter().map(|d| d.entry).collect();
    let stale_n = entries.iter().filter(|e| stale::reference(e, now, Some(SCHEDULED_STALE_DAYS)).is_some()).count();
    steps.push(json!({"step": 1, "name": "staleness", "days": SCHEDULED_STALE_DAYS, "stale": stale_n}));
    let cands = raise_trust::candidates(&entries, &usage::load(lib)?);
    let promoted = raise_trust::apply(lib, &cands, false, opts)?;
    steps.push(json!({"step": 2, "name": "promote", "candidates": cands.len(), "promoted": promoted}));
    let evolve = crate::evolve::status::status(lib)?;
    steps.push(json!({
        "step": 3,
        "name": "core-rules",
        "core_due": evolve.core_scan.due,
        "extended_due": evolve.extended_scan.due,
        "pending_proposals": evolve.pending,
        "run": "just evolve scheduled",
    }));
    let last_compact = read_stamp(lib, compact::LAST_COMPACT)?;
    let due = last_compact.is_none_or(|t| now.as_second() - t >= COMPACT_EVERY_DAYS * 86_400);
    if due {
        let c = compact::compact(lib, COMPACT_OLDER_THAN_DAYS, false, opts)?;
        steps.push(json!({"step": 4, "name": "compact", "ran": true, "archived": c.archived}));
    } else {
        steps.push(json!({"step": 4, "name": "compact", "ran": false}));
    }
    let r = rebuild_index::run(
        lib,
        &rebuild_index::Options {
            incremental: false,
            commit: false,
            lock: opts.clone(),
            recover: crate::write::recover_noted,
        },
    )?;
    steps.push(json!({"step": 5, "name": "rebuild-index", "documents": r.documents, "touched": r.touched}));
    let rel = rebuild_all::rebuild_relations(lib, opts)?;
    steps.push(json!({"step": 6, "name": "rebuild-relations", "edges": rel.edges, "changed": rel.changed}));
    lock::with_lock(lib, opts, || {
        atomic::write(&lib.path(LAST_SCHEDULED), format!("{}\n", now.as_second()).as_bytes())
    })?;
    let committed = commit && commit_all(lib, &format!("library(scheduled): daily maintenance {}", clock::day(now)))?;
    steps.push(json!({"step": 7, "name": "commit", "committed": committed}));
    Ok(Scheduled { mode: "scheduled", ran: true, next_run: None, steps, committed })
}

/// Commits every change in the library except its cache and lock file
/// (seed `--full`/`--scheduled`: `git add -A && git commit`). False when
/// the library is not in git or nothing changed.
pub fn commit_all(lib: &Library, message: &str) -> Result<bool> {
    // `kb-append init` writes a .gitignore for the lock and caches; git
    // refuses an exclude pathspec that names an ignored path, so the
    // exclusions are spelled out only for libraries without it.
    if lib.path(".gitignore").is_file() {
        git::commit(lib, &[".".into()], message)
    } else {
        git::commit(lib, &[".".into(), ":(exclude).cache".into(), ":(exclude).lock".into()], message)
    }
}

/// The message of `kb-index commit full|scheduled`.
pub fn commit_message(kind: &str) -> Result<String> {
    let day = clock::day(clock::now()?);
    match kind {
        "full" => Ok(format!("library(full): full maintenance {day}")),
        "scheduled" => Ok(format!("library(scheduled): daily maintenance {day}")),
        other => Err(Error::usage(format!("unknown commit kind '{other}' (expected full or scheduled)"))),
    }
}

/// What a cron change did.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "record", rename = "cron")]
pub struct Cron {
    /// install or uninstall.
    pub action: &'static str,
    /// Whether the crontab was rewritten (false: already as wanted).
    pub changed: bool,
    /// The library's cron line (installed or removed).
    pub line: String,
}

/// A single-quoted shell word; `%` is escaped because cron turns a bare
/// `%` into a newline.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''").replace('%', "\\%"))
}

/// The marker that makes this library's cron line findable.
fn marker(lib: &Library) -> String {
    format!("# kb-tools:scheduled {}", lib.dir.display())
}

/// What the cron line runs with: cron gives a bare environment (no
/// KB_ROOT, PATH=/usr/bin:/bin, no cargo), so the line names everything.
pub struct CronCommand<'a> {
    /// The `just` binary (made absolute through PATH when bare).
    pub just: &'a str,
    /// The justfile holding `maintain`.
    pub justfile: &'a str,
    /// The directory of the kb-* binaries, put first on the line's PATH.
    pub bin_dir: &'a std::path::Path,
}

/// `name` as an absolute path: as given when it has a `/`, else the first
/// match on PATH (cron's PATH will not have it).
fn absolute_program(name: &str) -> String {
    if name.contains('/') {
        return std::path::absolute(name).map_or_else(|_| name.to_string(), |p| p.display().to_string());
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .map_or_else(|| name.to_string(), |p| p.display().to_string())
}

/// The daily 03:00 line running `just maintain scheduled` for this library,
/// output appended to `.scheduled.log`. Every path is absolute and the
/// line sets KB_ROOT and PATH itself, so it runs the same under cron's
/// bare environment as from the shell that installed it.
pub fn cron_line(lib: &Library, cmd: &CronCommand) -> String {
    let dir = std::path::absolute(&lib.dir).unwrap_or_else(|_| lib.dir.clone());
    let ws = dir.parent().unwrap_or(&dir);
    let just = absolute_program(cmd.just);
    let just_dir = std::path::Path::new(&just).parent().map(|p| p.display().to_string()).unwrap_or_default();
    let mut path = vec![cmd.bin_dir.display().to_string()];
    if !just_dir.is_empty() && !path.contains(&just_dir) {
        path.push(just_dir);
    }
    format!(
        "0 3 * * * cd {} && KB_ROOT={} PATH={}:/usr/local/bin:/usr/bin:/bin {} --justfile {} maintain scheduled >> {} 2>&1 {}",
        quote(&ws.display().to_string()),
        quote(&dir.display().to_string()),
        quote(&path.join(":")),
        quote(&just),
        quote(&std::path::absolute(cmd.justfile).map_or_else(|_| cmd.justfile.to_string(), |p| p.display().to_string())),
        quote(&dir.join(SCHEDULED_LOG).display().to_string()),
        marker(lib)
    )
}

/// A `crontab` that is not installed, said in words a person can act on.
fn missing_crontab(e: std::io::Error, doing: &str) -> Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        Error::msg(
            "the crontab command is not installed, so there is no cron to add the line to: install cron \
             (Debian, Ubuntu: apt-get install cron; Fedora: dnf install cronie), or run `just maintain scheduled` \
             from a scheduler of your own",
        )
    } else {
        Error::io(doing, e)
    }
}

fn crontab_read() -> Result<Vec<String>> {
    let out = Command::new("crontab").arg("-l").output().map_err(|e| missing_crontab(e, "running crontab -l"))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("no crontab") {
        Ok(Vec::new())
    } else {
        Err(Error::msg(format!("crontab -l failed: {}", err.trim())))
    }
}

fn crontab_write(lines: &[String]) -> Result<()> {
    let mut child = Command::new("crontab")
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| missing_crontab(e, "running crontab -"))?;
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(text.as_bytes()).map_err(|e| Error::io("writing to crontab -", e))?;
    }
    let status = child.wait().map_err(|e| Error::io("waiting for crontab -", e))?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::msg(format!("crontab - failed ({status})")))
    }
}

/// Seed `--install-cron`: idempotent; every other crontab line is kept.
pub fn cron_install(lib: &Library, cmd: &CronCommand) -> Result<Cron> {
    let line = cron_line(lib, cmd);
    let current = crontab_read()?;
    let mark = marker(lib);
    let mut wanted: Vec<String> = current.iter().filter(|l| !l.ends_with(&mark)).cloned().collect();
    wanted.push(line.clone());
    let changed = wanted != current;
    if changed {
        crontab_write(&wanted)?;
    }
    Ok(Cron { action: "install", changed, line })
}

/// Seed `--uninstall-cron`: removes only this library's line.
pub fn cron_uninstall(lib: &Library) -> Result<Cron> {
    let current = crontab_read()?;
    let mark = marker(lib);
    let removed: Vec<String> = current.iter().filter(|l| l.ends_with(&mark)).cloned().collect();
    let kept: Vec<String> = current.iter().filter(|l| !l.ends_with(&mark)).cloned().collect();
    let changed = !removed.is_empty();
    if changed {
        crontab_write(&kept)?;
    }
    Ok(Cron { action: "uninstall", changed, line: removed.join("\n") })
}
