//! The lexical stand-in for seed 003's "语义近邻": one similarity that
//! works for English and Chinese alike. Three signals, fused:
//! - an exact-duplicate digest of the canonical one-liner (case, width,
//!   punctuation and spacing normalised away) — a duplicate scores 1;
//! - BM25 over word tokens (CJK as character bigrams), normalised by the
//!   query's score against itself so it reads 0–1;
//! - cosine of character trigram counts, which catches inflections and
//!   spelling variants that whole words miss.
//!
//! `fused = W_BM25 · bm25_norm + (1 − W_BM25) · ngram_cosine`.

use std::collections::BTreeMap;

use crate::text;

/// BM25 term-frequency saturation.
pub const K1: f64 = 1.2;
/// BM25 length normalisation.
pub const B: f64 = 0.75;
/// Weight of the normalised BM25 score in the fused score.
pub const W_BM25: f64 = 0.5;
/// Character n-gram length.
pub const NGRAM: usize = 3;

/// A term's stable 64-bit key: FNV-1a of the text, low bit = kind
/// (0 word, 1 n-gram), so the index stores no term strings.
pub fn term_key(term: &str, gram: bool) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in term.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h << 1) | u64::from(gram)
}

/// The countable features of a text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Features {
    /// Word term keys with their counts, sorted by key.
    pub words: Vec<(u64, u32)>,
    /// Number of word tokens (BM25 document length).
    pub word_len: u32,
    /// N-gram term keys with their counts, sorted by key.
    pub grams: Vec<(u64, u32)>,
    /// Euclidean norm of the n-gram count vector.
    pub gram_norm: f32,
    /// The first 16 bytes of the canonical one-liner's SHA-256.
    pub dup: [u8; 16],
}

fn counts(terms: impl Iterator<Item = u64>) -> Vec<(u64, u32)> {
    let mut m: BTreeMap<u64, u32> = BTreeMap::new();
    for t in terms {
        *m.entry(t).or_default() += 1;
    }
    m.into_iter().collect()
}

/// The duplicate digest of a one-liner.
pub fn dup_digest(one_liner: &str) -> [u8; 16] {
    let hex = crate::doc::digest::sha256_hex(text::canonical(one_liner).as_bytes());
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0);
    }
    out
}

/// Features of a note or candidate: `text` is what it decides (see
/// `Candidate::search_text`), `one_liner` feeds the duplicate digest.
pub fn features(text_: &str, one_liner: &str) -> Features {
    let toks = text::tokens(text_);
    let grams = text::char_ngrams(text_, NGRAM);
    let grams = counts(grams.iter().map(|g| term_key(g, true)));
    let norm = grams.iter().map(|(_, c)| f64::from(*c).powi(2)).sum::<f64>().sqrt();
    Features {
        word_len: toks.len() as u32,
        words: counts(toks.iter().map(|t| term_key(t, false))),
        grams,
        gram_norm: norm as f32,
        dup: dup_digest(one_liner),
    }
}

/// BM25 inverse document frequency (the +1 form, never negative).
pub fn idf(n_docs: f64, df: f64) -> f64 {
    (1.0 + (n_docs - df + 0.5) / (df + 0.5)).ln()
}

/// One BM25 term contribution for term frequency `tf` in a document of
/// `len` words, average length `avg`.
pub fn bm25_term(idf: f64, tf: f64, len: f64, avg: f64) -> f64 {
    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg.max(1.0)))
}

/// The fused score from its parts.
pub fn fuse(bm25_norm: f64, cosine: f64, duplicate: bool) -> f64 {
    if duplicate {
        1.0
    } else {
        W_BM25 * bm25_norm.clamp(0.0, 1.0) + (1.0 - W_BM25) * cosine.clamp(0.0, 1.0)
    }
}

/// Rounds a score for records (4 decimals), so outputs are stable bytes.
pub fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// A corpus-free similarity of two short texts (0–1): half the Dice
/// overlap of their word sets, half their character trigram cosine. Used
/// to compare two conclusions (one-liners) with no index at hand.
pub fn pair(a: &str, b: &str) -> f64 {
    use std::collections::BTreeSet;
    let wa: BTreeSet<String> = text::tokens(a).into_iter().collect();
    let wb: BTreeSet<String> = text::tokens(b).into_iter().collect();
    let dice = if wa.is_empty() && wb.is_empty() {
        0.0
    } else {
        2.0 * wa.intersection(&wb).count() as f64 / (wa.len() + wb.len()) as f64
    };
    let ga = counts(text::char_ngrams(a, NGRAM).iter().map(|g| term_key(g, true)));
    let gb: BTreeMap<u64, u32> =
        counts(text::char_ngrams(b, NGRAM).iter().map(|g| term_key(g, true))).into_iter().collect();
    let dot: f64 = ga.iter().filter_map(|(k, c)| gb.get(k).map(|d| f64::from(*c) * f64::from(*d))).sum();
    let na = ga.iter().map(|(_, c)| f64::from(*c).powi(2)).sum::<f64>().sqrt();
    let nb = gb.values().map(|c| f64::from(*c).powi(2)).sum::<f64>().sqrt();
    let cos = if na > 0.0 && nb > 0.0 { dot / (na * nb) } else { 0.0 };
    0.5 * dice + 0.5 * cos
}
