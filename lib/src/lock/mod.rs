//! The library lock (DESIGN.md "Writing safely"): one OS file lock on
//! `.library/.lock`, released by the kernel when its holder dies, with the
//! holder written into the file for `kb-lock status`. Replaces seed 000's
//! `mkdir .lock` protocol, whose leftovers `sweep` removes.

pub mod child;

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::clock;
use crate::error::{Context, Error, Result};
use crate::fs::walk::Kind;

pub mod backoff;

pub mod queue;

/// The variable a lock holder exports so writers it runs do not lock twice.
pub const HELD_VAR: &str = "KB_LOCK_HELD";

/// Who holds the lock, as written into `.library/.lock`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Holder {
    /// Process id of the holder.
    pub pid: u32,
    /// Host name of the holder's machine.
    pub host: String,
    /// When the lock was taken (RFC 3339).
    pub since: String,
    /// The command that holds it.
    pub cmd: String,
}

/// The state `kb-lock status` reports.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Nobody holds the lock.
    Free,
    /// A live process holds the OS lock (holder unknown if it wrote nothing).
    Held(Option<Holder>),
    /// A seed-style `mkdir` lock directory is present.
    Legacy {
        /// The pid recorded in the directory.
        pid: Option<u32>,
        /// Whether that process is still running.
        alive: bool,
    },
}

impl State {
    /// The `lock` record `kb-lock status --format jsonl` prints.
    pub fn record(&self) -> serde_json::Value {
        match self {
            State::Free => serde_json::json!({"record": "lock", "state": "free"}),
            State::Held(h) => serde_json::json!({"record": "lock", "state": "held", "holder": h}),
            State::Legacy { pid, alive } => {
                serde_json::json!({"record": "lock", "state": "legacy", "pid": pid, "alive": alive})
            }
        }
    }

    /// The line `kb-lock status` prints on a terminal.
    pub fn describe(&self) -> String {
        match self {
            State::Free => "free\n".into(),
            State::Held(Some(h)) => format!("held by pid {} on {} since {}: {}\n", h.pid, h.host, h.since, h.cmd),
            State::Held(None) => "held (holder unknown)\n".into(),
            State::Legacy { pid, alive } => format!(
                "legacy mkdir lock, pid {} ({})\n",
                pid.map_or("unknown".into(), |p| p.to_string()),
                if *alive { "alive" } else { "dead: run kb-lock sweep" }
            ),
        }
    }
}

/// How long to wait and what to record as the holder's command.
#[derive(Debug, Clone)]
pub struct Options {
    /// Give up after this long (exit 2 with the holder named).
    pub timeout: Duration,
    /// The command line recorded as the holder.
    pub cmd: String,
}

impl Default for Options {
    fn default() -> Options {
        Options { timeout: Duration::from_secs(30), cmd: current_cmd() }
    }
}

/// The lock file's path. Every function here takes the directory to lock
/// as a path (a `&Library` is one), because the lock is a layer below the
/// library: it knows where the directory is, not what is in it. So it also
/// locks a directory that is not a library: kb-lastword locks its
/// `~/.config/agents/last-word/` with it.
pub fn path(lib: impl AsRef<Path>) -> PathBuf {
    lib.as_ref().join(".lock")
}

/// Whether this process runs under a `kb-lock` (or writer) holding this
/// library's lock already.
pub fn held_by_parent(lib: impl AsRef<Path>) -> bool {
    let dir = lib.as_ref();
    match std::env::var_os(HELD_VAR) {
        Some(v) => {
            let held = PathBuf::from(v);
            let ours = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
            held.canonicalize().unwrap_or(held) == ours
        }
        None => false,
    }
}

