//! The lexical stand-in for seed 003's "语义近邻": one similarity that
//! works for English and Chinese alike, computed over the user's own words
//! only (see `Candidate::search_text`). Three signals, fused:
//! - an exact-duplicate digest of the canonical one-liner (case, width,
//!   punctuation and spacing normalised away) — a duplicate scores 1;
//! - BM25 over the project's BM25 terms (`score::terms`: stop words out,
//!   English stemmed, CJK as character bigrams), normalised by the query's
//!   score against itself so it reads 0–1;
//! - BM25 over character n-grams (trigrams of Latin words, single
//!   characters and bigrams of CJK runs), normalised the same way: it
//!   catches inflections, spelling variants and Chinese paraphrases that
//!   share characters but not word boundaries. IDF keeps an incidental run
//!   (`json` in `package.json`) from outweighing the subject, and length
//!   normalisation keeps short notes from winning by brevity.
//!
//! `fused = W_WORDS · words_norm + (1 − W_WORDS) · grams_norm`. The
//! parameters were tuned on LoCoMo conversations 1–5 (bench/memgate_locomo.py).

use std::collections::BTreeMap;

use crate::score::terms;
use crate::text;

/// BM25 parameters of one half of the similarity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25 {
    /// Term-frequency saturation.
    pub k1: f64,
    /// Length normalisation.
    pub b: f64,
}

/// The word half. Measured on LoCoMo 1–5 (Task A R@1 / Task B R@5):
/// 1.2 / 0.75 gives .854 / .624; kb-score's 0.9 / 0.4 .849 / .620; 1.2 / 0.5
/// .844 / .622; 1.2 / 0.9 .858 / .621; 0.6 / 0.75 .847 / .624 — a flat
/// optimum, so the textbook values stay. Notes differ in length more than
/// kb-score's documents relative to their content, hence the stronger b.
pub const WORDS: Bm25 = Bm25 { k1: 1.2, b: 0.75 };
/// The character n-gram half (0.9 / 0.4 measured .845 / .625).
pub const GRAMS: Bm25 = Bm25 { k1: 1.2, b: 0.75 };
/// Weight of the word half in the fused score (0.3: .850 / .621; 0.7:
/// .852 / .605).
pub const W_WORDS: f64 = 0.5;

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
    /// Number of word terms (BM25 document length of the word half).
    pub word_len: u32,
    /// N-gram term keys with their counts, sorted by key.
    pub grams: Vec<(u64, u32)>,
    /// Number of n-grams (document length of the n-gram half).
    pub gram_len: u32,
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
    let d = crate::doc::digest::sha256(text::canonical(one_liner).as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&d[..16]);
    out
}

/// The character n-grams of a text (`text::grams`).
pub use crate::text::grams;

/// Features of a note or candidate: `text` is the user's words it holds
/// (see `Candidate::search_text`), `one_liner` feeds the duplicate digest.
pub fn features(text_: &str, one_liner: &str) -> Features {
    let words = terms::analyse(text_);
    let grams = grams(text_);
    Features {
        word_len: words.len() as u32,
        words: counts(words.iter().map(|t| term_key(t, false))),
        gram_len: grams.len() as u32,
        grams: counts(grams.iter().map(|g| term_key(g, true))),
        dup: dup_digest(one_liner),
    }
}

/// The project's one IDF (`text::bm25`).
pub use crate::text::bm25::idf;

impl Bm25 {
    /// One BM25 term contribution (the project's one formula,
    /// `text::bm25`, with this half's parameters) for term frequency `tf`
    /// in a document of `len` terms, average length `avg`.
    pub fn term(self, idf: f64, tf: f64, len: f64, avg: f64) -> f64 {
        idf * text::bm25::saturate(self.k1, self.b, tf, len, avg)
    }
}

/// The fused score from its parts.
pub fn fuse(words: f64, grams: f64, duplicate: bool) -> f64 {
    if duplicate {
        1.0
    } else {
        W_WORDS * words.clamp(0.0, 1.0) + (1.0 - W_WORDS) * grams.clamp(0.0, 1.0)
    }
}

pub use crate::out::round4 as round;

/// A corpus-free similarity of two short texts (0–1): half the Dice
/// overlap of their BM25 term sets, half the Dice overlap of their
/// character n-gram sets. Used to compare two conclusions (one-liners)
/// with no index at hand.
pub fn pair(a: &str, b: &str) -> f64 {
    use std::collections::BTreeSet;
    fn dice(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
        if a.is_empty() && b.is_empty() {
            return 0.0;
        }
        2.0 * a.intersection(b).count() as f64 / (a.len() + b.len()) as f64
    }
    let (wa, wb): (BTreeSet<String>, BTreeSet<String>) =
        (terms::analyse(a).into_iter().collect(), terms::analyse(b).into_iter().collect());
    let (ga, gb): (BTreeSet<String>, BTreeSet<String>) =
        (grams(a).into_iter().collect(), grams(b).into_iter().collect());
    0.5 * dice(&wa, &wb) + 0.5 * dice(&ga, &gb)
}
