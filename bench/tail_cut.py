#!/usr/bin/env python3
"""The tail cut of kb-score's default output, tuned on SciFact train.

usage: tail_cut.py KB_SCORE_BIN [WORKDIR] [--split train]

Runs every query of the split with `--limit 10` (no cut) on the realistic
SciFact library of bench/scifact.py and, for each candidate share r, cuts
the direct hits scoring below r × the best one: how many relevant hits of
the top 10 stay, how many hits are shown, and nDCG@10 of what is left.
Tune on train; test is reported once.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scifact  # noqa: E402


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    split = sys.argv[sys.argv.index("--split") + 1] if "--split" in sys.argv else "train"
    args = [a for a in args if a != split]
    kb = os.path.abspath(args[0])
    work = os.path.join(args[1] if len(args) > 1 else "/tmp/kb-scifact", "realistic")
    if not os.path.exists(os.path.join(scifact.DATA, "scifact.zip")):
        print("tail_cut: data set not found; skipped")
        return 0
    docs = list(scifact.corpus())
    scifact.write_library(work, "realistic", docs)
    queries = {}
    with open(os.path.join(scifact.DATA, "beir_scifact", "queries.jsonl")) as f:
        for line in f:
            q = json.loads(line)
            queries[q["_id"]] = q["text"]
    env = dict(os.environ, KB_ROOT=work, KB_NOW=scifact.NOW)
    rels = scifact.qrels(split)
    runs = []
    for qid, rel in rels.items():
        out = subprocess.run([kb, "--no-registries", "--no-recommend", "--limit", "10", "--format", "jsonl", "--",
                              queries[qid]], env=env, capture_output=True, text=True)
        hits = [json.loads(l) for l in out.stdout.splitlines()]
        hits = [(os.path.basename(h["path"])[4:-3], h["score"]) for h in hits if h.get("record") == "hit"]
        runs.append((hits, rel))
    print(f"scifact {split}: {len(runs)} queries, top 10 each")
    print(f"{'share':>6} {'relevant kept':>14} {'hits shown':>11} {'nDCG@10':>8}")
    for r in [0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6]:
        kept = total = shown = 0
        nd = 0.0
        for hits, rel in runs:
            top = hits[0][1] if hits else 0
            cut = [d for d, s in hits if s >= r * top]
            total += sum(1 for d, _ in hits if rel.get(d, 0) > 0)
            kept += sum(1 for d in cut if rel.get(d, 0) > 0)
            shown += len(cut)
            nd += scifact.ndcg10(cut, rel)
        print(f"{r:6.2f} {kept / max(total, 1):14.3f} {shown / len(runs):11.2f} {nd / len(runs):8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
