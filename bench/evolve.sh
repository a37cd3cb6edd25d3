#!/usr/bin/env bash
# Evolve and skill benchmark: the historical backtest of
# `kb-guard rules validate` against a plain `kb-guard scan` of the same
# library (the baseline: the backtest is one scan with the rules in force
# plus one with the new rules), for the example library and a generated one,
# with 1 and 10 proposals; and the latency of a guarded skill operation.
# Usage: bench/evolve.sh [DOCS]   (default 20000 generated documents)
# Env: EVOLVE_BENCH_DIR (default /tmp/kb-evolve-bench), CARGO_TARGET_DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${EVOLVE_BENCH_DIR:-/tmp/kb-evolve-bench}
DOCS=${1:-20000}
cargo build --quiet --release --bin kb-guard --bin kb-append --manifest-path "$ROOT/Cargo.toml"
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release
export KB_NOW=2026-03-01T12:00:00Z
best() { # best wall time of 3 runs of "$@" (stdout to /dev/null)
  local best=999999 t0 t1 t
  for _ in 1 2 3; do
    t0=$(date +%s.%N); "$@" > /dev/null 2>&1 || true; t1=$(date +%s.%N)
    t=$(echo "$t1 - $t0" | bc -l); if (( $(echo "$t < $best" | bc -l) )); then best=$t; fi
  done
  printf '%.3f' "$best"
}
intel() { # N intel records with distinct, never-matching-by-accident patterns
  for i in $(seq 1 "$1"); do
    printf '{"id":"bench-%d","title":"bench threat %d","category":"execution","severity":"high","samples":["run zq%dx-payload --now"],"negatives":["zq%dx is a name"],"rationale":"bench","pattern":"zq%dx-payload\\\\b"}\n' "$i" "$i" "$i" "$i" "$i"
  done
}
setup() { # DIR SOURCE: a fresh copy of the library with 10 proposals
  rm -rf "$1"; mkdir -p "$1"; cp -r "$2" "$1/.library"
  intel 10 > "$1/intel.jsonl"
  (cd "$1" && "$BIN/kb-guard" rules propose intel.jsonl --no-commit > /dev/null)
}
row() { # NAME DIR
  local dir=$1/.library files scan one ten
  files=$(find "$dir" -type f -not -path '*/.core-rule-proposals/*' | wc -l)
  scan=$(cd "$1" && best "$BIN/kb-guard" scan .library)
  one=$(cd "$1" && best "$BIN/kb-guard" rules validate CORE-001 --no-commit)
  ten=$(cd "$1" && best "$BIN/kb-guard" rules validate CORE-001 CORE-002 CORE-003 CORE-004 CORE-005 CORE-006 CORE-007 CORE-008 CORE-009 CORE-010 --no-commit)
  printf '%-18s %7d %10s %12s %8.2f %13s %8.2f\n' "$2" "$files" "$scan" "$one" "$(echo "$one / $scan" | bc -l)" "$ten" "$(echo "$ten / $scan" | bc -l)"
}
mkdir -p "$OUT"
setup "$OUT/example" "$ROOT/examples/library"
if [ ! -f "$OUT/gen/.done-$DOCS" ]; then
  rm -rf "$OUT/gen"; python3 "$ROOT/bench/gen_library.py" "$OUT/gen" "$DOCS" > /dev/null; touch "$OUT/gen/.done-$DOCS"
fi
setup "$OUT/generated" "$OUT/gen/.library"
echo "backtest: kb-guard rules validate (library + proposals) vs kb-guard scan of the library (best of 3, s)"
printf '%-18s %7s %10s %12s %8s %13s %8s\n' library files scan validate1 ratio validate10 ratio
row "$OUT/example" example
row "$OUT/generated" "generated-$DOCS"
# Skill operations on the generated library: create, then patch (each
# validated, locked, written, guard-scanned, logged, indexed).
cd "$OUT/generated"
md=$'---\nname: bench-skill\ndescription: bench\n---\n# bench\n\nstep one\n'
t0=$(date +%s.%N)
"$BIN/kb-append" skill create bench-skill --content "$md" --no-commit > /dev/null
for i in $(seq 1 20); do
  "$BIN/kb-append" skill patch bench-skill --old-string "step" --new-string "step" --no-commit > /dev/null
done
t1=$(date +%s.%N)
printf 'skill ops on generated-%s: %.1f ms per create/patch (21 ops, guard scan + changelog + index)\n' "$DOCS" "$(echo "($t1 - $t0) * 1000 / 21" | bc -l)"
