//! Seed 000 `evolve`: the security rules evolution loop, separate from the
//! task loop. DISCOVER (an agent or advisory feed writes threat-intel JSON
//! lines) → PROPOSE (`.core-rule-proposals/CORE-XXX.md`, deduplicated) →
//! ELABORATE (an agent fills what a proposal lacks: pattern, category,
//! rationale, examples) → VALIDATE (linear-time pattern, examples,
//! historical backtest over the library and any corpus) → REVIEW (composite
//! score, approved at ≥ 0.95) → INTEGRATE (Extended rules hot-loaded from
//! `.evolving-rules/security/active/`, Core rules into the library's core
//! rule file). `.last-scan-core` / `.last-scan-extended` gate scheduled
//! runs (7 d / 1 d); every step appends to `.core-rule-proposals/.audit.log`.
//!
//! Each step reads the proposals named on stdin (`proposal` records of the
//! step before, `-`), on the command line (ids) or, by default, every
//! proposal waiting for it, and prints one `proposal` record each; other
//! records pass through, so the steps compose as one pipeline.

pub mod audit;
pub mod backtest;
pub mod integrate;
pub mod intel;
pub mod peer;
pub mod proposal;
pub mod propose;
pub mod review;
pub mod select;
pub mod status;
pub mod validate;

use serde_json::Value;

/// Where proposals, stamps and the audit log live.
pub const DIR: &str = ".core-rule-proposals";
/// Seed: Unix timestamp of the last Core Rules scan.
pub const LAST_SCAN_CORE: &str = ".core-rule-proposals/.last-scan-core";
/// Seed: Unix timestamp of the last Extended Rules sync.
pub const LAST_SCAN_EXTENDED: &str = ".core-rule-proposals/.last-scan-extended";
/// Seed: Core rules are scanned weekly.
pub const CORE_INTERVAL_SECS: i64 = 7 * 86_400;
/// Seed: Extended rules are synced daily.
pub const EXTENDED_INTERVAL_SECS: i64 = 86_400;
/// Where approved rules go: the hot-loaded extended rules directory.
pub const ACTIVE_DIR: &str = crate::library::GUARD_RULES;
/// The library's evolved core rule file.
pub const CORE_FILE: &str = ".evolving-rules/security/core.yaml";

/// Parsed JSON lines: line number and object, or why the line is not one.
pub type Lines = Vec<(usize, std::result::Result<serde_json::Map<String, Value>, String>)>;

pub use crate::out::jsonl::{print, Rec};

pub use crate::guard::library_engine as engine;

pub use crate::out::round4;
