//! The four operations of seed 004 §4 as byte edits on one Markdown text:
//! update replaces a section's body (or appends the heading), clear empties
//! it, delete removes heading and body, no-op touches nothing.
//!
//! A section is its heading's lines plus everything up to the next heading
//! of the same or a higher level (subsections included), or to the end of
//! the text. The blank lines just before that next heading are the
//! section's own: nothing else owns them, so deleting a section removes
//! exactly `start..end` and leaves the previous section's blank lines — also
//! at the end of the file. Every byte outside the edited section stays as
//! it was; update and clear keep the blank lines that frame the old body,
//! so re-applying the same delta changes nothing.

use std::collections::HashMap;

use super::outline::{self, Heading};

/// A Markdown text and its outline, kept in step across edits.
#[derive(Debug, Clone)]
pub struct Doc {
    /// The whole file text, BOM included.
    pub text: String,
    /// Its top-level headings.
    pub heads: Vec<Heading>,
    eol: &'static str,
    /// Re-parse the whole text after every edit instead of only the
    /// inserted fragment (the reference behaviour the fast path must match).
    pub exhaustive: bool,
}

/// Where a heading key points in a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// No heading has this text (and level).
    Missing,
    /// Exactly one heading, by index.
    One(usize),
    /// Several headings match: the key is ambiguous (1-based line numbers).
    Many(Vec<usize>),
}

impl Doc {
    /// Parses a text into a document.
    pub fn new(text: String, exhaustive: bool) -> Doc {
        let heads = outline::headings(&text);
        let eol = outline::eol_of(&text);
        Doc { text, heads, eol, exhaustive }
    }

    /// Finds the heading a key names.
    pub fn find(&self, heading: &str, level: Option<u8>) -> Found {
        found(outline::matches(&self.heads, heading, level), |i| self.line_of(self.heads[i].start))
    }

