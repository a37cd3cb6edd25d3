//! The three kinds of library files (DESIGN.md "Many machines") and the
//! `.gitattributes` that tells git how to merge each (issue 11 item 2):
//! logs go to the `kb-log` union driver, derived files to the `kb-derived`
//! keep-and-rebuild driver, documents to git's text merge. The kinds come
//! from the one table, `library::kind`.

use crate::error::Result;
use crate::fs::atomic;
use crate::library::kind::{DERIVED, LOGS};
use crate::library::Library;

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
        // Our own text has a third line (a constant), so this never reads "".
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
