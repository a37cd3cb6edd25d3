//! Filing an answer (seed 001's `--promote-to-library`, kb-append's
//! `promote-answer`): an answer worth keeping is filed
//! back into the **local** library as a new page whose frontmatter records
//! its provenance — the library files it cites, each with its source
//! library and the SHA-256 it had — and lists them under `derived-from`,
//! which the relation graph turns into `derived-from` edges. External
//! libraries are strictly read-only: a cited external file is only read
//! (to prove it exists and to fingerprint it), through no symlink; the
//! page itself goes through the one writer (lock, guard, changelog,
//! indexes, relations, commit) like any other write.

use serde::Serialize;

use super::sources::{Source, LOCAL};
use crate::doc::{digest, frontmatter, yaml};
use crate::error::{Error, Result};
use crate::fs::nofollow;
use crate::library::kind;
use crate::library::relations::split_cite;
use crate::library::{self, Library};

/// The largest cited file read to fingerprint it.
const MAX_CITED_BYTES: u64 = 16 * 1024 * 1024;

/// One cited file, checked.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cite {
    /// `local` or the external library's name.
    pub library: String,
    /// Library-relative path in that library.
    pub path: String,
    /// Its SHA-256 when the answer was promoted.
    pub sha256: String,
}

impl Cite {
    /// The `derived-from` item: the path, or `SOURCE:PATH`.
    pub fn item(&self) -> String {
        if self.library == LOCAL {
            self.path.clone()
        } else {
            format!("{}:{}", self.library, self.path)
        }
    }
}

/// The `promoted` record (`schemas/promoted.schema.json`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "promoted")]
pub struct Promoted {
    /// The new page (local, library-relative).
    pub path: String,
    /// The files it derives from.
    pub cites: Vec<Cite>,
}

/// Checks every cited reference (`PATH`, `local:PATH` or `SOURCE:PATH`)
/// against the resolved sources: a document of that library, reached
/// through no symlink, readable. Nothing is written anywhere.
pub fn check_cites(sources: &[Source], cites: &[String]) -> Result<Vec<Cite>> {
    let mut out: Vec<Cite> = Vec::new();
    for raw in cites {
        let refused = |why: String| Error::msg(format!("refused: cited '{raw}': {why}"));
        let (name, p) = split_cite(raw);
        let name = name.unwrap_or(LOCAL);
        let src = sources.iter().find(|s| s.name == name).ok_or_else(|| {
            let known: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
            refused(format!("no library named '{name}' (known: {})", known.join(", ")))
        })?;
        let path = library::normalise(p).map_err(|e| refused(e.to_string()))?;
        if !kind::kind(&path).is_content() {
            return Err(refused("not a document (logs, indexes and tool files cannot be cited)".into()));
        }
        nofollow::check_chain(&src.lib.dir, &path)
            .map_err(|e| refused(e.trim_start_matches("refused: ").to_string()))?;
        let bytes = nofollow::read(&src.lib.path(&path), MAX_CITED_BYTES)
            .map_err(|e| refused(format!("cannot read it in library '{name}': {e}")))?;
        let c = Cite { library: name.to_string(), path, sha256: digest::sha256_hex(&bytes) };
        if !out.iter().any(|o| o.library == c.library && o.path == c.path) {
            out.push(c);
        }
    }
    if out.is_empty() {
        return Err(Error::usage("promote-answer needs at least one --cites PATH (the files the answer rests on)"));
    }
    Ok(out)
}

/// The provenance block of the page's frontmatter.
#[derive(Serialize)]
struct Provenance<'a> {
    promoted_at: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    question: Option<&'a str>,
    cites: &'a [Cite],
}

/// The page's frontmatter fields, in this order.
#[derive(Serialize)]
struct Front<'a> {
    topic: &'a str,
    #[serde(rename = "type")]
    doc_type: &'a str,
    source: &'a str,
    quality_status: &'a str,
    #[serde(rename = "derived-from")]
    derived_from: Vec<String>,
    provenance: Provenance<'a>,
}

/// The new page: frontmatter (topic, type `answer`, source `kb-query`,
/// quality_status `provisional`, `derived-from`, `provenance`) then the
/// answer. An answer that brings its own frontmatter is refused: the
/// provenance must be the one recorded here.
pub fn page(
    path: &str,
    answer: &str,
    cites: &[Cite],
    question: Option<&str>,
    topic: Option<&str>,
    now: &str,
) -> Result<String> {
    if frontmatter::locate(answer).is_some() {
        return Err(Error::usage(
            "the answer has its own frontmatter; give plain Markdown (promote-answer writes the provenance)",
        ));
    }
    if answer.trim().is_empty() {
        return Err(Error::usage("the answer is empty"));
    }
    let stem = path.rsplit('/').next().unwrap_or(path).trim_end_matches(".md");
    let front = Front {
        topic: topic.unwrap_or(stem),
        doc_type: "answer",
        source: "kb-query",
        quality_status: "provisional",
        derived_from: cites.iter().map(Cite::item).collect(),
        provenance: Provenance { promoted_at: now, question, cites },
    };
    let y = yaml::to_string(&front)?;
    let y = y.strip_prefix("---\n").unwrap_or(&y);
    Ok(format!("---\n{}---\n\n{}\n", y, answer.trim_end()))
}

/// Refuses a target `PATH` written as `SOURCE:PATH` for an external
/// library: the page goes into the local library only (seed 001).
pub fn check_target(sources: &[Source], path: &str) -> Result<()> {
    if let (Some(name), _) = split_cite(path) {
        if sources.iter().any(|s| s.external && s.name == name) {
            return Err(Error::msg(format!(
                "refused: '{path}' names the external library '{name}'; external libraries are read-only, \
                 a promoted answer goes into the local library"
            )));
        }
    }
    Ok(())
}

/// Whether `path` already holds a file in the local library (a promotion
/// makes a new page; it never replaces one).
pub fn exists(lib: &Library, path: &str) -> bool {
    std::fs::symlink_metadata(lib.path(path)).is_ok()
}
