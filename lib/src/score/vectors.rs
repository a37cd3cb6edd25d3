//! kb-score's dense half: each document's vectors from the sentence
//! encoder (`text::bert`, `--model DIR` or `KB_MODEL`), kept beside the
//! index so a query encodes only itself. A document is embedded in chunks
//! (its title with each section, a long section in windows), and scores
//! by its best chunk: a note on many things matches a question on one.
//!
//! The file (`vectors-<digest>.bin` beside the index cache) is named and
//! headed by the model's digest, so another model writes its own file and
//! vectors of two models never mix. Each document's entry is keyed by its
//! path, size and mtime as the index saw them: an edit changes the key,
//! and only the documents whose key is new are encoded (in parallel)
//! before the file is replaced whole (temp file and rename; readers map
//! it). Entries of documents gone from the index are dropped then.
//!
//! Layout, little-endian: b"KBSV", u32 version, the digest (64 hex
//! bytes), u32 dimensions, then per document 16 key bytes (the first of
//! SHA-256 over path, size and mtime), u32 chunks, and the chunks' unit
//! vectors as f32. A file of another version, model or size is not read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::index::View;
use crate::text::bert::Encoder;
use crate::text::embed;
use crate::text::vecfile::{HEADER, KEY};

const MAGIC: &[u8; 4] = b"KBSV";
const VERSION: u32 = 1;
/// Words of a chunk's window: a section longer than this is cut into
/// windows (all-MiniLM-L6-v2 reads 256 tokens, about 180 words).
const WINDOW: usize = 160;
/// Chunks of one document at most: past that, the rest of a long
/// document is not embedded (its words still count lexically).
const MAX_CHUNKS: usize = 16;

/// The vector file of an index cache file and a model.
pub fn path_for(cache: &Path, encoder: &Encoder) -> PathBuf {
    let stem = cache.file_stem().and_then(|s| s.to_str()).unwrap_or("index");
    cache.with_file_name(format!("{stem}.vectors-{}.bin", &encoder.digest()[..16]))
}

/// A document's key: its path, size and mtime as indexed.
fn key(path: &str, (size, mtime): (u64, u64)) -> [u8; KEY] {
    crate::text::vecfile::key(path, size, mtime)
}

fn header(encoder: &Encoder) -> Vec<u8> {
    crate::text::vecfile::header(MAGIC, VERSION, encoder)
}

/// The chunks of a document: its title with each section (split at
/// headings), a section past [`WINDOW`] words in windows of that many.
pub fn chunks(title: &str, body: &str) -> Vec<String> {
    let mut sections: Vec<String> = vec![String::new()];
    let mut in_fence = false;
    // Whether the current section holds more than headings: a heading
    // right after another joins it, so no chunk is a bare heading.
    let mut has_body = false;
    for line in body.lines() {
        let t = line.trim_start();
        let fence = t.starts_with("```") || t.starts_with("~~~");
        if fence {
            in_fence = !in_fence;
        }
        let heading = !in_fence && !fence && t.starts_with('#');
        if heading && has_body {
            sections.push(String::new());
            has_body = false;
        }
        has_body |= !heading && !t.is_empty();
        let s = sections.last_mut().expect("one section at least");
        s.push_str(line);
        s.push('\n');
    }
    let mut out = Vec::new();
    for s in sections {
        let words: Vec<&str> = s.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        for w in words.chunks(WINDOW) {
            let text = w.join(" ");
            out.push(if title.is_empty() { text } else { format!("{title}\n{text}") });
        }
    }
    if out.is_empty() && !title.is_empty() {
        out.push(title.to_string());
    }
    out.truncate(MAX_CHUNKS);
    out
}

/// Each document's best cosine with the query's vector (0 for a document
/// without vectors), by index id; and how many documents were encoded now.
pub struct Dense {
    /// Best chunk cosine per document.
    pub cosine: Vec<f32>,
    /// Documents encoded by this call (changed or new since the last).
    pub encoded: usize,
}

/// The vector file as this call found it: its mapping, where each
/// stored document's vectors lie (by key), and each indexed document's key.
struct Stored {
    mapped: Option<memmap2::Mmap>,
    have: HashMap<[u8; KEY], (usize, usize)>,
    keys: Vec<[u8; KEY]>,
}

impl Stored {
    /// Maps the file at `file` (a file of another model, version or
    /// size reads as empty) and keys the documents of `v`.
    fn read(file: &Path, v: &View, encoder: &Encoder) -> Stored {
        let dims = encoder.dims();
        let mapped = crate::fs::map::map(file).ok();
        let bytes: &[u8] = mapped.as_deref().unwrap_or(&[]);
        let mut have: HashMap<[u8; KEY], (usize, usize)> = HashMap::new();
        if bytes.get(..HEADER) == Some(&header(encoder)[..]) {
            // Every stored vector is read for the cosines: its pages mapped
            // in one call, here, while the other thread encodes the query.
            #[cfg(target_os = "linux")]
            if let Some(m) = &mapped {
                // Advice only: a kernel without it faults the pages in as before.
                let _ = m.advise(memmap2::Advice::PopulateRead);
            }
            let mut at = HEADER;
            while let Some(head) = bytes.get(at..at + KEY + 4) {
                let mut k = [0u8; KEY];
                k.copy_from_slice(&head[..KEY]);
                let n = u32::from_le_bytes(head[KEY..].try_into().expect("4 bytes")) as usize;
                let start = at + KEY + 4;
                let end = start + n * dims * 4;
                if end > bytes.len() {
                    break;
                }
                have.insert(k, (start, n));
                at = end;
            }
        }
        let keys = (0..v.docs() as u32).map(|d| key(v.path(d), v.stamp(d))).collect();
        Stored { mapped, have, keys }
    }

