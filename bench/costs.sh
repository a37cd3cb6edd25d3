#!/usr/bin/env bash
# costs at 1x, 4x and 8x input, side by side in one run, as
# ratios against the 1x row. Today: extended guard rules in a library
# (1,000 / 4,000 / 8,000 rules), the time of `kb-guard scan` of one line,
# the first run (validates the file, keeps it under .cache/guard-rules)
# and a warm run (the kept copy); with --baseline BIN (an older kb-guard
# build) its first and warm runs beside ours, on the same files.
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
echo "first: the run after the rule file changed (validates it); warm: best of 3 after"
printf '%-5s %7s %9s %6s %9s %6s' input rules first ratio warm ratio
[ -n "$BASE" ] && printf ' %10s %6s %10s %6s' base-first ratio base-warm ratio
echo
for m in 1 4 8; do
  n=$((N * m)) lib=$OUT/rules-$m
  rm -rf "$lib"; mkdir -p "$lib"
  (cd "$lib" && "$BIN/kb-append" init --no-commit > /dev/null 2>&1)
  mkdir -p "$lib/.library/.evolving-rules/security/active"
  rules "$n" > "$lib/.library/.evolving-rules/security/active/bench.yaml"
  echo 'run zq5x-payload --now' > "$lib/line.txt"
  first=$(cd "$lib" && secs "$BIN/kb-guard" scan line.txt)
  warm=$(cd "$lib" && best "$BIN/kb-guard" scan line.txt)
  if [ "$m" = 1 ]; then f1=$first w1=$warm; fi
  printf '%-5s %7d %9s %6.1f %9s %6.1f' "${m}x" "$n" "$first" "$(echo "$first / $f1" | bc -l)" "$warm" "$(echo "$warm / $w1" | bc -l)"
  if [ -n "$BASE" ]; then
    # The baseline's own kept copies (another build's are not used) go first.
    rm -rf "$lib/.library/.cache/guard-rules"
    bfirst=$(cd "$lib" && secs "$BASE" scan line.txt)
    bwarm=$(cd "$lib" && best "$BASE" scan line.txt)
    if [ "$m" = 1 ]; then bf1=$bfirst bw1=$bwarm; fi
    printf ' %10s %6.1f %10s %6.1f' "$bfirst" "$(echo "$bfirst / $bf1" | bc -l)" "$bwarm" "$(echo "$bwarm / $bw1" | bc -l)"
  fi
  echo
done
