//! The three kinds of library files (DESIGN.md "Many machines") and the
//! `.gitattributes` that tells git how to merge each:
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

/// Attributes that, given a value, rewrite a file's bytes on checkout or
/// splice its merges: content filters (a driver runs), encodings, merge
/// drivers (`union` joins both sides' lines); with `ident` (keyword
/// expansion) and `eol=crlf`, the ones [`risky`] counts. Unsetting one
/// (`-text`, `-merge`, `binary`) and the common `text=auto` or `eol=lf`
/// leave a Markdown file's bytes alone.
const RISKY: &[&str] = &["filter", "merge", "working-tree-encoding"];

/// Whether one attribute word (`filter=lfs`, `-text`, `!eol`) sets a
/// [`RISKY`] attribute, `ident`, `eol=crlf` or one of `macros`.
fn risky(word: &str, macros: &[&str]) -> bool {
    if word.starts_with(['-', '!']) {
        return false;
    }
    match word.split_once('=') {
        // `merge=text` is git's own text merge, as `merge` alone.
        Some(("merge", "text")) => false,
        Some((name, value)) => RISKY.contains(&name) || (name == "eol" && value == "crlf"),
        None => word == "ident" || macros.contains(&word),
    }
}

/// The first line of a `.gitattributes` outside the library (`text`, that
/// was `old` before a peer's commit) that the peer added and that sets a
/// [`RISKY`] attribute on a path of `files` (library files relative to the
/// attributes file's directory). A peer's `*.md working-tree-encoding=
/// UTF-16LE` never names the library and still re-encodes every document.
/// Patterns match as git's do ([`reaches`]).
pub fn reaching<'a>(text: &'a str, old: &str, files: &[&str]) -> Option<&'a str> {
    let before: std::collections::HashSet<&str> = old.lines().map(str::trim).collect();
    // Macros (`[attr]evil filter=x`) this file defines with a risky body.
    let mut macros: Vec<&str> = Vec::new();
    let names = |attrs: &[&'a str], macros: &[&str]| attrs.iter().any(|a| risky(a, macros));
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let pattern = words.next().unwrap_or_default();
        let attrs: Vec<&str> = words.collect();
        if let Some(name) = pattern.strip_prefix("[attr]") {
            if names(&attrs, &macros) {
                macros.push(name);
            }
            continue;
        }
        if before.contains(line) || !names(&attrs, &macros) {
            continue;
        }
        if reaches(pattern, files) {
            return Some(line);
        }
    }
    None
}

/// Whether a git path pattern (the first word of a `.gitattributes` or
/// `.gitignore` line) matches one of `files` (paths relative to that
/// file's directory), as git matches it: a pattern with no `/` but a
/// trailing one matches at any depth, else the path from the directory; a
/// directory pattern reaches the files below it; `**` spans folders. A
/// pattern the glob syntax cannot read counts as matching.
pub fn reaches(pattern: &str, files: &[&str]) -> bool {
    let pattern = pattern.trim_matches('"');
    let pattern = match pattern.strip_prefix('/') {
        Some(p) => p.to_string(),
        None if pattern.trim_end_matches('/').contains('/') => pattern.to_string(),
        None => format!("**/{pattern}"),
    };
    let pattern = if pattern.ends_with('/') { format!("{pattern}**") } else { pattern };
    let Ok(glob) = globset::GlobBuilder::new(&pattern).literal_separator(true).build() else {
        return true;
    };
    let glob = glob.compile_matcher();
    files.iter().any(|f| glob.is_match(f))
}

/// The library's `.gitignore`: the lock file and writers' temp files are
/// never shared.
pub const GITIGNORE: &str =
    "# kb-tools: never committed (written by kb-append init).\n/.lock\n.*.tmp.*\n/.cache/\n/.journal\n/.lock.queue/\n/.changelog-cursors\n/.quarantine/\n";

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

#[cfg(test)]
mod tests {
    use super::reaching;

    #[test]
    fn only_added_lines_that_reach_library_files_with_content_attributes_count() {
        let files = [".library/notes/kept.md", ".library/.changelog", ".library/x.md"];
        for line in
            ["*.md eol=crlf", "**/notes/** filter=lfs", ".*/*.md ident", "* merge=union", "*.md text merge=union"]
        {
            assert_eq!(reaching(&format!("{line}\n"), "", &files), Some(line), "{line}");
        }
        let macro_use = "[attr]evil filter=lfs\n*.md evil\n";
        assert_eq!(reaching(macro_use, "", &files), Some("*.md evil"));
        let benign = [
            "/*.md filter=lfs\n",
            "src/*.rs filter=x\n",
            "*.md linguist-documentation\n",
            "* text=auto eol=lf merge\n",
        ];
        for benign in benign.into_iter().chain(["*.md -text -merge binary\n", "*.png filter=lfs\n"]) {
            assert_eq!(reaching(benign, "", &files), None, "{benign}");
        }
        // A line that was there before the peer's commit is not the peer's.
        assert_eq!(reaching("* text=auto\n", "* text=auto\n", &files), None);
    }
}