    /// 1-based line number of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        self.text.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1
    }

    /// The body of heading `i`: from the end of its heading line to the
    /// next heading of the same or a higher level.
    pub fn body(&self, i: usize) -> (usize, usize) {
        (self.heads[i].end, outline::section_end(&self.heads, i, self.text.len()))
    }

    /// Replaces the body of heading `i` with `content` (already without
    /// trailing newlines), keeping the blank lines that framed the old body.
    pub fn update(&mut self, i: usize, content: &str) -> bool {
        let (bs, se) = self.body(i);
        let body = &self.text[bs..se];
        let (lead, trail) = frame(body);
        // A body keeps its own line ending (files can mix them).
        let eol = if body[lead..].contains('\n') { outline::eol_of(&body[lead..]) } else { self.eol };
        let core = core_of(content, eol);
        let at_eof = se == self.text.len();
        let mut new = String::new();
        if lead < trail {
            new.push_str(&body[..lead]);
            new.push_str(&core);
            new.push_str(&body[trail..]);
        } else {
            if !self.text[..bs].ends_with('\n') {
                new.push_str(eol);
            }
            new.push_str(eol);
            new.push_str(&core);
            if !at_eof {
                new.push_str(eol);
            }
        }
        if at_eof && !self.text.ends_with('\n') && new.ends_with('\n') {
            new.truncate(new.len() - eol.len());
        }
        self.splice(bs, se, &new)
    }

    /// Empties the body of heading `i`, keeping one separating blank line
    /// when another heading follows.
    pub fn clear(&mut self, i: usize) -> bool {
        let (bs, se) = self.body(i);
        let body = &self.text[bs..se];
        let (lead, trail) = frame(body);
        if lead >= trail {
            return false;
        }
        let new = if se == self.text.len() { String::new() } else { body[trail..].to_string() };
        self.splice(bs, se, &new)
    }

    /// The section's own bytes: its heading line(s) up to the end of its
    /// last line that is not blank, without that line's break. What lies
    /// after (its trailing blank lines, the final line break) changes when
    /// a neighbour is appended or deleted; what lies inside changes only
    /// when this section (or a subsection) is edited. `base` digests this.
    pub fn own(&self, i: usize) -> (usize, usize) {
        let start = self.heads[i].start;
        let mut end = outline::section_end(&self.heads, i, self.text.len());
        loop {
            let s = &self.text[start..end];
            let line = s.strip_suffix('\n').map_or(s, |t| t.strip_suffix('\r').unwrap_or(t));
            let from = line.rfind('\n').map_or(0, |p| p + 1);
            if from > 0 && line[from..].trim().is_empty() {
                end = start + from;
            } else {
                return (start, start + line.len());
            }
        }
    }

    /// Removes heading `i` and its whole section, subsections and own
    /// trailing blank lines included: exactly `start..end`, so the text
    /// becomes the bytes before the heading followed by the bytes after
    /// the section (the previous section keeps its blank lines).
    pub fn delete(&mut self, i: usize) -> bool {
        let (_, se) = self.body(i);
        self.splice(self.heads[i].start, se, "")
    }

    /// Appends a new heading (with `content` as its body, may be empty) at
    /// the end of the file, separated by one blank line.
    pub fn append(&mut self, heading: &str, level: u8, content: &str) -> bool {
        let core = core_of(content, self.eol);
        let len = self.text.len();
        let body = &self.text[outline::bom_len(&self.text)..];
        let mut new = String::new();
        if !body.is_empty() {
            if !body.ends_with('\n') {
                new.push_str(self.eol);
                new.push_str(self.eol);
            } else if !last_line_blank(body) {
                new.push_str(self.eol);
            }
        }
        new.push_str(&"#".repeat(level as usize));
        new.push(' ');
        new.push_str(heading);
        if heading.ends_with('#') {
            new.push_str(" #");
        }
        new.push_str(self.eol);
        if !core.is_empty() {
            new.push_str(self.eol);
            new.push_str(&core);
        }
        self.splice(len, len, &new)
    }

    /// Replaces `start..end` with `new` and brings the outline up to date:
    /// headings inside the range go, the fragment's own headings come in,
    /// later ones shift. Returns whether the text changed.
    fn splice(&mut self, start: usize, end: usize, new: &str) -> bool {
        if &self.text[start..end] == new {
            return false;
        }
        self.text.replace_range(start..end, new);
        if self.exhaustive {
            self.heads = outline::headings(&self.text);
            return true;
        }
        let delta = new.len() as isize - (end - start) as isize;
        let first = self.heads.partition_point(|h| h.start < start);
        let after = self.heads.partition_point(|h| h.start < end.max(start + usize::from(start == end)));
        let after = if start == end { first } else { after };
        let mut tail: Vec<Heading> = self.heads.split_off(after);
        self.heads.truncate(first);
        if let Some(h) = self.heads.last_mut() {
            // A heading that ended the file without a line break gains one.
            if h.end == start && start > 0 && !self.text[..start].ends_with('\n') {
                h.end = self.text[start..].find('\n').map_or(self.text.len(), |i| start + i + 1);
            }
        }
        self.heads.extend(outline::fragment_headings(new, start));
        for h in &mut tail {
            h.start = (h.start as isize + delta) as usize;
            h.end = (h.end as isize + delta) as usize;
        }
        self.heads.extend(tail);
        true
    }

    /// Whether the incremental outline equals a fresh parse (the fast path
    /// is trusted only when this holds).
    pub fn consistent(&self) -> bool {
        self.heads == outline::headings(&self.text)
    }
}

/// A heading index over a document that is not being edited, so that
/// looking up every entry of a delta costs one pass over the text, not one
/// pass per entry (`plan` validates tens of thousands of entries against
/// one file). [`Lookup::find`] answers exactly as [`Doc::find`].
pub struct Lookup<'a> {
    doc: &'a Doc,
    by_text: HashMap<&'a str, Vec<usize>>,
    /// Byte offsets of the text's line breaks, for line numbers.
    breaks: Vec<usize>,
}

impl<'a> Lookup<'a> {
    /// Indexes `doc`'s headings by text.
    pub fn new(doc: &'a Doc) -> Lookup<'a> {
        let mut by_text: HashMap<&str, Vec<usize>> = HashMap::with_capacity(doc.heads.len());
        for (i, h) in doc.heads.iter().enumerate() {
            by_text.entry(h.text.as_str()).or_default().push(i);
        }
        let breaks = memchr::memchr_iter(b'\n', doc.text.as_bytes()).collect();
        Lookup { doc, by_text, breaks }
    }

    /// The document indexed.
    pub fn doc(&self) -> &'a Doc {
        self.doc
    }

    /// Finds the heading a key names, as [`Doc::find`] does.
    pub fn find(&self, heading: &str, level: Option<u8>) -> Found {
        let same = self.by_text.get(heading).map_or(&[][..], Vec::as_slice);
        let m = same.iter().copied().filter(|&i| level.is_none_or(|l| l == self.doc.heads[i].level)).collect();
        found(m, |i| self.breaks.partition_point(|&b| b < self.doc.heads[i].start) + 1)
    }
}

