#!/usr/bin/env bash
# check.sh — report Rust CI caching problems in GitHub Actions workflows.
# Read-only: prints findings, changes nothing. Exit 0 = clean, 1 = findings.
# Usage: scripts/check.sh [WORKFLOW_DIR]   (default: .github/workflows)
set -euo pipefail

dir="${1:-.github/workflows}"
if [[ ! -d "$dir" ]]; then
  echo "check.sh: no workflow directory at $dir" >&2
  exit 2
fi

findings=0
note() { echo "$1: $2"; findings=$((findings + 1)); }

shopt -s nullglob
for wf in "$dir"/*.yml "$dir"/*.yaml; do
  grep -q 'cargo ' "$wf" || continue          # not a Rust workflow
  if grep -Eq 'path:.*target' "$wf"; then
    note "$wf" "caches target/ by hand; use Swatinem/rust-cache@v2"
  fi
  if ! grep -q 'Swatinem/rust-cache' "$wf"; then
    note "$wf" "no rust-cache step"
  elif ! grep -q 'save-if' "$wf"; then
    note "$wf" "rust-cache saves on every branch; add save-if for main"
  fi
  if ! grep -q 'CARGO_INCREMENTAL' "$wf"; then
    note "$wf" "CARGO_INCREMENTAL not set to 0"
  fi
done

if (( findings == 0 )); then
  echo "no caching problems found in $dir"
  exit 0
fi
exit 1
