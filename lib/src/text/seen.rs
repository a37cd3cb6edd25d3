//! A record, in the encoder's cache directory, of a model folder as it was
//! when its digest was computed: each file's identity (size, mtime,
//! ctime, inode, device), the digest, and the SHA-256 of the
//! `tokenizer.json` whose table the cache holds. A later call that finds
//! every file as recorded takes the digest and the table from there, and
//! neither reads `tokenizer.json` (13 MB for multilingual e5, read and
//! hashed twice per call before: 41–66 ms of a call's 106 at the median)
//! nor samples the weights.
//!
//! The identity includes ctime and the inode, which nothing but a write
//! or a replacement changes: a model swapped in under the same name with
//! the same size and an mtime kept from its archive (wheels pin theirs)
//! still reads as changed. Every file the digest reads in full is in
//! the stamp; the small ones are hashed again by the caller each call
//! ([`small`]), so a pooling folder `modules.json` names elsewhere
//! is covered too.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

const MAGIC: &[u8; 8] = b"KBSEEN\x00\x01";

/// The folder's files the encoder reads (those absent are recorded as absent).
const FILES: [&str; 9] = [
    "config.json",
    "sentence_bert_config.json",
    "tokenizer.json",
    "vocab.txt",
    "tokenizer_config.json",
    "modules.json",
    "1_Pooling/config.json",
    "config_sentence_transformers.json",
    "model.safetensors",
];

/// What a record holds: the model's digest and the tokenizer's table.
pub(crate) struct Seen {
    pub(crate) fingerprint: String,
    pub(crate) table: Option<[u8; 32]>,
}

/// The identity of the folder's files now, taken before any is read (a
/// file changed while the encoder reads it then fails the next call's
/// check). None where the platform gives no inode and ctime: no record is
/// kept there.
pub(crate) fn stamp(dir: &Path) -> Option<Vec<u8>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let mut out = Vec::new();
        for name in FILES {
            out.extend_from_slice(name.as_bytes());
            match std::fs::metadata(dir.join(name)) {
                Ok(m) => {
                    out.push(1);
                    for n in [m.len(), m.mtime() as u64, m.mtime_nsec() as u64, m.ctime() as u64, m.ctime_nsec() as u64]
                    {
                        out.extend_from_slice(&n.to_le_bytes());
                    }
                    out.extend_from_slice(&m.ino().to_le_bytes());
                    out.extend_from_slice(&m.dev().to_le_bytes());
                }
                Err(_) => out.push(0),
            }
        }
        Some(out)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

/// The SHA-256 of the parts of a digest that are read whole every call
/// (configuration, pooling, prompts, token cut), length-prefixed.
pub(crate) fn small(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().into()
}

/// The record's file for the folder `dir` in `cache`: named by the
/// folder's path (its canonical form where it has one).
fn path(cache: &Path, dir: &Path) -> PathBuf {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let sha = Sha256::digest(dir.as_os_str().as_encoded_bytes());
    cache.join(format!("model-{}.seen", super::hex(&sha[..8])))
}

/// The record for `dir` if its files' stamp and small parts are `stamp`
/// and `small`; None for no record, a stale one or a damaged one.
pub(crate) fn read(cache: &Path, dir: &Path, stamp: &[u8], small: &[u8; 32]) -> Option<Seen> {
    let b = std::fs::read(path(cache, dir)).ok()?;
    let rest = b.strip_prefix(&MAGIC[..])?;
    let (len, rest) = rest.split_first_chunk::<4>()?;
    let (got, rest) = rest.split_at_checked(u32::from_le_bytes(*len) as usize)?;
    let (got_small, rest) = rest.split_first_chunk::<32>()?;
    let (fingerprint, rest) = rest.split_first_chunk::<64>()?;
    let (flag, table) = rest.split_first()?;
    if got != stamp || got_small != small || !fingerprint.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let table = match (flag, <[u8; 32]>::try_from(table)) {
        (0, _) if table.is_empty() => None,
        (1, Ok(sha)) => Some(sha),
        _ => return None,
    };
    Some(Seen { fingerprint: String::from_utf8(fingerprint.to_vec()).ok()?, table })
}

/// Keeps the record for `dir`. Derived: a record that cannot be written
/// costs the next call the digest again.
pub(crate) fn write(cache: &Path, dir: &Path, stamp: &[u8], small: &[u8; 32], seen: &Seen) {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&(stamp.len() as u32).to_le_bytes());
    out.extend_from_slice(stamp);
    out.extend_from_slice(small);
    out.extend_from_slice(seen.fingerprint.as_bytes());
    match seen.table {
        Some(sha) => {
            out.push(1);
            out.extend_from_slice(&sha);
        }
        None => out.push(0),
    }
    let _ = crate::fs::atomic::write(&path(cache, dir), &out);
}
