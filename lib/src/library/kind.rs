//! The one table of what a library-relative path is (DESIGN.md "Paths",
//! "Trust" and "Many machines"). Writers accept only content (documents
//! and skill files); sync admits from a peer only the kinds a peer may
//! change ([`Kind::peer`]), merges logs as a union of lines, rebuilds
//! derived files, and refuses local state, git's names and anything this
//! table does not know. Before this table, `library` and
//! `sync::attributes` kept two lists that disagreed (`.gitignore`); before
//! the allowlist, sync asked "is this name refused?" (a denylist) where it now
//! asks "is this a kind a peer may change?" (an allowlist).

/// What a library-relative path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Markdown and text the users and agents write, and their images, in
    /// a place documents live ([`holds_documents`]) with a name on
    /// [`DOC_EXTENSIONS`]: git's text merge, conflicts kept. Shared.
    Document,
    /// Any file of a skill folder (`.skills/<stage>/<skill>/…`): SKILL.md,
    /// its scripts, templates and images. Shared; scanned as a skill.
    Skill,
    /// An append-only log: merged as the ordered union of lines. Shared,
    /// append-only across machines.
    Log,
    /// Generated from documents and logs: never merged, rebuilt. A peer's
    /// bytes for it are dropped.
    Derived,
    /// The team's extended guard rules (`.evolving-rules/`): shared, but a
    /// peer's change is in force only after the local gates
    /// (`evolve::peer`).
    Rule,
    /// Proposals to change the core rules (`.core-rule-proposals/*.md`):
    /// shared, but a status a peer sets waits for local review.
    Proposal,
    /// Kept sides of overlapping edits (`.conflicts/`): shared, because
    /// whoever resolves a conflict may be on another machine and needs
    /// both sides; scanned like documents, never indexed or served.
    Conflict,
    /// Each machine's own state: the lock, the lock queue, write-ahead
    /// journals, caches, changelog cursors, writers' temps, the
    /// quarantine. Never in git, never taken from a peer, written only by
    /// the command that owns it.
    Local,
    /// Names git or the file systems give a meaning to (`.git` in any
    /// disguise, `.gitmodules`, control characters…): never written.
    Refused,
    /// Not in this table (a script in a user folder, an unknown dot
    /// folder): neither written nor admitted, so the class of unknown
    /// things stays closed as the table grows.
    Unknown,
}

impl Kind {
    /// Whether a write request may name it: the content kinds.
    pub fn is_content(self) -> bool {
        matches!(self, Kind::Document | Kind::Skill)
    }

    /// Whether a peer's commit may add, change or delete it (each kind
    /// then through its own gate in sync).
    pub fn peer(self) -> bool {
        matches!(
            self,
            Kind::Document | Kind::Skill | Kind::Log | Kind::Derived | Kind::Rule | Kind::Proposal | Kind::Conflict
        )
    }

    /// The kind's name in records (`rejected` reasons, `kb-index`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Document => "document",
            Kind::Skill => "skill file",
            Kind::Log => "log",
            Kind::Derived => "derived file",
            Kind::Rule => "guard rule",
            Kind::Proposal => "core-rule proposal",
            Kind::Conflict => "kept conflict side",
            Kind::Local => "local state",
            Kind::Refused => "refused name",
            Kind::Unknown => "unknown kind",
        }
    }
}

/// Append-only logs by file name (any directory). Also `.changelog-archive/*.md`.
pub const LOGS: &[&str] = &[".changelog", ".audit.log", ".inconsistency.log", ".scheduled.log"];

/// Generated files by file name (any directory): indexes, relations,
/// maintenance stamps, and the git files `init` writes.
pub const DERIVED: &[&str] = &[
    ".index.md",
    ".master-index.md",
    ".relations.jsonl",
    ".ioc.md",
    ".last-maintained",
    ".last-scheduled",
    ".last-compact",
    ".last-scan-core",
    ".last-scan-extended",
    ".gitattributes",
    ".gitignore",
];

/// Local files by name at the library root: the lock, a batch's
/// write-ahead journal (`library::journal`), and `.changelog-cursors`
/// (each notebook's place in the changelog: this machine's reading, so a
/// notebook on another machine cold-starts, as seed 000's degradation
/// path allows).
pub const LOCAL_FILES: &[&str] = &[".lock", ".journal", ".changelog-cursors"];

