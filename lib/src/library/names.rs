//! Names no writer may create in a library, whatever the
//! file system: the ones git gives a meaning to (`.git` in any case or
//! disguise, `.gitattributes`, `.gitmodules`, `.gitignore`, a repository's
//! own files at the root), the lock's name, names that hide what they are
//! (a trailing `/`, control, invisible and direction-changing characters,
//! trailing dots and spaces), and names some machine of a fleet cannot
//! check out or `kb-append` cannot write back: Windows' forbidden
//! characters and device names, names not in Unicode NFC, names too long
//! for the writer's temp file. The same rules judge what a request writes
//! and what a peer's commit brings (`sync`), so the two can never disagree.

/// Longest path component, in bytes (the common `NAME_MAX`).
pub const MAX_NAME: usize = 255;

/// Longest file name, in bytes: the writer replaces a file by renaming its
/// temp file `.<name>.tmp.<pid>.<n>.<nanos>` over it (`fs::atomic`), in the
/// same directory, so that temp name must fit in [`MAX_NAME`] too. With
/// the widest pid, counter and clock that leaves 255 − 47 = 208 bytes. A
/// longer name could arrive (a peer, a hand copy) but never be written
/// back by `kb-append`, so neither the writer nor sync accepts it.
pub const MAX_FILE_NAME: usize = MAX_NAME - crate::fs::atomic::TEMP_NAME_OVERHEAD;

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

/// Characters Windows does not allow in a name (control characters are
/// refused on their own): a backslash is its directory separator, `:`
/// opens an NTFS alternate data stream (`x.md:Zone.Identifier`), the rest
/// are wildcards, redirections and quotes. Git for Windows refuses to
/// check such a path out, so one peer's commit would break every Windows
/// clone of the library.
pub const WINDOWS_FORBIDDEN: &[char] = &['\\', ':', '*', '?', '<', '>', '|', '"'];

/// Device names Windows reserves: a component whose stem (the part before
/// its first dot, trailing spaces cut) is one of them, in any case, names
/// the device, not a file (`CON.md`, `nul.txt`, `Com1.tar.gz`). The
/// superscript digits are in Microsoft's list too; `CONIN$`/`CONOUT$`
/// are in git's (`is_valid_win32_path`).
const WINDOWS_DEVICES: &[&str] = &[
    "CON",
    "PRN",
    "AUX",
    "NUL",
    "CONIN$",
    "CONOUT$",
    "COM0",
    "COM1",
    "COM2",
    "COM3",
    "COM4",
    "COM5",
    "COM6",
    "COM7",
    "COM8",
    "COM9",
    "COM\u{b9}",
    "COM\u{b2}",
    "COM\u{b3}",
    "LPT0",
    "LPT1",
    "LPT2",
    "LPT3",
    "LPT4",
    "LPT5",
    "LPT6",
    "LPT7",
    "LPT8",
    "LPT9",
    "LPT\u{b9}",
    "LPT\u{b2}",
    "LPT\u{b3}",
];

/// Why a raw library-relative path may not be written, or `None` when its
/// names are acceptable. Applies to every component; `/` separates.
///
/// The portability checks (Windows characters and device names, length)
/// look at each name as given and as [`fold`] reads it: the writer
/// classifies a path by its folded form (`Library::writable`), so a name
/// that is harmless as given but folds into a refused one (`ＣＯＮ.md`,
/// `a＊.md`) is refused here too, with this message, and sync, which calls
/// this on the raw name, refuses exactly the same names.
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
    if !unicode_normalization::is_nfc(raw) {
        use unicode_normalization::UnicodeNormalization;
        let nfc: String = raw.nfc().collect();
        return Some(format!(
            "refused: '{}' is not in Unicode NFC form (it holds decomposed characters, as macOS may write them; the same name in two forms is two files on Linux and one on macOS); write it precomposed: '{}'",
            shown(raw),
            shown(&nfc)
        ));
    }
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if let Some(why) = portability(part, last) {
            return Some(format!("refused: '{}' {why}", shown(raw)));
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

/// Why one component cannot be checked out everywhere or written back by
/// the writer: judged as given and as [`fold`] reads it (see [`refusal`]).
/// `last`: the file's own name, which needs room for the writer's temp.
fn portability(part: &str, last: bool) -> Option<String> {
    let folded = fold(part);
    // A writer's own temp (`fs::atomic`) is renamed, never replaced, so it
    // needs no room for another: it keeps its kind (local state) whatever
    // the length of the name it stands for.
    let temp = crate::fs::atomic::temp_owner(part).is_some();
    let limit = if last && !temp { MAX_FILE_NAME } else { MAX_NAME };
    let long = part.len().max(folded.len());
    if long > limit {
        let head: String = part.chars().take(40).collect();
        let why = if last {
            format!(
                "at most {MAX_FILE_NAME}, so that the writer's temp file beside it, '.<name>.tmp.<pid>.<n>.<nanos>', fits in {MAX_NAME}"
            )
        } else {
            format!("at most {MAX_NAME}")
        };
        let once = if part.len() < long { " once normalised" } else { "" };
        let what = if last { "a name too long to write back" } else { "a directory name too long" };
        return Some(format!("has {what} ('{}…': {long} bytes{once}, {why})", shown(&head)));
    }
    for name in [part, folded.as_str()] {
        let c = name.chars().find(|c| WINDOWS_FORBIDDEN.contains(c));
        let as_read = if name == part { String::new() } else { format!(" (once folded: '{}')", shown(name)) };
        match c {
            Some('\\') => {
                return Some(format!(
                    "contains a backslash{as_read}, Windows' directory separator; paths are '/'-separated"
                ))
            }
            Some(c) => {
                return Some(format!(
                "contains '{c}'{as_read}, one of the characters Windows does not allow in a name (\\ : * ? < > | \")"
            ))
            }
            None => {}
        }
        if let Some(dev) = device(name) {
            return Some(format!(
                "uses '{dev}'{as_read}, a device name Windows reserves (with any extension, in any case); pick another name"
            ));
        }
    }
    None
}

/// The Windows device name a component's stem is, if any.
fn device(name: &str) -> Option<&'static str> {
    let stem = name.split('.').next().unwrap_or(name).trim_end_matches(' ');
    WINDOWS_DEVICES.iter().copied().find(|d| stem.eq_ignore_ascii_case(d))
}

