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

/// Where compaction archives old changelog lines.
const ARCHIVE_DIR: &str = ".changelog-archive";

/// What `compact` reports.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "record", rename = "compact")]
pub struct Compacted {
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
        if commit {
            crate::library::git_state::note(&crate::library::git_state::clear(lib, crate::library::git_state::WAIT)?);
        }
        crate::write::journal::note(crate::write::recover(lib)?);
        let Compaction { archives, archived } = changelog::compact(lib, cutoff, now)?;
        crate::fs::atomic::write_if_changed(&lib.path(LAST_COMPACT), format!("{}\n", now.as_second()).as_bytes())?;
        let mut committed = false;
        if commit && archived == 0 && uncommitted(lib, &[ARCHIVE_DIR, changelog::FILE]) {
            // A compaction killed before its commit left archives and a
            // rewritten log behind; this run moves nothing, so it commits
            // what that one did.
            let paths = [ARCHIVE_DIR.to_string(), changelog::FILE.to_string(), LAST_COMPACT.to_string()];
            committed = git::commit(lib, &paths, "task-ai(library):maintain archive (completing an interrupted run)")?;
        } else if commit && archived == 0 {
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
        Ok(Compacted { archived, archives, committed })
    })
}

/// Whether git sees changes (or untracked files) under these paths; false
/// outside a repository.
fn uncommitted(lib: &Library, paths: &[&str]) -> bool {
    git::is_repo(lib)
        && git::git(&lib.dir)
            .args(["status", "--porcelain", "--untracked-files=all", "--"])
            .args(paths)
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
}
