#!/usr/bin/env bash
# kb-lastword plan cost at 1×, 4× and 8× input (N, 4N, 8N entries against
# one ~1 MB AGENTS.md), side by side in one run; prints each time and its
# ratio to 1×. Linear means the ratios stay near 4 and 8.
# usage: bench/lastword-plan.sh [N]   (default 5000)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-5000}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release --quiet --bin kb-lastword
BIN=$(realpath "$CARGO_TARGET_DIR/release/kb-lastword")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
ms() { echo $(( $(date +%s%N) / 1000000 )); }
base=
printf '%-8s %8s %6s\n' scale entries ms
for k in 1 4 8; do
  n=$((N * k))
  python3 bench/lastword-gen.py "$W/d$k" "$n" 1048576 > /dev/null
  rm -rf "$W/proj" "$W/home"; mkdir -p "$W/proj" "$W/home"
  cp "$W/d$k/AGENTS.md" "$W/proj/AGENTS.md"
  t0=$(ms)
  (cd "$W/proj" && KB_LASTWORD_HOME="$W/home" "$BIN" plan "$W/d$k/all.yaml" > /dev/null 2>&1) || true
  t=$(( $(ms) - t0 ))
  base=${base:-$t}
  printf '%-8s %8d %6d  ratio %s\n' "${k}x" "$n" "$t" "$(python3 -c "print(f'{$t/max($base,1):.2f}')")"
done
