//! effectiveness_mark uniqueness (seed 000 `--rebuild-index`): within one
//! scope — the references of a topic, or the experiences of one type and
//! semantic name — at most one document carries `effectiveness_mark: true`.
//! The one with the latest last_verified_at keeps it (ties: the higher
//! version, then the smaller path); the others are cleared under the lock.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Serialize;

use crate::clock;
use crate::library::entry::{Category, Entry};

/// A mark that must be cleared because another document in its scope keeps it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Violation {
    /// Always `mark-cleared`.
    pub record: &'static str,
    /// The document whose mark is cleared.
    pub path: String,
    /// The document that keeps the mark.
    pub kept: String,
    /// `reference:<topic>` or `experience:<type>/<semantic>`.
    pub scope: String,
}

fn scope(e: &Entry) -> Option<String> {
    match e.category {
        Category::Reference => Some(format!("reference:{}", e.topic)),
        Category::Experience => Some(format!(
            "experience:{}/{}",
            e.doc_type.as_deref().unwrap_or(""),
            e.semantic.as_deref().unwrap_or(&e.topic)
        )),
        _ => None,
    }
}

/// The marks to clear, sorted by path.
pub fn violations<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Vec<Violation> {
    let mut by: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
    for e in entries.into_iter().filter(|e| e.effectiveness_mark) {
        if let Some(s) = scope(e) {
            by.entry(s).or_default().push(e);
        }
    }
    let mut out = Vec::new();
    for (scope, docs) in by.into_iter().filter(|(_, d)| d.len() > 1) {
        let key = |e: &Entry| {
            let ts = e.last_verified_at.as_deref().and_then(clock::parse_instant).unwrap_or(Timestamp::MIN);
            (ts, e.version.unwrap_or(0), std::cmp::Reverse(e.path.clone()))
        };
        let Some(keep) = docs.iter().max_by_key(|e| key(e)) else { continue };
        for d in docs.iter().filter(|d| d.path != keep.path) {
            out.push(Violation {
                record: "mark-cleared",
                path: d.path.clone(),
                kept: keep.path.clone(),
                scope: scope.clone(),
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(path: &str, fm: &str) -> Entry {
        Entry::from_text(path, &format!("---\neffectiveness_mark: true\n{fm}---\n")).expect("a document")
    }

    #[test]
    fn the_latest_verified_keeps_the_mark_per_scope() {
        let entries = vec![
            doc(".memory/.references/a-v1.md", "last_verified_at: 2026-01-02\n"),
            doc(".memory/.references/a-v2.md", "last_verified_at: 2026-01-01\n"),
            doc(".memory/.references/a-v3.md", ""),
            doc(".memory/.references/b-v1.md", "last_verified_at: 2026-01-01\n"),
            doc(".memory/.experiences/sw/x-impl.md", ""),
            doc(".memory/.experiences/sw/x-eval.md", ""),
            doc(".memory/.experiences/web/x-impl.md", ""),
        ];
        let v = violations(&entries);
        let got: Vec<(&str, &str)> = v.iter().map(|v| (v.path.as_str(), v.kept.as_str())).collect();
        assert_eq!(
            got,
            [
                (".memory/.experiences/sw/x-impl.md", ".memory/.experiences/sw/x-eval.md"),
                (".memory/.references/a-v2.md", ".memory/.references/a-v1.md"),
                (".memory/.references/a-v3.md", ".memory/.references/a-v1.md"),
            ]
        );
    }
}
