#!/usr/bin/env bash
# kb-score benchmarks: speed on a generated 100,000-document library
# (vs ripgrep) and retrieval quality on BEIR SciFact (vs plain BM25).
# usage: bench/score.sh [DOCS=100000]   (KB_BENCH_DIR, default /tmp/kb-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
docs="${1:-100000}"
dir="${KB_BENCH_DIR:-/tmp/kb-bench}"
cargo build --release --bin kb-score >&2
bin="${CARGO_TARGET_DIR:-target}/release/kb-score"
ws="$dir/lib-$docs"
if [ ! -f "$ws/words.txt" ]; then
  echo "generating $docs documents in $ws ..." >&2
  rm -rf "$ws"
  python3 bench/gen_library.py "$ws" "$docs" --words zipf
fi
echo "== kb-score speed"
python3 bench/score_bench.py "$bin" "$ws" 100
echo
echo "== kb-score quality (BEIR SciFact)"
python3 bench/scifact.py "$bin" "$dir/scifact"
