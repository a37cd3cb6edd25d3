//! One library, many machines (issue 11): git remotes as the distributed
//! engine. Documents merge with git's text merge (overlapping edits keep
//! both sides), logs with a union driver, derived files are rebuilt, so
//! every clone converges to the same bytes and no write is lost.

pub mod attributes;
pub mod conflicts;
pub mod drivers;
pub mod gitcmd;
pub mod inspect;
pub mod merge_log;
pub mod refresh;
pub mod resolve;
pub mod run;

pub use run::{sync, Options, Report};
