#!/usr/bin/env python3
"""kb-score speed on a generated library, side by side with ripgrep.

usage: score_bench.py KB_SCORE_BIN LIBRARY_WORKSPACE [QUERIES=100]

Reports, in one run on the same tree: the read floor (every document read
once by cat), the cold index build (first query, no cache), warm query
latency p50/p95 over QUERIES words, and `rg -l -i -F --hidden WORD` over
the same library for the same words, with the ratios the issue targets
(warm p50 >= 10x faster than rg; cold build <= 3x the read floor).
CPU seconds (user+sys) are shown beside wall time, since the machine is
shared.
"""
import os
import resource
import shutil
import subprocess
import sys
import time


def run(cmd, **kw):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall, cpu, p


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    kb, ws = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    lib = os.path.join(ws, ".library")
    words = [w for w in open(os.path.join(ws, "words.txt")).read().split() if w][: 30 * n : 30][:n]
    env = dict(os.environ, KB_ROOT=ws)
    env.pop("KB_NOW", None)
    rg = shutil.which("rg")
    docs = sum(1 for _, _, fs in os.walk(lib) for f in fs if f.endswith(".md") and not f.startswith("."))
    print(f"library: {docs} documents under {lib}")

    floor, floor_cpu, _ = run(["sh", "-c", "find .library -name '*.md' -print0 | xargs -0 cat > /dev/null"], cwd=ws)
    shutil.rmtree(os.path.join(lib, ".cache"), ignore_errors=True)
    cold, cold_cpu, p = run([kb, words[0], "--no-registries", "--format", "jsonl"], env=env, cwd=ws)
    size = os.path.getsize(os.path.join(lib, ".cache", "kb-score", [f for f in os.listdir(os.path.join(lib, ".cache", "kb-score")) if f.endswith(".bin")][0]))
    run([kb, words[0], "--no-registries"], env=env, cwd=ws)  # settles the audit log and lock files
    warm, warm_cpu = [], []
    for w in words:
        t, c, p = run([kb, w, "--no-registries", "--format", "jsonl"], env=env, cwd=ws)
        warm.append(t)
        warm_cpu.append(c)
    rgt = []
    if rg:
        for w in words:
            t, _, _ = run([rg, "-l", "-i", "-F", "--hidden", w, ".library"], cwd=ws)
            rgt.append(t)
    verify, _, _ = run([kb, words[1], "--no-registries", "--verify"], env=env, cwd=ws)

    print(f"read floor (cat every document)      {floor:8.2f} s wall  {floor_cpu:6.2f} s cpu")
    print(f"cold build (first query, no cache)   {cold:8.2f} s wall  {cold_cpu:6.2f} s cpu   "
          f"ratio {cold / floor:.1f}x floor wall, {cold_cpu / max(floor_cpu, 1e-9):.1f}x cpu (target <= 3x)   index {size / 1e6:.0f} MB")
    print(f"warm query p50 / p95                 {pct(warm, .5) * 1000:8.1f} / {pct(warm, .95) * 1000:.1f} ms  (cpu p50 {pct(warm_cpu, .5) * 1000:.1f} ms)")
    print(f"warm query with --verify             {verify * 1000:8.1f} ms")
    if rgt:
        print(f"rg -l -i -F p50 / p95                {pct(rgt, .5) * 1000:8.1f} / {pct(rgt, .95) * 1000:.1f} ms")
        print(f"speed-up warm p50 vs rg p50          {pct(rgt, .5) / pct(warm, .5):8.1f}x  (target >= 10x)")
    else:
        print("rg not installed: no ripgrep baseline (apt-get install ripgrep)")


if __name__ == "__main__":
    main()
