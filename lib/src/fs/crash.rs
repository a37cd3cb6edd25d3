//! Fault injection for the crash tests (after SQLite's crash
//! tests): `KB_CRASH_AT=<step>:<n>` makes the process abort (as a kill -9
//! would end it: no destructors, no flush) the n-th time it reaches the
//! named step of the write, compaction, sync, kb-lastword apply,
//! kb-memgate apply or kb-guard rules integrate pipeline. Every step is named
//! here, once, so the tests iterate all of them. Without the variable a step
//! costs one load of a cached `None`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// The environment variable that arms a crash.
pub const VAR: &str = "KB_CRASH_AT";

/// A named point in a pipeline where a crash can be injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A batch wrote (and synced) one temp file; nothing is in place yet.
    WriteTemp,
    /// The batch's journal (intent record) is durable; no rename yet.
    Journal,
    /// One file of a batch was renamed into place.
    Rename,
    /// Every file is in place and its directory synced; no changelog yet.
    Renamed,
    /// The batch's changelog lines were appended.
    Changelog,
    /// The `.index.md`/`.master-index.md` rows were updated.
    Index,
    /// `.relations.jsonl` was updated.
    Relations,
    /// `git add` staged the batch; `git commit` has not run.
    GitAdd,
    /// The commit was made; the journal is still there.
    Committed,
    /// A batch's files, renamed in unsynced, were made durable; the
    /// journal holding their bytes is still there.
    Checkpoint,
    /// Compaction appended one archive file.
    CompactArchive,
    /// Compaction rewrote `.changelog`; `.last-compact` and the commit are to come.
    CompactLog,
    /// Sync committed local changes and fetched; no merge yet.
    SyncFetched,
    /// Sync started a merge (`MERGE_HEAD` exists) and has not committed it.
    SyncMerging,
    /// Sync committed the merge of one fetched tip; no push yet.
    SyncMerged,
    /// Sync sealed its merges as one commit; no push yet.
    SyncSealed,
    /// Sync pushed its own ref and offered the shared branch; the record
    /// of the tips it merged is not written yet.
    SyncPushed,
    /// Sync renewed the machine identity of a copied clone;
    /// nothing pushed under the new one yet.
    SyncRenewed,
    /// kb-lastword apply wrote (and synced) one temp file; nothing is in place.
    LastwordTemp,
    /// kb-lastword apply's journal (`last-word/.journal`) is durable.
    LastwordJournal,
    /// kb-lastword apply put one file in place (target, staging or pending file).
    LastwordRename,
    /// Every file of the apply is in place; the journal is still there.
    LastwordRenamed,
    /// kb-memgate apply wrote (and synced) one temp file (the note or an
    /// archive copy); nothing is in place.
    MemgateTemp,
    /// kb-memgate apply's journal (`<memory>/.journal`) is durable.
    MemgateJournal,
    /// The survivor note is in place in `notes/`.
    MemgateNote,
    /// One removed note's copy is in `archive/`; the note is still in `notes/`.
    MemgateArchive,
    /// One removed note left `notes/`.
    MemgateRemove,
    /// INDEX.md was updated.
    MemgateIndex,
    /// The search index (its side segment, or whole) was updated.
    MemgateSearch,
    /// The audit lines were appended; the journal is still there.
    MemgateAudit,
    /// An evolve run (`kb-guard rules validate`, `review`, `integrate`)
    /// wrote (and synced) one temp file (a rule file or a proposal);
    /// nothing is in place.
    EvolveTemp,
    /// The run's journal (`.core-rule-proposals/.journal`) is durable.
    EvolveJournal,
    /// The run put one file in place (the rule files first, then the proposals).
    EvolveRename,
    /// Every file of the run is in place; no audit line yet.
    EvolveRenamed,
    /// The audit lines were appended; the commit and the journal's removal are to come.
    EvolveAudit,
}

/// Every step, in pipeline order, for tests that crash at each.
pub const STEPS: &[Step] = &[
    Step::WriteTemp,
    Step::Journal,
    Step::Rename,
    Step::Renamed,
    Step::Changelog,
    Step::Index,
    Step::Relations,
    Step::GitAdd,
    Step::Committed,
    Step::Checkpoint,
    Step::CompactArchive,
    Step::CompactLog,
    Step::SyncFetched,
    Step::SyncMerging,
    Step::SyncMerged,
    Step::SyncSealed,
    Step::SyncPushed,
    Step::SyncRenewed,
    Step::LastwordTemp,
    Step::LastwordJournal,
    Step::LastwordRename,
    Step::LastwordRenamed,
    Step::MemgateTemp,
    Step::MemgateJournal,
    Step::MemgateNote,
    Step::MemgateArchive,
    Step::MemgateRemove,
    Step::MemgateIndex,
    Step::MemgateSearch,
    Step::MemgateAudit,
    Step::EvolveTemp,
    Step::EvolveJournal,
    Step::EvolveRename,
    Step::EvolveRenamed,
    Step::EvolveAudit,
];

