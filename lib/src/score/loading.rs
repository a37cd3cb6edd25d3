//! How much of each hit is loaded (seed 000's three-tier loading, `--tier`;
//! not the trust tiers T1–T4 of `library::trust`), to keep token cost down: tier 1 returns
//! the index rows of the hits, tier 2 adds a `.summary.md` snippet of each
//! selected entry, tier 3 adds the full content. `--budget TOKENS` cuts the
//! snippet and content of the first hit that would exceed the budget to
//! fit (marked `truncated`) and stops there; the final summary record
//! reports the tokens used.

use crate::doc::frontmatter;
use crate::library::Library;

use super::passage::{self, Matcher};

/// How much of each hit is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// Index rows only.
    Index = 1,
    /// Plus `.summary.md` snippets.
    Summary = 2,
    /// Plus full content.
    Full = 3,
}

impl Tier {
    /// Parses `--tier 1|2|3`.
    pub fn parse(s: &str) -> crate::Result<Tier> {
        match s.trim() {
            "1" => Ok(Tier::Index),
            "2" => Ok(Tier::Summary),
            "3" => Ok(Tier::Full),
            _ => Err(crate::Error::usage(format!("--tier wants 1, 2 or 3, got '{s}'"))),
        }
    }
}

/// Longest snippet, in characters.
pub const SNIPPET_CHARS: usize = 400;

/// Estimated tokens of a text: about four ASCII bytes per token, one token
/// per other character (CJK text is roughly a token per character).
pub fn tokens(s: &str) -> usize {
    let ascii = s.bytes().filter(u8::is_ascii).count();
    let other = s.chars().filter(|c| !c.is_ascii()).count();
    ascii.div_ceil(4) + other
}

/// The longest prefix of `s`, plus `…` when cut, whose [`tokens`] are at
/// most `max` (cut at a character boundary; empty when nothing fits).
pub fn clip_tokens(s: &str, max: usize) -> String {
    if tokens(s) <= max {
        return s.to_string();
    }
    let (mut ascii, mut other) = (0usize, 0usize);
    let mut end = 0;
    for (i, c) in s.char_indices() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
        // One more token for the ellipsis.
        if ascii.div_ceil(4) + other + 1 > max {
            break;
        }
        end = i + c.len_utf8();
    }
    if end == 0 {
        return String::new();
    }
    format!("{}…", &s[..end])
}

/// The snippet of a document: its paragraph that best matches the query
/// (kb::score::passage); when none holds a query term, the lines of its
/// directory's `.summary.md` that mention its file name or topic, else
/// that summary's first paragraph, else the document's own first
/// paragraph.
pub fn snippet(lib: &Library, path: &str, topic: &str, m: &Matcher) -> Option<String> {
    let doc = library_text(lib, path);
    if let Some(best) = doc.as_deref().and_then(|d| passage::best(strip_frontmatter(d), m, SNIPPET_CHARS)) {
        return Some(best);
    }
    let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
    let summary_rel = if dir.is_empty() { ".summary.md".to_string() } else { format!("{dir}/.summary.md") };
    let summary = library_text(lib, &summary_rel);
    let text = summary.as_deref().map(strip_frontmatter);
    let found = text.and_then(|t| {
        let stem = file.trim_end_matches(".md");
        let lines: Vec<&str> = t
            .lines()
            .filter(|l| l.contains(file) || l.contains(stem) || (!topic.is_empty() && l.contains(topic)))
            .collect();
        if lines.is_empty() {
            first_paragraph(t)
        } else {
            Some(lines.join("\n"))
        }
    });
    let found = found.or_else(|| first_paragraph(strip_frontmatter(doc.as_deref()?)))?;
    Some(clip(found.trim(), SNIPPET_CHARS))
}

/// The full text of a document.
pub fn content(lib: &Library, path: &str) -> Option<String> {
    library_text(lib, path)
}

/// A library file's text, never through a symlink nor from a FIFO: an
/// index row may name any path, and what it names is untrusted.
/// `None` (gone, refused or unreadable since indexed) leaves the hit
/// without a snippet or content: the hit itself comes from the index.
fn library_text(lib: &Library, rel: &str) -> Option<String> {
    lib.check_inside(rel).ok()?;
    let bytes = crate::fs::nofollow::read(&lib.path(rel), crate::library::scan::MAX_DOC_BYTES).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

fn strip_frontmatter(t: &str) -> &str {
    frontmatter::locate(t).map_or(t, |(_, _, b)| &t[b..])
}

fn first_paragraph(t: &str) -> Option<String> {
    let para: Vec<&str> = t
        .lines()
        .skip_while(|l| l.trim().is_empty() || l.starts_with('#') || l.starts_with("<!--"))
        .take_while(|l| !l.trim().is_empty())
        .collect();
    (!para.is_empty()).then(|| para.join("\n"))
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_estimate() {
        assert_eq!(tokens(""), 0);
        assert_eq!(tokens("abcd"), 1);
        assert_eq!(tokens("abcde"), 2);
        assert_eq!(tokens("知识库"), 3);
    }

    #[test]
    fn clipping_fits_the_budget() {
        assert_eq!(clip_tokens("abcd", 1), "abcd");
        assert_eq!(clip_tokens("abcdefgh", 2), "abcdefgh");
        assert_eq!(clip_tokens("abcdefghi", 2), "abcd…");
        assert_eq!(clip_tokens("知识库搜索", 3), "知识…");
        assert_eq!(clip_tokens("知识库", 1), "");
        for max in 0..12 {
            assert!(tokens(&clip_tokens("The tokens of 知识库 and more words here", max)) <= max);
        }
    }
}
