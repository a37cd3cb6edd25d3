#!/usr/bin/env python3
"""Per-call latency of kb-score on a library, one process per SciFact query.

usage: dense_p50.py KB_SCORE_BIN[,BIN2,...] KB_ROOT N [--rounds R] [kb-score flags, e.g. --model DIR]

Runs the first N SciFact queries (../shared/data/scifact) through
`kb-score --no-recommend --limit 10` on the library at KB_ROOT and prints,
per binary, p50/p95 wall, p50/p95 CPU (user + system of the process, from
wait4: what `perf stat -e task-clock` counts, without perf) and the largest
peak RSS. Several binaries (comma-separated) are run alternately, query by
query, so a shared machine's load falls on each alike; R rounds repeat the
N queries. bench/RESULTS.md used the first 200 abstracts of
bench/scifact.py's realistic library:
  mkdir -p /tmp/dsub/.library/scifact
  ls WORK/realistic/.library/scifact | head -200 | xargs -I{} cp WORK/realistic/.library/scifact/{} /tmp/dsub/.library/scifact/
"""
import json, os, subprocess, sys, time

bins, root, n = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3])
extra = sys.argv[4:]
rounds = 1
if extra[:1] == ["--rounds"]:
    rounds, extra = int(extra[1]), extra[2:]
data = os.environ.get("KB_SCIFACT", os.path.join(os.path.dirname(__file__), "../../shared/data/scifact"))
qs = [json.loads(l)["text"] for l in open(os.path.join(data, "beir_scifact/queries.jsonl"))][:n]
env = dict(os.environ, KB_ROOT=root, KB_NOW="2026-01-01T00:00:00Z")
walls, cpus, rss = ({b: [] for b in bins} for _ in range(3))
for _ in range(rounds):
    for q in qs:
        for kb in bins:
            t = time.perf_counter()
            p = subprocess.Popen([kb, "--no-registries", "--no-recommend", "--limit", "10", "--format", "jsonl", *extra, "--", q],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, status, ru = os.wait4(p.pid, 0)
            walls[kb].append(time.perf_counter() - t)
            if status != 0:
                sys.exit(f"{kb} exited with status {status} on {q!r}")
            cpus[kb].append(ru.ru_utime + ru.ru_stime)
            rss[kb].append(ru.ru_maxrss)
            p.returncode = 0
for kb in bins:
    w, c, m = sorted(walls[kb]), sorted(cpus[kb]), len(walls[kb])
    print(f"{kb:40} {' '.join(extra) or 'no model':30} n={m} wall p50 {w[m//2]*1000:.1f} p95 {w[int(m*.95)]*1000:.1f} ms"
          f"  CPU p50 {c[m//2]*1000:.1f} p95 {c[int(m*.95)]*1000:.1f} ms  max RSS {max(rss[kb])/1024:.0f} MB  load {os.getloadavg()[0]:.1f}")
