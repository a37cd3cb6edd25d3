#!/usr/bin/env python3
"""A query that matches nothing costs what one that matches does: kb-score's spelling passes ("closest entries", "did you mean")
on documents with huge keyword lists.

usage: no_hit.py KB_SCORE_BIN [--baseline-bin OTHER] [--keywords 200000] [--runs 5]

Writes libraries of 2 and 8 documents with --keywords generated keywords
each (distinct pseudo-words), builds each index once, then times warm CLI
calls side by side: a query with hits, a query that matches nothing, and
a typo that "did you mean" answers. Prints p50 wall seconds and the ratio
of the no-hit query to the hit query.
"""
import argparse
import os
import random
import shutil
import statistics
import subprocess
import time

NOW = "2026-03-01T00:00:00Z"


def write(work, docs, n):
    rng = random.Random(7)
    lib = os.path.join(work, ".library", "notes")
    os.makedirs(lib, exist_ok=True)
    letters = "abcdefghijklmnopqrstuvwxyz"
    for d in range(docs):
        kws = ["".join(rng.choice(letters) for _ in range(rng.randint(6, 11))) for _ in range(n)]
        with open(os.path.join(lib, f"note-{d}.md"), "w") as f:
            f.write(f"---\ntopic: note-{d}\nkeywords: [{', '.join(kws)}]\n---\n# Note {d}\n\n"
                    "PlatformIO builds the firmware for the board.\n")


def timed(kb, work, q, runs):
    env = dict(os.environ, KB_ROOT=work, KB_NOW=NOW)
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([kb, "--no-registries", "--format", "jsonl", "--", q], env=env, capture_output=True)
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kb")
    ap.add_argument("--baseline-bin")
    ap.add_argument("--keywords", type=int, default=200000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--work", default="/tmp/kb-no-hit")
    a = ap.parse_args()
    bins = [("kb-score", os.path.abspath(a.kb))]
    if a.baseline_bin:
        bins.append(("baseline", os.path.abspath(a.baseline_bin)))
    print(f"{'docs':>4} {'binary':10} {'hit s':>7} {'no-hit s':>9} {'typo s':>7} {'no-hit/hit':>10}")
    for docs in (2, 8):
        for name, kb in bins:
            work = os.path.join(a.work, f"{docs}-{name}")
            if not os.path.isdir(work):
                write(work, docs, a.keywords)
            env = dict(os.environ, KB_ROOT=work, KB_NOW=NOW)
            shutil.rmtree(os.path.join(work, ".library", ".cache"), ignore_errors=True)
            subprocess.run([kb, "--no-registries", "warmup"], env=env, capture_output=True)
            hit = timed(kb, work, "platformio firmware", a.runs)
            miss = timed(kb, work, "quantum chromodynamics", a.runs)
            typo = timed(kb, work, "platfromio", a.runs)
            print(f"{docs:4} {name:10} {hit:7.3f} {miss:9.3f} {typo:7.3f} {miss / hit:10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