/// How a name compares on the file systems and in the git versions that
/// are most forgiving: full-width forms mapped to ASCII (NFKC), characters
/// HFS+ ignores dropped, lower case, trailing dots and spaces cut (NTFS).
pub fn fold(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    // ASCII has no invisible character and is its own NFKC form: a batch
    // folds every part of thousands of such paths.
    if name.is_ascii() {
        return name.to_ascii_lowercase().trim_end_matches(['.', ' ']).to_string();
    }
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

    /// The message a refused path gets (for checking which rule spoke).
    fn why(raw: &str) -> String {
        refusal(raw).unwrap_or_else(|| panic!("{raw:?} was accepted"))
    }

    #[test]
    fn refuses_what_windows_cannot_check_out() {
        assert!(why("a\\b.md").contains("backslash"));
        assert!(why("notes/x.md:Zone.Identifier").contains("':'"));
        for c in ['*', '?', '<', '>', '|', '"'] {
            assert!(why(&format!("notes/a{c}.md")).contains(&format!("'{c}'")), "{c}");
        }
        // Full-width forms are fine on Windows, but the writer classifies
        // a path by its folded form, so they are refused as folded.
        assert!(why("notes/a\u{ff0a}.md").contains("once folded"));
    }

    #[test]
    fn refuses_windows_device_names_in_any_case_with_any_extension() {
        for bad in [
            "notes/CON.md",
            "CON",
            "notes/con",
            "nul.txt",
            "a/Aux.tar.gz",
            "prn.md",
            "COM1.md",
            "com0.md",
            "lpt9.md",
            "LPT\u{b9}.md",
            "com\u{b3}.md",
            "CONIN$.md",
            "conout$",
            "CON .md",
            "CON/x.md",
            "notes/\u{ff23}\u{ff2f}\u{ff2e}.md",
        ] {
            assert!(why(bad).contains("device name"), "{bad:?}: {}", why(bad));
        }
        for good in [
            "notes/console.md",
            "notes/con-pool.md",
            "notes/icon.md",
            "notes/com10.md",
            "notes/lpt.md",
            "notes/nul_ls.md",
            "notes/aux-notes/a.md",
            "notes/\u{4e2d}\u{6587}\u{7b14}\u{8bb0}.md",
        ] {
            assert_eq!(refusal(good), None, "{good:?}");
        }
    }

    #[test]
    fn refuses_names_not_in_nfc_and_says_so() {
        let nfd = "notes/cafe\u{301}.md";
        let msg = why(nfd);
        assert!(msg.contains("NFC"), "{msg}");
        assert!(msg.contains("notes/caf\u{e9}.md"), "the precomposed form is named: {msg}");
        assert_eq!(refusal("notes/caf\u{e9}.md"), None);
        assert!(why("\u{1100}\u{1161}/x.md").contains("NFC"), "decomposed Hangul");
    }

    #[test]
    fn a_file_name_leaves_room_for_the_writers_temp() {
        assert_eq!(MAX_FILE_NAME, 208);
        let fits = format!("notes/{}.md", "a".repeat(MAX_FILE_NAME - 3));
        assert_eq!(refusal(&fits), None);
        let over = format!("notes/{}.md", "a".repeat(MAX_FILE_NAME - 2));
        assert!(why(&over).contains("temp file"), "{}", why(&over));
        assert!(why(&format!("notes/{}.md", "a".repeat(247))).contains("250 bytes"));
        // A directory's name is never a temp's stem: the plain limit.
        assert_eq!(refusal(&format!("{}/a.md", "d".repeat(MAX_NAME))), None);
        assert!(refusal(&format!("{}/a.md", "d".repeat(MAX_NAME + 1))).is_some());
        // The temp of the longest name is the writer's own, not refused.
        let temp = format!("notes/.{}.md.tmp.4294967295.18446744073709551615.999999999", "a".repeat(MAX_FILE_NAME - 3));
        assert_eq!(temp.rsplit('/').next().map(str::len), Some(MAX_NAME));
        assert_eq!(refusal(&temp), None);
        // Counted in bytes: 70 CJK characters are 210 bytes.
        assert!(refusal(&format!("notes/{}", "\u{4e2d}".repeat(70))).is_some());
        assert_eq!(refusal(&format!("notes/{}", "\u{4e2d}".repeat(69))), None);
    }

    #[test]
    fn fold_is_unchanged() {
        assert_eq!(fold("Caf\u{e9}.MD."), "caf\u{e9}.md");
        assert_eq!(fold("cafe\u{301}"), "caf\u{e9}");
        assert_eq!(fold("\u{ff23}\u{ff2f}\u{ff2e}"), "con");
        assert_eq!(fold(".g\u{200c}it "), ".git");
        assert_eq!(fold("Team-Notes/Log.MD. "), "team-notes/log.md");
    }
}
