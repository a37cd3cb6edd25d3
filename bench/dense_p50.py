#!/usr/bin/env python3
"""Per-call latency of kb-score on a library, one process per SciFact query.

usage: dense_p50.py KB_SCORE_BIN KB_ROOT N [kb-score flags, e.g. --model DIR]

Runs the first N SciFact queries (../shared/data/scifact) through
`kb-score --no-recommend --limit 10` on the library at KB_ROOT and prints
p50/p95 wall and the largest peak RSS (/usr/bin/time). bench/RESULTS.md
used the first 200 abstracts of bench/scifact.py's realistic library:
  mkdir -p /tmp/dsub/.library/scifact
  ls WORK/realistic/.library/scifact | head -200 | xargs -I{} cp WORK/realistic/.library/scifact/{} /tmp/dsub/.library/scifact/
"""
import json, subprocess, sys, time, os, resource
kb, root, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
extra = sys.argv[4:]
qs = [json.loads(l)["text"] for l in open(os.path.join(os.environ.get("KB_SCIFACT", os.path.join(os.path.dirname(__file__), "../../shared/data/scifact")), "beir_scifact/queries.jsonl"))][:n]
env = dict(os.environ, KB_ROOT=root, KB_NOW="2026-01-01T00:00:00Z")
walls, rss = [], []
for q in qs:
    t = time.perf_counter()
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M", kb, "--no-registries", "--no-recommend", "--limit", "10", "--format", "jsonl", *extra, "--", q], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, err = p.communicate()
    walls.append(time.perf_counter() - t)
    rss.append(int(err.strip().splitlines()[-1]))
walls.sort(); rss.sort()
print(f"{' '.join(extra) or 'no model':40} n={n} p50 {walls[n//2]*1000:.1f} ms p95 {walls[int(n*.95)]*1000:.1f} ms  max RSS {rss[-1]/1024:.0f} MB  load {os.getloadavg()[0]:.1f}")
