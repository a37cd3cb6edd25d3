//! The `finding` record: path, line, column, rule id,
//! category, severity, the matched text (truncated as the seed's
//! `m[0].slice(0, 80)`), and where in the document it sits (`context`).

use serde::Serialize;

use super::rules::Severity;

/// Longest matched text a finding carries, in characters (the seed's 80).
pub const MATCH_CHARS: usize = 80;

/// Where a finding sits in its document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Context {
    /// Inside a Markdown document's YAML frontmatter.
    Frontmatter,
    /// Markdown text outside code blocks, or a plain text file.
    Prose,
    /// A fenced code block, or a source/script/config file.
    Code,
    /// The file as a whole (structure, binaries, encodings).
    File,
}

/// Why a finding's severity was lowered from the rule's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Lowered {
    /// The rule's severity before lowering.
    pub from: Severity,
    /// `benign use` (a rule's benign shape) or `cautionary prose`.
    pub why: &'static str,
}

/// One thing the guard found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "record", rename = "finding")]
pub struct Finding {
    /// The file, as given or found under a scanned directory.
    pub path: String,
    /// 1-based line (0 for whole-directory structure findings).
    pub line: usize,
    /// 1-based character column in the normalised line.
    pub column: usize,
    /// The rule id.
    pub rule: String,
    /// The rule's category.
    pub category: String,
    /// The severity that counts for the verdict.
    pub severity: Severity,
    /// The rule's description.
    pub description: String,
    /// The matched text, at most 80 characters.
    pub matched: String,
    /// frontmatter, prose, code or file.
    pub context: Context,
    /// Set when the severity is lower than the rule's, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lowered: Option<Lowered>,
    /// `base64` when the match is inside a decoded payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decoded: Option<&'static str>,
    /// True when normalisation changed the line (the column counts the
    /// normalised text).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(rename = "normalized")]
    pub normalised: bool,
    /// The policy suppression's reason, when one applies (not counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<String>,
    /// A policy suppression that would apply but has expired.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expired_suppression: Option<String>,
}

impl Finding {
    /// Whether the finding counts toward the verdict.
    pub fn counts(&self) -> bool {
        self.suppressed.is_none()
    }
}

/// Cuts `s` to [`MATCH_CHARS`] characters.
pub fn truncate(s: &str) -> String {
    match s.char_indices().nth(MATCH_CHARS) {
        Some((i, _)) => s[..i].to_string(),
        None => s.to_string(),
    }
}

/// The lines of `text` as `text.split('\n')` gives them, the newlines
/// found by the memchr crate's vector search (the standard library's,
/// behind `split`, reads a word at a time: a few percent of a library
/// scan).
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', text.as_bytes()).chain([text.len()]).map(move |end| {
        let line = &text[start..end];
        start = end + 1;
        line
    })
}

/// Byte offsets of line starts, to turn match offsets into lines.
pub struct LineIndex {
    newlines: Vec<usize>,
    len: usize,
}

impl LineIndex {
    /// Indexes `hay` (one pass).
    pub fn new(hay: &[u8]) -> LineIndex {
        let newlines = memchr::memchr_iter(b'\n', hay).collect();
        LineIndex { newlines, len: hay.len() }
    }

    /// The 1-based line holding byte `at`, and that line's byte span
    /// (without its `\n`).
    pub fn locate(&self, at: usize) -> (usize, usize, usize) {
        let i = self.newlines.partition_point(|&n| n < at);
        let start = if i == 0 { 0 } else { self.newlines[i - 1] + 1 };
        let end = self.newlines.get(i).copied().unwrap_or(self.len);
        (i + 1, start, end)
    }

    /// The byte span (without its `\n`) of 1-based line `line`.
    pub fn span(&self, line: usize) -> (usize, usize) {
        let start = if line <= 1 { 0 } else { self.newlines.get(line - 2).map_or(self.len, |n| n + 1) };
        let end = self.newlines.get(line.saturating_sub(1)).copied().unwrap_or(self.len);
        (start, end.max(start))
    }

    /// Number of lines.
    pub fn lines(&self) -> usize {
        self.newlines.len() + 1
    }
}

const CODE_EXTENSIONS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "bat",
    "cmd",
    "py",
    "rb",
    "pl",
    "php",
    "js",
    "mjs",
    "cjs",
    "ts",
    "tsx",
    "jsx",
    "go",
    "rs",
    "java",
    "kt",
    "c",
    "h",
    "cc",
    "cpp",
    "hpp",
    "cs",
    "swift",
    "lua",
    "r",
    "sql",
    "json",
    "yaml",
    "yml",
    "toml",
    "ini",
    "cfg",
    "conf",
    "xml",
    "html",
    "htm",
    "css",
    "dockerfile",
    "mk",
    "makefile",
    "env",
    "service",
];

/// How a file's lines are classified, from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocKind {
    /// Markdown: frontmatter, prose and fenced code.
    Markdown,
    /// Source, script or configuration: all code.
    Code,
    /// Anything else: all prose.
    Text,
}

/// The document kind of `path` (stdin and unknown names read as Markdown,
/// the library's format).
pub fn doc_kind(path: &str) -> DocKind {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let ext = match name.rsplit_once('.') {
        Some((_, e)) => e.to_string(),
        None if name == "-" || name.is_empty() => return DocKind::Markdown,
        None => name.clone(),
    };
    match ext.as_str() {
        "md" | "markdown" | "mdx" | "-" => DocKind::Markdown,
        e if CODE_EXTENSIONS.contains(&e) => DocKind::Code,
        _ => DocKind::Text,
    }
}

/// The context of every line of `text` (index 0 = line 1).
pub fn line_contexts(kind: DocKind, text: &str) -> Vec<Context> {
    match kind {
        DocKind::Code => return vec![Context::Code; memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1],
        DocKind::Text => return vec![Context::Prose; memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1],
        DocKind::Markdown => {}
    }
    let fm_end_line =
        crate::doc::frontmatter::locate(text).map_or(0, |(_, _, body)| text[..body].matches('\n').count());
    let mut fence: Option<(u8, usize)> = None;
    let mut out = Vec::new();
    for (i, line) in lines(text).enumerate() {
        if i < fm_end_line {
            out.push(Context::Frontmatter);
            continue;
        }
        let t = line.trim_start_matches(' ');
        let indent = line.len() - t.len();
        let run = |c: u8| t.bytes().take_while(|&b| b == c).count();
        let opener = [b'`', b'~'].into_iter().map(|c| (c, run(c))).find(|&(_, n)| n >= 3);
        match (fence, opener) {
            (None, Some((c, n))) if indent <= 3 => {
                fence = Some((c, n));
                out.push(Context::Code);
            }
            (Some((c, n)), Some((c2, n2))) if c == c2 && n2 >= n && t[n2..].trim().is_empty() => {
                fence = None;
                out.push(Context::Code);
            }
            (Some(_), _) => out.push(Context::Code),
            (None, _) => out.push(Context::Prose),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `lines` gives what `split('\n')` gives: empty texts and lines,
    /// a final newline, CRLF kept, any script.
    #[test]
    fn lines_are_split_on_newlines() {
        for text in ["", "\n", "a", "a\n", "\na\n\nb", "a\r\nb\r\n", "中文\n行\nmore é", "\n\n\n"] {
            assert_eq!(lines(text).collect::<Vec<_>>(), text.split('\n').collect::<Vec<_>>(), "{text:?}");
        }
    }
}
