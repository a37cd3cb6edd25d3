//! kb-lastword (seed 004 "last-word"): heading-keyed knowledge deltas that
//! a session declares at its end and a later `apply` writes into AGENTS.md,
//! SOUL.md and USER.md without touching any other byte.

pub mod apply;
pub mod check;
pub mod delta;
pub mod diff;
pub mod edit;
pub mod home;
pub mod journal;
pub mod outline;
pub mod plan;
pub mod queue;
pub mod records;
pub mod report;
pub mod resolve;
pub mod staging;
pub mod status;
