#!/usr/bin/env bash
# Decide latency with 1,000 and 10,000 notes, served by the search index
# (.search.idx) and, as the baseline, by a rescan of every note (index
# removed); then the cost of applying one new note at 1,000 and 10,000
# notes (the index's side segment, an appended INDEX.md row and its running
# digest), side by side with KB_MEMGATE_BEFORE (an older build) when set.
# Prints medians and ratios. Needs a release build:
#   cargo build --release && bash bench/memgate.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${KB_MEMGATE:-${CARGO_TARGET_DIR:-$here/../target}/release/kb-memgate}
runs=${RUNS:-15}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
query='{"mode":"remember","input":{"user_input":{"text":"Never use libcore in tests with apijs.","evidence_spans":[{"start":0,"end":38}]}}}'

median_ms() { # dir -> "wall_ms cpu_ms": medians over $runs runs; CPU = user+sys of the
  # child (getrusage), which a loaded machine does not inflate the way it does wall time.
  python3 - "$bin" "$1" "$runs" "$query" <<'PY'
import resource, statistics, subprocess, sys, time
bin_, d, runs, q = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
wall, cpu = [], []
for _ in range(runs):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([bin_, "decide", "--memory-dir", d], input=q.encode(), stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    wall.append((time.perf_counter() - t0) * 1000)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append(((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)) * 1000)
print(f"{statistics.median(wall):.2f} {statistics.median(cpu):.2f}")
PY
}

declare -A iw ic sw sc
for n in 1000 10000; do
  d="$work/m$n"
  python3 "$here/memgate_gen.py" "$n" "$d"
  "$bin" reindex --memory-dir "$d" >/dev/null
  read -r iw[$n] ic[$n] < <(median_ms "$d")
  mv "$d/.search.idx" "$d/.search.idx.off"
  read -r sw[$n] sc[$n] < <(median_ms "$d")
  mv "$d/.search.idx.off" "$d/.search.idx"
  echo "notes=$n index-size=$(( $(stat -c %s "$d/.search.idx") / 1024 )) KiB" >&2
done
r() { echo "$1 / $2" | bc -l; }
echo "kb-memgate decide latency, one input (median of $runs runs; cpu = user+sys)"
printf '%-7s %14s %14s %15s %15s\n' notes "index wall ms" "index cpu ms" "rescan wall ms" "rescan cpu ms"
for n in 1000 10000; do
  printf '%-7s %14s %14s %15s %15s\n' "$n" "${iw[$n]}" "${ic[$n]}" "${sw[$n]}" "${sc[$n]}"
done
printf 'ratio 10k/1k  index: wall %.2fx cpu %.2fx   rescan (baseline): wall %.2fx cpu %.2fx   (target: well under 10x)\n' \
  "$(r "${iw[10000]}" "${iw[1000]}")" "$(r "${ic[10000]}" "${ic[1000]}")" "$(r "${sw[10000]}" "${sw[1000]}")" "$(r "${sc[10000]}" "${sc[1000]}")"
printf 'index vs rescan at 10k: %.1fx less cpu\n' "$(r "${sc[10000]}" "${ic[10000]}")"

apply_ms() { # bin dir -> "median_cpu_ms mean_cpu_ms": $runs applies of one new note each
  # (decided first, outside the timing), every $runs-th apply after the first
  # included, so the log's periodic whole rewrite is in the mean.
  python3 - "$1" "$2" "$runs" <<'PY'
import json, random, resource, statistics, subprocess, sys
bin_, d, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
subprocess.run([bin_, "reindex", "--memory-dir", d], check=True, stdout=subprocess.DEVNULL)
cpu = []
for i in range(runs * 10):
    rng = random.Random(i)
    a, b, c = ("".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(3)) for _ in range(3))
    t = f"Build {a} with {b} before each {c} release."
    q = json.dumps({"mode": "remember", "input": {"user_input": {"text": t, "evidence_spans": [{"start": 0, "end": len(t)}]}}})
    dec = json.loads(subprocess.run([bin_, "decide", "--memory-dir", d], input=q.encode(), capture_output=True,
                                    check=True).stdout)
    if dec["gate"] == "question":
        dec["answer"] = "confirm"
    dec = (json.dumps(dec) + "\n").encode()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([bin_, "apply", "--memory-dir", d], input=dec, stdout=subprocess.DEVNULL, check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append(((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)) * 1000)
import os
n0 = int(os.path.basename(d)[1:])
if len(os.listdir(os.path.join(d, "notes"))) != n0 + runs * 10:
    sys.exit(f"apply wrote {len(os.listdir(os.path.join(d, 'notes'))) - n0} notes, not {runs * 10}")
print(f"{statistics.median(cpu):.2f} {statistics.mean(cpu):.2f}")
PY
}

echo
echo "kb-memgate apply of one new note ($((runs * 10)) applies; cpu = user+sys ms, median / mean)"
declare -A am aM bm bM
for n in 1000 10000; do
  d="$work/a$n"
  python3 "$here/memgate_gen.py" "$n" "$d"
  read -r am[$n] aM[$n] < <(apply_ms "$bin" "$d")
  if [ -n "${KB_MEMGATE_BEFORE:-}" ]; then
    rm -rf "$d" && python3 "$here/memgate_gen.py" "$n" "$d"
    read -r bm[$n] bM[$n] < <(apply_ms "$KB_MEMGATE_BEFORE" "$d")
  fi
  printf '%-7s this build %8s / %8s' "$n" "${am[$n]}" "${aM[$n]}"
  [ -n "${KB_MEMGATE_BEFORE:-}" ] && printf '   before %8s / %8s' "${bm[$n]}" "${bM[$n]}"
  echo
done
printf 'ratio 10k/1k  this build: median %.2fx mean %.2fx (target: within 2x)' \
  "$(r "${am[10000]}" "${am[1000]}")" "$(r "${aM[10000]}" "${aM[1000]}")"
[ -n "${KB_MEMGATE_BEFORE:-}" ] && printf '   before: median %.2fx mean %.2fx' \
  "$(r "${bm[10000]}" "${bm[1000]}")" "$(r "${bM[10000]}" "${bM[1000]}")"
echo
