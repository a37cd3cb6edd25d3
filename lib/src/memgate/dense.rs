//! The encoder half: with a sentence encoder configured (`--model DIR`,
//! `KB_MODEL` or `KB_MEMGATE_MODEL`, `text::bert`), every note's vector, and a text's
//! cosine with each, so a neighbour can be found by meaning over the whole
//! store — "Thanks for having my back" and "Jon expressed gratitude for
//! Gina's support" share no word.
//!
//! Notes and the text that looks for them are alike (a statement meets a
//! statement), so both are encoded with the model's query prompt, as e5
//! asks for symmetric tasks (no prompt for a model without one).
//!
//! A note's vector is kept in the derived cache `.dense.vec` beside the
//! search index: written whole by `reindex`, added to by `apply` for the
//! note it writes, never written by decide. It is keyed by the note's id,
//! size and mtime as the index saw them, so an edited note is encoded
//! again, a cache of another model is not read, and a cache that came from
//! elsewhere (a peer's commit) matches no note: a checkout gives every
//! file its own mtime. A note the cache lacks (written by an `apply`
//! without the model) is encoded in memory at each decide until the next
//! reindex: 10–20 ms a note.
//!
//! Layout, little-endian: b"KBDV", u32 version 1, the model's fingerprint
//! (64 hex bytes), u32 dimensions, then per note 16 key bytes (the first
//! of SHA-256 over id, size and mtime) and its vector as f32. A file of
//! another version, model or size is not read, and is replaced by the
//! next reindex or apply; a torn last entry (an apply killed while
//! appending) is not read, and is cut off by the next apply.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use rayon::prelude::*;

use super::search::View;
use super::store::{self, Paths};
use crate::error::{Error, Result};
use crate::text::bert::Encoder;
use crate::text::vecfile::{HEADER, KEY};

const MAGIC: &[u8; 4] = b"KBDV";
const VERSION: u32 = 1;

pub use crate::text::bert::model_dir;

/// Loads the sentence encoder in `model`, its weights mapped from the
/// aligned copy in the user's cache, the one kb-score keeps (written by
/// the first call that loads the model): a call then reads the folder's
/// configuration and tokenizer, not its weights (multilingual-e5-small's
/// are 470 MB, read and copied at every call before).
pub fn load(model: &Path) -> Result<Encoder> {
    Encoder::load_cached(model, crate::score::cache::user_cache_dir().as_deref())
}

/// The fewest notes whose median cosine serves as the floor
/// ([`Semantic::floor`]).
pub const FLOOR_NOTES: usize = 5;

/// A loaded encoder and the vector of every note a view holds.
pub struct Semantic {
    encoder: Encoder,
    /// Per view slot, the note's unit vector (`None`: removed, or gone
    /// from notes/ since indexing).
    vectors: Vec<Option<Vec<f32>>>,
    /// The cache key of each slot's vector.
    keys: Vec<[u8; KEY]>,
    /// How many notes were not in the cache and were encoded now.
    pub encoded: usize,
}

/// A note's cache key: its id, size and mtime as indexed.
fn key(id: &str, size: u64, mtime_ns: i64) -> [u8; KEY] {
    // The bytes of the signed mtime, as caches written before were keyed.
    crate::text::vecfile::key(id, size, mtime_ns as u64)
}

/// A cache larger than this is not read (a million notes of 384
/// dimensions is 1.6 GB).
const MAX_CACHE: u64 = 4 << 30;

/// The header of a cache of this encoder's vectors.
fn header(encoder: &Encoder) -> Vec<u8> {
    crate::text::vecfile::header(MAGIC, VERSION, encoder)
}

/// One entry: the key, then the vector.
fn put_entry(out: &mut Vec<u8>, key: &[u8; KEY], v: &[f32]) {
    out.extend_from_slice(key);
    v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
}

