//! The file system as the tools use it: crash-safe writes, mapped reads,
//! batched stat calls, the one directory walker. Knows nothing of what a library is.

pub mod atomic;
pub mod map;
pub mod nofollow;
pub mod stat;
pub mod walk;
