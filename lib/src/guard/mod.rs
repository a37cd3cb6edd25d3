//! kb-guard: the threat scanner of seed 002 (guard_patterns + guard) and
//! seed 000's "external content is sanitised before storage". Rules are data
//! (`rules/core.yaml` plus hot-loaded extended rules), all compiled into one
//! linear-time automaton; text is normalised before matching so encodings,
//! invisible characters and look-alike letters do not hide a threat.

pub mod engine;
pub mod finding;
pub mod normalize;
pub mod pattern;
pub mod rules;
pub mod sniff;

pub use engine::{Engine, LoadError, Scanned};
pub use finding::{Context, Finding};
pub use rules::{Rule, Severity};
