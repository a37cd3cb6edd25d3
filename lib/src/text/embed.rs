//! A static sentence embedding: meaning where the words differ. "What
//! pets does she have?" shares no word with "adopted a dog named Max", so
//! no lexical half can find the note; a vector per word can.
//!
//! The table is a static distillation of all-MiniLM-L6-v2 (Apache-2.0):
//! each WordPiece token run alone through the model, PCA to 128
//! dimensions, weighted by log(1 + frequency rank), stored as i8 with a
//! scale per token (`lib/data/minilm-static-128.i8`, written by
//! `bench/memgate_embed_probe.py --write-table`, which also says how to
//! regenerate it). A text's vector is the sum of its tokens' rows,
//! normalised. Tokens are found the way the model finds them: BERT's basic
//! tokenizer (lower case, accents stripped, punctuation and CJK ideographs
//! split off) and greedy longest-match WordPiece over the model's own
//! vocabulary (`lib/data/minilm-vocab.txt`).

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// The table: b"KBE1", u32 dims, u32 first token id, u32 rows (all
/// little-endian), rows × f32 scale, rows × dims i8.
static TABLE: &[u8] = include_bytes!("../../data/minilm-static-128.i8");
/// The model's vocabulary, one token a line; the line number is its id.
static VOCAB: &str = include_str!("../../data/minilm-vocab.txt");

/// BERT leaves a longer word whole, as one unknown token.
const MAX_WORD_CHARS: usize = 100;

struct Model {
    dims: usize,
    first: usize,
    scales: Vec<f32>,
    rows: &'static [u8],
    vocab: Vocab,
}

/// A WordPiece vocabulary (a BERT model's `vocab.txt`: one token a line,
/// the line number its id), shared by the static table and the full
/// encoder (`text::bert`). Held as one table of the tokens sorted by their
/// bytes, searched by halving: built by a sort, not 30,000 hash inserts,
/// and its bytes are what the encoder caches (`text::tokenizer`), so a
/// later call maps the table instead of building it.
pub(crate) struct Vocab {
    table: Table,
}

/// The table's bytes, little-endian: the count n, then n entries (offset
/// of the token in the text, its length, its id; u32 each), then the
/// tokens' text.
pub(crate) enum Table {
    Owned(Vec<u8>),
    Mapped(memmap2::Mmap, usize),
}

impl Table {
    fn bytes(&self) -> &[u8] {
        match self {
            Table::Owned(b) => b,
            Table::Mapped(m, at) => &m[*at..],
        }
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<usize> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize)
}

/// The parsed table, once per process; `None` only if the compiled-in
/// table is malformed (then no text has a vector and ranking stays lexical).
fn model() -> Option<&'static Model> {
    static M: OnceLock<Option<Model>> = OnceLock::new();
    M.get_or_init(|| {
        if TABLE.get(..4)? != b"KBE1" {
            return None;
        }
        let (dims, first, n) = (u32_at(TABLE, 4)?, u32_at(TABLE, 8)?, u32_at(TABLE, 12)?);
        let scales_end = 16 + 4 * n;
        let scales = TABLE
            .get(16..scales_end)?
            .chunks_exact(4)
            .map(|c| c.try_into().map(f32::from_le_bytes))
            .collect::<Result<Vec<f32>, _>>()
            .ok()?;
        let rows = TABLE.get(scales_end..scales_end + n * dims)?;
        Some(Model { dims, first, scales, rows, vocab: Vocab::parse(VOCAB) })
    })
    .as_ref()
}

/// Whether BERT splits a character off as punctuation: every ASCII
/// non-alphanumeric symbol, and Unicode's punctuation categories.
fn punct_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"[\p{P}!-/:-@\[-`{-~]|[^\s\p{P}!-/:-@\[-`{-~]+").expect("a fixed pattern"))
}

