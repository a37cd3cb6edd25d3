//! `kb-memgate reindex`: the notes are the truth (hand edits included);
//! INDEX.md and the search index are derived from them. Rows of notes that
//! still exist keep their place and take the note's values, rows of
//! missing notes go, notes without a row are appended by CreatedAt. A
//! corrupted INDEX.md is rebuilt whole. `--check` only reports.

use std::path::Path;

use serde::Serialize;

use super::audit::{self, Line};
use super::dense::Semantic;
use super::index_md::{self, Row};
use super::journal;
use super::store::{self, Loaded, Paths};
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::fs::journal::Recovered;
use crate::{clock, lock};

/// The `reindex` record (schemas/reindex.schema.json).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "reindex")]
pub struct Report {
    /// Notes read.
    pub notes: usize,
    /// Rows added for notes INDEX.md lacked.
    pub added: Vec<String>,
    /// Rows removed for notes that no longer exist.
    pub removed: Vec<String>,
    /// Rows whose cells disagreed with their note.
    pub changed: Vec<String>,
    /// Whether INDEX.md could not be read as the seed's table.
    pub corrupted: bool,
    /// Whether INDEX.md was (or, with --check, would be) rewritten.
    pub index_md: bool,
    /// Whether INDEX.md agrees with the notes.
    pub in_sync: bool,
    /// With a sentence encoder (`--model`): the notes whose vectors are
    /// now in `.dense.vec`, and how many of them were encoded anew.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vectors: Option<Vectors>,
}

/// What reindex did to the encoder's cache of vectors.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Vectors {
    /// Notes with a vector in the cache.
    pub notes: usize,
    /// Of them, encoded by this run (new, edited, or another model's cache).
    pub encoded: usize,
}

fn desired(old: &[Row], notes: &[Loaded]) -> (Vec<Row>, Vec<String>, Vec<String>, Vec<String>) {
    let by_id: std::collections::BTreeMap<&str, &Loaded> = notes.iter().map(|l| (l.note.id.as_str(), l)).collect();
    let (mut rows, mut removed, mut changed) = (Vec::new(), Vec::new(), Vec::new());
    for r in old {
        match by_id.get(r[0].as_str()) {
            Some(l) if !rows.iter().any(|x: &Row| x[0] == r[0]) => {
                let want = index_md::row(&l.note);
                if want != *r {
                    changed.push(r[0].clone());
                }
                rows.push(want);
            }
            Some(_) => changed.push(r[0].clone()),
            None => removed.push(r[0].clone()),
        }
    }
    let mut missing: Vec<&Loaded> = notes.iter().filter(|l| !rows.iter().any(|r| r[0] == l.note.id)).collect();
    missing.sort_by(|a, b| (&a.note.created_at, &a.note.id).cmp(&(&b.note.created_at, &b.note.id)));
    let added = missing.iter().map(|l| l.note.id.clone()).collect();
    rows.extend(missing.into_iter().map(|l| index_md::row(&l.note)));
    (rows, added, removed, changed)
}

/// Compares INDEX.md with the notes and, unless `check`, rewrites it and
/// the search index. Notes that cannot be read stop it before any write.
/// Unless `check`, it first finishes an apply a kill interrupted (the
/// `recovered` record) and sweeps dead writers' temp files. With `model`
/// (a sentence encoder's folder) it also writes the notes' vectors.
pub fn run(paths: &Paths, check: bool, model: Option<&Path>) -> Result<(Option<Recovered>, Report)> {
    // The model first: a missing or broken one is an error before any write.
    let encoder = model.map(super::dense::load).transpose()?;
    let body = || -> Result<Report> {
        let (notes, problems) = store::scan(paths)?;
        if !problems.is_empty() {
            let all: Vec<String> = problems.iter().map(ToString::to_string).collect();
            return Err(Error::msg(format!("cannot reindex: {}", all.join("; "))));
        }
        let mut ids: Vec<&str> = notes.iter().map(|l| l.note.id.as_str()).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::msg(format!("cannot reindex: two notes carry the Id {}", w[0])));
        }
        let text = store::read_index_md(paths)?;
        let (old, corrupted) = match index_md::parse(&text) {
            Ok(rows) => (rows, false),
            Err(_) => (Vec::new(), true),
        };
        let (rows, added, removed, changed) = desired(&old, &notes);
        let new_text = index_md::render(&rows);
        let rewrite = new_text != text;
        let mut report = Report {
            vectors: None,
            notes: notes.len(),
            in_sync: !corrupted && added.is_empty() && removed.is_empty() && changed.is_empty(),
            added,
            removed,
            changed,
            corrupted,
            index_md: rewrite,
        };
        if check {
            return Ok(report);
        }
        if rewrite {
            atomic::write(&paths.index_md, new_text.as_bytes())?;
            let line = Line {
                event: "memory_index_updated".into(),
                ts: clock::format(clock::now()?),
                conversation_id: None,
                generation_id: None,
                note_id: None,
                operation: "index".into(),
                source: "reindex".into(),
                file: "memory/INDEX.md".into(),
                reason: "reindex: INDEX.md regenerated from the notes".into(),
                digest_before: (!text.is_empty()).then(|| super::note::file_digest(text.as_bytes())),
                digest_after: Some(super::note::file_digest(new_text.as_bytes())),
                archived_to: None,
            };
            audit::append(paths, &[line])?;
        }
        let entries: Vec<_> = notes.iter().map(Loaded::entry).collect();
        store::write_index(paths, &entries)?;
        if let Some(encoder) = encoder {
            let index = store::open_index(paths)?;
            let view = index.view().ok_or_else(|| Error::msg("the search index just written does not read back"))?;
            let semantic = Semantic::with(paths, &view, encoder)?;
            semantic.write_cache(paths)?;
            report.vectors = Some(Vectors { notes: semantic.len(), encoded: semantic.encoded });
        }
        Ok(report)
    };
    if check {
        return Ok((None, body()?));
    }
    let lib = super::apply::lockable(paths)?;
    lock::with_lock(lib, &lock::Options::default(), || {
        let recovered = journal::recover(paths)?;
        journal::sweep(paths)?;
        Ok((recovered, body()?))
    })
}
