//! Seed 000 `maintain`: changelog compaction, the scheduled and quick
//! maintenance runs, and skill promotion T3 → T4 by usage.

pub mod compact;
pub mod raise_trust;
pub mod schedule;