/// Runs `body` holding the library lock (or directly when a parent holds it
/// for this library). The lock is released when `body` returns or the
/// process dies.
pub fn with_lock<T>(lib: impl AsRef<Path>, opts: &Options, body: impl FnOnce() -> Result<T>) -> Result<T> {
    let lib = lib.as_ref();
    if held_by_parent(lib) {
        return body();
    }
    let file = open_lock_file(lib, opts)?;
    let mut lock = fd_lock::RwLock::new(file);
    let mut started = Instant::now();
    let mut attempt = 0u32;
    let mut ticket: Option<queue::Ticket> = None;
    let mut last_head = None;
    loop {
        let head = queue::head(lib)?;
        let turn = match &ticket {
            None => head.is_none(),
            // An empty queue although we hold a ticket: ours was removed
            // (a sweep); try the lock rather than wait for nothing.
            Some(t) => head.is_none() || head.as_deref() == Some(t.name()),
        };
        // The timeout bounds a wait without progress: while the queue
        // moves (the head changes as each waiter gets the lock), a waiter
        // keeps its place; a holder that keeps the lock too long, or a
        // stuck queue, still times out.
        if ticket.is_some() && head != last_head {
            started = Instant::now();
            attempt = 0;
            last_head = head;
        }
        let tried = if turn { Some(lock.try_write()) } else { None };
        match tried {
            Some(Ok(mut guard)) => {
                drop(ticket.take());
                let holder = Holder {
                    pid: std::process::id(),
                    host: hostname(),
                    since: clock::format(clock::now()?),
                    cmd: opts.cmd.clone(),
                };
                let f: &mut File = &mut guard;
                let _ = write_holder(f, &holder);
                let result = body();
                let _ = f.set_len(0);
                drop(guard);
                return result;
            }
            Some(Err(e)) if e.kind() != std::io::ErrorKind::WouldBlock => {
                return Err(Error::io(format!("locking {}", path(lib).display()), e))
            }
            _ => {}
        }
        // No ticket yet, or ours was removed as unverifiable (it cannot
        // be, while we hold it; but a waiter never waits on a lost place).
        if !ticket.as_ref().is_some_and(queue::Ticket::queued) {
            ticket = Some(queue::take(lib)?);
            continue;
        }
        // The head of the queue polls the lock closely; the others only
        // wait for their turn.
        wait_or_timeout(lib, opts, started, &mut attempt, if turn { 10 } else { 50 })?;
    }
}

fn open_lock_file(lib: &Path, opts: &Options) -> Result<File> {
    let p = path(lib);
    let started = Instant::now();
    let mut attempt = 0u32;
    loop {
        if is_real_dir(&p) {
            if reclaim_legacy(&p)?.is_some() {
                continue;
            }
            wait_or_timeout(lib, opts, started, &mut attempt, 250)?;
            continue;
        }
        // Never through a symlink (a planted `.lock` link would be
        // truncated) and never blocking on a FIFO.
        return crate::fs::nofollow::open_rw(&p, false).ctx(|| format!("opening the lock file {}", p.display()));
    }
}

fn wait_or_timeout(lib: &Path, opts: &Options, started: Instant, attempt: &mut u32, cap_ms: u64) -> Result<()> {
    let elapsed = started.elapsed();
    if elapsed >= opts.timeout {
        let who = match status(lib) {
            // The holder wrote its host and command line: shown escaped.
            Ok(State::Held(Some(h))) => crate::out::printable(
                &format!(" held by pid {} on {} since {} ({})", h.pid, h.host, h.since, h.cmd),
                false,
            )
            .into_owned(),
            Ok(State::Legacy { pid, .. }) => {
                format!(" held by a mkdir lock directory (pid {})", pid.map_or("unknown".into(), |p| p.to_string()))
            }
            _ => String::new(),
        };
        return Err(Error::Busy(format!(
            "timed out after {} waiting for the library lock {}{who}",
            human(opts.timeout),
            path(lib).display()
        )));
    }
    std::thread::sleep(backoff::delay(*attempt, 1, cap_ms).min(opts.timeout - elapsed));
    *attempt += 1;
    Ok(())
}

