#!/usr/bin/env bash
# A faithful shell version of seed 000's 8-step `library write`, the
# baseline kb-append is measured against: mkdir lock (with stale-pid
# reclaim), tmp + mv, echo >> .changelog, index line update of the
# directory's .index.md and .master-index.md, relations append, release.
# Git commit is skipped (the --no-commit path). One request per manifest
# line: PATH<TAB>MODE<TAB>CONTENT_FILE<TAB>NOTEBOOK.
#
# Usage: seed-write.sh LIBRARY_DIR MANIFEST CONTENT_DIR
set -euo pipefail
lib=$1 manifest=$2 contents=$3

acquire() {
  until mkdir "$lib/.lock" 2>/dev/null; do
    pid=$(cat "$lib/.lock/pid" 2>/dev/null || echo)
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then rm -rf "$lib/.lock"; continue; fi
    sleep 0.01
  done
  echo $$ > "$lib/.lock/pid"
}
release() { rm -rf "$lib/.lock"; }

index_update() { # file key row
  local idx=$1 key=$2 row=$3
  touch "$idx"
  { grep -v -F -- "| $key |" "$idx" || true; echo "$row"; } | sort > "$idx.tmp"
  mv "$idx.tmp" "$idx"
}

while IFS=$'\t' read -r path mode cf nb; do
  target="$lib/$path"
  dir=$(dirname "$target")
  mkdir -p "$dir"                                   # 1. mkdir -p
  acquire                                           # 2. acquire lock
  if [ "$mode" = append ] && [ -f "$target" ]; then # 3. atomic write
    cat "$target" "$contents/$cf" > "$target.tmp"
    action=appended
  else
    cat "$contents/$cf" > "$target.tmp"
    action=created; [ -f "$target" ] && action=updated
  fi
  mv "$target.tmp" "$target"
  ts=$(date -u +%Y-%m-%dT%H:%M:%SZ)                  # 4. changelog
  topic=$(sed -n 's/^topic: //p' "$target" | head -1)
  echo "{\"ts\":\"$ts\",\"event\":\"write\",\"path\":\"$path\",\"action\":\"$action\",\"notebook\":\"$nb\",\"topic\":\"$topic\"}" >> "$lib/.changelog"
  name=$(basename "$path")                          # 5. index
  index_update "$dir/.index.md" "$name" "| $name | $topic |"
  index_update "$lib/.master-index.md" "$path" "| $path | $topic |"
  related=$(sed -n 's/^related: \[\(.*\)\]/\1/p' "$target" | head -1)  # 6. relations
  [ -n "$related" ] && echo "{\"from\":\"$path\",\"to\":\"topic:$related\",\"kind\":\"related\"}" >> "$lib/.relations.jsonl"
  release                                           # 7. release
done < "$manifest"                                  # 8. (git commit skipped)
