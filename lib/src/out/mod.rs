//! What the binaries print: JSON Lines records in and out, and progress on
//! a terminal. Depends on nothing else in the crate but `error`.

pub mod jsonl;
pub mod progress;
