#!/usr/bin/env bash
# Issue 35: costs at 1x, 4x and 8x input, side by side in one run, as
# ratios against the 1x row. Today: extended guard rules in a library
# (1,000 / 4,000 / 8,000 rules), the time of `kb-guard scan` of one line,
# the first run (validates the file, keeps it under .cache/guard-rules)
# and a warm run (the kept copy); with --baseline BIN (an older kb-guard
# build) its time beside ours.
# Usage: bench/costs.sh [--baseline BIN] [BASE_RULES]   (default 1000)
# Env: COSTS_BENCH_DIR (default /tmp/kb-costs-bench), CARGO_TARGET_DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE="" N=1000
while [ $# -gt 0 ]; do
  case "$1" in
    --baseline) BASE=$2; shift 2 ;;
    *) N=$1; shift ;;
  esac
done
OUT=${COSTS_BENCH_DIR:-/tmp/kb-costs-bench}
cargo build --quiet --release --bin kb-guard --bin kb-append --manifest-path "$ROOT/Cargo.toml"
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release
rules() { # N: a rule file of N rules, rule i catching zq<i>x-payload
  python3 - "$1" <<'PY'
import sys
print("rules:")
for i in range(int(sys.argv[1])):
    print(f"  - id: bench-{i}\n    category: execution\n    severity: high\n    description: bench threat {i}\n"
          f"    pattern: 'zq{i}x-payload\\b'\n    match: ['run zq{i}x-payload --now']\n    clean: ['zq{i}x is a name']")
PY
}
secs() { # wall seconds of one run of "$@"
  python3 -c 'import subprocess,sys,time; t=time.perf_counter(); subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL); print(f"{time.perf_counter()-t:.3f}")' "$@"
}
best() { # best of 3
  local b=999999 t
  for _ in 1 2 3; do t=$(secs "$@"); if (( $(echo "$t < $b" | bc -l) )); then b=$t; fi; done
  echo "$b"
}
echo "guard rules in the library: kb-guard scan of one line (s; ratio to 1x)"
printf '%-5s %7s %10s %7s %10s %7s %s\n' input rules first ratio warm ratio "${BASE:+baseline ratio}"
for m in 1 4 8; do
  n=$((N * m)) lib=$OUT/rules-$m
  rm -rf "$lib"; mkdir -p "$lib"
  (cd "$lib" && "$BIN/kb-append" init --no-commit > /dev/null 2>&1)
  mkdir -p "$lib/.library/.evolving-rules/security/active"
  rules "$n" > "$lib/.library/.evolving-rules/security/active/bench.yaml"
  echo 'run zq5x-payload --now' > "$lib/line.txt"
  first=$(cd "$lib" && secs "$BIN/kb-guard" scan line.txt)
  warm=$(cd "$lib" && best "$BIN/kb-guard" scan line.txt)
  base=""
  if [ -n "$BASE" ]; then base=$(cd "$lib" && secs "$BASE" scan line.txt); fi
  if [ "$m" = 1 ]; then f1=$first w1=$warm b1=${base:-1}; fi
  printf '%-5s %7d %10s %7.1f %10s %7.1f' "${m}x" "$n" "$first" "$(echo "$first / $f1" | bc -l)" "$warm" "$(echo "$warm / $w1" | bc -l)"
  if [ -n "$BASE" ]; then printf ' %10s %7.1f' "$base" "$(echo "$base / $b1" | bc -l)"; fi
  echo
done
