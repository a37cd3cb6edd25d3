//! The relation graph `.library/.relations.jsonl` (seed 000 step 6): edges
//! from frontmatter `related:`, Markdown links between library files, the
//! notebooks named in frontmatter, and the notebooks that wrote or
//! referenced a file in the changelog. It is derived: the file is the sorted
//! set of all edges, so an incremental update and a full rebuild give the
//! same bytes.

use std::collections::BTreeSet;
use std::fs;

use serde::{Deserialize, Serialize};

use crate::doc::frontmatter;
use crate::doc::markdown;
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::library::changelog::{self, Event};
use crate::library::entry::Entry;
use crate::library::{self, Library};

/// The file's name under the library.
pub const FILE: &str = ".relations.jsonl";

/// One directed edge.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Edge {
    /// A library-relative path, or `notebook:<name>`.
    pub from: String,
    /// A library-relative path, `topic:<name>`, `notebook:<name>` or
    /// `library:<source>:<path>` (a file of an external library).
    pub to: String,
    /// `related` (frontmatter), `link` (Markdown), `source` (frontmatter
    /// notebook), `derived-from` (frontmatter of a promoted answer),
    /// `wrote` or `referenced` (changelog).
    pub kind: String,
}

/// Kinds derived from a document's own text; an update of the document
/// replaces exactly these edges (all have `from` = the document).
const DOC_KINDS: &[&str] = &["related", "link", "source", DERIVED_FROM];

/// The edge kind from a promoted answer to each file it cites (seed 001).
pub const DERIVED_FROM: &str = "derived-from";

/// The `to` of an edge to a file of another library: `library:NAME:PATH`.
pub fn external_node(source: &str, path: &str) -> String {
    format!("library:{source}:{path}")
}

/// A `derived-from` item: `(None, path)` for a local file, `(Some(source),
/// path)` for `SOURCE:PATH` (a source name has no `/` and is not `local`).
pub fn split_cite(item: &str) -> (Option<&str>, &str) {
    match item.split_once(':') {
        Some(("local", p)) => (None, p),
        Some((s, p)) if !s.is_empty() && !s.contains('/') => (Some(s), p),
        _ => (None, item),
    }
}

/// The edges a document's text declares.
pub fn doc_edges(entry: &Entry, text: &str) -> Vec<Edge> {
    let dir = entry.path.rsplit_once('/').map_or("", |(d, _)| d);
    let mut out = BTreeSet::new();
    for r in &entry.related {
        let to = if r.contains('/') || r.ends_with(".md") {
            match resolve(dir, r, r.starts_with("./") || r.starts_with("../")) {
                Some(p) => p,
                None => continue,
            }
        } else {
            format!("topic:{r}")
        };
        if to != entry.path {
            out.insert(Edge { from: entry.path.clone(), to, kind: "related".into() });
        }
    }
    let body = &text[frontmatter::body_start(text)..];
    for dest in markdown::links(body) {
        if dest.contains("://") || dest.starts_with("mailto:") || dest.starts_with('#') {
            continue;
        }
        let bare = dest.split(['#', '?']).next().unwrap_or("");
        if !bare.ends_with(".md") {
            continue;
        }
        if let Some(to) = resolve(dir, bare, !bare.starts_with('/')) {
            if to != entry.path {
                out.insert(Edge { from: entry.path.clone(), to, kind: "link".into() });
            }
        }
    }
    for nb in &entry.notebooks {
        out.insert(Edge { from: entry.path.clone(), to: format!("notebook:{nb}"), kind: "source".into() });
    }
    for item in &entry.derived_from {
        let to = match split_cite(item) {
            (None, p) => match resolve("", p, false) {
                Some(p) => p,
                None => continue,
            },
            (Some(s), p) => match library::normalise(p) {
                Ok(p) => external_node(s, &p),
                Err(_) => continue,
            },
        };
        if to != entry.path {
            out.insert(Edge { from: entry.path.clone(), to, kind: DERIVED_FROM.into() });
        }
    }
    out.into_iter().collect()
}

/// The edge a changelog event adds, if any.
pub fn event_edge(e: &Event) -> Option<Edge> {
    let nb = e.notebook.as_deref().filter(|n| !n.is_empty())?;
    let kind = match e.event.as_str() {
        "write" => "wrote",
        "referenced" => "referenced",
        _ => return None,
    };
    Some(Edge { from: format!("notebook:{nb}"), to: e.path.clone(), kind: kind.into() })
}

