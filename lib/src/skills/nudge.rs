//! Seed 002's review trigger: tool calls since the last review are counted
//! (per notebook); when the count reaches the interval (default 10) the
//! counter resets and a `review_due` record tells the agent's hook to start
//! a background skill review, with the seed's review prompt. The counter is
//! machine-local state under `.cache/` (never committed or synced), updated
//! under its own file lock so concurrent callers never lose a count and a
//! long maintenance run holding the library lock does not stall an agent.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};

use serde::Serialize;

use crate::clock;
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::library::Library;

/// The counters, one per notebook.
pub const FILE: &str = ".cache/skill-nudge.json";
/// The lock file the counters are updated under.
pub const LOCK: &str = ".cache/skill-nudge.lock";
/// Seed: `nudgeInterval ?? 10`.
pub const DEFAULT_INTERVAL: u64 = 10;
/// The counter of calls made without `--notebook`.
pub const DEFAULT_NOTEBOOK: &str = "default";

/// The seed's review prompt (`buildSkillReviewPrompt`), for the reviewer.
pub const PROMPT: &str = "Review the conversation above and decide whether a skill should be saved or updated.\n\
Look for: 1. a non-obvious method that got the task done; 2. trial and error, or a plan changed by what was found; \
3. a result or method the user expected or wanted to be different.\n\
First run `kb-append skill list` to see the existing skills and avoid duplicates. Prefer \
`kb-append skill patch` (a local replacement) to improving an existing skill over a full `edit`; create a new \
skill (`kb-append skill create`) only for a new reusable method. Keep skills about reusable method, not business \
data. If nothing is worth saving, say \"nothing to save\" and stop.";

/// The two record types a nudge call reports, named by serde.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NudgeRecord {
    /// Counted.
    Nudge,
    /// The interval was reached: the counter is reset.
    ReviewDue,
}

/// What one call reports: `nudge` (counted) or `review_due` (reset).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Nudge {
    /// `nudge`, or `review_due` when the interval is reached.
    pub record: NudgeRecord,
    /// Whose counter.
    pub notebook: String,
    /// Calls counted since the last review, this call's included.
    pub calls: u64,
    /// The interval in force.
    pub interval: u64,
    /// The counter after the call (0 after a review_due).
    pub counter: u64,
    /// When.
    pub ts: String,
    /// review_due: the reviewer's prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<&'static str>,
}

/// Adds `calls` tool calls to `notebook`'s counter; at `interval` or more
/// the counter resets and the record is `review_due`.
pub fn nudge(lib: &Library, notebook: Option<&str>, calls: u64, interval: u64) -> Result<Nudge> {
    if interval == 0 {
        return Err(Error::usage("--interval must be at least 1"));
    }
    let nb = notebook.filter(|n| !n.trim().is_empty()).unwrap_or(DEFAULT_NOTEBOOK).to_string();
    let lock_path = lib.path(LOCK);
    if let Some(dir) = lock_path.parent() {
        fs::create_dir_all(dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    }
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::io(format!("opening {}", lock_path.display()), e))?;
    let mut lock = fd_lock::RwLock::new(file);
    let _held = lock.write().map_err(|e| Error::io(format!("locking {}", lock_path.display()), e))?;
    let path = lib.path(FILE);
    // On purpose: the counters are a cache of review reminders; a missing
    // or damaged file only restarts the counting (no document is affected).
    let mut counters: BTreeMap<String, u64> =
        fs::read_to_string(&path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    let total = counters.get(&nb).copied().unwrap_or(0).saturating_add(calls);
    let due = total >= interval;
    let counter = if due { 0 } else { total };
    counters.insert(nb.clone(), counter);
    let text = serde_json::to_string_pretty(&counters).map_err(|e| Error::msg(format!("encoding counters: {e}")))?;
    atomic::write(&path, format!("{text}\n").as_bytes())?;
    Ok(Nudge {
        record: if due { NudgeRecord::ReviewDue } else { NudgeRecord::Nudge },
        notebook: nb,
        calls: total,
        interval,
        counter,
        ts: clock::format(clock::now()?),
        prompt: due.then_some(PROMPT),
    })
}
