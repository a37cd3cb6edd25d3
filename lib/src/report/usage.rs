//! How often each document is used and how often that use failed (seed 000
//! `status` dimension 3): `usage_count` is the number of changelog
//! `referenced` lines for a file; a reference *failed* when the same
//! notebook logged a `replan` within 24 hours after it; `failure_rate` is
//! failures / usage_count as a percentage. Files with usage_count ≥ 3 and
//! failure_rate < 20 % are effectiveness_mark suggestions for human review.
//! The same counts drive the thinking-pattern lifecycle and T3 → T4 skill
//! promotion. Archived (compacted) events count too.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde::Serialize;

use crate::error::Result;
use crate::library::changelog::Event;
use crate::library::relations;
use crate::library::Library;

/// Seed: a REPLAN within this many seconds after a reference is a failure.
pub const REPLAN_WINDOW_SECS: i64 = 24 * 3600;
/// Seed: suggest effectiveness_mark from this many uses.
pub const SUGGEST_MIN_USAGE: usize = 3;
/// Seed: suggest effectiveness_mark below this failure rate (percent).
pub const SUGGEST_MAX_FAILURE_RATE: f64 = 20.0;

/// The usage of one file, as `kb-relate usage` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Usage {
    /// Always `usage`.
    pub record: &'static str,
    /// Library-relative path.
    pub path: String,
    /// `referenced` lines for the file.
    pub usage_count: usize,
    /// References followed by a `replan` in the same notebook within 24 h.
    pub failures: usize,
    /// failures / usage_count × 100, rounded to one decimal.
    pub failure_rate: f64,
    /// Distinct notebooks (tasks) that referenced the file.
    pub tasks: usize,
    /// Distinct notebooks that referenced the file and later logged `accept`.
    pub accepted_tasks: usize,
    /// usage_count ≥ 3 and failure_rate < 20 %: suggest effectiveness_mark.
    pub suggest_mark: bool,
}

/// Computes usage per file from events (any order; events whose `ts` does
/// not parse or that name no notebook are ignored). Sorted by path.
pub fn compute(events: &[Event]) -> BTreeMap<String, Usage> {
    let mut by_nb: BTreeMap<&str, Vec<(Timestamp, &Event)>> = BTreeMap::new();
    for e in events {
        if let (Some(nb), Some(ts)) = (e.notebook.as_deref().filter(|n| !n.is_empty()), e.instant()) {
            by_nb.entry(nb).or_default().push((ts, e));
        }
    }
    #[derive(Default)]
    struct Acc<'a> {
        uses: usize,
        failures: usize,
        tasks: BTreeSet<&'a str>,
        accepted: BTreeSet<&'a str>,
    }
    let mut acc: BTreeMap<&str, Acc> = BTreeMap::new();
    for (nb, list) in &mut by_nb {
        list.sort_by_key(|(ts, _)| *ts);
        let replans: Vec<Timestamp> = list.iter().filter(|(_, e)| e.event == "replan").map(|(t, _)| *t).collect();
        let accepts: Vec<Timestamp> = list.iter().filter(|(_, e)| e.event == "accept").map(|(t, _)| *t).collect();
        for (ts, e) in list.iter().filter(|(_, e)| e.event == "referenced") {
            let a = acc.entry(e.path.as_str()).or_default();
            a.uses += 1;
            a.tasks.insert(nb);
            let limit = ts.as_second() + REPLAN_WINDOW_SECS;
            if replans.iter().any(|r| r >= ts && r.as_second() <= limit) {
                a.failures += 1;
            }
            if accepts.iter().any(|t| t >= ts) {
                a.accepted.insert(nb);
            }
        }
    }
    acc.into_iter()
        .map(|(path, a)| {
            let rate = if a.uses == 0 { 0.0 } else { (a.failures as f64 * 1000.0 / a.uses as f64).round() / 10.0 };
            let u = Usage {
                record: "usage",
                path: path.to_string(),
                usage_count: a.uses,
                failures: a.failures,
                failure_rate: rate,
                tasks: a.tasks.len(),
                accepted_tasks: a.accepted.len(),
                suggest_mark: a.uses >= SUGGEST_MIN_USAGE && rate < SUGGEST_MAX_FAILURE_RATE,
            };
            (path.to_string(), u)
        })
        .collect()
}

/// Usage of every file from the library's whole history (archives + log).
pub fn load(lib: &Library) -> Result<BTreeMap<String, Usage>> {
    Ok(compute(&relations::history(lib)?))
}

/// The usage of a file, zero when it was never referenced.
pub fn of(map: &BTreeMap<String, Usage>, path: &str) -> Usage {
    map.get(path).cloned().unwrap_or(Usage {
        record: "usage",
        path: path.to_string(),
        usage_count: 0,
        failures: 0,
        failure_rate: 0.0,
        tasks: 0,
        accepted_tasks: 0,
        suggest_mark: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: &str, event: &str, path: &str, nb: &str) -> Event {
        Event { ts: ts.into(), event: event.into(), path: path.into(), notebook: Some(nb.into()), ..Event::default() }
    }

    #[test]
    fn failures_are_replans_within_24h_in_the_same_notebook() {
        let events = vec![
            ev("2026-01-01T00:00:00Z", "referenced", "a.md", "nb1"),
            ev("2026-01-01T10:00:00Z", "replan", "plan.md", "nb1"),
            ev("2026-01-02T00:00:00Z", "referenced", "a.md", "nb2"),
            ev("2026-01-03T00:00:01Z", "replan", "plan.md", "nb2"),
            ev("2026-01-02T00:00:00Z", "referenced", "a.md", "nb3"),
            ev("2026-01-02T05:00:00Z", "replan", "plan.md", "nb4"),
            ev("2026-01-02T06:00:00Z", "accept", "plan.md", "nb3"),
            ev("2026-01-01T00:00:00Z", "replan", "x.md", "nb3"),
        ];
        let u = compute(&events);
        let a = &u["a.md"];
        assert_eq!((a.usage_count, a.failures, a.failure_rate, a.tasks, a.accepted_tasks), (3, 1, 33.3, 3, 1));
        assert!(!a.suggest_mark);
    }
}