impl Step {
    /// The step's name in `KB_CRASH_AT`.
    pub fn name(self) -> &'static str {
        match self {
            Step::WriteTemp => "write-temp",
            Step::Journal => "journal",
            Step::Rename => "rename",
            Step::Renamed => "renamed",
            Step::Changelog => "changelog",
            Step::Index => "index",
            Step::Relations => "relations",
            Step::GitAdd => "git-add",
            Step::Committed => "committed",
            Step::Checkpoint => "checkpoint",
            Step::CompactArchive => "compact-archive",
            Step::CompactLog => "compact-log",
            Step::SyncFetched => "sync-fetched",
            Step::SyncMerging => "sync-merging",
            Step::SyncMerged => "sync-merged",
            Step::SyncSealed => "sync-sealed",
            Step::SyncPushed => "sync-pushed",
            Step::SyncRenewed => "sync-renewed",
            Step::LastwordTemp => "lastword-temp",
            Step::LastwordJournal => "lastword-journal",
            Step::LastwordRename => "lastword-rename",
            Step::LastwordRenamed => "lastword-renamed",
            Step::MemgateTemp => "memgate-temp",
            Step::MemgateJournal => "memgate-journal",
            Step::MemgateNote => "memgate-note",
            Step::MemgateArchive => "memgate-archive",
            Step::MemgateRemove => "memgate-remove",
            Step::MemgateIndex => "memgate-index",
            Step::MemgateSearch => "memgate-search",
            Step::MemgateAudit => "memgate-audit",
            Step::EvolveTemp => "evolve-temp",
            Step::EvolveJournal => "evolve-journal",
            Step::EvolveRename => "evolve-rename",
            Step::EvolveRenamed => "evolve-renamed",
            Step::EvolveAudit => "evolve-audit",
        }
    }

    /// The pipeline a step belongs to: `write`, `batch` (the steps only a
    /// batch of documents reaches, not a skill's change), `compact`, `sync`, `fleet`
    /// (steps a two-clone sync never reaches: an identity renewal),
    /// `lastword`, `memgate` or `evolve`.
    pub fn pipeline(self) -> &'static str {
        match self {
            Step::Checkpoint => "batch",
            Step::CompactArchive | Step::CompactLog => "compact",
            Step::SyncFetched | Step::SyncMerging | Step::SyncMerged | Step::SyncSealed | Step::SyncPushed => "sync",
            Step::SyncRenewed => "fleet",
            Step::LastwordTemp | Step::LastwordJournal | Step::LastwordRename | Step::LastwordRenamed => "lastword",
            Step::MemgateTemp
            | Step::MemgateJournal
            | Step::MemgateNote
            | Step::MemgateArchive
            | Step::MemgateRemove
            | Step::MemgateIndex
            | Step::MemgateSearch
            | Step::MemgateAudit => "memgate",
            Step::EvolveTemp | Step::EvolveJournal | Step::EvolveRename | Step::EvolveRenamed | Step::EvolveAudit => {
                "evolve"
            }
            _ => "write",
        }
    }
}

/// The armed step and count, parsed once. A malformed value is ignored
/// on purpose: the switch is for tests, and a typo must not abort users.
fn armed() -> Option<(Step, u32)> {
    static ARMED: OnceLock<Option<(Step, u32)>> = OnceLock::new();
    *ARMED.get_or_init(|| {
        let v = std::env::var(VAR).ok()?;
        let (name, n) = v.rsplit_once(':').unwrap_or((v.as_str(), "1"));
        let step = STEPS.iter().copied().find(|s| s.name() == name)?;
        Some((step, n.parse().ok().filter(|n| *n > 0)?))
    })
}

/// Aborts the process when `step` is armed and reached for the n-th time.
pub fn at(step: Step) {
    static HITS: AtomicU32 = AtomicU32::new(0);
    if let Some((armed, n)) = armed() {
        if armed == step && HITS.fetch_add(1, Ordering::SeqCst) + 1 == n {
            eprintln!("kb: {VAR}={}:{n}: aborting", step.name());
            std::process::abort();
        }
    }
}