    fn bytes(&self) -> &[u8] {
        self.mapped.as_deref().unwrap_or(&[])
    }

    /// A stored document's vectors as little-endian f32 bytes.
    fn vectors(&self, d: u32, dims: usize) -> &[u8] {
        let (start, n) = self.have[&self.keys[d as usize]];
        &self.bytes()[start..start + n * dims * 4]
    }
}

/// The cosines of the query with every document of `v`, from the vector
/// file at `file`, after encoding the documents it lacks (`text` gives a
/// document's title and body) and saving it. A file that cannot be
/// written leaves the vectors in memory for this call. `query` gives the
/// query's vector: it is called while the file is read and the
/// documents keyed on another thread, so a CLI call's forward pass and
/// its reading of the stored vectors overlap.
pub fn dense<'q>(
    file: &Path,
    v: &View,
    encoder: &Encoder,
    query: impl FnOnce() -> &'q [f32] + Send,
    text: &(dyn Fn(u32) -> Option<(String, String)> + Sync),
) -> Dense {
    let dims = encoder.dims();
    let lap = crate::score::build::profiler("meaning");
    let (stored, query) = rayon::join(
        || {
            let stored = Stored::read(file, v, encoder);
            lap("stored vectors keyed");
            stored
        },
        query,
    );
    lap("stored vectors keyed and the query encoded");
    let docs = v.docs() as u32;
    let missing: Vec<u32> = (0..docs).filter(|&d| !stored.have.contains_key(&stored.keys[d as usize])).collect();
    let fresh: HashMap<u32, Vec<f32>> = missing
        .par_iter()
        .map(|&d| {
            let vecs = text(d).map_or_else(Vec::new, |(title, body)| {
                chunks(&title, &body).iter().flat_map(|c| encoder.encode_passage(c)).collect()
            });
            (d, vecs)
        })
        .collect();
    let cosine: Vec<f32> = (0..docs)
        .into_par_iter()
        .map(|d| {
            let best = match fresh.get(&d) {
                Some(vs) => best_cosine(query, vs, dims),
                None => {
                    let stored = stored.vectors(d, dims);
                    match floats(stored) {
                        Some(fs) => best_cosine(query, fs, dims),
                        None => {
                            stored.chunks_exact(dims * 4).map(|c| dot_le(query, c)).fold(f32::NEG_INFINITY, f32::max)
                        }
                    }
                }
            };
            if best.is_finite() {
                best
            } else {
                0.0
            }
        })
        .collect();
    let stale = stored.have.len() != (docs as usize - missing.len());
    if !missing.is_empty() || stale {
        let mut out = header(encoder);
        for d in 0..docs {
            let k = &stored.keys[d as usize];
            out.extend_from_slice(k);
            match fresh.get(&d) {
                Some(vs) => {
                    out.extend_from_slice(&((vs.len() / dims) as u32).to_le_bytes());
                    vs.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
                }
                None => {
                    out.extend_from_slice(&(stored.have[k].1 as u32).to_le_bytes());
                    out.extend_from_slice(stored.vectors(d, dims));
                }
            }
        }
        drop(stored);
        // Derived: a file that cannot be written costs the next call the encoding again.
        let _ = crate::fs::atomic::write(file, &out);
    }
    Dense { cosine, encoded: missing.len() }
}

/// A document's best chunk cosine with the query (-∞ for no chunk).
fn best_cosine(query: &[f32], vectors: &[f32], dims: usize) -> f32 {
    vectors.chunks_exact(dims).map(|c| embed::cosine(query, c)).fold(f32::NEG_INFINITY, f32::max)
}

/// Stored little-endian f32 bytes as floats, without a copy: the mapped
/// file is page-aligned and every vector starts 4-aligned in it (header
/// 76 bytes, entry heads 20), so on a little-endian machine the checked
/// cast holds; None sends the caller to [`dot_le`].
fn floats(b: &[u8]) -> Option<&[f32]> {
    cfg!(target_endian = "little").then(|| bytemuck::try_cast_slice(b).ok()).flatten()
}

/// The dot product with a vector stored as little-endian f32 bytes.
fn dot_le(a: &[f32], b: &[u8]) -> f32 {
    a.iter().zip(b.chunks_exact(4)).map(|(x, y)| x * f32::from_le_bytes([y[0], y[1], y[2], y[3]])).sum()
}

#[cfg(test)]
mod tests {
    use super::chunks;

    #[test]
    fn a_document_is_its_title_with_each_section_and_long_sections_in_windows() {
        assert_eq!(
            chunks("T", "intro words\n## A\nalpha\n## B\nbeta\n"),
            ["T\nintro words", "T\n## A alpha", "T\n## B beta"]
        );
        // A heading inside a fence does not cut; a heading right after another does not leave an empty chunk.
        assert_eq!(chunks("T", "```\n# not a heading\n```\n"), ["T\n``` # not a heading ```"]);
        assert_eq!(chunks("", "# A\n# B\nx\n"), ["# A # B x"]);
        let long = "w ".repeat(super::WINDOW + 1);
        let c = chunks("T", &long);
        assert_eq!(c.len(), 2);
        assert_eq!(c[1], "T\nw");
        assert_eq!(chunks("Only a title", ""), ["Only a title"]);
        assert!(chunks("", " \n").is_empty());
    }
}
