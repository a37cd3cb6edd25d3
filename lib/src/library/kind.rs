//! The one table of what a library-relative path is (DESIGN.md "Paths" and
//! "Many machines"). Writers accept only documents; sync merges logs as a
//! union of lines and rebuilds derived files; the walkers know which
//! directories hold documents. Before this table, `library` and
//! `sync::attributes` kept two lists that disagreed (`.gitignore`).

/// What a library-relative path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Written by users and agents: the only kind a write request may name;
    /// git's text merge, conflicts kept.
    Document,
    /// An append-only log: merged as the ordered union of lines.
    Log,
    /// Generated from documents and logs: never merged, rebuilt.
    Derived,
    /// Owned by the tools (the lock, caches, kept conflicts, guard rules):
    /// written only by the command that owns it.
    Internal,
    /// Never written by the tools on a request's behalf: git's own
    /// directory and writers' temporary files.
    Refused,
}

/// Append-only logs by file name (any directory). Also `.changelog-archive/*.md`.
/// `.changelog-cursors` (each notebook's place in the changelog) merges the
/// same way: a union of lines, of which each notebook's latest wins.
pub const LOGS: &[&str] = &[".changelog", ".audit.log", ".inconsistency.log", ".scheduled.log", ".changelog-cursors"];

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

/// Tool-owned files by name (any directory): the lock and a batch's
/// write-ahead journal (`library::journal`).
pub const INTERNAL_FILES: &[&str] = &[".lock", ".journal"];

/// The directory holding compacted changelog months (`YYYY-MM.md`, logs).
pub const ARCHIVE_DIR: &str = ".changelog-archive";

/// The tools' rebuildable caches (kb-score's index, kb-index's state):
/// nothing an author wrote, so readers that judge content skip it.
pub const CACHE_DIR: &str = ".cache";

/// Tool-owned directories (any depth). `.evolving-rules` changes only
/// through `kb-guard rules integrate`, so a plain write can never replace
/// or break a rule in force.
/// `.core-rule-proposals` is written by `kb-guard rules propose` only, so a
/// request can never plant a proposal for a person to approve.
/// `.lock.queue` holds the lock's waiting tickets (`lock::queue`).
pub const INTERNAL_DIRS: &[&str] =
    &[ARCHIVE_DIR, CACHE_DIR, ".conflicts", ".evolving-rules", ".core-rule-proposals", ".lock.queue"];

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
    // Names git or kb-tools give a meaning to, and names that hide what
    // they are (issue 21), except the root git files kb-tools writes.
    let own = parts.is_empty() && (OWN_GIT_FILES.contains(&name) || INTERNAL_FILES.contains(&name));
    if !own && super::names::refusal(rel).is_some() {
        return Kind::Refused;
    }
    if parts.iter().any(|p| REFUSED_DIRS.contains(p)) || REFUSED_DIRS.contains(&name) || is_temp(name) {
        Kind::Refused
    } else if LOGS.contains(&name) || (parts.first() == Some(&ARCHIVE_DIR) && name.ends_with(".md")) {
        Kind::Log
    } else if DERIVED.contains(&name) {
        Kind::Derived
    } else if INTERNAL_FILES.contains(&name) || parts.iter().any(|p| INTERNAL_DIRS.contains(p)) {
        Kind::Internal
    } else {
        Kind::Document
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
            (".changelog-cursors", Kind::Log),
            (".core-rule-proposals/.audit.log", Kind::Log),
            (".memory/.references/.index.md", Kind::Derived),
            (".relations.jsonl", Kind::Derived),
            (".gitattributes", Kind::Derived),
            (".gitignore", Kind::Derived),
            (".lock", Kind::Internal),
            (".journal", Kind::Internal),
            (".lock.queue/000000001-42", Kind::Internal),
            (".cache/kb-index/state", Kind::Internal),
            (".evolving-rules/security/active/r.yaml", Kind::Internal),
            (".conflicts/a.md", Kind::Internal),
            (".git", Kind::Refused),
            ("notes/.gitattributes", Kind::Refused),
            (".gitmodules", Kind::Refused),
            ("HEAD", Kind::Refused),
            ("objects/x.md", Kind::Refused),
            ("notes/.lock/m.md", Kind::Refused),
            ("notes/a\nb.md", Kind::Refused),
            (".core-rule-proposals/CORE-001.md", Kind::Internal),
            (".git/config", Kind::Refused),
            ("notes/.git/hooks/pre-commit", Kind::Refused),
            ("notes/.a.md.tmp.1234", Kind::Refused),
            (".memory/.references/jwt-v1.md", Kind::Document),
            ("notes/debug.log", Kind::Document),
            ("notes/tmp.md", Kind::Document),
            ("notes/changelog-archive/x.md", Kind::Document),
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
