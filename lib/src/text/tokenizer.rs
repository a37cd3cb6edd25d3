//! A sentence encoder's own tokenizer, read from its folder: the encoder
//! must cut a text exactly as the model was trained, or its vectors are
//! quietly wrong. Two kinds ship with sentence-transformers models:
//! BERT's WordPiece (English MiniLM, bge: `tokenizer.json`, or `vocab.txt`
//! with `tokenizer_config.json`), with its lowercasing, accent stripping
//! and CJK spacing as configured; and SentencePiece's Unigram (the
//! multilingual models, e5 and paraphrase-multilingual: `tokenizer.json`),
//! cut by Viterbi over the pieces' log probabilities. A setting this module
//! does not implement is an error naming it, never ignored.

use std::path::Path;

use serde_json::Value;
use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;

use crate::error::{Error, Result};
use crate::text::embed::{Fold, Table, Vocab};

/// HF tokenizers' penalty under the lowest piece score for an unknown
/// character in a Unigram model.
const UNK_PENALTY: f64 = 10.0;

enum Model {
    WordPiece { vocab: Vocab, fold: Fold },
    Unigram(Unigram),
}

/// A Unigram model: each piece's id (a sorted table, as WordPiece's, so
/// the cache maps it) and each id's log probability, and the text
/// normalisation before it (NFKC for SentencePiece's `nmt_nfkc` charsmap,
/// then runs of spaces made one).
struct Unigram {
    pieces: Vocab,
    scores: Vec<f64>,
    /// The highest id of a piece plus one.
    ids: usize,
    longest: usize,
    unk_score: f64,
    nfkc: bool,
    lowercase: bool,
    collapse_spaces: bool,
    prefix_space: bool,
}

/// A model's tokenizer: its model, its unknown token, and the tokens it
/// puts around a text (`[CLS]`/`[SEP]`, `<s>`/`</s>`).
pub(crate) struct Tokenizer {
    model: Model,
    pub(crate) unk: usize,
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// The files read, for the model's digest (empty when the table was
    /// found by [`Tokenizer::known`], which reads none of them).
    pub(crate) source: Vec<u8>,
    /// The SHA-256 of the `tokenizer.json` whose table a cache holds, for
    /// [`Tokenizer::known`] to find it again.
    pub(crate) table: Option<[u8; 32]>,
}

fn bad(file: &Path, what: impl std::fmt::Display) -> Error {
    Error::msg(format!("{}: {what}", file.display()))
}

/// A JSON object's field as a string, or `None` (absent or null).
fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