fn write_holder(f: &mut File, holder: &Holder) -> std::io::Result<()> {
    // Serialising a struct of strings and numbers cannot fail; the holder
    // line is for `kb-lock status`, not for the lock itself.
    let mut line = serde_json::to_string(holder).unwrap_or_default();
    line.push('\n');
    crate::fs::atomic::rewrite(f, line.as_bytes())
}

/// Reports whether the lock is free, held (and by whom), or a legacy
/// `mkdir` directory.
pub fn status(lib: impl AsRef<Path>) -> Result<State> {
    let p = path(lib);
    if is_real_dir(&p) {
        let pid = legacy_pid(&p);
        return Ok(State::Legacy { pid, alive: pid.is_some_and(|pid| legacy_alive(&p, pid)) });
    }
    if std::fs::symlink_metadata(&p).is_err() {
        return Ok(State::Free);
    }
    let file = match crate::fs::nofollow::open_rw(&p, false) {
        Ok(f) => f,
        Err(e) => return Err(Error::io(format!("opening {}", p.display()), e)),
    };
    let mut lock = fd_lock::RwLock::new(file);
    let state = match lock.try_write() {
        Ok(_) => State::Free,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
            // The holder line is information only (the kernel holds the
            // lock): unreadable or half-written, it is reported as unknown.
            let mut text = String::new();
            let _ = File::open(&p).and_then(|mut f| f.read_to_string(&mut text));
            State::Held(serde_json::from_str(text.trim()).ok())
        }
        Err(e) => return Err(Error::io(format!("probing {}", p.display()), e)),
    };
    Ok(state)
}

/// A legacy lock directory or dead writer's temp file that `sweep`
/// removed (the `swept` record).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "record", rename = "swept")]
pub struct Swept {
    /// Library-relative path of the removed directory.
    pub path: String,
    /// The dead pid it named, if any.
    pub pid: Option<u32>,
}

/// What [`sweep`] removes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Sweep {
    /// Seed-style `mkdir` lock directories whose pid is dead: the
    /// library's `.lock` and any `.lock` directory below it (the seed
    /// locked per directory). Live ones are left alone. They go first: a
    /// legacy `.lock` directory stands where the lock file must be. And
    /// every queue ticket that cannot be verified (`queue`: a dead
    /// waiter's, or one planted).
    Locks,
    /// Temp files that a killed writer left behind (`.<name>.tmp.<pid>.…`,
    /// see `atomic`). They go after a killed batch's journal is recovered,
    /// which may still rename one into place (a promote's staged SKILL.md).
    Temps,
}

