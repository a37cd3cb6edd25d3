//! Validation beyond one entry's fields (seed 004 §3.3): per target file and
//! session, `(heading, level)` is unique and an entry without a level
//! collides with the same heading at any level; and the target itself must
//! be a text file whose heading the key names once, not twice.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::delta::{Entry, Op, Target};
use super::edit::{Doc, Found, Lookup};
use super::home::Home;

/// The identity of a target for grouping: resolved path or URL.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TargetKey {
    /// An absolute, lexically normalised path.
    Path(PathBuf),
    /// A URL as written.
    Url(String),
}

/// Resolves an entry's target.
pub fn target_key(home: &Home, e: &Entry) -> TargetKey {
    match &e.target {
        Target::Path(p) => TargetKey::Path(home.resolve(p)),
        Target::Url(u) => TargetKey::Url(u.clone()),
    }
}

/// The entries (by index) that repeat a key of an earlier entry of the same
/// target and session, each with its message.
pub fn duplicates(home: &Home, entries: &[Entry], default_source: Option<&str>) -> Vec<(usize, String)> {
    let mut seen: HashMap<(TargetKey, Option<String>), HashMap<&str, Earliest>> = HashMap::new();
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let src = e.source.clone().or_else(|| default_source.map(str::to_string));
        let first = seen.entry((target_key(home, e), src)).or_default().entry(e.heading.as_str()).or_default();
        if let Some(j) = first.clash(e.level) {
            let lvl = |l: Option<u8>| l.map_or("any level".to_string(), |l| format!("level {l}"));
            out.push((
                i,
                format!(
                    "duplicate heading \"{}\" ({}) for {}: entries[{j}] already declares it ({})",
                    e.heading,
                    lvl(e.level),
                    e.target_text(),
                    lvl(entries[j].level)
                ),
            ));
        }
        first.add(i, e.level);
    }
    out
}

/// The earliest entries declaring one heading of one target and session,
/// so that finding an entry's clash is a lookup, not a scan of the entries
/// before it.
#[derive(Default)]
struct Earliest {
    /// At any level.
    any: Option<usize>,
    /// Without a level.
    unlevelled: Option<usize>,
    /// At each level.
    at: BTreeMap<u8, usize>,
}

impl Earliest {
    /// The earliest entry a key at `level` collides with: an entry without
    /// a level collides with every level, and every level with it.
    fn clash(&self, level: Option<u8>) -> Option<usize> {
        match level {
            None => self.any,
            Some(l) => [self.unlevelled, self.at.get(&l).copied()].into_iter().flatten().min(),
        }
    }

    fn add(&mut self, i: usize, level: Option<u8>) {
        self.any.get_or_insert(i);
        match level {
            None => self.unlevelled.get_or_insert(i),
            Some(l) => self.at.entry(l).or_insert(i),
        };
    }
}

/// Reads a target Markdown file: `Ok(None)` when it does not exist yet, an
/// error message (naming the target as `shown`) when it is a directory,
/// unreadable, binary or not UTF-8.
pub fn read_target(path: &Path, shown: &str) -> Result<Option<String>, String> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => return Err(format!("{shown} is a directory, not a Markdown file")),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {shown}: {e}")),
    }
    // No link followed, no FIFO blocking.
    let bytes = crate::fs::nofollow::read(path, crate::library::scan::MAX_DOC_BYTES)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.contains(&0) {
        return Err(format!("{shown} is a binary file (it contains NUL bytes)"));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| format!("{shown} is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()))
}

/// The digest `base` records for a key in a document: `sha256:` of the
/// section's own bytes ([`Doc::own`]: heading and content, subsections
/// included, trailing blank lines not) when the heading is there once,
/// `absent` when not, `None` when ambiguous. Appending or deleting a
/// neighbour never changes it; editing the section or a subsection does.
pub fn base_of(outline: &Lookup, e: &Entry) -> Option<String> {
    let doc = outline.doc();
    match outline.find(&e.heading, e.level) {
        Found::Missing => Some("absent".into()),
        Found::One(i) => Some(digest(doc, doc.own(i))),
        Found::Many(_) => None,
    }
}

fn digest(doc: &Doc, (s, t): (usize, usize)) -> String {
    format!("sha256:{}", crate::doc::digest::sha256_hex(&doc.text.as_bytes()[s..t]))
}

/// Whether the key's section in `doc` is the one `base` was taken from.
/// Entries queued by earlier versions digested the body with its trailing
/// blank lines; that digest is accepted too, so they do not turn into
/// conflicts on upgrade.
pub fn base_matches(doc: &Doc, e: &Entry, base: &str) -> bool {
    match doc.find(&e.heading, e.level) {
        Found::Missing => base == "absent",
        Found::One(i) => {
            base.starts_with("sha256:") && (digest(doc, doc.own(i)) == base || digest(doc, doc.body(i)) == base)
        }
        Found::Many(_) => false,
    }
}

/// Checks one entry against the current target: the error an apply would
/// stage it with, if any (ambiguous heading). No-op entries always pass.
pub fn against(outline: &Lookup, e: &Entry) -> Option<String> {
    if e.op == Op::NoOp {
        return None;
    }
    match outline.find(&e.heading, e.level) {
        Found::Many(lines) => Some(ambiguous(e, &lines)),
        Found::One(i) => escaping_heading(e, outline.doc().heads[i].level),
        Found::Missing => escaping_heading(e, e.level.unwrap_or(2)),
    }
}

/// An `update` whose content holds a heading at the section's level or
/// higher would end the section early (and repeat itself on re-apply):
/// the message saying so, if it does.
pub fn escaping_heading(e: &Entry, section_level: u8) -> Option<String> {
    let content = e.content.as_deref().filter(|_| e.op == Op::Update)?;
    let h = super::outline::fragment_headings(content, 0).into_iter().find(|h| h.level <= section_level)?;
    Some(format!(
        "content of \"{}\" contains the heading \"{}\" at level {}, which would end the section (level {section_level}); \
         use deeper headings or a separate entry",
        e.heading, h.text, h.level
    ))
}

/// The message for a key that names several headings.
pub fn ambiguous(e: &Entry, lines: &[usize]) -> String {
    let lines: Vec<String> = lines.iter().map(usize::to_string).collect();
    format!(
        "heading \"{}\"{} is ambiguous in {}: it appears on lines {} (give a level or rename one)",
        e.heading,
        e.level.map_or(String::new(), |l| format!(" (level {l})")),
        e.target_text(),
        lines.join(", ")
    )
}
