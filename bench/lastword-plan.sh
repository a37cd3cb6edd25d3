#!/usr/bin/env bash
# kb-lastword plan cost at 1×, 4× and 8× input (N, 4N, 8N entries against
# one ~1 MB AGENTS.md), side by side in one run: ROUNDS rounds, each size
# once per round in turn, so a busy machine or disk slows all alike;
# prints each size's median time and its ratio to 1×. Linear means the
# ratios stay near 4 and 8. (One run per size swung between 7× and 12×:
# 1× is about 100 ms, mostly writes to disk.)
# usage: bench/lastword-plan.sh [N] [ROUNDS]   (default 5000 5)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-5000} ROUNDS=${2:-5}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release --quiet --bin kb-lastword
BIN=$(realpath "$CARGO_TARGET_DIR/release/kb-lastword")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
ms() { echo $(( $(date +%s%N) / 1000000 )); }
for k in 1 4 8; do
  python3 bench/lastword-gen.py "$W/d$k" "$((N * k))" 1048576 > /dev/null
done
for _ in $(seq "$ROUNDS"); do
  for k in 1 4 8; do
    rm -rf "$W/proj" "$W/home"; mkdir -p "$W/proj" "$W/home"
    cp "$W/d$k/AGENTS.md" "$W/proj/AGENTS.md"
    t0=$(ms)
    (cd "$W/proj" && KB_LASTWORD_HOME="$W/home" "$BIN" plan "$W/d$k/all.yaml" > /dev/null 2>&1) || true
    echo "$k $(( $(ms) - t0 ))"
  done
done | python3 -c '
import statistics, sys
n, rounds = int(sys.argv[1]), sys.argv[2]
times = {}
for line in sys.stdin:
    k, t = line.split()
    times.setdefault(int(k), []).append(int(t))
base = statistics.median(times[1])
print("%-8s %8s %9s  (%s rounds)" % ("scale", "entries", "median ms", rounds))
for k in (1, 4, 8):
    m = statistics.median(times[k])
    print("%-8s %8d %9.0f  ratio %.2f" % ("%dx" % k, n * k, m, m / max(base, 1)))
' "$N" "$ROUNDS"