/// What the matching heading indexes `m` (in document order) make of a
/// key; `line` gives a heading's 1-based line for an ambiguous key.
fn found(m: Vec<usize>, line: impl Fn(usize) -> usize) -> Found {
    match m.len() {
        0 => Found::Missing,
        1 => Found::One(m[0]),
        _ => Found::Many(m.into_iter().map(line).collect()),
    }
}

/// Content as the body it becomes: no leading or trailing blank lines,
/// no final line break; spaces at the end of the last line are kept (a
/// re-applied body must come back byte for byte).
pub fn normalise_content(content: &str) -> String {
    let mut start = 0;
    for line in content.split_inclusive('\n') {
        if line.ends_with('\n') && line.trim().is_empty() {
            start += line.len();
        } else {
            break;
        }
    }
    let mut c = &content[start..];
    loop {
        let t = c.trim_end_matches(['\n', '\r']);
        let last = t.rfind('\n').map_or(0, |i| i + 1);
        if t.len() < c.len() && !t.is_empty() && t[last..].trim().is_empty() {
            c = &t[..last];
        } else if t[last..].trim().is_empty() {
            return String::new();
        } else {
            return t.to_string();
        }
    }
}

/// A content string as body lines ending in `eol`, with one final line
/// break (empty stays empty). Content that brings its own CR LF keeps it.
fn core_of(content: &str, eol: &str) -> String {
    let c = normalise_content(content);
    if c.is_empty() {
        return c;
    }
    let mut s = if eol == "\r\n" && !c.contains('\r') { c.replace('\n', "\r\n") } else { c };
    s.push_str(eol);
    s
}

/// `(lead, trail)`: the end of the blank lines that open a body and the
/// start of those that close it. `lead >= trail` means the body is blank.
fn frame(body: &str) -> (usize, usize) {
    let mut lead = 0;
    for line in body.split_inclusive('\n') {
        if line.trim().is_empty() {
            lead += line.len();
        } else {
            break;
        }
    }
    if lead >= body.len() {
        return (body.len(), body.len());
    }
    let mut trail = body.len();
    loop {
        let cut = if body[..trail].ends_with('\n') { trail - 1 } else { trail };
        let prev = body[..cut].rfind('\n').map_or(0, |p| p + 1);
        if prev < trail && body[prev..trail].trim().is_empty() && prev >= lead {
            if prev == trail {
                break;
            }
            trail = prev;
        } else {
            break;
        }
    }
    (lead, trail)
}

