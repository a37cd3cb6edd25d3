#!/usr/bin/env bash
# Write benchmark: writes/s of `kb-append batch
# --no-commit` and of bench/seed-write.sh (the seed's 8 steps in shell) on
# the same requests, run side by side in one go. The shell baseline runs
# the first $SHELL_N requests (it needs minutes for all of them); rates
# compare. With KB_BASE_BIN=DIR (an older build's target/release, e.g.
# before the group commit) that build runs the same batch too, so before
# and after are measured in the same run on the same machine load.
#
# Usage: bench/append.sh [N=2000] [SHELL_N=200]   (after cargo build --release)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${KB_BIN:-$here/../target/release}
base=${KB_BASE_BIN:-}
n=${1:-2000}
shell_n=${2:-200}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 "$here/gen-writes.py" "$n" "$work/data"
"$bin/kb-append" init --root "$work/kb" >/dev/null
mkdir -p "$work/sh"
head -n "$shell_n" "$work/data/manifest.tsv" > "$work/data/manifest-head.tsv"

now() { date +%s.%N; }
load0=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
t0=$(now)
"$bin/kb-append" batch --no-commit --root "$work/kb" < "$work/data/requests.jsonl" > "$work/kb.out"
t1=$(now)
(cd "$work/data" && "$here/seed-write.sh" "$work/sh" "$work/data/manifest-head.tsv" "$work/data")
t2=$(now)
tb0=0 tb1=0 base_written=0
if [ -n "$base" ]; then
  "$base/kb-append" init --root "$work/base" >/dev/null
  tb0=$(now)
  "$base/kb-append" batch --no-commit --root "$work/base" < "$work/data/requests.jsonl" > "$work/base.out"
  tb1=$(now)
  base_written=$(grep -c '"record":"write"' "$work/base.out")
fi

load1=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
written=$(grep -c '"record":"write"' "$work/kb.out")
lines=$(grep -c '' "$work/kb/.changelog")
echo "load average (1, 5, 15 min): $load0 at the start, $load1 at the end ($(nproc) cores)"
python3 - "$n" "$written" "$lines" "$t0" "$t1" "$t2" "$shell_n" "$tb0" "$tb1" "$base_written" <<'PY'
import sys
n, written, lines = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
t0, t1, t2 = map(float, sys.argv[4:7])
shell_n = int(sys.argv[7])
tb0, tb1, base_written = float(sys.argv[8]), float(sys.argv[9]), int(sys.argv[10])
kb = written / (t1 - t0)
sh = shell_n / (t2 - t1)
print(f"kb-append batch --no-commit : {written} writes in {t1 - t0:.2f} s = {kb:,.0f} writes/s (changelog lines: {lines})")
if base_written:
    base = base_written / (tb1 - tb0)
    print(f"baseline build (KB_BASE_BIN): {base_written} writes in {tb1 - tb0:.2f} s = {base:,.0f} writes/s ({kb / base:.1f}x faster now)")
print(f"seed-write.sh (shell, 8 steps): {shell_n} writes in {t2 - t1:.2f} s = {sh:,.0f} writes/s")
print(f"ratio kb-append / shell        : {kb / sh:.1f}x   (targets: >= 1,500 writes/s and >= 40x)")
PY
