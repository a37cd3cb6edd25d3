//! What the binaries print: JSON Lines records in and out, and progress on
//! a terminal. Depends on nothing else in the crate but `error`.

pub mod jsonl;
pub mod progress;

use std::borrow::Cow;

/// Text that came from a library, a request or a peer (a title, a topic,
/// a path, a lock holder's command line) as it may reach a person: control
/// characters (ANSI escapes, BEL, NUL, C1) and direction-changing
/// characters are shown escaped (`\u{1b}`), so a note cannot move the
/// cursor, retitle the window, write the clipboard or reorder what a
/// terminal or a Markdown viewer shows. Newlines and tabs stay when
/// `lines` is set (a table, a report); records keep the exact text.
pub fn printable(s: &str, lines: bool) -> Cow<'_, str> {
    let bad = |c: char| (c.is_control() && !(lines && (c == '\n' || c == '\t'))) || is_bidi(c);
    if !s.contains(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if bad(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One line for people on stderr, `tool: message`, the message shown as
/// [`printable`] on one line: warnings and errors quote source names from a
/// cloned project's registry, paths a peer chose, a document's text.
pub fn warn(tool: &str, message: &str) {
    eprintln!("{tool}: {}", printable(message, false));
}

/// Characters that reorder the text around them (bidi overrides, isolates
/// and marks): `Trojan Source` shows one thing and means another. The one
/// list, for what people are shown here and for kb-guard's findings.
pub fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// Rounds `x` to `places` decimals for a record: scores, rates and
/// durations print as short, stable bytes, the same on every platform.
pub fn round(x: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (x * scale).round() / scale
}

/// [`round`] to 4 decimals, the precision of every score and fraction.
pub fn round4(x: f64) -> f64 {
    round(x, 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_escapes_controls_and_direction_marks_only() {
        assert_eq!(printable("连接池 | a\tb\n", true), "连接池 | a\tb\n");
        assert!(matches!(printable("plain", false), Cow::Borrowed(_)));
        assert_eq!(printable("a\u{1b}[2J\u{7}\u{202e}\n", true), "a\\u{1b}[2J\\u{7}\\u{202e}\n");
        assert_eq!(printable("a\nb\tc\u{9b}", false), "a\\nb\\tc\\u{9b}");
    }
}
