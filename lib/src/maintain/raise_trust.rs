//! Raising a skill's trust T3 → T4 by use (seed 000 calls it promotion,
//! `--promote-skill`, scheduled step 2; here "promote" is kept for moving a
//! skill between stages, `skills::promote`):
//! a skill in `.skills/.active/` with trust_tier T3 whose files were
//! referenced ≥ 3 times with zero REPLAN failures becomes T4.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::Result;
use crate::library::entry::{Category, Entry};
use crate::library::Library;
use crate::lock;
use crate::report::usage::Usage;

/// Seed: promote from this many uses.
pub const MIN_USAGE: usize = 3;

/// One active T3 skill and whether it qualifies.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "promotion")]
pub struct Candidate {
    /// The skill's `SKILL.md`.
    pub path: String,
    /// The skill's name.
    pub skill: String,
    /// References to any file of the skill.
    pub usage_count: usize,
    /// Of those, followed by a REPLAN within 24 h.
    pub failures: usize,
    /// Whether it is (or, with `--dry-run`, would be) promoted to T4.
    pub promoted: bool,
}

/// The T3 skills of `.skills/.active/` with their usage (summed over every
/// file of the skill directory), sorted by path.
pub fn candidates(entries: &[Entry], usage: &BTreeMap<String, Usage>) -> Vec<Candidate> {
    entries
        .iter()
        .filter(|e| e.category == Category::Skill && e.path.starts_with(".skills/.active/"))
        .filter(|e| e.trust_tier.as_deref().is_some_and(|t| t.eq_ignore_ascii_case("T3")))
        .map(|e| {
            let dir = e.path.trim_end_matches("SKILL.md");
            let (uses, failures) = usage
                .range(dir.to_string()..)
                .take_while(|(p, _)| p.starts_with(dir))
                .fold((0, 0), |(u, f), (_, x)| (u + x.usage_count, f + x.failures));
            Candidate {
                path: e.path.clone(),
                skill: e.topic.clone(),
                usage_count: uses,
                failures,
                promoted: uses >= MIN_USAGE && failures == 0,
            }
        })
        .collect()
}

/// Promotes the qualifying candidates (sets `trust_tier: T4` under the
/// lock, updates the indexes, commits `task-ai(library):skill promote
/// T3->T4`). Returns the paths written.
pub fn apply(lib: &Library, cands: &[Candidate], commit: bool, opts: &lock::Options) -> Result<Vec<String>> {
    let changes: Vec<(&str, &str)> = cands.iter().filter(|c| c.promoted).map(|c| (c.path.as_str(), "T4")).collect();
    crate::write::fields::set(lib, &changes, "trust_tier", commit, "task-ai(library):skill promote T3->T4", opts)
}
