//! Seed 000's skill promotion pipeline: `.skills/.candidates` (T1) →
//! `.skills/.drafts` (T2) → `.skills/.active` (T3; T4 is earned by use, see
//! `kb::maintain::raise_trust`). A skill name lives in exactly one stage.

use std::fmt;

use crate::error::{Error, Result};
use crate::library::Library;

/// A stage of the skill pipeline, in promotion order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// Extracted, not yet reviewed.
    Candidates,
    /// Reviewed, being tried.
    Drafts,
    /// In use.
    Active,
}

/// Every stage, in promotion order.
pub const ALL: [Stage; 3] = [Stage::Candidates, Stage::Drafts, Stage::Active];

impl Stage {
    /// `candidates`, `drafts` or `active`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Candidates => "candidates",
            Stage::Drafts => "drafts",
            Stage::Active => "active",
        }
    }

    /// The stage's directory under the library.
    pub fn dir(self) -> String {
        format!(".skills/.{}", self.as_str())
    }

    /// The trust tier a skill gets on entering the stage.
    pub fn tier(self) -> &'static str {
        match self {
            Stage::Candidates => "T1",
            Stage::Drafts => "T2",
            Stage::Active => "T3",
        }
    }

    /// Parses a stage name (singular or plural).
    pub fn parse(s: &str) -> Result<Stage> {
        match s.trim_start_matches('.') {
            "candidates" | "candidate" => Ok(Stage::Candidates),
            "drafts" | "draft" => Ok(Stage::Drafts),
            "active" => Ok(Stage::Active),
            other => Err(Error::usage(format!("unknown stage '{other}' (expected candidates, drafts or active)"))),
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The library-relative directory of skill `name` in `stage`.
pub fn skill_dir(stage: Stage, name: &str) -> String {
    format!("{}/{name}", stage.dir())
}

/// Where skill `name` lives, if anywhere. A name found in two stages (a
/// hand-made copy) is an error: no operation may guess which one is meant.
pub fn find(lib: &Library, name: &str) -> Result<Option<Stage>> {
    let found: Vec<Stage> = ALL.into_iter().filter(|s| lib.path(&skill_dir(*s, name)).is_dir()).collect();
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        many => Err(Error::msg(format!(
            "skill '{name}' exists in several stages ({}); remove the stray copy first",
            many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// Like [`find`], but a missing skill is an error.
pub fn require(lib: &Library, name: &str) -> Result<Stage> {
    find(lib, name)?.ok_or_else(|| Error::msg(format!("skill '{name}' does not exist")))
}
