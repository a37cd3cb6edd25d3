#!/usr/bin/env bash
# kb-index rebuild on a generated library of N documents (default 100,000):
# full rebuild vs the read floor (find | xargs cat), incremental after
# touching 10 files, a no-op incremental, and peak RSS. Prints one report.
# usage: bench/index.sh [N]   (N documents; default 100000; BENCH_DIR keeps the library)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-${N:-100000}}"
WORK="${BENCH_DIR:-bench/out/index-$N}"
TARGET="${CARGO_TARGET_DIR:-target}"
cargo build --release --quiet --bin kb-index
BIN="$TARGET/release/kb-index"
if [ ! -d "$WORK/.library" ]; then
    mkdir -p "$WORK"
    python3 bench/gen_library.py "$WORK" "$N"
fi
LIB="$WORK/.library"
export KB_NOW=2026-03-01T12:00:00Z
rm -rf "$LIB/.cache"

secs() { date +%s.%N; }
# run LABEL CMD...: wall seconds and peak RSS (KB) of CMD into globals T and RSS
run() {
    local t0 t1
    t0=$(secs)
    /usr/bin/time -f '%M %U %S' -o "$WORK/.rss" "$@" > "$WORK/.out" 2> "$WORK/.err"
    t1=$(secs)
    T=$(echo "$t1 - $t0" | bc -l)
    read -r RSS U S < <(tail -1 "$WORK/.rss")
    CPU=$(echo "$U + $S" | bc -l)
}

# Warm the page cache, then take the read floor (best of 3).
find "$LIB" -type f -name '*.md' -print0 | xargs -0 cat > /dev/null
FLOOR=999; FLOOR_CPU=999
for _ in 1 2 3; do
    run sh -c "find '$LIB' -type f -name '*.md' -print0 | xargs -0 cat > /dev/null"
    FLOOR=$(echo "if ($T < $FLOOR) $T else $FLOOR" | bc -l)
    FLOOR_CPU=$(echo "if ($CPU < $FLOOR_CPU) $CPU else $FLOOR_CPU" | bc -l)
done

# Full rebuild (best of 3; the first also writes every index).
FULL=999; FULL_CPU=999; FULL_RSS=0
for _ in 1 2 3; do
    run "$BIN" --root "$LIB" rebuild --no-commit
    FULL=$(echo "if ($T < $FULL) $T else $FULL" | bc -l)
    FULL_CPU=$(echo "if ($CPU < $FULL_CPU) $CPU else $FULL_CPU" | bc -l)
    if [ "$RSS" -gt "$FULL_RSS" ]; then FULL_RSS=$RSS; fi
done

# Incremental: seed the cache, touch 10 files, rebuild.
run "$BIN" --root "$LIB" rebuild --incremental --no-commit
SEED=$T; SEED_CPU=$CPU; SEED_RSS=$RSS
sleep 0.01
find "$LIB/.memory/.references" -name '*.md' ! -name '.*' | sort | sed -n 1,10p | while read -r f; do
    printf '\nEdited by the benchmark at %s.\n' "$(secs)" >> "$f"
done
run "$BIN" --root "$LIB" rebuild --incremental --no-commit
INC=$T; INC_CPU=$CPU; INC_RSS=$RSS
grep -q '"mode":"incremental","documents":[0-9]*,"reread":10,' "$WORK/.out" || { echo "unexpected: $(head -c 300 "$WORK/.out")"; exit 1; }

# No-op incremental (best of 3).
NOOP=999; NOOP_CPU=999; NOOP_RSS=0
for _ in 1 2 3; do
    run "$BIN" --root "$LIB" rebuild --incremental --no-commit
    NOOP=$(echo "if ($T < $NOOP) $T else $NOOP" | bc -l)
    NOOP_CPU=$(echo "if ($CPU < $NOOP_CPU) $CPU else $NOOP_CPU" | bc -l)
    if [ "$RSS" -gt "$NOOP_RSS" ]; then NOOP_RSS=$RSS; fi
done
grep -q '"mode":"no-op"' "$WORK/.out" || { echo "unexpected: $(head -c 300 "$WORK/.out")"; exit 1; }

DOCS=$(find "$LIB" -type f -name '*.md' ! -name '.*' | wc -l)
BYTES=$(find "$LIB" -type f -name '*.md' ! -name '.*' -print0 | du -cb --files0-from=- | tail -1 | cut -f1)
PEAK=$(printf '%s\n' "$FULL_RSS" "$SEED_RSS" "$INC_RSS" "$NOOP_RSS" | sort -n | tail -1)
pct() { echo "scale=1; 100 * $1 / $2" | bc -l; }
ratio() { echo "scale=2; $1 / $2" | bc -l; }
echo "kb-index rebuild on $DOCS documents ($((BYTES / 1048576)) MiB), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo "(wall = elapsed seconds, best of 3 where repeated; cpu = user + sys seconds; the CPU ratios are the"
echo " ones to trust on a shared machine)"
printf '%-34s %8s %8s %10s %10s  %s\n' "run" "wall" "cpu" "wall x" "cpu x" "target"
printf '%-34s %8.3f %8.3f %10s %10s  %s\n' "read floor (find | xargs cat)" "$FLOOR" "$FLOOR_CPU" "1.00" "1.00" ""
printf '%-34s %8.3f %8.3f %10s %10s  %s\n' "full rebuild" "$FULL" "$FULL_CPU" "$(ratio "$FULL" "$FLOOR")" "$(ratio "$FULL_CPU" "$FLOOR_CPU")" "<= 3x read floor"
printf '%-34s %8.3f %8.3f %9s%% %9s%%  %s\n' "incremental after touching 10" "$INC" "$INC_CPU" "$(pct "$INC" "$FULL")" "$(pct "$INC_CPU" "$FULL_CPU")" "of full"
printf '%-34s %8.3f %8.3f %9s%% %9s%%  %s\n' "no-op incremental" "$NOOP" "$NOOP_CPU" "$(pct "$NOOP" "$FULL")" "$(pct "$NOOP_CPU" "$FULL_CPU")" "<= 5% of full"
printf '%-34s %8s %8s %10s %10s  %s\n' "peak RSS" "$((PEAK / 1024)) MiB" "" "" "" "<= 500 MB"