fn last_line_blank(text: &str) -> bool {
    let t = text.strip_suffix('\n').unwrap_or(text);
    let t = t.strip_suffix('\r').unwrap_or(t);
    t.is_empty() || t.ends_with('\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, f: impl Fn(&mut Doc) -> bool) -> String {
        let mut fast = Doc::new(text.to_string(), false);
        let mut slow = Doc::new(text.to_string(), true);
        let changed = f(&mut fast);
        f(&mut slow);
        assert_eq!(changed, fast.text != text);
        if !fast.consistent() {
            // The inserted text changed how later text parses: apply falls
            // back to the exhaustive result, which defines the outcome.
            eprintln!("fallback: {text:?}");
            return slow.text;
        }
        assert_eq!(fast.text, slow.text);
        fast.text
    }

    #[test]
    fn update_keeps_frame_and_is_idempotent() {
        let t = "# T\n\n## A\n\nold\n\n## B\nb\n";
        let once = run(t, |d| d.update(1, "new\n"));
        assert_eq!(once, "# T\n\n## A\n\nnew\n\n## B\nb\n");
        assert_eq!(run(&once, |d| d.update(1, "new")), once);
        let crlf = run("## A\r\nold\r\n", |d| d.update(0, "x\ny"));
        assert_eq!(crlf, "## A\r\nx\r\ny\r\n");
        assert_eq!(run("## A", |d| d.update(0, "x")), "## A\n\nx");
        assert_eq!(run("## A\n\n## B\n", |d| d.update(0, "x")), "## A\n\nx\n\n## B\n");
    }

    #[test]
    fn own_bytes_stop_at_the_last_line_that_is_not_blank() {
        let own = |t: &str, i: usize| {
            let d = Doc::new(t.to_string(), true);
            let (s, e) = d.own(i);
            t[s..e].to_string()
        };
        assert_eq!(own("## A\n\na\n\n", 0), "## A\n\na");
        assert_eq!(own("## A\r\n\r\na  \r\n \t\r\n\r\n## B", 0), "## A\r\n\r\na  ");
        assert_eq!(own("## A\n", 0), "## A");
        assert_eq!(own("## A\na\n### B\nb\n\n## C", 0), "## A\na\n### B\nb");
        assert_eq!(own("A\n-\n\n", 0), "A\n-");
        // A neighbour appended or deleted does not move them.
        let t = "## A\n\na\n";
        let mut d = Doc::new(t.to_string(), true);
        d.append("N", 2, "n");
        assert_eq!(&d.text[..d.own(0).1], "## A\n\na");
        d.delete(1);
        assert_eq!(&d.text[..d.own(0).1], "## A\n\na");
    }

    #[test]
    fn content_normalisation() {
        assert_eq!(normalise_content("\n \nx  \ny\n\n  \n"), "x  \ny");
        assert_eq!(normalise_content("a\r\nb\r\n"), "a\r\nb");
        assert_eq!(normalise_content(" \n\n"), "");
    }

    #[test]
    fn clear_delete_append() {
        let t = "# T\n\n## A\n\nold\n\n## B\nb\n";
        assert_eq!(run(t, |d| d.clear(1)), "# T\n\n## A\n\n## B\nb\n");
        assert_eq!(run(t, |d| d.delete(1)), "# T\n\n## B\nb\n");
        assert_eq!(run(t, |d| d.delete(2)), "# T\n\n## A\n\nold\n\n");
        assert_eq!(run("## A\r\n\r\na\r\n\r\n## B\r\nb", |d| d.delete(1)), "## A\r\n\r\na\r\n\r\n");
        assert_eq!(run("x", |d| d.append("N", 2, "c")), "x\n\n## N\n\nc\n");
        assert_eq!(run("", |d| d.append("C#", 3, "")), "### C# #\n");
        assert_eq!(run("\u{feff}", |d| d.append("N", 2, "c")), "\u{feff}## N\n\nc\n");
    }

    /// Random documents from tricky pieces and random edits: the
    /// incremental outline matches a full parse, re-applying an update or
    /// a body's own content changes nothing.
    #[test]
    fn random_edits_match_full_reparse_and_are_idempotent() {
        let pieces = [
            "# T\n",
            "## A\n",
            "### A\n",
            "## B ##\n",
            "Setext\n---\n",
            "\n",
            "text\n",
            "```\n# x\n```\n",
            "> # q\n",
            "- item\n",
            "## C#\n",
            "para  \n",
            "\r\n",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..400 {
            let text: String = (0..next(14)).map(|_| pieces[next(pieces.len())]).collect();
            let heads = outline::headings(&text);
            if heads.is_empty() {
                continue;
            }
            let i = next(heads.len());
            // The index answers every key (and level) as the scan does.
            let doc = Doc::new(text.clone(), true);
            let outline = Lookup::new(&doc);
            for h in &heads {
                for level in [None, Some(h.level), Some(h.level % 6 + 1)] {
                    assert_eq!(outline.find(&h.text, level), doc.find(&h.text, level), "{text:?}");
                }
            }
            assert_eq!(outline.find("no such heading", None), Found::Missing);
            // A body re-applied as content comes back byte for byte.
            let end = outline::section_end(&heads, i, text.len());
            let body = text[heads[i].end..end].to_string();
            if !body.trim().is_empty() {
                let mut d = Doc::new(text.clone(), false);
                assert!(!d.update(i, &body), "{text:?} / {body:?}");
            }
            let op = next(4);
            let content = ["x", "#### New\ny", "```\n# in\n```", "a\n\nb"][next(4)];
            let once = run(&text, |d| match op {
                0 => d.update(i, content),
                1 => d.clear(i),
                2 => d.delete(i),
                _ => d.append("Z", 2, content),
            });
            if op < 2 {
                let again = run(&once, |d| {
                    let j = outline::matches(&d.heads, &heads[i].text, Some(heads[i].level));
                    match (op, j.as_slice()) {
                        (0, [j]) => d.update(*j, content),
                        (1, [j]) => d.clear(*j),
                        _ => false,
                    }
                });
                assert_eq!(again, once, "{text:?} op {op}");
            }
        }
    }
}