/// BERT's CJK ideograph blocks: each ideograph is a word of its own.
fn is_ideograph(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

/// How BERT's basic tokenizer folds a word: the static table's model
/// lowercases and strips accents; a cased model's tokenizer does neither.
#[derive(Clone, Copy)]
pub(crate) struct Fold {
    pub(crate) lowercase: bool,
    pub(crate) strip_accents: bool,
    /// Each CJK ideograph a word of its own (`handle_chinese_chars`).
    pub(crate) chinese: bool,
}

/// The uncased BERT tokenizer's folding.
const UNCASED: Fold = Fold { lowercase: true, strip_accents: true, chinese: true };

/// BERT's basic tokenizer: control characters dropped, CJK ideographs
/// spaced, accents stripped (NFD, marks removed), lower case, then words
/// and single punctuation characters (each step as `fold` asks).
fn basic(text: &str, fold: Fold) -> Vec<String> {
    let mut clean = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\0' || c == '\u{FFFD}' || (c.is_control() && !c.is_whitespace()) {
            continue;
        }
        if fold.chinese && is_ideograph(c) {
            clean.extend([' ', c, ' ']);
        } else {
            clean.push(c);
        }
    }
    let stripped: String =
        if fold.strip_accents { clean.nfd().filter(|c| !is_combining_mark(*c)).collect() } else { clean };
    let folded: String =
        if fold.lowercase { stripped.chars().flat_map(char::to_lowercase).collect() } else { stripped };
    punct_re().find_iter(&folded).map(|m| m.as_str().to_string()).collect()
}

impl Vocab {
    /// The vocabulary of a `vocab.txt` text (a repeated line: its last id).
    pub(crate) fn parse(text: &str) -> Vocab {
        Vocab::from_pairs(text.lines().enumerate().map(|(i, t)| (t.trim_end_matches('\r'), i)).collect())
    }

    /// The vocabulary of token → id pairs; of a token given twice, the
    /// later pair counts.
    pub(crate) fn from_pairs(mut pairs: Vec<(&str, usize)>) -> Vocab {
        // Stable, so the later of two equal tokens stays last in its run.
        pairs.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut kept: Vec<(&str, usize)> = Vec::with_capacity(pairs.len());
        for p in pairs {
            match kept.last_mut() {
                Some(last) if last.0 == p.0 => *last = p,
                _ => kept.push(p),
            }
        }
        let head = 4 + 12 * kept.len();
        let mut out = Vec::with_capacity(head + kept.iter().map(|p| p.0.len()).sum::<usize>());
        out.extend_from_slice(&(kept.len() as u32).to_le_bytes());
        let mut at = 0u32;
        for (t, id) in &kept {
            for x in [at, t.len() as u32, *id as u32] {
                out.extend_from_slice(&x.to_le_bytes());
            }
            at += t.len() as u32;
        }
        for (t, _) in &kept {
            out.extend_from_slice(t.as_bytes());
        }
        Vocab { table: Table::Owned(out) }
    }

    /// A vocabulary from its table's bytes ([`Vocab::bytes`]), None if
    /// they do not hold a whole table.
    pub(crate) fn from_table(table: Table) -> Option<Vocab> {
        let b = table.bytes();
        let n = u32_at(b, 0)?;
        let text = 4usize.checked_add(n.checked_mul(12)?)?;
        let last = if n == 0 { 0 } else { u32_at(b, 4 + 12 * (n - 1))? + u32_at(b, 8 + 12 * (n - 1))? };
        (text.checked_add(last)? == b.len()).then_some(Vocab { table })
    }

