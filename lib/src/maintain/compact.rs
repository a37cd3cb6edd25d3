//! Seed 000 `maintain` operations that run under the library lock and end
//! in a commit with the seed's message.

use serde::Serialize;

use crate::clock;
use crate::error::Result;
use crate::library::changelog::{self, Compaction};
use crate::library::git;
use crate::library::Library;
use crate::lock;

/// The file that records the last compaction (epoch seconds).
pub const LAST_COMPACT: &str = ".last-compact";

/// What `compact` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Compacted {
    /// Always `compact`.
    pub record: &'static str,
    /// Lines archived in all.
    pub archived: usize,
    /// Archive files and the lines each received.
    pub archives: std::collections::BTreeMap<String, usize>,
    /// Whether a git commit was made.
    pub committed: bool,
}

/// Seed 000 `--compact`: archive changelog lines older than `days`, leave
/// the markers, stamp `.last-compact`, commit
/// `task-ai(library):maintain archive YYYY-MM`. A second run archives
/// nothing and commits nothing.
pub fn compact(lib: &Library, days: i64, commit: bool, lock_opts: &lock::Options) -> Result<Compacted> {
    let now = clock::now()?;
    let cutoff = clock::days_before(now, days);
    lock::with_lock(lib, lock_opts, || {
        let Compaction { archives, archived } = changelog::compact(lib, cutoff, now)?;
        crate::fs::atomic::write_if_changed(&lib.path(LAST_COMPACT), format!("{}\n", now.as_second()).as_bytes())?;
        let mut committed = false;
        if commit && archived == 0 {
            // Only the stamp changed; commit it so the tree stays clean.
            committed = git::commit(lib, &[LAST_COMPACT.to_string()], "task-ai(library):maintain compact")?;
        } else if commit {
            let months: Vec<&str> =
                archives.keys().map(|k| k.trim_start_matches(".changelog-archive/").trim_end_matches(".md")).collect();
            let label = match months.as_slice() {
                [one] => (*one).to_string(),
                [first, .., last] => format!("{first}..{last}"),
                [] => String::new(),
            };
            let mut paths: Vec<String> = archives.keys().cloned().collect();
            paths.push(changelog::FILE.to_string());
            paths.push(LAST_COMPACT.to_string());
            committed = git::commit(lib, &paths, &format!("task-ai(library):maintain archive {label}"))?;
        }
        Ok(Compacted { record: "compact", archived, archives, committed })
    })
}
