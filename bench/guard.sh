#!/usr/bin/env bash
# kb-guard benchmark (issue 6): throughput vs `rg -c -f PATTERNS`, recall on
# plain and evasive threats, near-misses judged dangerous, adversarial
# linearity. Usage: bench/guard.sh [SKILLS]   (default 3000 skills, ~100 MB)
# Env: GUARD_BENCH_DIR (default /tmp/kb-guard-bench), CARGO_TARGET_DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${GUARD_BENCH_DIR:-/tmp/kb-guard-bench}
SKILLS=${1:-3000}
cargo build --quiet --release --bin kb-guard --manifest-path "$ROOT/Cargo.toml"
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/kb-guard
if [ ! -f "$OUT/manifest.jsonl" ] || [ "$(wc -l < "$OUT/manifest.jsonl")" -ne "$SKILLS" ]; then
  rm -rf "$OUT"
  python3 -c 'import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))["rules"]))' "$ROOT/rules/core.yaml" \
    | python3 "$ROOT/bench/guard-gen.py" "$OUT" --skills "$SKILLS"
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
"$BIN" scan corpus > scan.jsonl || true
T_GUARD=$(best "$BIN" scan corpus)
if command -v rg > /dev/null; then
  T_RG=$(best rg -c -f patterns.txt corpus)
else
  T_RG=""
  echo "note: ripgrep not installed (cargo install --locked ripgrep); rg comparison skipped"
fi
# Adversarial: 1 MB of near-matching text per rule family, long lines.
ADV_BYTES=$(du -cb adversarial/*.txt | tail -1 | cut -f1)
T_ADV=$(best "$BIN" scan adversarial)
python3 - "$BYTES" "$T_GUARD" "${T_RG:-0}" "$ADV_BYTES" "$T_ADV" <<'PY'
import json, sys
from collections import Counter, defaultdict
size, tg, trg, advb, tadv = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
man = [json.loads(l) for l in open("manifest.jsonl")]
ver = {}
for l in open("scan.jsonl"):
    r = json.loads(l)
    if r["record"] == "verdict":
        ver[r["target"].rsplit("/", 1)[-1]] = r["verdict"]
by = defaultdict(Counter)
tech = defaultdict(Counter)
for m in man:
    v = ver.get(m["skill"], "missing")
    by[m["class"]][v] += 1
    if m["class"] in ("plain", "evasive"):
        tech[m["technique"]][v == "dangerous"] += 1
def share(cls, verdict):
    c = by[cls]; n = sum(c.values())
    return 100.0 * c[verdict] / n if n else 0.0
mb = size / 1e6
print(f"corpus           {len(man)} skills, {mb:.1f} MB")
print(f"kb-guard scan    {tg:.2f} s   {mb / tg:.0f} MB/s   (target >= 50 MB/s)")
if trg > 0:
    print(f"rg -c -f (149)   {trg:.2f} s   {mb / trg:.0f} MB/s   kb-guard/rg time ratio {tg / trg:.2f} (target <= 2)")
print(f"recall plain     {share('plain', 'dangerous'):.1f} %  (target >= 98 %)")
print(f"recall evasive   {share('evasive', 'dangerous'):.1f} %  (target >= 80 %)")
for t, c in sorted(tech.items()):
    print(f"  {t:<12} {c[True]}/{c[True] + c[False]}")
print(f"near-miss dangerous  {share('near_miss', 'dangerous'):.1f} %  (target <= 5 %); caution {share('near_miss', 'caution'):.1f} %")
print(f"benign dangerous     {share('benign', 'dangerous'):.1f} %; caution {share('benign', 'caution'):.1f} %")
per_mb_normal, per_mb_adv = tg / mb, tadv / (advb / 1e6)
print(f"adversarial      {advb / 1e6:.1f} MB in {tadv:.2f} s; per-MB time ratio adversarial/normal {per_mb_adv / per_mb_normal:.2f} (target <= 3)")
PY
if [ -d "$ROOT/../shared/data/agents-md" ]; then
  echo "real agent files (shared/data/agents-md): $("$BIN" scan "$ROOT/../shared/data/agents-md" 2>/dev/null | python3 -c 'import json,sys,collections; print(dict(collections.Counter(r["verdict"] for r in map(json.loads, sys.stdin) if r["record"]=="verdict")))')"
fi
