#!/usr/bin/env bash
# kb-mcp benchmark: a tool call over stdio vs the same call in-process, warm
# library_search latency, and the kb-score process an agent spawns instead.
# usage: bench/mcp.sh [DOCS=2000] [CALLS=300]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bin kb-mcp --bin kb-score >&2
cargo bench --bench mcp -- "${1:-2000}" "${2:-300}"