    /// The table's bytes, to cache.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.table.bytes()
    }

    /// Entry `i`: its token's bytes and its id (empty for a damaged entry).
    fn entry(&self, i: usize) -> (&[u8], usize) {
        let b = self.table.bytes();
        let text = 4 + 12 * self.len();
        let (at, len, id) = (
            u32_at(b, 4 + 12 * i).unwrap_or(0),
            u32_at(b, 8 + 12 * i).unwrap_or(0),
            u32_at(b, 12 + 12 * i).unwrap_or(0),
        );
        (b.get(text + at..text + at + len).unwrap_or(&[]), id)
    }

    /// The id of the table's `i`th token (in byte order).
    pub(crate) fn id_at(&self, i: usize) -> usize {
        self.entry(i).1
    }

    /// A token's id.
    pub(crate) fn get(&self, token: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let (t, id) = self.entry(mid);
            match t.cmp(token.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(id),
            }
        }
        None
    }

    /// How many tokens it holds (the highest id plus one, for a
    /// well-formed file).
    pub(crate) fn len(&self) -> usize {
        u32_at(self.table.bytes(), 0).unwrap_or(0)
    }

    /// The WordPiece ids of a text, in order: each word cut greedily into
    /// the longest vocabulary pieces ("##" marks a piece inside a word). A
    /// word that cannot be cut (or is over 100 characters) becomes
    /// `unknown` — BERT's `[UNK]` for the encoder; nothing for the static
    /// table, whose unknown token has no row.
    pub(crate) fn ids(&self, text: &str, unknown: Option<usize>) -> Vec<usize> {
        self.ids_folded(text, unknown, UNCASED)
    }

    /// [`Vocab::ids`] with the tokenizer's own folding.
    pub(crate) fn ids_folded(&self, text: &str, unknown: Option<usize>, fold: Fold) -> Vec<usize> {
        let mut out = Vec::new();
        let mut piece = String::new();
        for word in basic(text, fold) {
            let chars: Vec<(usize, char)> = word.char_indices().collect();
            if chars.len() > MAX_WORD_CHARS {
                out.extend(unknown);
                continue;
            }
            let mut found = Vec::new();
            let mut start = 0;
            while start < chars.len() {
                let from = chars[start].0;
                let hit = (start + 1..=chars.len()).rev().find_map(|end| {
                    let to = chars.get(end).map_or(word.len(), |c| c.0);
                    piece.clear();
                    if start > 0 {
                        piece.push_str("##");
                    }
                    piece.push_str(&word[from..to]);
                    self.get(&piece).map(|id| (id, end))
                });
                let Some((id, end)) = hit else {
                    found.clear();
                    found.extend(unknown);
                    break;
                };
                found.push(id);
                start = end;
            }
            out.extend(found);
        }
        out
    }
}

/// The WordPiece tokens of a text (for tests and for reading why two
/// texts met).
pub fn pieces(text: &str) -> Vec<String> {
    let Some(m) = model() else { return Vec::new() };
    let names: HashMap<usize, &[u8]> = (0..m.vocab.len()).map(|i| m.vocab.entry(i)).map(|(t, id)| (id, t)).collect();
    m.vocab
        .ids(text, None)
        .into_iter()
        .filter_map(|i| names.get(&i).map(|t| String::from_utf8_lossy(t).into_owned()))
        .collect()
}

/// A text's unit vector; `None` when none of its tokens has a row (stop
/// words only, or no table).
pub fn embed(text: &str) -> Option<Vec<f32>> {
    let m = model()?;
    let mut v = vec![0f32; m.dims];
    for id in m.vocab.ids(text, None) {
        let Some(r) = id.checked_sub(m.first).filter(|r| *r < m.scales.len()) else { continue };
        let s = m.scales[r];
        if s == 0.0 {
            continue;
        }
        for (x, &q) in v.iter_mut().zip(&m.rows[r * m.dims..(r + 1) * m.dims]) {
            *x += s * f32::from(q as i8);
        }
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    (norm > 0.0).then(|| v.into_iter().map(|x| x / norm).collect())
}

/// The cosine of two unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    crate::text::simd::dot(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wordpiece_as_bert_cuts() {
        assert_eq!(
            pieces("Caroline's café, unaffable!"),
            ["caroline", "'", "s", "cafe", ",", "una", "##ffa", "##ble", "!"]
        );
        assert_eq!(pieces("What pets does she have?"), ["what", "pets", "does", "she", "have", "?"]);
        // As the model's own tokenizer cuts them; a piece outside the
        // vocabulary (most CJK ideographs) is BERT's unknown token, left out.
        assert_eq!(pieces("用pnpm"), ["p", "##np", "##m"]);
        assert_eq!(
            pieces("Naïve résumé — 数据库 e-mail x\u{301}y"),
            ["naive", "resume", "—", "e", "-", "mail", "x", "##y"]
        );
    }

    #[test]
    fn related_words_are_near() {
        let (Some(q), Some(dog), Some(job)) =
            (embed("What pets does she have?"), embed("She adopted a dog named Max."), embed("She works as a nurse."))
        else {
            panic!("the table gives these texts a vector");
        };
        assert!(cosine(&q, &dog) > cosine(&q, &job), "{} vs {}", cosine(&q, &dog), cosine(&q, &job));
        assert!(embed("the and of").is_none());
    }
}
