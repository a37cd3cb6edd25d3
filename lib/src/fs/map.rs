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

/// Maps an open file kb-tools does not own (kb-guard scanning a large
/// file), read-only.
///
/// Another process may truncate such a file while it is mapped, and
/// reading the lost pages then raises SIGBUS. The caller takes that risk
/// only where reading the file whole would double the memory use (the
/// guard maps files of 64 MiB and more, and reads every smaller one).
#[allow(unsafe_code)]
pub fn map_foreign(f: &File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the mapping is only read; the one hazard, a truncation by
    // another process, is the SIGBUS the doc comment above accepts for
    // files too large to read whole.
    unsafe { memmap2::Mmap::map(f) }
}

/// Bytes mapped from a file or held in memory, read alike (a segment of
/// the binary index format, a large file the guard scans).
pub enum Bytes {
    /// A read-only map of the file.
    Map(memmap2::Mmap),
    /// Read or built in memory.
    Owned(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}
