//! The tier-2 snippet a person reads: the paragraph of the document that
//! holds the most of the query's terms (not its first paragraph), cut to
//! the snippet length around the first match, and where in it the
//! query's words are, so the table can mark them.

use std::collections::HashSet;
use std::ops::Range;

use super::query::Query;
use crate::text;
use crate::text::terms;

/// The terms a passage is matched by: the query's BM25 terms and its
/// prefixes.
pub struct Matcher {
    terms: HashSet<String>,
    prefixes: Vec<String>,
}

impl Matcher {
    /// The matcher of a query.
    pub fn new(q: &Query) -> Matcher {
        Matcher { terms: q.terms.iter().cloned().collect(), prefixes: q.prefixes.clone() }
    }

    /// Whether a folded token is a query term (its stem, or a prefix of it).
    fn hits(&self, token: &str) -> bool {
        self.terms.contains(&terms::stem(token)) || self.prefixes.iter().any(|p| token.starts_with(p.as_str()))
    }

    /// The byte ranges of `s` that match: whole words, or for CJK text
    /// each matching two-character run (merged when they touch).
    pub fn marks(&self, s: &str) -> Vec<Range<usize>> {
        let mut out: Vec<Range<usize>> = Vec::new();
        let mut push = |r: Range<usize>| match out.last_mut() {
            Some(last) if last.end >= r.start => last.end = last.end.max(r.end),
            _ => out.push(r),
        };
        let chars: Vec<(usize, char)> = s.char_indices().collect();
        let end_of = |i: usize| chars.get(i).map_or(s.len(), |c| c.0);
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i].1;
            if text::is_cjk(c) {
                if let Some(&(_, d)) = chars.get(i + 1).filter(|(_, d)| text::is_cjk(*d)) {
                    if self.terms.contains(&text::tokens(&format!("{c}{d}")).concat()) {
                        push(chars[i].0..end_of(i + 2));
                    }
                }
                i += 1;
                continue;
            }
            if !c.is_alphanumeric() {
                i += 1;
                continue;
            }
            let start = i;
            while i < chars.len() && (chars[i].1.is_alphanumeric() || chars[i].1 == '_') && !text::is_cjk(chars[i].1) {
                i += 1;
            }
            let word = &s[chars[start].0..end_of(i)];
            if text::tokens(word).iter().any(|t| self.hits(t)) {
                push(chars[start].0..end_of(i));
            }
        }
        out
    }
}

/// The paragraph of `body` (blank-line separated, headings and comments
/// left out) holding the most distinct query terms, cut to `max`
/// characters around its first match; None when no paragraph holds one.
pub fn best(body: &str, m: &Matcher, max: usize) -> Option<String> {
    let mut best: Option<(usize, &str)> = None;
    for para in paragraphs(body) {
        let mut held: HashSet<String> = HashSet::new();
        text::each_token(para, |t| {
            if m.hits(t) {
                held.insert(terms::stem(t));
            }
        });
        if held.len() > best.map_or(0, |b| b.0) {
            best = Some((held.len(), para));
        }
    }
    let (_, para) = best?;
    let para = para.trim();
    if para.chars().count() <= max {
        return Some(para.to_string());
    }
    // Start a little before the first match, at a word's start.
    let first = m.marks(para).first().map_or(0, |r| r.start);
    let lead = para[..first].char_indices().rev().nth(max / 4).map_or(0, |(i, _)| i);
    let start = para[lead..].find(char::is_whitespace).filter(|_| lead > 0).map_or(lead, |k| lead + k + 1);
    let body: String = para[start..].chars().take(max).collect();
    let tail = if start + body.len() < para.len() { "…" } else { "" };
    Some(format!("{}{body}{tail}", if start > 0 { "…" } else { "" }))
}

/// The paragraphs of a Markdown body: blank-line separated blocks,
/// without heading lines and HTML comments.
fn paragraphs(body: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut end = 0;
    let mut at = 0;
    for line in body.split_inclusive('\n') {
        let t = line.trim();
        let skip = t.is_empty() || t.starts_with('#') || t.starts_with("<!--");
        if skip {
            if let Some(s) = start.take() {
                out.push(&body[s..end]);
            }
        } else {
            start.get_or_insert(at);
            end = at + line.len();
        }
        at += line.len();
    }
    if let Some(s) = start {
        out.push(&body[s..end]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_paragraph_and_its_marks() {
        let q = Query::parse("connection pooling 索引").unwrap();
        let m = Matcher::new(&q);
        let body = "# Pools\r\n\r\nDefaults first.\r\n\r\nConnection pooling keeps connections.\r\n\r\n知识库使用倒排索引。\r\n";
        assert_eq!(best(body, &m, 400).as_deref(), Some("Connection pooling keeps connections."));
        let s = "Connection pooling: 倒排索引";
        let marked: Vec<&str> = m.marks(s).into_iter().map(|r| &s[r]).collect();
        assert_eq!(marked, ["Connection", "pooling", "索引"]);
        assert_eq!(best("# Only a title\n\nNothing here.\n", &m, 400), None);
    }
}
