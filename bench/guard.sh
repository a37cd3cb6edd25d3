#!/usr/bin/env bash
# kb-guard benchmark (issues 6, 17): recall and precision per class and
# family on a generated corpus (bench/guard-gen.py), side by side with a
# baseline build; throughput vs the baseline and `rg -c -f PATTERNS`;
# adversarial linearity. Rules are tuned on `--split train`; `--split
# heldout` (templates and seed never tuned on) is reported once.
# Usage: bench/guard.sh [SKILLS] [--split train|heldout] [--baseline BIN]
#   (default 2000 skills, ~85 MB, split train; BIN e.g. main's release kb-guard)
# Env: GUARD_BENCH_DIR (default /tmp/kb-guard-bench), CARGO_TARGET_DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SKILLS=2000 SPLIT=train BASE=""
while [ $# -gt 0 ]; do
  case "$1" in
    --split) SPLIT=$2; shift 2 ;;
    --baseline) BASE=$2; shift 2 ;;
    *) SKILLS=$1; shift ;;
  esac
done
OUT=${GUARD_BENCH_DIR:-/tmp/kb-guard-bench}/$SPLIT
cargo build --quiet --release --bin kb-guard --manifest-path "$ROOT/Cargo.toml"
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/kb-guard
if [ ! -f "$OUT/manifest.jsonl" ] || [ "$(wc -l < "$OUT/manifest.jsonl")" -ne "$SKILLS" ]; then
  rm -rf "$OUT"
  python3 -c 'import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))["rules"]))' "$ROOT/rules/core.yaml" \
    | python3 "$ROOT/bench/guard-gen.py" "$OUT" --skills "$SKILLS" --split "$SPLIT"
fi
cd "$OUT"
BYTES=$(du -sb corpus | cut -f1)
"$BIN" rules list --format jsonl | python3 -c 'import json,sys; [print(r["pattern"]) for r in map(json.loads, sys.stdin) if "pattern" in r]' > patterns.txt
best() { # best wall time of 3 runs of "$@" (stdout to /dev/null)
  local best=999999 t0 t1 t
  for _ in 1 2 3; do
    t0=$(date +%s.%N); "$@" > /dev/null || true; t1=$(date +%s.%N)
    t=$(echo "$t1 - $t0" | bc -l); if (( $(echo "$t < $best" | bc -l) )); then best=$t; fi
  done
  echo "$best"
}
"$BIN" scan corpus > new.jsonl || true
BUILDS=("new=new.jsonl")
if [ -n "$BASE" ]; then
  "$BASE" scan corpus > base.jsonl || true
  BUILDS=("base=base.jsonl" "new=new.jsonl")
fi
python3 "$ROOT/bench/guard_report.py" manifest.jsonl "${BUILDS[@]}"
MB=$(echo "$BYTES / 1000000" | bc -l)
T_NEW=$(best "$BIN" scan corpus)
printf 'corpus             %d skills, %.1f MB\n' "$SKILLS" "$MB"
printf 'kb-guard (new)     %.2f s  %.0f MB/s\n' "$T_NEW" "$(echo "$MB / $T_NEW" | bc -l)"
if [ -n "$BASE" ]; then
  T_BASE=$(best "$BASE" scan corpus)
  printf 'kb-guard (base)    %.2f s  %.0f MB/s   new/base time %.2f\n' "$T_BASE" "$(echo "$MB / $T_BASE" | bc -l)" "$(echo "$T_NEW / $T_BASE" | bc -l)"
fi
if command -v rg > /dev/null; then
  T_RG=$(best rg -c -f patterns.txt corpus)
  printf 'rg -c -f (%d)     %.2f s  %.0f MB/s   kb-guard/rg time %.2f (target <= 2)\n' "$(wc -l < patterns.txt)" "$T_RG" "$(echo "$MB / $T_RG" | bc -l)" "$(echo "$T_NEW / $T_RG" | bc -l)"
else
  echo "note: ripgrep not installed; the rg comparison is skipped"
fi
# Adversarial: 1 MB of near-matching text per rule family, long lines.
ADV_BYTES=$(du -cb adversarial/*.txt | tail -1 | cut -f1)
T_ADV=$(best "$BIN" scan adversarial)
python3 -c 'import sys; tg,mb,ta,ab=map(float,sys.argv[1:]); print(f"adversarial        {ab/1e6:.1f} MB in {ta:.2f} s; per-MB time adversarial/normal {(ta/(ab/1e6))/(tg/mb):.2f} (target <= 2)")' "$T_NEW" "$MB" "$T_ADV" "$ADV_BYTES"
if [ -d "$ROOT/../shared/data/agents-md" ]; then
  echo "real agent files (shared/data/agents-md): $("$BIN" scan "$ROOT/../shared/data/agents-md" 2>/dev/null | python3 -c 'import json,sys,collections; print(dict(collections.Counter(r["verdict"] for r in map(json.loads, sys.stdin) if r["record"]=="verdict")))')"
fi
