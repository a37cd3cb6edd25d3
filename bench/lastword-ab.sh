#!/usr/bin/env bash
# Two kb-lastword builds side by side (e.g. before/after a change): the
# 1,000-entry batch apply on a ~1 MB AGENTS.md, and 20 hook runs (plan +
# apply of 10 entries each), alternating A and B, ROUNDS times; prints the
# median ms of each and the ratio B / A.
# usage: bench/lastword-ab.sh BIN_A BIN_B [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
A=$(realpath "$1"); B=$(realpath "$2"); R=${3:-3}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
python3 bench/lastword-gen.py "$W/data" 1000 1048576
export KB_LASTWORD_HOME="$W/home"
ms() { echo $(( $(date +%s%N) / 1000000 )); }
fresh() { rm -rf "$W/proj" "$W/home"; mkdir -p "$W/proj" "$W/home"; cp "$W/data/AGENTS.md" "$W/proj/AGENTS.md"; }
batch() { # BIN -> apply ms
  fresh; cd "$W/proj"; "$1" plan "$W/data/all.yaml" > /dev/null || true
  local t0; t0=$(ms); "$1" apply > /dev/null || true; echo $(( $(ms) - t0 )); cd - > /dev/null
}
hooks() { # BIN -> ms for 20 plan+apply of 10 entries
  fresh; cd "$W/proj"; local t0 i; t0=$(ms)
  for i in $(seq 0 19); do
    # One-entry delta files are one JSON line each: 10 of them are JSONL.
    ls "$W"/data/one/*.yaml | sed -n "$((i * 10 + 1)),$((i * 10 + 10))p" \
      | while read -r f; do cat "$f"; echo; done > "$W/h.jsonl"
    "$1" plan "$W/h.jsonl" > /dev/null || true; "$1" apply > /dev/null || true
  done
  echo $(( $(ms) - t0 )); cd - > /dev/null
}
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
for k in $(seq "$R"); do
  batch "$A" >> "$W/ba"; batch "$B" >> "$W/bb"; hooks "$A" >> "$W/ha"; hooks "$B" >> "$W/hb"
done
awk -v ba="$(med < "$W/ba")" -v bb="$(med < "$W/bb")" -v ha="$(med < "$W/ha")" -v hb="$(med < "$W/hb")" -v r="$R" 'BEGIN {
  printf "kb-lastword A/B, median of %d rounds (ms)\n", r
  printf "  %-38s %8s %8s %7s\n", "run", "A", "B", "B/A"
  printf "  %-38s %8d %8d %6.2fx\n", "batch apply: 1000 entries, 1 MB", ba, bb, bb / ba
  printf "  %-38s %8d %8d %6.2fx\n", "20 hook runs: plan+apply 10 entries", ha, hb, hb / ha
}'