impl Tokenizer {
    /// The tokenizer of a model folder: `tokenizer.json` if it is there,
    /// else `vocab.txt` with `tokenizer_config.json`'s settings. With a
    /// cache directory, a `tokenizer.json` is read once: its table is kept
    /// there (`tokenizer-<digest>.bin`, named by the file's SHA-256) and
    /// mapped by later calls, which then parse no JSON (multilingual e5's
    /// is 13 MB of 250,002 pieces).
    pub(crate) fn load(dir: &Path, cache: Option<&Path>) -> Result<Tokenizer> {
        let json = dir.join("tokenizer.json");
        let bytes = match std::fs::read(&json) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Tokenizer::from_vocab(dir),
            Err(e) => return Err(Error::io(format!("reading {}", json.display()), e)),
        };
        let Some(cache) = cache else { return Tokenizer::from_json(&json, bytes) };
        let sha: [u8; 32] = Sha256::digest(&bytes).into();
        let file = table_path(cache, &sha);
        if let Some(t) = cached(&file, &sha, &bytes) {
            return Ok(t);
        }
        let mut t = Tokenizer::from_json(&json, bytes)?;
        t.table = Some(sha);
        let mut out = Vec::new();
        out.extend_from_slice(match t.model {
            Model::WordPiece { .. } => CACHE_MAGIC,
            Model::Unigram(_) => UNIGRAM_MAGIC,
        });
        out.extend_from_slice(&sha);
        for id in [t.unk, t.start, t.end] {
            out.extend_from_slice(&(id as u32).to_le_bytes());
        }
        match &t.model {
            Model::WordPiece { vocab, fold } => {
                out.extend_from_slice(&[fold.lowercase, fold.strip_accents, fold.chinese, false].map(u8::from));
                out.extend_from_slice(vocab.bytes());
            }
            Model::Unigram(u) => {
                out.extend_from_slice(&[u.nfkc, u.lowercase, u.collapse_spaces, u.prefix_space].map(u8::from));
                for n in [u.ids, u.longest, u.scores.len()] {
                    out.extend_from_slice(&(n as u64).to_le_bytes());
                }
                out.extend_from_slice(&u.unk_score.to_le_bytes());
                u.scores.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
                out.extend_from_slice(u.pieces.bytes());
            }
        }
        // Derived: a table that cannot be written costs the next call the parse again.
        let _ = crate::fs::atomic::write(&file, &out);
        Ok(t)
    }

    /// The table `cache` holds for the `tokenizer.json` of SHA-256 `sha`,
    /// read without that file: for a folder whose files are as they were
    /// when the table was written (the record `text::seen` keeps says so).
    /// None when the table is gone or damaged.
    pub(crate) fn known(cache: &Path, sha: &[u8; 32]) -> Option<Tokenizer> {
        cached(&table_path(cache, sha), sha, &[])
    }

    /// `vocab.txt` and the BERT tokenizer's settings in
    /// `tokenizer_config.json` (absent: uncased BERT's).
    fn from_vocab(dir: &Path) -> Result<Tokenizer> {
        let file = dir.join("vocab.txt");
        let bytes = std::fs::read(&file).map_err(|e| {
            bad(&file, format!("{e} (a sentence-transformers folder holds config.json, tokenizer.json or vocab.txt, and model.safetensors)"))
        })?;
        let vocab = Vocab::parse(std::str::from_utf8(&bytes).map_err(|e| bad(&file, e))?);
        let cfg_file = dir.join("tokenizer_config.json");
        let cfg: Value = match std::fs::read(&cfg_file) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| bad(&cfg_file, e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Null,
            Err(e) => return Err(Error::io(format!("reading {}", cfg_file.display()), e)),
        };
        let lowercase = cfg.get("do_lower_case").and_then(Value::as_bool).unwrap_or(true);
        let fold = Fold {
            lowercase,
            strip_accents: cfg.get("strip_accents").and_then(Value::as_bool).unwrap_or(lowercase),
            chinese: cfg.get("tokenize_chinese_chars").and_then(Value::as_bool).unwrap_or(true),
        };
        if cfg.get("do_basic_tokenize").and_then(Value::as_bool) == Some(false) {
            return Err(bad(&cfg_file, "do_basic_tokenize false is not implemented"));
        }
        let special = |key: &str, default: &str| {
            let t = text(&cfg, key).unwrap_or(default);
            vocab.get(t).ok_or_else(|| bad(&file, format!("no {t} token")))
        };
        let (unk, start, end) =
            (special("unk_token", "[UNK]")?, special("cls_token", "[CLS]")?, special("sep_token", "[SEP]")?);
        let mut source = bytes.clone();
        source.extend(serde_json::to_vec(&cfg).unwrap_or_default());
        Ok(Tokenizer { model: Model::WordPiece { vocab, fold }, unk, start, end, source, table: None })
    }

    fn from_json(file: &Path, bytes: Vec<u8>) -> Result<Tokenizer> {
        let t: Value = serde_json::from_slice(&bytes).map_err(|e| bad(file, e))?;
        let model = t.get("model").ok_or_else(|| bad(file, "no model"))?;
        let (model, unk) = match text(model, "type") {
            Some("WordPiece") => wordpiece(file, &t, model)?,
            Some("Unigram") => unigram(file, &t, model)?,
            other => return Err(bad(file, format!("model type {other:?} is not implemented (WordPiece, Unigram)"))),
        };
        let id = |name: &str| -> Result<usize> {
            let found = match &model {
                Model::WordPiece { vocab, .. } => vocab.get(name),
                Model::Unigram(u) => u.pieces.get(name),
            };
            found.ok_or_else(|| bad(file, format!("post_processor's token {name} is not in the vocabulary")))
        };
        let post = t.get("post_processor").filter(|p| !p.is_null()).ok_or_else(|| bad(file, "no post_processor"))?;
        let (start, end) = match text(post, "type") {
            Some("TemplateProcessing") => {
                let single = post
                    .get("single")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad(file, "post_processor without single"))?;
                let names: Vec<Option<&str>> =
                    single.iter().map(|p| p.get("SpecialToken").and_then(|s| text(s, "id"))).collect();
                match names[..] {
                    [Some(a), None, Some(b)] if single[1].get("Sequence").is_some() => (id(a)?, id(b)?),
                    _ => {
                        return Err(bad(
                            file,
                            "post_processor template other than [special, $A, special] is not implemented",
                        ))
                    }
                }
            }
            Some("BertProcessing" | "RobertaProcessing") => {
                let name = |k: &str| {
                    post.get(k)
                        .and_then(|v| v.get(0))
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad(file, format!("post_processor without {k}")))
                };
                (id(name("cls")?)?, id(name("sep")?)?)
            }
            other => return Err(bad(file, format!("post_processor type {other:?} is not implemented"))),
        };
        Ok(Tokenizer { model, unk, start, end, source: bytes, table: None })
    }

    /// A text's token ids, without the tokens around it.
    pub(crate) fn ids(&self, text: &str) -> Vec<usize> {
        match &self.model {
            Model::WordPiece { vocab, fold } => vocab.ids_folded(text, Some(self.unk), *fold),
            Model::Unigram(u) => u.ids(text, self.unk),
        }
    }

    /// How many token ids the model has (the highest plus one).
    pub(crate) fn len(&self) -> usize {
        match &self.model {
            Model::WordPiece { vocab, .. } => vocab.len(),
            Model::Unigram(u) => u.ids,
        }
    }
}

