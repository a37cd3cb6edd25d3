//! Read-only views of a library for people and pipelines: listings,
//! status, stale knowledge, usage counts, thinking-pattern lifecycle.

pub mod changes;
pub mod lifecycle;
pub mod listing;
pub mod stale;
pub mod status;
pub mod usage;
