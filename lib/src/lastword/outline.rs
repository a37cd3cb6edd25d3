//! The heading outline of a Markdown file (seed 004 §3.2, §4): which lines
//! are headings, at what level, with what exact text, and where each
//! section ends. Read with pulldown-cmark so `#` lines inside fenced code,
//! HTML blocks or front matter are not headings, setext headings are, and
//! every offset is a byte offset into the original text (BOM and CRLF kept).

use pulldown_cmark::{Event, Options, Parser, Tag};

/// One top-level heading: its whole lines as byte offsets and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// Offset of the first byte of the heading's first line.
    pub start: usize,
    /// Offset just after the heading's last line terminator (or end of text).
    pub end: usize,
    /// 1–6.
    pub level: u8,
    /// The heading text as written: ATX markers and a closing `#` run
    /// removed, surrounding spaces trimmed; setext lines joined by a space.
    pub text: String,
}

/// Length of a leading UTF-8 byte order mark (0 or 3), which the parser
/// must not see and every write must keep.
pub fn bom_len(text: &str) -> usize {
    if text.starts_with('\u{feff}') {
        3
    } else {
        0
    }
}

/// The line ending a file uses, judged by its first line break, so new
/// lines written into a CRLF file are CRLF too.
pub fn eol_of(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// The top-level headings of a whole document. Front matter counts only
/// at the very start (after a BOM), as GitHub renders it: pulldown-cmark's
/// metadata option would also swallow a `---` … `---` block mid-document,
/// which CommonMark reads as a rule and a setext heading.
pub fn headings(text: &str) -> Vec<Heading> {
    let start = crate::doc::frontmatter::locate(text).map_or_else(|| bom_len(text), |(_, _, body)| body);
    scan(&text[start..], start)
}

/// The top-level headings of a fragment parsed on its own (a section body
/// being inserted), offsets shifted by `offset`.
pub fn fragment_headings(fragment: &str, offset: usize) -> Vec<Heading> {
    scan(fragment, offset)
}

fn scan(src: &str, offset: usize) -> Vec<Heading> {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_FOOTNOTES;
    let mut depth = 0usize;
    let mut out = Vec::new();
    for (ev, range) in Parser::new_ext(src, opts).into_offset_iter() {
        match ev {
            Event::Start(Tag::Heading { level, .. }) if depth == 0 => {
                depth += 1;
                let start = line_start(src, range.start);
                let end = line_end(src, range.end.max(range.start + 1) - 1);
                out.push(Heading {
                    start: start + offset,
                    end: end + offset,
                    level: level as u8,
                    text: heading_text(&src[start..end]),
                });
            }
            Event::Start(_) => depth += 1,
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    out
}

fn line_start(s: &str, at: usize) -> usize {
    s[..at].rfind('\n').map_or(0, |i| i + 1)
}

fn line_end(s: &str, at: usize) -> usize {
    s[at..].find('\n').map_or(s.len(), |i| at + i + 1)
}

/// The key text of a heading's source lines (CommonMark §4.2, §4.3).
fn heading_text(lines: &str) -> String {
    let lines: Vec<&str> = lines.lines().map(|l| l.trim_end_matches('\r')).collect();
    if lines.len() > 1 {
        let body = &lines[..lines.len() - 1];
        return body.iter().map(|l| l.trim()).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    }
    let line = lines.first().copied().unwrap_or("").trim_start();
    let rest = line.trim_start_matches('#').trim_matches([' ', '\t']);
    // A closing run of `#` counts only when preceded by a space or when it
    // is all there is (`## C#` keeps its `#`).
    let stripped = rest.trim_end_matches('#');
    if stripped.is_empty() {
        return String::new();
    }
    if stripped.len() < rest.len() && stripped.ends_with([' ', '\t']) {
        return stripped.trim_end_matches([' ', '\t']).to_string();
    }
    rest.to_string()
}

/// Where the section of heading `i` ends: at the next heading of the same
/// or a higher level (seed 004 §4), or at the end of the text.
pub fn section_end(heads: &[Heading], i: usize, text_len: usize) -> usize {
    let level = heads[i].level;
    heads[i + 1..].iter().find(|h| h.level <= level).map_or(text_len, |h| h.start)
}

/// The indexes of the headings a key names: exact, case-sensitive text and,
/// when given, the same level.
pub fn matches(heads: &[Heading], text: &str, level: Option<u8>) -> Vec<usize> {
    heads
        .iter()
        .enumerate()
        .filter(|(_, h)| h.text == text && level.is_none_or(|l| l == h.level))
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<(u8, String)> {
        headings(text).into_iter().map(|h| (h.level, h.text)).collect()
    }

    #[test]
    fn atx_setext_fences_and_closing_runs() {
        let text = "---\ntitle: x\n---\n# One #\n\n```\n# not\n```\n\nTwo\n===\n\n## C#\n### Three ###\n> # quoted\n\n---\nmid: matter\n---\n";
        assert_eq!(
            keys(text),
            vec![
                (1, "One".into()),
                (1, "Two".into()),
                (2, "C#".into()),
                (3, "Three".into()),
                (2, "mid: matter".into())
            ]
        );
        let h = headings(text);
        assert_eq!(&text[h[1].start..h[1].end], "Two\n===\n");
        assert_eq!(section_end(&h, 2, text.len()), h[4].start);
    }

    #[test]
    fn bom_and_crlf_offsets() {
        let text = "\u{feff}# A\r\nx\r\n## B\r\n";
        let h = headings(text);
        assert_eq!(h[0].start, 3);
        assert_eq!(&text[h[1].start..h[1].end], "## B\r\n");
        assert_eq!(h[1].text, "B");
        assert_eq!(eol_of(text), "\r\n");
    }
}
