//! The frame shared by the files that cache a sentence encoder's vectors
//! (kb-memgate's notes in `memgate::dense`, kb-score's document chunks in
//! `score::vectors`): a header of the format's magic, its version, the
//! model's digest and its dimensions, so a file of another model or
//! version is never read; and entries keyed by a document's name, size and
//! mtime, so an edited document is encoded again.

use sha2::{Digest, Sha256};

use super::bert::Encoder;

/// Bytes of a header: magic, version, the digest (64 hex bytes), dimensions.
pub const HEADER: usize = 4 + 4 + 64 + 4;
/// Bytes of an entry's key.
pub const KEY: usize = 16;

/// An entry's key: the first [`KEY`] bytes of SHA-256 over the name, a
/// zero byte, then size and mtime as little-endian 64-bit integers.
pub fn key(name: &str, size: u64, mtime: u64) -> [u8; KEY] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([0]);
    h.update(size.to_le_bytes());
    h.update(mtime.to_le_bytes());
    let mut out = [0u8; KEY];
    out.copy_from_slice(&h.finalize()[..KEY]);
    out
}

/// The header of a file of format `magic` at `version` for `encoder`.
pub fn header(magic: &[u8; 4], version: u32, encoder: &Encoder) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER);
    out.extend_from_slice(magic);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(encoder.digest().as_bytes());
    out.extend_from_slice(&(encoder.dims() as u32).to_le_bytes());
    out
}