/// The directory holding compacted changelog months (`YYYY-MM.md`, logs).
pub const ARCHIVE_DIR: &str = ".changelog-archive";

/// The tools' rebuildable caches (kb-score's index, kb-index's state):
/// nothing an author wrote, so readers that judge content skip it.
pub const CACHE_DIR: &str = ".cache";

/// Where sync keeps a peer's content it did not let into the live
/// library (dangerous, or waiting for review): local (`sync::hold`).
pub const QUARANTINE_DIR: &str = ".quarantine";

/// Local directories at the library root: caches, the lock's waiting
/// tickets (`lock::queue`), the quarantine.
pub const LOCAL_DIRS: &[&str] = &[CACHE_DIR, ".lock.queue", QUARANTINE_DIR];

/// Shared rule files: `.evolving-rules` changes only through `kb-guard
/// rules integrate` or, from a peer, the local gates, so a plain write can
/// never replace or break a rule in force.
pub const RULES_DIR: &str = ".evolving-rules";

/// Written by `kb-guard rules propose` only, so a request can never plant
/// a proposal for a person to approve.
pub const PROPOSALS_DIR: &str = ".core-rule-proposals";

/// Kept sides of overlapping edits (`sync::conflicts`).
pub const CONFLICTS_DIR: &str = ".conflicts";

/// Where skills live, and their stages.
pub const SKILLS_DIR: &str = ".skills";
pub const SKILL_STAGES: &[&str] = &[".candidates", ".drafts", ".active"];

/// Extensions of a document (lower case): Markdown and plain text, data
/// a note may carry, and images a page shows. Not scripts or programs: a
/// `notes/run.sh` is [`Kind::Unknown`] (a skill's scripts are
/// [`Kind::Skill`], which the guard scans as a skill).
pub const DOC_EXTENSIONS: &[&str] = &[
    "md", "markdown", "txt", "rst", "adoc", "org", "csv", "tsv", "json", "jsonl", "yaml", "yml", "toml", "log", "png",
    "jpg", "jpeg", "gif", "webp", "svg", "pdf",
];

/// The git files kb-tools itself writes at the library root (derived);
/// anywhere else these names are refused (see [`super::names`]).
pub const OWN_GIT_FILES: &[&str] = &[".gitattributes", ".gitignore"];

/// Directories whose contents are refused at any depth.
pub const REFUSED_DIRS: &[&str] = &[".git"];

/// The kind of a normalised library-relative path (`/`-separated, no `.`
/// or `..` parts; see [`super::normalise`]).
pub fn kind(rel: &str) -> Kind {
    let mut parts: Vec<&str> = rel.split('/').collect();
    let name = parts.pop().unwrap_or(rel);
    let top = parts.first().copied();
    // Names git or kb-tools give a meaning to, and names that hide what
    // they are, except the root files kb-tools writes.
    let own = parts.is_empty() && (OWN_GIT_FILES.contains(&name) || LOCAL_FILES.contains(&name));
    if !own && super::names::refusal(rel).is_some() {
        return Kind::Refused;
    }
    if parts.iter().any(|p| REFUSED_DIRS.contains(p)) || REFUSED_DIRS.contains(&name) {
        return Kind::Refused;
    }
    if is_temp(name)
        || (parts.is_empty() && LOCAL_FILES.contains(&name))
        || top.is_some_and(|t| LOCAL_DIRS.contains(&t))
    {
        return Kind::Local;
    }
    if LOGS.contains(&name) || (top == Some(ARCHIVE_DIR) && parts.len() == 1 && name.ends_with(".md")) {
        return Kind::Log;
    }
    if DERIVED.contains(&name) {
        return Kind::Derived;
    }
    match top {
        Some(RULES_DIR) => return Kind::Rule,
        Some(PROPOSALS_DIR) if parts.len() == 1 && name.ends_with(".md") => return Kind::Proposal,
        Some(CONFLICTS_DIR) => return Kind::Conflict,
        Some(SKILLS_DIR) if parts.len() >= 3 && SKILL_STAGES.contains(&parts[1]) => return Kind::Skill,
        _ => {}
    }
    let in_place = parts.iter().enumerate().all(|(i, p)| holds_documents(i + 1, p))
        && !top.is_some_and(|t| [ARCHIVE_DIR, PROPOSALS_DIR].contains(&t));
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    let doc_name =
        (!name.starts_with('.') || name == ".summary.md") && ext.is_some_and(|e| DOC_EXTENSIONS.contains(&e.as_str()));
    if in_place && doc_name {
        Kind::Document
    } else {
        Kind::Unknown
    }
}

