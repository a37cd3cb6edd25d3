#!/usr/bin/env python3
"""kb-score's costs at 1x, 4x and 8x input, side by side with a
baseline binary in one run, as ratios to the 1x row.

usage: score_costs.py KB_SCORE_BIN [--baseline-bin OTHER] [--big] [--queries 40]
                      [--work /tmp/kb-score-costs]

1. Keyword-heavy documents (no_hit.py's library: 200,000 generated
   keywords each): the cold build's wall time and peak RSS at 2, 8 and 16
   documents (16 for KB_SCORE_BIN only: the baseline needs GBs there),
   then warm p50 of a query with hits and of one that matches nothing.
2. Generated libraries (gen_library.py --words zipf) of 2,500, 10,000 and 20,000
   documents (and 100,000 with --big): warm query p50/p95 over --queries
   words, `rg -l -i -F --hidden WORD` p50 over the same words, and the
   speed-up over rg. Each binary gets its own copy of the library (both
   write the same cache format) and builds its cache first; then the
   binaries and rg take turns word by word, so a busy machine slows all
   alike.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in bench/
import no_hit  # noqa: E402  (its keyword-heavy library writer)

NOW = "2026-03-01T00:00:00Z"


def timed(cmd, env=None, cwd=None):
    """Wall seconds and peak RSS (MB) of one run."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    _, status, ru = os.wait4(p.pid, 0)
    return time.perf_counter() - t, ru.ru_maxrss / 1024


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def query(kb, ws, words):
    env = dict(os.environ, KB_ROOT=ws, KB_NOW=NOW)
    return [timed([kb, "--no-registries", "--format", "jsonl", "--", w], env=env, cwd=ws)[0] for w in words]


def keyword_heavy(bins, work):
    print("== keyword-heavy documents (200,000 frontmatter keywords each)")
    print(f"{'docs':>4} {'input':>5} {'binary':9} {'build s':>8} {'ratio':>6} {'peak MB':>8} {'ratio':>6} "
          f"{'hit p50':>8} {'no-hit p50':>10} {'no-hit/hit':>10}")
    first = {}
    for docs in (2, 8, 16):
        ws = os.path.join(work, f"kw-{docs}")
        if not os.path.isdir(ws):
            no_hit.write(ws, docs, 200_000)
        for name, kb in bins:
            if docs == 16 and name != "kb-score":
                continue
            shutil.rmtree(os.path.join(ws, ".library", ".cache"), ignore_errors=True)
            env = dict(os.environ, KB_ROOT=ws, KB_NOW=NOW)
            build, rss = timed([kb, "--no-registries", "--format", "jsonl", "warmup"], env=env, cwd=ws)
            hit = statistics.median(query(kb, ws, ["platformio firmware"] * 3))
            miss = statistics.median(query(kb, ws, ["quantum chromodynamics"] * 3))
            b0, r0 = first.setdefault(name, (build, rss))
            print(f"{docs:4} {docs // 2:4}x {name:9} {build:8.2f} {build / b0:6.1f} {rss:8.0f} {rss / r0:6.1f} "
                  f"{hit:8.3f} {miss:10.3f} {miss / hit:10.1f}")
    print("targets: 8 docs <= 6x the build time of 2, <= 400 MB; no-hit <= 0.3 s and as fast as a hit")


def library_sizes(bins, work, big, n):
    print()
    print("== warm query per CLI call on generated libraries, beside rg -l")
    print(f"{'docs':>6} {'input':>5} {'binary':9} {'p50 ms':>7} {'ratio':>6} {'p95 ms':>7} {'rg p50 ms':>9} {'vs rg':>6}")
    rg = shutil.which("rg")
    first = {}
    sizes = [2500, 10000, 20000] + ([100000] if big else [])
    for docs in sizes:
        ws = os.path.join(work, f"lib-{docs}")
        if not os.path.isfile(os.path.join(ws, "words.txt")):
            shutil.rmtree(ws, ignore_errors=True)
            subprocess.run([sys.executable, os.path.join(HERE, "gen_library.py"), ws, str(docs), "--words", "zipf"], check=True,
                           stdout=subprocess.DEVNULL)
        words = [w for w in open(os.path.join(ws, "words.txt")).read().split() if w][: 30 * n : 30][:n]
        # A copy per binary (both write the same cache format), timed in
        # turns word by word, so a busy machine slows both alike.
        spaces = []
        for name, kb in bins:
            w_ws = ws if name == "kb-score" else f"{ws}-{name}"
            if not os.path.isdir(w_ws):
                shutil.copytree(ws, w_ws, ignore=shutil.ignore_patterns(".cache"), symlinks=True)
            shutil.rmtree(os.path.join(w_ws, ".library", ".cache"), ignore_errors=True)
            query(kb, w_ws, words[:1] * 2)  # the cold build, then one warm call
            spaces.append((name, kb, w_ws))
        times = {name: [] for name, _, _ in spaces}
        rgt = []
        for w in words:
            for name, kb, w_ws in spaces:
                times[name] += query(kb, w_ws, [w])
            if rg:
                rgt.append(timed([rg, "-l", "-i", "-F", "--hidden", w, ".library"], cwd=ws)[0])
        rg50 = pct(rgt, .5) if rgt else float("nan")
        for name, _, _ in spaces:
            t = times[name]
            p50 = pct(t, .5)
            f = first.setdefault(name, p50)
            print(f"{docs:6} {docs / sizes[0]:4.0f}x {name:9} {p50 * 1000:7.1f} {p50 / f:6.1f} {pct(t, .95) * 1000:7.1f} "
                  f"{rg50 * 1000:9.1f} {rg50 / p50:6.1f}x")
    print("targets: >= 10x faster than rg at 20,000 documents; p50 <= 20 ms at 100,000")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kb")
    ap.add_argument("--baseline-bin")
    ap.add_argument("--big", action="store_true", help="also 100,000 documents")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--work", default="/tmp/kb-score-costs")
    ap.add_argument("--only", choices=["keywords", "libraries"])
    a = ap.parse_args()
    bins = [("kb-score", os.path.abspath(a.kb))]
    if a.baseline_bin:
        bins.append(("baseline", os.path.abspath(a.baseline_bin)))
    os.makedirs(a.work, exist_ok=True)
    if a.only != "libraries":
        keyword_heavy(bins, a.work)
    if a.only != "keywords":
        library_sizes(bins, a.work, a.big, a.queries)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