/// The cached table's header: magic (WordPiece or Unigram), the SHA-256
/// of the `tokenizer.json` it was read from, the unknown, start and end
/// ids (u32), four flags (WordPiece: the folding and a zero; Unigram:
/// NFKC, lower case, spaces collapsed, the prefix space), 56 bytes. A
/// WordPiece table follows; a Unigram model's table follows its ids,
/// longest piece and scores' count (u64), the unknown character's score
/// and each id's score (f64).
const CACHE_MAGIC: &[u8; 8] = b"KBTOKWP1";
const UNIGRAM_MAGIC: &[u8; 8] = b"KBTOKUG1";
const CACHE_HEAD: usize = 8 + 32 + 12 + 4;

/// The cached table's file for the `tokenizer.json` of SHA-256 `sha`.
fn table_path(cache: &Path, sha: &[u8; 32]) -> std::path::PathBuf {
    cache.join(format!("tokenizer-{}.bin", super::hex(&sha[..8])))
}

/// The tokenizer of the cached table at `file`, if it is whole and was
/// read from a `tokenizer.json` of SHA-256 `sha` (`source`, its bytes,
/// kept for the model's digest).
fn cached(file: &Path, sha: &[u8; 32], source: &[u8]) -> Option<Tokenizer> {
    // fs::map maps only files written by atomic::write: this table is one.
    let m = crate::fs::map::map(file).ok()?;
    let unigram = match m.get(..8)? {
        magic if magic == CACHE_MAGIC => false,
        magic if magic == UNIGRAM_MAGIC => true,
        _ => return None,
    };
    if m.get(8..40)? != sha {
        return None;
    }
    let id = |at: usize| Some(u32::from_le_bytes(m.get(at..at + 4)?.try_into().ok()?) as usize);
    let (unk, start, end) = (id(40)?, id(44)?, id(48)?);
    let flag = |at: usize| m.get(at).map(|b| *b == 1);
    let (f0, f1, f2, f3) = (flag(52)?, flag(53)?, flag(54)?, flag(55)?);
    let eight = |at: usize| -> Option<[u8; 8]> { m.get(at..at + 8)?.try_into().ok() };
    let model = if unigram {
        let count = |at: usize| usize::try_from(u64::from_le_bytes(eight(at)?)).ok();
        let (ids, longest, n) = (count(CACHE_HEAD)?, count(CACHE_HEAD + 8)?, count(CACHE_HEAD + 16)?);
        let unk_score = f64::from_le_bytes(eight(CACHE_HEAD + 24)?);
        let first = CACHE_HEAD + 32;
        let table = first.checked_add(n.checked_mul(8)?)?;
        let scores = m.get(first..table)?.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
        let scores = scores.collect();
        let pieces = Vocab::from_table(Table::Mapped(m, table))?;
        let u = Unigram {
            pieces,
            scores,
            ids,
            longest,
            unk_score,
            nfkc: f0,
            lowercase: f1,
            collapse_spaces: f2,
            prefix_space: f3,
        };
        Model::Unigram(u)
    } else {
        let fold = Fold { lowercase: f0, strip_accents: f1, chinese: f2 };
        Model::WordPiece { vocab: Vocab::from_table(Table::Mapped(m, CACHE_HEAD))?, fold }
    };
    Some(Tokenizer { model, unk, start, end, source: source.to_vec(), table: Some(*sha) })
}