/// A writer's temporary file (`.<name>.tmp.<suffix>`, see `fs::atomic`).
pub fn is_temp(name: &str) -> bool {
    name.starts_with('.') && name.contains(".tmp.")
}

/// Whether the document walkers enter the directory `name` found at
/// `depth` (1 = directly under the library): top-level dot directories
/// other than `.memory` and `.skills` hold no documents, and `.git` is
/// skipped everywhere.
pub fn holds_documents(depth: usize, name: &str) -> bool {
    !(depth == 1 && name.starts_with('.') && name != ".memory" && name != ".skills") && name != ".git"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        for (rel, want) in [
            (".changelog", Kind::Log),
            (".changelog-archive/2025-10.md", Kind::Log),
            (".changelog-cursors", Kind::Local),
            (".core-rule-proposals/.audit.log", Kind::Log),
            (".memory/.references/.index.md", Kind::Derived),
            (".relations.jsonl", Kind::Derived),
            (".gitattributes", Kind::Derived),
            (".gitignore", Kind::Derived),
            (".lock", Kind::Local),
            (".journal", Kind::Local),
            (".lock.queue/000000001-42", Kind::Local),
            (".cache/kb-index/state", Kind::Local),
            (".quarantine/held.jsonl", Kind::Local),
            ("notes/.a.md.tmp.1234", Kind::Local),
            (".evolving-rules/security/active/r.yaml", Kind::Rule),
            (".evolving-rules/security/core.yaml", Kind::Rule),
            (".core-rule-proposals/CORE-001.md", Kind::Proposal),
            (".core-rule-proposals/x/y.sh", Kind::Unknown),
            (".conflicts/a.md", Kind::Conflict),
            (".skills/.active/pdf/SKILL.md", Kind::Skill),
            (".skills/.candidates/pdf/scripts/fetch.sh", Kind::Skill),
            (".skills/.candidates/pdf/img/a.png", Kind::Skill),
            (".skills/notes.md", Kind::Document),
            (".skills/.elsewhere/x/run.sh", Kind::Unknown),
            (".git", Kind::Refused),
            ("notes/.gitattributes", Kind::Refused),
            (".gitmodules", Kind::Refused),
            ("HEAD", Kind::Refused),
            ("objects/x.md", Kind::Refused),
            ("notes/.lock/m.md", Kind::Refused),
            ("notes/a\nb.md", Kind::Refused),
            (".git/config", Kind::Refused),
            ("notes/.git/hooks/pre-commit", Kind::Refused),
            (".memory/.references/jwt-v1.md", Kind::Document),
            (".memory/.references/.summary.md", Kind::Document),
            ("notes/debug.log", Kind::Document),
            ("notes/tmp.md", Kind::Document),
            ("notes/diagram.PNG", Kind::Document),
            ("notes/changelog-archive/x.md", Kind::Document),
            ("top.md", Kind::Document),
            ("notes/run.sh", Kind::Unknown),
            ("notes/Makefile", Kind::Unknown),
            ("notes/.hidden.md", Kind::Unknown),
            (".claude/settings.md", Kind::Unknown),
            (".unknown/x.md", Kind::Unknown),
            (".changelog-archive/x/y.md", Kind::Unknown),
        ] {
            assert_eq!(kind(rel), want, "{rel}");
        }
    }

    #[test]
    fn document_directories() {
        assert!(holds_documents(1, ".memory") && holds_documents(1, ".skills") && holds_documents(1, "notes"));
        assert!(holds_documents(2, ".references") && holds_documents(3, ".hidden"));
        assert!(!holds_documents(1, ".cache") && !holds_documents(1, ".git") && !holds_documents(4, ".git"));
    }
}
