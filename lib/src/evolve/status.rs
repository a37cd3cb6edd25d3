//! Seed 000 `evolve --status`: the last Core scan and Extended sync (and
//! whether each is due), proposals by state, and the rules in force by
//! source: compiled-in core, the library's evolved core, extended files.

use std::collections::BTreeMap;

use serde::Serialize;

use super::proposal::{self, Layer, STATUSES};
use super::propose::{due, interval, last_scan};
use super::CORE_FILE;
use crate::clock;
use crate::error::Result;
use crate::library::Library;
use crate::out::jsonl;

/// One layer's scan state.
#[derive(Debug, Clone, Serialize)]
pub struct Scan {
    /// The last scan (RFC 3339), if any.
    pub last: Option<String>,
    /// Whether a scheduled run would scan it now.
    pub due: bool,
    /// When it is next due (RFC 3339), if it has been scanned.
    pub next: Option<String>,
}

/// The `evolve_status` record.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "record", rename = "evolve_status")]
pub struct Status {
    /// Core rules: weekly.
    pub core_scan: Scan,
    /// Extended rules: daily.
    pub extended_scan: Scan,
    /// Proposals per status (every status listed).
    pub proposals: BTreeMap<&'static str, usize>,
    /// Proposals waiting for a step or an agent (draft to approved).
    pub pending: usize,
    /// Proposal files that do not parse.
    pub malformed: Vec<String>,
    /// Rules in force: `core` (compiled in), `library_core`, `extended`.
    pub rules: BTreeMap<&'static str, usize>,
    /// Extended rule files loaded.
    pub extended_files: usize,
    /// Rule files that failed to load (the scan runs without them).
    pub load_errors: Vec<String>,
}

fn scan(lib: &Library, layer: Layer, now: i64) -> Scan {
    let last = last_scan(lib, layer);
    let fmt = |t: i64| jiff::Timestamp::from_second(t).ok().map(clock::format);
    Scan { last: last.and_then(fmt), due: due(lib, layer, now), next: last.and_then(|t| fmt(t + interval(layer))) }
}

/// The status of the evolve loop in `lib`.
pub fn status(lib: &Library) -> Result<Status> {
    let now = clock::now()?.as_second();
    let mut proposals: BTreeMap<&'static str, usize> = STATUSES.iter().map(|s| (s.as_str(), 0)).collect();
    let mut malformed = Vec::new();
    for (id, p) in proposal::all(lib) {
        match p {
            Ok(l) => *proposals.entry(l.proposal.status.as_str()).or_default() += 1,
            Err(e) => malformed.push(format!("{id}: {e}")),
        }
    }
    let pending = proposals.iter().filter(|(s, _)| !matches!(**s, "rejected" | "integrated")).map(|(_, n)| n).sum();
    let (engine, errors) = super::engine(lib)?;
    let core_path = lib.path(CORE_FILE).display().to_string();
    let mut rules: BTreeMap<&'static str, usize> = [("core", 0), ("library_core", 0), ("extended", 0)].into();
    let mut files = std::collections::BTreeSet::new();
    for r in engine.rules() {
        let key = if r.source == "core" {
            "core"
        } else if r.source == core_path {
            "library_core"
        } else {
            files.insert(r.source.clone());
            "extended"
        };
        *rules.entry(key).or_default() += 1;
    }
    Ok(Status {
        core_scan: scan(lib, Layer::Core, now),
        extended_scan: scan(lib, Layer::Extended, now),
        proposals,
        pending,
        malformed,
        rules,
        extended_files: files.len(),
        load_errors: errors.iter().map(|e| format!("{}: {}", e.source, e.message)).collect(),
    })
}

/// The status for people.
pub fn table(s: &Status) -> String {
    let when = |x: &Scan| {
        let last = x.last.clone().unwrap_or_else(|| "never".into());
        format!("{last}{}", if x.due { " (due)" } else { "" })
    };
    let mut rows = vec![
        vec!["last core scan (7 d)".to_string(), when(&s.core_scan)],
        vec!["last extended sync (1 d)".to_string(), when(&s.extended_scan)],
    ];
    rows.extend(STATUSES.iter().map(|st| {
        vec![format!("proposals {}", st.as_str()), s.proposals.get(st.as_str()).copied().unwrap_or(0).to_string()]
    }));
    rows.extend(s.rules.iter().map(|(k, v)| vec![format!("rules {k}"), v.to_string()]));
    rows.push(vec!["extended rule files".into(), s.extended_files.to_string()]);
    rows.extend(s.malformed.iter().map(|m| vec!["malformed proposal".into(), m.clone()]));
    rows.extend(s.load_errors.iter().map(|m| vec!["rule file not loaded".into(), m.clone()]));
    jsonl::table(&["EVOLVE", "STATE"], &rows)
}
