#!/usr/bin/env bash
# kb-guard benchmark: recall and precision per class and
# family on a generated corpus (bench/guard-gen.py), side by side with a
# baseline build; CPU time beside ripgrep's on the same patterns, on the
# skill corpus and on a Markdown library (bench/gen_library.py --words zipf); adversarial
# linearity. Where the time goes: GUARD_BENCH_PERF=1 adds a `perf` profile. Rules are tuned on `--split train`; `--split
# heldout` (templates and seed never tuned on) is reported once.
# Usage: bench/guard.sh [SKILLS] [--split train|heldout] [--baseline BIN]
#   (default 2000 skills, ~37 MB of files, split train; BIN e.g. main's release kb-guard)
# Env: GUARD_BENCH_DIR (default /tmp/kb-guard-bench), CARGO_TARGET_DIR, KB_GUARD_BIN.
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
if [ -n "${KB_GUARD_BIN:-}" ]; then
  BIN=$KB_GUARD_BIN  # a build made already (e.g. copied out of target/)
else
  cargo build --quiet --release --bin kb-guard --manifest-path "$ROOT/Cargo.toml"
  BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/kb-guard
fi
if [ ! -f "$OUT/manifest.jsonl" ] || [ "$(wc -l < "$OUT/manifest.jsonl")" -ne "$SKILLS" ]; then
  rm -rf "$OUT"
  python3 -c 'import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))["rules"]))' "$ROOT/rules/core.yaml" \
    | python3 "$ROOT/bench/guard-gen.py" "$OUT" --skills "$SKILLS" --split "$SPLIT"
fi
cd "$OUT"
# File bytes only: `du -sb` also counts each directory's 4 KB entry,
# which made the 37 MB train corpus read as 64 MB.
BYTES=$(find corpus -type f -printf '%s\n' | awk '{s += $1} END {print s}')
"$BIN" rules list --format jsonl | python3 -c 'import json,sys; [print(r["pattern"]) for r in map(json.loads, sys.stdin) if "pattern" in r]' > patterns.txt
# rg's copy: `--no-unicode` refuses non-ASCII literals (the CJK rules), so
# each non-ASCII character is written as its UTF-8 bytes (`\xE5\xBF\xBD`),
# which match the same text.
python3 -c '
import sys
for l in open(sys.argv[1], encoding="utf-8"):
    print("".join(c if ord(c) < 128 else "".join(f"\\x{b:02X}" for b in c.encode()) for c in l.rstrip("\n")))
' patterns.txt > patterns-rg.txt
RUNS=${GUARD_BENCH_RUNS:-5}
best() { # "WALL CPU WALL_MEDIAN CPU_MEDIAN": of $RUNS runs of "$@", the best and
  # the median wall and CPU (user+sys) seconds. CPU time is what a loaded
  # machine inflates least; ratios use it.
  python3 - "$RUNS" "$@" <<'PY'
import resource, statistics, subprocess, sys, time
walls, cpus = [], []
for _ in range(int(sys.argv[1])):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN); t0 = time.perf_counter()
    subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL)
    t1 = time.perf_counter(); r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    walls.append(t1 - t0)
    cpus.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
print(f"{min(walls):.3f} {min(cpus):.3f} {statistics.median(walls):.3f} {statistics.median(cpus):.3f}")
PY
}
rate() { python3 -c 'import sys; mb,w,c=map(float,sys.argv[1:4]); print(f"wall {w:.2f} s {mb/w:.0f} MB/s, CPU {c:.2f} s {mb/c:.0f} MB/s a core")' "$@"; }
"$BIN" scan corpus > new.jsonl || true
BUILDS=("new=new.jsonl")
if [ -n "$BASE" ]; then
  "$BASE" scan corpus > base.jsonl || true
  BUILDS=("base=base.jsonl" "new=new.jsonl")
fi
python3 "$ROOT/bench/guard_report.py" manifest.jsonl "${BUILDS[@]}"
MB=$(echo "$BYTES / 1000000" | bc -l)
ratio() { python3 -c 'import sys; a,b=map(float,sys.argv[1:]); print(f"{a/b:.2f}")' "$@"; }
read -r W_NEW C_NEW _ _ <<< "$(best "$BIN" scan corpus)"
printf 'corpus             %d skills, %.1f MB (%s cores, load %s)\n' "$SKILLS" "$MB" "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)"
echo "kb-guard (new)     $(rate "$MB" "$W_NEW" "$C_NEW")"
if [ -n "$BASE" ]; then
  read -r W_BASE C_BASE _ _ <<< "$(best "$BASE" scan corpus)"
  echo "kb-guard (base)    $(rate "$MB" "$W_BASE" "$C_BASE")   new/base CPU $(ratio "$C_NEW" "$C_BASE")"
