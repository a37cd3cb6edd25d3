#!/usr/bin/env bash
# kb-append batch --no-commit of the same N requests (bench/gen-writes.py),
# several builds side by side: ROUNDS rounds, each build once per round in
# turn, each into a fresh library. Prints per run the wall time, writes/s,
# user and system CPU seconds and the load average, then each build's
# medians. With --same, the outputs (records, .changelog, every file) of
# each build are compared with the first build's, KB_NOW fixed. With
# --floor, each round also runs bench/write-floor.c (the same files
# staged, journaled, renamed and synced with no checks: the disk's floor,
# writes/s counted per request as for the builds), reported as the last
# build, "floor".
#
# Usage: bench/append-rounds.sh [--same] [--floor] N ROUNDS DIR...   (each DIR holds kb-append)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
same=0 floor=0
while [ "${1:-}" = --same ] || [ "${1:-}" = --floor ]; do
  if [ "$1" = --same ]; then same=1; else floor=1; fi
  shift
done
n=$1 rounds=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$here/gen-writes.py" "$n" "$work/data" >/dev/null
if [ "$floor" = 1 ]; then
  cc -O2 -o "$work/write-floor" "$here/write-floor.c"
  python3 "$here/write-floor.py" "$work/data/requests.jsonl" "$work/plan" >/dev/null
fi
: > "$work/runs.tsv"
for r in $(seq 1 "$rounds"); do
  b=0
  for dir in "$@"; do
    b=$((b + 1))
    # A fresh library each run, none removed before the end: on ext4
    # without a journal, inodes freed in the last minute make every new
    # file's inode allocation scan past them (see bench/RESULTS.md).
    lib="$work/lib-$r-$b"
    "$dir/kb-append" init --root "$lib" >/dev/null
    load=$(cut -d' ' -f1 /proc/loadavg)
    export KB_NOW=2026-11-28T12:00:00Z
    /usr/bin/time -f "%e %U %S" -o "$work/time" \
      "$dir/kb-append" batch --no-commit --root "$lib" < "$work/data/requests.jsonl" > "$work/out-$b"
    unset KB_NOW
    read -r wall user sys < "$work/time"
    written=$(grep -c '"record":"write"' "$work/out-$b")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$b" "$written" "$wall" "$user" "$sys" "$load" >> "$work/runs.tsv"
    if [ "$same" = 1 ] && [ "$b" -gt 1 ]; then
      diff -q "$work/out-1" "$work/out-$b" >/dev/null || echo "round $r: records of build $b differ from build 1"
      diff -r -q "$work/lib-$r-1" "$lib" >/dev/null || { echo "round $r: library of build $b differs from build 1:"; diff -r -q "$work/lib-$r-1" "$lib" | head -5; }
    fi
  done
  if [ "$floor" = 1 ]; then
    b=$((b + 1))
    mkdir "$work/lib-$r-floor"
    load=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -f "%e %U %S" -o "$work/time" "$work/write-floor" "$work/plan" "$work/lib-$r-floor" > /dev/null
    read -r wall user sys < "$work/time"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$b" "$n" "$wall" "$user" "$sys" "$load" >> "$work/runs.tsv"
  fi
done
builds=("$@")
if [ "$floor" = 1 ]; then builds+=(floor); fi
python3 - "$work/runs.tsv" "${builds[@]}" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
dirs = sys.argv[2:]
print("round build writes wall_s writes/s user_s sys_s load1")
for r, b, w, wall, u, s, load in rows:
    print(f"{r} {b} {w} {wall} {int(w) / float(wall):,.0f} {u} {s} {load}")
for i, d in enumerate(dirs, 1):
    mine = [x for x in rows if x[1] == str(i)]
    rate = statistics.median(int(x[2]) / float(x[3]) for x in mine)
    cpu = statistics.median(float(x[4]) + float(x[5]) for x in mine)
    load = statistics.median(float(x[6]) for x in mine)
    print(f"build {i} ({d}): median {rate:,.0f} writes/s, CPU {cpu:.2f} s (user+sys), load {load:.1f}, {len(mine)} runs")
PY