/// A BERT WordPiece model and its normaliser.
fn wordpiece(file: &Path, t: &Value, model: &Value) -> Result<(Model, usize)> {
    if text(model, "continuing_subword_prefix").is_some_and(|p| p != "##") {
        return Err(bad(file, "continuing_subword_prefix other than ## is not implemented"));
    }
    if model.get("max_input_chars_per_word").and_then(Value::as_u64).is_some_and(|n| n != 100) {
        return Err(bad(file, "max_input_chars_per_word other than 100 is not implemented"));
    }
    let map =
        model.get("vocab").and_then(Value::as_object).ok_or_else(|| bad(file, "WordPiece model without vocab"))?;
    let vocab = Vocab::from_pairs(map.iter().filter_map(|(k, v)| Some((k.as_str(), v.as_u64()? as usize))).collect());
    let n = t.get("normalizer").unwrap_or(&Value::Null);
    let fold = match text(n, "type") {
        Some("BertNormalizer") => {
            let lowercase = n.get("lowercase").and_then(Value::as_bool).unwrap_or(true);
            Fold {
                lowercase,
                strip_accents: n.get("strip_accents").and_then(Value::as_bool).unwrap_or(lowercase),
                chinese: n.get("handle_chinese_chars").and_then(Value::as_bool).unwrap_or(true),
            }
        }
        other => {
            return Err(bad(file, format!("normalizer {other:?} with WordPiece is not implemented (BertNormalizer)")))
        }
    };
    match t.get("pre_tokenizer").and_then(|p| text(p, "type")) {
        Some("BertPreTokenizer") => {}
        other => {
            return Err(bad(
                file,
                format!("pre_tokenizer {other:?} with WordPiece is not implemented (BertPreTokenizer)"),
            ))
        }
    }
    let unk_name = text(model, "unk_token").unwrap_or("[UNK]");
    let unk = vocab.get(unk_name).ok_or_else(|| bad(file, format!("no {unk_name} token")))?;
    Ok((Model::WordPiece { vocab, fold }, unk))
}

/// A SentencePiece Unigram model, with the normalisers and pre-tokenizer
/// multilingual models ship.
fn unigram(file: &Path, t: &Value, model: &Value) -> Result<(Model, usize)> {
    let list = model.get("vocab").and_then(Value::as_array).ok_or_else(|| bad(file, "Unigram model without vocab"))?;
    let mut pairs = Vec::with_capacity(list.len());
    let mut scores = Vec::with_capacity(list.len());
    for (i, p) in list.iter().enumerate() {
        let (Some(piece), Some(score)) = (p.get(0).and_then(Value::as_str), p.get(1).and_then(Value::as_f64)) else {
            return Err(bad(file, format!("Unigram vocab entry {i} is not [piece, score]")));
        };
        pairs.push((piece, i));
        scores.push(score);
    }
    // A piece listed twice is its first id: the table keeps the later of
    // two pairs, so they go in from the last.
    let longest = pairs.iter().map(|p| p.0.chars().count()).max().unwrap_or(1);
    pairs.reverse();
    let pieces = Vocab::from_pairs(pairs);
    let ids = (0..pieces.len()).map(|i| pieces.id_at(i) + 1).max().unwrap_or(0);
    let unk =
        model.get("unk_id").and_then(Value::as_u64).ok_or_else(|| bad(file, "Unigram model without unk_id"))? as usize;
    if model.get("byte_fallback").and_then(Value::as_bool) == Some(true) {
        return Err(bad(file, "Unigram byte_fallback is not implemented"));
    }
    let min = (0..pieces.len()).map(|i| scores[pieces.id_at(i)]).fold(f64::INFINITY, f64::min);
    let mut u = Unigram {
        longest,
        pieces,
        scores,
        ids,
        unk_score: min - UNK_PENALTY,
        nfkc: false,
        lowercase: false,
        collapse_spaces: false,
        prefix_space: false,
    };
    let normalizers = match t.get("normalizer") {
        None | Some(Value::Null) => Vec::new(),
        Some(n) if text(n, "type") == Some("Sequence") => {
            n.get("normalizers").and_then(Value::as_array).cloned().unwrap_or_default()
        }
        Some(n) => vec![n.clone()],
    };
    for n in &normalizers {
        match text(n, "type") {
            // SentencePiece's compiled nmt_nfkc map: NFKC, which is what it
            // compiles (its extra control-character rules aside).
            Some("Precompiled" | "NFKC") => u.nfkc = true,
            Some("Lowercase") => u.lowercase = true,
            Some("Replace")
                if n.get("pattern").and_then(|p| p.get("Regex")).and_then(Value::as_str) == Some(" {2,}")
                    && text(n, "content") == Some(" ") =>
            {
                u.collapse_spaces = true
            }
            other => return Err(bad(file, format!("normalizer {other:?} with Unigram is not implemented"))),
        }
    }
    let pre = t.get("pre_tokenizer").unwrap_or(&Value::Null);
    let metas: Vec<Value> = match text(pre, "type") {
        Some("Sequence") => pre.get("pretokenizers").and_then(Value::as_array).cloned().unwrap_or_default(),
        Some(_) => vec![pre.clone()],
        None => Vec::new(),
    };
    let mut meta = false;
    for p in &metas {
        match text(p, "type") {
            Some("WhitespaceSplit") => {}
            Some("Metaspace") => {
                if text(p, "replacement").is_some_and(|r| r != "▁") {
                    return Err(bad(file, "Metaspace replacement other than ▁ is not implemented"));
                }
                meta = true;
                u.prefix_space = match text(p, "prepend_scheme") {
                    Some("always") => true,
                    Some("never") => false,
                    Some(s) => return Err(bad(file, format!("Metaspace prepend_scheme {s:?} is not implemented"))),
                    None => p.get("add_prefix_space").and_then(Value::as_bool).unwrap_or(true),
                };
            }
            other => return Err(bad(file, format!("pre_tokenizer {other:?} with Unigram is not implemented"))),
        }
    }
    if !meta {
        return Err(bad(file, "a Unigram tokenizer without a Metaspace pre_tokenizer is not implemented"));
    }
    Ok((Model::Unigram(u), unk))
}