fi
# ripgrep on the same patterns, side by side (a ratio, not a
# timed test). kb-guard matches with ASCII classes and word boundaries, so
# rg gets `--no-unicode` (with Unicode `\b` rg leaves its DFA for the
# PikeVM and runs 50-100x slower: no fair baseline); `--hidden
# --no-ignore` makes it read every file kb-guard reads (a library lives
# under `.library/`). Install: `apt-get install ripgrep` or `cargo install
# ripgrep`; RG=path picks a build.
RG=${RG:-$(command -v rg || true)}
RGARGS=(--hidden --no-ignore --no-unicode -c -f patterns-rg.txt)
side_by_side() { # NAME DIR MB: kb-guard and rg CPU and wall on DIR (best and median)
  read -r W_G C_G WM_G CM_G <<< "$(best "$BIN" scan "$2")"
  read -r W_R C_R WM_R CM_R <<< "$(best "$RG" "${RGARGS[@]}" "$2")"
  echo "$1 kb-guard          $(rate "$3" "$W_G" "$C_G") (load $(cut -d' ' -f1 /proc/loadavg))"
  echo "$1 rg ($(wc -l < patterns.txt) patterns)   $(rate "$3" "$W_R" "$C_R")   kb-guard/rg CPU $(ratio "$C_G" "$C_R") best, $(ratio "$CM_G" "$CM_R") median; wall $(ratio "$W_G" "$W_R") best, $(ratio "$WM_G" "$WM_R") median (target <= 1.5 quiet, <= 2 loaded)"
}
if [ -n "$RG" ]; then
  side_by_side "skills " corpus "$MB"
  # A Markdown library of LIB_DOCS documents (bench/gen_library.py --words zipf).
  LIB_DOCS=${GUARD_LIB_DOCS:-12000}
  if [ ! -d "library-$LIB_DOCS" ]; then
    python3 "$ROOT/bench/gen_library.py" "library-$LIB_DOCS" "$LIB_DOCS" 42 --words zipf > /dev/null
  fi
  LMB=$(echo "$(find "library-$LIB_DOCS" -type f -printf '%s\n' | awk '{s += $1} END {print s}') / 1000000" | bc -l)
  side_by_side "library" "library-$LIB_DOCS" "$LMB"
else
  echo "note: ripgrep not installed; the rg comparison is skipped"
fi
if [ -n "${GUARD_BENCH_PERF:-}" ] && command -v perf > /dev/null; then
  perf record -q -F 999 -o perf.data "$BIN" scan corpus > /dev/null 2>&1
  echo "where the time goes (perf, top symbols):"
  perf report -i perf.data --no-children --sort symbol 2>/dev/null | grep -E '^ +[0-9]' | head -12
fi
# Adversarial: 1 MB of near-matching text per rule family, long lines.
ADV_MB=$(echo "$(find adversarial -type f -printf '%s\n' | awk '{s += $1} END {print s}') / 1000000" | bc -l)
read -r W_ADV C_ADV _ _ <<< "$(best "$BIN" scan adversarial)"
python3 -c 'import sys; mb,wn,cn,amb,wa,ca=map(float,sys.argv[1:]); print(f"adversarial        {amb:.1f} MB, wall {wa:.2f} s, CPU {ca:.2f} s; per-MB time adversarial/normal: CPU {(ca/amb)/(cn/mb):.2f}, wall {(wa/amb)/(wn/mb):.2f} (target <= 2)")' "$MB" "$W_NEW" "$C_NEW" "$ADV_MB" "$W_ADV" "$C_ADV"
# Same verdicts (speed work must not change a finding): with a
# baseline, every record either build writes (findings and verdicts) on
# each corpus, compared byte for byte. Not timed.
if [ -n "$BASE" ]; then
  for d in corpus adversarial "library-${GUARD_LIB_DOCS:-12000}" "$ROOT/../shared/data/agents-md"; do
    [ -d "$d" ] || continue
    "$BASE" scan "$d" > records-base.jsonl 2>/dev/null || true
    "$BIN" scan "$d" > records-new.jsonl 2>/dev/null || true
    changed=$(diff records-base.jsonl records-new.jsonl | grep -c '^[<>]' || true)
    echo "records base vs new on $(basename "$d"): $(wc -l < records-new.jsonl) records, $changed lines differ"
  done
fi
if [ -d "$ROOT/../shared/data/agents-md" ]; then
  echo "real agent files (shared/data/agents-md): $("$BIN" scan "$ROOT/../shared/data/agents-md" 2>/dev/null | python3 -c 'import json,sys,collections; print(dict(collections.Counter(r["verdict"] for r in map(json.loads, sys.stdin) if r["record"]=="verdict")))')"
fi