/// Resolves a link target against the linking document's directory (or the
/// library root for `/`-rooted links); `None` when it leaves the library.
fn resolve(dir: &str, target: &str, relative: bool) -> Option<String> {
    let target = target.trim_start_matches('/');
    let mut parts: Vec<&str> = if relative && !dir.is_empty() { dir.split('/').collect() } else { Vec::new() };
    for p in target.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    // A target that is no valid library path is no edge (a link, not an error).
    library::normalise(&joined).ok()
}

/// Renders edges as the file's bytes: sorted, deduplicated JSON lines.
pub fn render(edges: &BTreeSet<Edge>) -> String {
    let mut out = String::new();
    for e in edges {
        // Three strings: serialising cannot fail.
        out.push_str(&serde_json::to_string(e).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// Reads the file; `None` when any line is not an edge (then the caller
/// rebuilds instead of trusting it).
pub fn read(lib: &Library) -> Result<Option<BTreeSet<Edge>>> {
    let p = lib.path(FILE);
    let Some(bytes) = crate::fs::read::optional(&p)? else { return Ok(Some(BTreeSet::new())) };
    let Ok(text) = String::from_utf8(bytes) else { return Ok(None) };
    Ok(parse(&text))
}

/// Parses the file's text; `None` when it is torn (no final newline) or
/// any line is not an edge.
pub fn parse(text: &str) -> Option<BTreeSet<Edge>> {
    if !text.is_empty() && !text.ends_with('\n') {
        return None;
    }
    let mut set = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        set.insert(serde_json::from_str::<Edge>(line).ok()?);
    }
    Some(set)
}

/// All edges of a library: every document's own edges plus the edges of
/// every changelog event, including archived ones.
pub fn all_edges<'a>(docs: impl Iterator<Item = &'a [Edge]>, lib: &Library) -> Result<BTreeSet<Edge>> {
    let mut set: BTreeSet<Edge> = docs.flat_map(|d| d.iter().cloned()).collect();
    for e in history(lib)? {
        set.extend(event_edge(&e));
    }
    Ok(set)
}

/// Every event ever logged: the archives (oldest month first) then the log.
pub fn history(lib: &Library) -> Result<Vec<Event>> {
    let mut out = Vec::new();
    let archive = lib.path(".changelog-archive");
    let rd = match fs::read_dir(&archive) {
        Ok(rd) => Some(rd),
        // No archive yet: nothing was ever compacted.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(format!("reading {}", archive.display()), e)),
    };
    if let Some(rd) = rd {
        let mut files = Vec::new();
        for e in rd {
            let p = e.map_err(|e| Error::io(format!("reading {}", archive.display()), e))?.path();
            if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
        files.sort();
        for f in files {
            // An archive that cannot be read is history that would be
            // silently lost (used_by counts drop): refuse instead.
            let text = changelog::read_archive(&f)?;
            out.extend(changelog::parse(&text).events.into_iter().map(|(_, e)| e));
        }
    }
    out.extend(changelog::read(lib)?.events.into_iter().map(|(_, e)| e));
    Ok(out)
}

/// Applies a batch of changes incrementally: replaces the document-derived
/// edges of each changed document (`None` text = deleted) and adds the
/// edges of new events. Falls back to `rebuilt()` when the file cannot be
/// trusted. Callers hold the library lock. Returns whether the file changed.
pub fn update(
    lib: &Library,
    changed: &[(String, Vec<Edge>)],
    events: &[Event],
    rebuilt: impl FnOnce() -> Result<BTreeSet<Edge>>,
) -> Result<bool> {
    let set = match read(lib)? {
        Some(mut set) => {
            let paths: BTreeSet<&str> = changed.iter().map(|(p, _)| p.as_str()).collect();
            set.retain(|e| !(DOC_KINDS.contains(&e.kind.as_str()) && paths.contains(e.from.as_str())));
            for (_, edges) in changed {
                set.extend(edges.iter().cloned());
            }
            set.extend(events.iter().filter_map(event_edge));
            set
        }
        None => rebuilt()?,
    };
    atomic::write_if_changed(&lib.path(FILE), render(&set).as_bytes())
}