/// Removes what `what` names (see [`Sweep`]); returns what it removed.
pub fn sweep(lib: impl AsRef<Path>, what: Sweep) -> Result<Vec<Swept>> {
    let dir = lib.as_ref();
    let mut out = Vec::new();
    for it in crate::fs::walk::entries(dir, |d| d.name != ".git") {
        if what == Sweep::Locks && it.kind == Kind::Dir && it.name() == ".lock" && looks_legacy(&it.path) {
            if let Some(pid) = reclaim_legacy(&it.path)? {
                out.push(Swept { path: it.rel, pid });
            }
        } else if what == Sweep::Temps && it.kind == Kind::File {
            if let Some(pid) = crate::fs::atomic::temp_owner(it.name()).filter(|p| !pid_alive(*p)) {
                fs::remove_file(&it.path).map_err(|e| Error::io(format!("removing {}", it.path.display()), e))?;
                out.push(Swept { path: it.rel, pid: Some(pid) });
            }
        }
    }
    if what == Sweep::Locks {
        for (name, pid) in queue::sweep(dir)? {
            out.push(Swept { path: format!("{}/{name}", queue::DIR), pid });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Removes a legacy lock directory when its pid is dead (or it names none
/// and is older than a minute). Returns `Some(pid)` when it removed it.
fn reclaim_legacy(dir: &Path) -> Result<Option<Option<u32>>> {
    if !looks_legacy(dir) {
        return Ok(None);
    }
    let pid = legacy_pid(dir);
    let dead = match pid {
        Some(p) => !legacy_alive(dir, p),
        None => fs::metadata(dir)
            .and_then(|m| m.modified())
            // A clock behind the mtime is "just made"; an unreadable
            // directory is not reclaimed (kept is the safe side).
            .map(|t| t.elapsed().unwrap_or_default() > Duration::from_secs(60))
            .unwrap_or(false),
    };
    if !dead {
        return Ok(None);
    }
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(Some(pid)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Some(pid)),
        Err(e) => Err(Error::io(format!("removing stale lock {}", dir.display()), e)),
    }
}

/// The files a seed-style `mkdir` lock directory may hold.
const LEGACY_FILES: [&str; 3] = ["pid", "owner", "info"];

/// Whether a `.lock` directory is a seed-style lock: a real directory (not
/// a link) holding nothing but its small holder files. A directory of
/// documents that happens to be named `.lock` is never swept.
fn looks_legacy(dir: &Path) -> bool {
    is_real_dir(dir)
        && fs::read_dir(dir).is_ok_and(|rd| {
            rd.flatten().all(|e| {
                e.file_type().is_ok_and(|t| t.is_file())
                    && LEGACY_FILES.contains(&e.file_name().to_string_lossy().as_ref())
            })
        })
}

fn is_real_dir(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
}

/// Whether the process a legacy lock names still holds it: alive, and
/// started before the lock directory was made (a later start means the pid
/// was reused by an unrelated process).
fn legacy_alive(dir: &Path, pid: u32) -> bool {
    if !pid_alive(pid) {
        return false;
    }
    // Either time unknown: the pid is alive, so the lock is kept (a
    // wrongly kept lock waits; a wrongly reclaimed one breaks exclusion).
    let made = fs::symlink_metadata(dir).and_then(|m| m.modified()).ok();
    match (made, process_start(pid)) {
        // A second of slack for clock granularity.
        (Some(made), Some(started)) => started <= made + Duration::from_secs(1),
        _ => true,
    }
}

/// When a process started, from `/proc/<pid>/stat` (field 22, clock ticks
/// after boot) and the boot time in `/proc/stat`. `None` off Linux, or
/// when the process is gone or the fields do not parse: "unknown", which
/// every caller treats as the side that keeps a lock.
pub fn process_start(pid: u32) -> Option<std::time::SystemTime> {
    let ticks = start_ticks(pid)?;
    let boot: u64 = fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ").and_then(|v| v.trim().parse().ok()))?;
    let hz = rustix::param::clock_ticks_per_second();
    Some(std::time::UNIX_EPOCH + Duration::from_secs(boot) + Duration::from_millis(ticks * 1000 / hz.max(1)))
}

/// When a process started, as field 22 of `/proc/<pid>/stat`: clock
/// ticks after boot, exact and the same every time it is read, so it
/// tells a process from a later one given the same pid (a queue ticket
/// records it, `queue`). `None` off Linux or when the process is gone.
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The pid a `mkdir` lock recorded: the first number in its `pid`, `owner`
/// or `info` file.
fn legacy_pid(dir: &Path) -> Option<u32> {
    let files: Vec<PathBuf> = LEGACY_FILES.iter().map(|n| dir.join(n)).collect();
    // A file that is missing or unreadable gives no pid; the next is tried,
    // and with none the directory's age decides (reclaim_legacy).
    files.iter().find_map(|f| {
        let text = fs::read_to_string(f).ok()?;
        let digits: String =
            text.chars().skip_while(|c| !c.is_ascii_digit()).take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

/// Whether a process with this pid exists on this machine.
pub fn pid_alive(pid: u32) -> bool {
    if Path::new("/proc/self").exists() {
        return Path::new(&format!("/proc/{pid}")).exists();
    }
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// This machine's host name.
pub fn hostname() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        // Informational (the holder line): any source, else "unknown".
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

fn current_cmd() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

fn human(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}
