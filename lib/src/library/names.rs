//! Names no writer may create in a library (issue 21), whatever the file
//! system: the ones git gives a meaning to (`.git` in any case or disguise,
//! `.gitattributes`, `.gitmodules`, `.gitignore`, a repository's own files
//! at the root), the lock's name, and names that hide what they are (a
//! trailing `/`, control, invisible and direction-changing characters,
//! trailing dots and spaces, over-long names). The same rules judge what a
//! request writes and what a peer's commit brings (`sync`), so the two can
//! never disagree.

/// Longest path component, in bytes (the common `NAME_MAX`).
pub const MAX_NAME: usize = 255;

/// Longest library-relative path, in bytes: far below `PATH_MAX` once the
/// workspace path is added, and far beyond any real document.
pub const MAX_PATH: usize = 1024;

/// Names git reads as its own anywhere in a work tree.
const GIT_NAMES: &[&str] = &[".git", "git~1", ".gitattributes", ".gitmodules", ".gitignore"];

/// What a git directory holds: at the library root they would make git
/// take `.library` for a repository of its own.
const GIT_DIR_NAMES: &[&str] = &[
    "head",
    "config",
    "objects",
    "refs",
    "index",
    "packed-refs",
    "hooks",
    "info",
    "logs",
    "fetch_head",
    "orig_head",
    "merge_head",
    "shallow",
    "commondir",
    "gitdir",
    "worktrees",
    "modules",
];

/// Why a raw library-relative path may not be written, or `None` when its
/// names are acceptable. Applies to every component; `/` separates.
pub fn refusal(raw: &str) -> Option<String> {
    if raw.ends_with('/') {
        return Some(format!("refused: '{}' has a trailing '/'; name a file", shown(raw)));
    }
    if raw.len() > MAX_PATH {
        return Some(format!("refused: the path is too long ({} bytes, at most {MAX_PATH})", raw.len()));
    }
    let parts: Vec<&str> = raw.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    for (i, part) in parts.iter().enumerate() {
        let folded = fold(part);
        if GIT_NAMES.contains(&folded.as_str()) {
            return Some(format!("refused: '{}' names '{part}', which git gives a meaning to", shown(raw)));
        }
        if i == 0 && GIT_DIR_NAMES.contains(&folded.as_str()) {
            return Some(format!(
                "refused: '{}' at the library root is a name of a git repository's own files",
                shown(raw)
            ));
        }
        // The root `.lock` is the lock itself, an internal file (`kind`).
        if folded == ".lock" && parts.len() > 1 {
            return Some(format!("refused: '{}' uses '.lock', the library lock's name", shown(raw)));
        }
    }
    if let Some(c) = raw.chars().find(|c| c.is_control()) {
        return Some(format!("refused: '{}' contains a control character (U+{:04X})", shown(raw), c as u32));
    }
    if let Some(c) = raw.chars().find(|c| invisible(*c)) {
        return Some(format!(
            "refused: '{}' contains an invisible or direction-changing character (U+{:04X})",
            shown(raw),
            c as u32
        ));
    }
    for part in &parts {
        if part.len() > MAX_NAME {
            let head: String = part.chars().take(40).collect();
            return Some(format!("refused: the name '{head}…' is too long ({} bytes, at most {MAX_NAME})", part.len()));
        }
        if *part != ".." && (part.ends_with('.') || part.ends_with(' ')) {
            return Some(format!(
                "refused: '{}' has a name with a trailing dot or space (other systems drop it)",
                shown(raw)
            ));
        }
    }
    None
}

/// How a name compares on the file systems and in the git versions that
/// are most forgiving: full-width forms mapped to ASCII (NFKC), characters
/// HFS+ ignores dropped, lower case, trailing dots and spaces cut (NTFS).
pub fn fold(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let kept: String = name.chars().filter(|c| !invisible(*c)).nfkc().collect();
    kept.to_lowercase().trim_end_matches(['.', ' ']).to_string()
}

/// Characters that render as nothing or reorder text: zero-width, joiners,
/// direction overrides and isolates, the BOM, soft hyphen.
pub fn invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}' | '\u{180B}'..='\u{180E}'
        | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{3164}'
        | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}')
}

/// A path as it may be shown in one line of a message: control and
/// direction-changing characters escaped.
pub fn shown(raw: &str) -> String {
    crate::out::printable(raw, false).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_git_names_in_disguise() {
        for bad in [
            ".git",
            "a/.GIT",
            ".git.",
            ".git ",
            "GIT~1",
            ".g\u{200c}it",
            "\u{ff0e}\u{ff47}\u{ff49}\u{ff54}",
            "x/.gitattributes",
            ".gitmodules",
            "HEAD",
            "objects/x.md",
            "notes/.lock/m.md",
            "a\nb",
            "x/",
            "a.md.",
        ] {
            assert!(refusal(bad).is_some(), "{bad:?}");
        }
        for good in ["notes/a.md", "notes/HEAD.md", "notes/config", "a/objects/b.md", ".memory/.references/x.md"] {
            assert_eq!(refusal(good), None, "{good:?}");
        }
    }
}
