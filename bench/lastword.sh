#!/usr/bin/env bash
# kb-lastword benchmark: N entries (default 1000) applied to a ~1 MB
# AGENTS.md in one `apply`, against the baseline of one plan+apply process
# pair per entry; prints the ratio and apply time per MB.
# usage: bench/lastword.sh [ENTRIES] [BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
BYTES=${2:-1048576}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release --quiet --bin kb-lastword
BIN=$(realpath "$CARGO_TARGET_DIR/release/kb-lastword")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
python3 bench/lastword-gen.py "$W/data" "$N" "$BYTES"
export KB_LASTWORD_HOME="$W/home"
ms() { echo $(( $(date +%s%N) / 1000000 )); }

run_batch() {
  rm -rf "$W/proj" "$W/home"; mkdir -p "$W/proj" "$W/home"
  cp "$W/data/AGENTS.md" "$W/proj/AGENTS.md"
  cd "$W/proj"
  local t0 t1 t2
  t0=$(ms); "$BIN" plan "$W/data/all.yaml" > /dev/null || true
  t1=$(ms); "$BIN" apply > /dev/null || true
  t2=$(ms)
  cd - > /dev/null
  echo "$((t1 - t0)) $((t2 - t1))"
}

run_each() {
  rm -rf "$W/proj" "$W/home"; mkdir -p "$W/proj" "$W/home"
  cp "$W/data/AGENTS.md" "$W/proj/AGENTS.md"
  cd "$W/proj"
  local t0 t1
  t0=$(ms)
  for f in "$W"/data/one/*.yaml; do
    "$BIN" plan "$f" > /dev/null || true
    "$BIN" apply > /dev/null || true
  done
  t1=$(ms)
  cd - > /dev/null
  echo "$((t1 - t0))"
}

read -r plan_ms apply_ms < <(run_batch)
cp "$W/proj/AGENTS.md" "$W/batch.md"
each_ms=$(run_each)
size=$(stat -c %s "$W/data/AGENTS.md")
same=$(cmp -s "$W/batch.md" "$W/proj/AGENTS.md" && echo yes || echo no)
# Re-apply the batch result with every entry again: all unchanged.
cd "$W/proj"; "$BIN" plan "$W/data/all.yaml" > /dev/null || true
t0=$(ms); "$BIN" apply > /dev/null || true; t1=$(ms); cd - > /dev/null
reapply_ms=$((t1 - t0))
awk -v n="$N" -v size="$size" -v p="$plan_ms" -v a="$apply_ms" -v e="$each_ms" -v r="$reapply_ms" -v same="$same" 'BEGIN {
  mb = size / 1048576
  printf "kb-lastword bench: %d entries, %.2f MB target\n", n, mb
  printf "  %-34s %8s\n", "run", "ms"
  printf "  %-34s %8d\n", "batch: plan (all entries)", p
  printf "  %-34s %8d\n", "batch: apply (one process)", a
  printf "  %-34s %8d\n", "batch: re-apply (all unchanged)", r
  printf "  %-34s %8d\n", "baseline: plan+apply per entry", e
  printf "  ratio baseline / batch (plan+apply): %.1fx\n", e / (p + a)
  printf "  apply time per MB of target:         %.1f ms/MB\n", a / mb
  printf "  same bytes batch vs per entry:       %s\n", same
}'
