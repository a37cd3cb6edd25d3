//! Stale knowledge (seed 000 `--check-staleness` and `status` dimension 2):
//! a reference is stale when now − last_verified_at exceeds its
//! staleness_threshold_days; a provisional experience is stale when it is
//! older than 90 days and no verified sibling (same type and semantic name)
//! exists. Reports only; it never triggers research.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde::Serialize;

use crate::clock;
use crate::library::entry::{Category, Entry};

/// The threshold of a reference whose frontmatter names none.
pub const DEFAULT_THRESHOLD_DAYS: u64 = 90;
/// Seed: provisional experiences older than this are flagged.
pub const PROVISIONAL_MAX_DAYS: u64 = 90;

/// One stale document.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "stale")]
pub struct Stale {
    /// Library-relative path.
    pub path: String,
    /// reference or experience.
    pub category: &'static str,
    /// past-threshold, never-verified, bad-date or provisional-unverified.
    pub reason: &'static str,
    /// Whole days since last_verified_at (or the experience's date).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_days: Option<i64>,
    /// The threshold applied.
    pub threshold_days: u64,
    /// The date the age counts from, as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
}

/// The verdict on one reference: `None` when fresh or not a reference.
/// `days` overrides every threshold (`--days N`).
pub fn reference(e: &Entry, now: Timestamp, days: Option<u64>) -> Option<Stale> {
    if e.category != Category::Reference {
        return None;
    }
    let threshold = days.or(e.staleness_threshold_days).unwrap_or(DEFAULT_THRESHOLD_DAYS);
    let mut s = Stale {
        path: e.path.clone(),
        category: "reference",
        reason: "never-verified",
        age_days: None,
        threshold_days: threshold,
        since: e.last_verified_at.clone(),
    };
    let Some(raw) = &e.last_verified_at else { return Some(s) };
    let Some(ts) = clock::parse_instant(raw) else {
        s.reason = "bad-date";
        return Some(s);
    };
    let age = clock::days_between(ts, now);
    s.age_days = Some(age.floor() as i64);
    s.reason = "past-threshold";
    (age > threshold as f64).then_some(s)
}

/// Provisional experiences older than 90 days with no verified sibling.
/// An experience's age counts from last_verified_at, else its
/// updated/created date, else its first changelog write (`first_write`).
pub fn experiences(entries: &[Entry], first_write: &BTreeMap<String, String>, now: Timestamp) -> Vec<Stale> {
    let verified: BTreeSet<(Option<&str>, Option<&str>)> = entries
        .iter()
        .filter(|e| e.category == Category::Experience && e.quality_status.as_deref() == Some("verified"))
        .map(|e| (e.doc_type.as_deref(), e.semantic.as_deref()))
        .collect();
    let mut out = Vec::new();
    for e in entries.iter().filter(|e| e.category == Category::Experience) {
        if e.quality_status.as_deref() != Some("provisional")
            || verified.contains(&(e.doc_type.as_deref(), e.semantic.as_deref()))
        {
            continue;
        }
        let since =
            e.last_verified_at.clone().or_else(|| e.updated_at.clone()).or_else(|| first_write.get(&e.path).cloned());
        let mut s = Stale {
            path: e.path.clone(),
            category: "experience",
            reason: "provisional-unverified",
            age_days: None,
            threshold_days: PROVISIONAL_MAX_DAYS,
            since: since.clone(),
        };
        match since.as_deref().map(clock::parse_instant) {
            Some(Some(ts)) => {
                let age = clock::days_between(ts, now);
                s.age_days = Some(age.floor() as i64);
                if age > PROVISIONAL_MAX_DAYS as f64 {
                    out.push(s);
                }
            }
            Some(None) => {
                s.reason = "bad-date";
                out.push(s);
            }
            None => {}
        }
    }
    out
}

/// Every stale document, references first then experiences, each by path.
pub fn all(entries: &[Entry], first_write: &BTreeMap<String, String>, now: Timestamp, days: Option<u64>) -> Vec<Stale> {
    let mut out: Vec<Stale> = entries.iter().filter_map(|e| reference(e, now, days)).collect();
    out.extend(experiences(entries, first_write, now));
    out
}

/// The first `write` event of each path (the age of an undated experience).
pub fn first_writes(events: &[crate::library::changelog::Event]) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, (Timestamp, String)> = BTreeMap::new();
    for e in events.iter().filter(|e| e.event == "write") {
        if let Some(ts) = e.instant() {
            let slot = out.entry(e.path.clone()).or_insert((ts, e.ts.clone()));
            if ts < slot.0 {
                *slot = (ts, e.ts.clone());
            }
        }
    }
    out.into_iter().map(|(k, (_, v))| (k, v)).collect()
}

/// `kb-index stale` on a terminal: one row per finding.
pub fn table(found: &[Stale]) -> String {
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|s| {
            let age = s.age_days.map_or(String::new(), |d| d.to_string());
            vec![s.path.clone(), s.category.into(), s.reason.into(), age, s.threshold_days.to_string()]
        })
        .collect();
    crate::out::jsonl::table(&["Path", "Category", "Reason", "Age (d)", "Threshold (d)"], &rows)
}