impl Unigram {
    /// The ids of a text: normalised, split into words at spaces (each
    /// word starting with ▁), each word cut by Viterbi into the pieces of
    /// highest total log probability; an unknown character is the unknown
    /// token, and a run of them one unknown token.
    fn ids(&self, text: &str, unk: usize) -> Vec<usize> {
        let mut s: String = if self.nfkc { text.nfkc().collect() } else { text.to_string() };
        if self.lowercase {
            s = s.chars().flat_map(char::to_lowercase).collect();
        }
        if self.collapse_spaces {
            let mut out = String::with_capacity(s.len());
            for c in s.chars() {
                if !(c == ' ' && out.ends_with(' ')) {
                    out.push(c);
                }
            }
            s = out;
        }
        let mut out = Vec::new();
        for (i, word) in s.split_whitespace().enumerate() {
            let w = if self.prefix_space || i > 0 { format!("▁{word}") } else { word.to_string() };
            self.viterbi(&w, unk, &mut out);
        }
        out
    }

    fn viterbi(&self, word: &str, unk: usize, out: &mut Vec<usize>) {
        let chars: Vec<usize> = word.char_indices().map(|(i, _)| i).chain([word.len()]).collect();
        let n = chars.len() - 1;
        // best[i]: (score, start of the last piece, its id) of the best cut of the first i chars.
        let mut best: Vec<(f64, usize, Option<usize>)> = vec![(f64::NEG_INFINITY, 0, None); n + 1];
        best[0].0 = 0.0;
        for end in 1..=n {
            for start in end.saturating_sub(self.longest)..end {
                if best[start].0 == f64::NEG_INFINITY {
                    continue;
                }
                let piece = self.pieces.get(&word[chars[start]..chars[end]]);
                if let Some((id, score)) = piece.and_then(|id| Some((id, *self.scores.get(id)?))) {
                    let s = best[start].0 + score;
                    if s > best[end].0 {
                        best[end] = (s, start, Some(id));
                    }
                }
            }
            if best[end].0 == f64::NEG_INFINITY {
                best[end] = (best[end - 1].0 + self.unk_score, end - 1, None);
            }
        }
        let mut cut = Vec::new();
        let mut at = n;
        while at > 0 {
            let (_, start, id) = best[at];
            let id = id.unwrap_or(unk);
            // Runs of unknown characters are fused into one unknown token.
            if !(id == unk && cut.last() == Some(&unk)) {
                cut.push(id);
            }
            at = start;
        }
        out.extend(cut.into_iter().rev());
    }
}