/// The vectors a cache file holds for this encoder, by key (a later entry
/// for a key wins); empty when the file is absent, unreadable (a
/// directory, a symlink or FIFO in its place: decide goes on without it,
/// reindex replaces it) or of another version, model or size. A torn last
/// entry, left by an apply killed while appending, is not read.
fn read_cache(path: &Path, encoder: &Encoder) -> HashMap<[u8; KEY], Vec<f32>> {
    let Ok(bytes) = crate::fs::nofollow::read(path, MAX_CACHE) else { return HashMap::new() };
    if bytes.get(..HEADER) != Some(&header(encoder)[..]) {
        return HashMap::new();
    }
    bytes[HEADER..]
        .chunks_exact(KEY + 4 * encoder.dims())
        .map(|e| {
            let mut k = [0u8; KEY];
            k.copy_from_slice(&e[..KEY]);
            (k, e[KEY..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
        })
        .collect()
}

/// Adds the vector of a note `apply` just wrote (its id, size and mtime as
/// written, its own words) to the cache, under apply's lock, so the next
/// decide need not encode it. A torn last entry is cut off first; a cache
/// of another encoder or format, or none, is started anew with this note.
/// The entry of the note's old version stays until `reindex` writes the
/// cache whole; no key reaches it.
pub fn append(paths: &Paths, encoder: &Encoder, id: &str, size: u64, mtime_ns: i64, text: &str) -> Result<()> {
    let mut entry = Vec::with_capacity(KEY + 4 * encoder.dims());
    put_entry(&mut entry, &key(id, size, mtime_ns), &encoder.encode_query(text));
    let path = &paths.dense;
    let ctx = |e| Error::io(format!("appending to {}", path.display()), e);
    let mut f = crate::fs::nofollow::open_rw(path, false).map_err(ctx)?;
    let len = f.metadata().map_err(ctx)?.len();
    let mut head = vec![0u8; HEADER.min(len as usize)];
    f.read_exact(&mut head).map_err(ctx)?;
    let whole = if head == header(encoder) {
        HEADER as u64 + (len - HEADER as u64) / entry.len() as u64 * entry.len() as u64
    } else {
        f.set_len(0).map_err(ctx)?;
        f.write_all(&header(encoder)).map_err(ctx)?;
        HEADER as u64
    };
    f.set_len(whole).map_err(ctx)?;
    f.seek(SeekFrom::Start(whole)).map_err(ctx)?;
    f.write_all(&entry).map_err(ctx)
}

impl Semantic {
    /// Loads the model in `model` and every live note's vector: cached, or
    /// encoded now (in parallel) from the note's own words.
    pub fn open(paths: &Paths, view: &View<'_>, model: &Path) -> Result<Semantic> {
        Semantic::with(paths, view, load(model)?)
    }

    /// The same with the encoder loaded already: reindex loads it before
    /// it writes anything, so a broken model leaves the store untouched.
    pub fn with(paths: &Paths, view: &View<'_>, encoder: Encoder) -> Result<Semantic> {
        let mut cached = read_cache(&paths.dense, &encoder);
        let slots: Vec<usize> = view.docs().collect();
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; view.slots()];
        let mut keys = vec![[0u8; KEY]; view.slots()];
        let mut missing = Vec::new();
        for &d in &slots {
            let (id, file) = view.name(d);
            let (size, mtime) = view.stamp(d);
            keys[d] = key(&id, size, mtime);
            // Moved out, not copied: a live note's key (its id) is its own.
            match cached.remove(&keys[d]) {
                Some(v) => vectors[d] = Some(v),
                None => missing.push((d, file)),
            }
        }
        let fresh: Vec<(usize, Option<Vec<f32>>)> = missing
            .par_iter()
            .map(|(d, file)| {
                let note = store::read_note(paths, file)?;
                Ok((*d, note.map(|l| encoder.encode_query(&l.note.body.search_text()))))
            })
            .collect::<Result<_>>()?;
        // A note gone from notes/ since indexing has no vector and is not counted.
        let encoded = fresh.iter().filter(|(_, v)| v.is_some()).count();
        for (d, v) in fresh {
            vectors[d] = v;
        }
        Ok(Semantic { encoder, vectors, keys, encoded })
    }

    /// How many notes have a vector.
    pub fn len(&self) -> usize {
        self.vectors.iter().flatten().count()
    }

    /// Whether no note has a vector.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the model reads a text (its vocabulary holds the words:
    /// Chinese with a multilingual model, not with an English one).
    pub fn reads(&self, text: &str) -> bool {
        self.encoder.reads(text)
    }

    /// A text's unit vector.
    pub fn encode(&self, text: &str) -> Vec<f32> {
        self.encoder.encode_query(text)
    }

    /// The cosine of a unit vector with note `doc`'s, if it has one.
    pub fn cosine(&self, v: &[f32], doc: usize) -> Option<f64> {
        let n = self.vectors.get(doc)?.as_ref()?;
        Some(f64::from(crate::text::embed::cosine(v, n)))
    }

    /// The median cosine of a unit vector with every note's: how alike
    /// the model finds a statement and any note, the floor a neighbour's
    /// cosine is read against (multilingual-e5-small's unrelated notes sit
    /// near .8, all-MiniLM-L6-v2's near .1). None under [`FLOOR_NOTES`]
    /// notes, where a median says little.
    pub fn floor(&self, v: &[f32]) -> Option<f64> {
        let mut all: Vec<f64> =
            self.vectors.iter().flatten().map(|n| f64::from(crate::text::embed::cosine(v, n))).collect();
        if all.len() < FLOOR_NOTES {
            return None;
        }
        all.sort_by(f64::total_cmp);
        Some(all[all.len() / 2])
    }

    /// Writes every vector to the cache, whole (temp file and rename).
    pub fn write_cache(&self, paths: &Paths) -> Result<()> {
        let mut out = header(&self.encoder);
        for (k, v) in self.keys.iter().zip(&self.vectors) {
            if let Some(v) = v {
                put_entry(&mut out, k, v);
            }
        }
        crate::fs::atomic::write(&paths.dense, &out)
    }
}
