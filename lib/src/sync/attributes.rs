//! The three kinds of library files (DESIGN.md "Many machines") and the
//! `.gitattributes` that tells git how to merge each (issue 11 item 2):
//! logs go to the `kb-log` union driver, derived files to the `kb-derived`
//! keep-and-rebuild driver, documents to git's text merge. One table here
//! drives both the attributes file and sync's own conflict handling.

use crate::error::Result;
use crate::fs::atomic;
use crate::library::Library;

/// How sync treats a library file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An append-only log: merged as the ordered union of lines.
    Log,
    /// Generated from documents and logs: never merged, rebuilt.
    Derived,
    /// Written by users and agents: git's text merge, conflicts kept.
    Document,
}

/// Append-only logs by file name (any directory).
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

/// The kind of a library-relative path.
pub fn kind(rel: &str) -> Kind {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if LOGS.contains(&name) || (rel.starts_with(".changelog-archive/") && name.ends_with(".md")) {
        Kind::Log
    } else if DERIVED.contains(&name) {
        Kind::Derived
    } else {
        Kind::Document
    }
}

/// The library's `.gitattributes` (patterns are relative to the library).
pub fn gitattributes() -> String {
    let mut s = String::from(
        "# kb-tools: how git merges this library (written by kb-append init and sync).\n\
         # Logs: union of lines in timestamp order. Derived files: keep one side, rebuild.\n",
    );
    for name in LOGS {
        s.push_str(&format!("{name} merge=kb-log\n"));
    }
    s.push_str(".changelog-archive/*.md merge=kb-log\n");
    for name in DERIVED {
        s.push_str(&format!("{name} merge=kb-derived\n"));
    }
    s
}

/// The library's `.gitignore`: the lock file and writers' temp files are
/// never shared.
pub const GITIGNORE: &str =
    "# kb-tools: never committed (written by kb-append init).\n/.lock\n.*.tmp.*\n/.cache/\n/.journal\n/.lock.queue/\n";

/// Writes `.gitattributes` and `.gitignore` into the library when they are
/// missing or stale. A file someone else wrote (no `# kb-tools:` first
/// line) keeps its lines and gets ours appended once. Returns the files it
/// wrote.
pub fn write(lib: &Library) -> Result<Vec<String>> {
    let mut written = Vec::new();
    for (name, ours) in [(".gitattributes", gitattributes()), (".gitignore", GITIGNORE.to_string())] {
        let path = lib.path(name);
        // Missing is empty; an unreadable or non-UTF-8 file is an error,
        // never replaced as if it were empty.
        let existing = crate::fs::read::optional_text(&path)?.unwrap_or_default();
        let text = if existing.is_empty() || existing.starts_with("# kb-tools:") {
            ours
        } else if existing.contains(ours.lines().nth(2).unwrap_or_default()) {
            continue;
        } else {
            let sep = if existing.ends_with('\n') { "" } else { "\n" };
            format!("{existing}{sep}{ours}")
        };
        if atomic::write_if_changed(&path, text.as_bytes())? {
            written.push(name.to_string());
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!(kind(".changelog"), Kind::Log);
        assert_eq!(kind(".changelog-archive/2025-10.md"), Kind::Log);
        assert_eq!(kind(".core-rule-proposals/.audit.log"), Kind::Log);
        assert_eq!(kind(".memory/.references/.index.md"), Kind::Derived);
        assert_eq!(kind(".relations.jsonl"), Kind::Derived);
        assert_eq!(kind(".memory/.references/jwt-v1.md"), Kind::Document);
        assert_eq!(kind("notes/debug.log"), Kind::Document);
    }
}
