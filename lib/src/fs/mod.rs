//! The file system as the tools use it: crash-safe writes, mapped reads,
//! batched stat calls, the journal primitives, the one directory walker.
//! Knows nothing of what a library is.

pub mod atomic;
pub mod crash;
pub mod journal;
pub mod map;
pub mod nofollow;
pub mod read;
pub mod stat;
pub mod walk;
