//! Memory-mapped reads (STYLE.md §8): the one place `unsafe` is allowed.

use std::fs::File;
use std::path::Path;

use crate::error::{Context, Result};

/// Maps a whole file read-only.
///
/// Sound only for files kb-tools owns: our writers replace a file by
/// rename (`atomic::write`) and never truncate or rewrite it in place, so
/// a mapping keeps seeing the old, complete inode while a new one is
/// renamed over it.
#[allow(unsafe_code)]
pub fn map(path: &Path) -> Result<memmap2::Mmap> {
    let f = File::open(path).ctx(|| format!("opening {}", path.display()))?;
    // SAFETY: the caller maps only files written by `atomic::write`
    // (replaced by rename, never truncated in place), so the mapped bytes
    // cannot change or shrink under us (see the doc comment above).
    unsafe { memmap2::Mmap::map(&f) }.ctx(|| format!("mapping {}", path.display()))
}
