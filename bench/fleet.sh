#!/usr/bin/env bash
# Fleet benchmark, not a timed test: N clones of one local bare
# hub each write 2 documents, then run `kb-append sync` in waves of C at
# the same moment. It prints:
#   - failed syncs (exit status not 0) per wave and in all;
#   - each wave's wall time;
#   - how far main lags behind the union of the machine refs after the
#     waves (machine refs main does not contain, documents missing in main);
#   - the sequential passes (every clone syncs once, in order) until every
#     clone holds main's tree and every document;
#   - the number of refs on the hub.
# With RATE=R (pushes per minute) a pre-receive hook on the hub refuses
# pushes over that rate, as a hosted hub's limit would; the refused syncs
# fail, and the check is that nothing is lost: after the waves the hook is
# removed and the passes still bring every document everywhere.
#
# Usage: bench/fleet.sh [N=64] [C=32]        RATE=R bench/fleet.sh N C
#        (after cargo build --release; KB_BIN overrides the binary dir)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${KB_BIN:-${CARGO_TARGET_DIR:-$here/../target}/release}
n=${1:-64} c=${2:-32} rate=${RATE:-}
export PATH="$bin:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@localhost \
  GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@localhost
git config --global init.defaultBranch main
now() { date +%s.%N; }

# ---- the hub, a published library, N clones ------------------------------
git init -q --bare "$work/hub.git"
git clone -q "$work/hub.git" "$work/seed" 2>/dev/null
(cd "$work/seed" && kb-append init >/dev/null && kb-append sync >/dev/null)
# A template clone with the drivers registered but no identity: each copy
# takes its own on its first sync, as a fresh clone would.
git clone -q "$work/hub.git" "$work/template"
(cd "$work/template" && kb-append sync --no-push >/dev/null && git config --unset kb.machine)
for i in $(seq 0 $((n - 1))); do
  cp -a "$work/template" "$work/c$i"
  printf '{"path":"notes/m%d-0.md","content":"# Machine %d, note 0\\n\\nWritten on clone %d.\\n"}\n{"path":"notes/m%d-1.md","content":"# Machine %d, note 1\\n\\nAlso from clone %d.\\n"}\n' \
    "$i" "$i" "$i" "$i" "$i" "$i" | (cd "$work/c$i" && kb-append batch >/dev/null)
done
if [ -n "$rate" ]; then
  cat > "$work/hub.git/hooks/pre-receive" <<EOF
#!/usr/bin/env bash
# Refuses a push when $rate pushes were taken in the last 60 seconds.
exec 9>>"\$GIT_DIR/rate.lock"; flock 9
t=\$(date +%s); touch "\$GIT_DIR/rate.log"
recent=\$(awk -v since=\$((t - 60)) '\$1 > since' "\$GIT_DIR/rate.log" | wc -l)
if [ "\$recent" -ge $rate ]; then echo "rate limit: \$recent pushes in the last minute" >&2; exit 1; fi
echo "\$t" >> "\$GIT_DIR/rate.log"
EOF
  chmod +x "$work/hub.git/hooks/pre-receive"
fi
echo "== $n clones, waves of $c at once${rate:+, hub limited to $rate pushes/min}"

# ---- the waves -------------------------------------------------------------
failed=0 wave=0 first=0 slowest=0
for start in $(seq 0 "$c" $((n - 1))); do
  wave=$((wave + 1))
  end=$((start + c - 1)); [ "$end" -ge "$n" ] && end=$((n - 1))
  t0=$(now)
  for i in $(seq "$start" "$end"); do
    (cd "$work/c$i" && if kb-append sync > "$work/out$i" 2> "$work/err$i"; then echo 0; else echo $?; fi > "$work/rc$i") &
  done
  wait
  t=$(python3 -c "print(f'{$(now) - $t0:.1f}')")
  bad=0 lost=0 pushes=0
  for i in $(seq "$start" "$end"); do
    if [ "$(cat "$work/rc$i")" != 0 ]; then bad=$((bad + 1)); else
      grep -q '"main_race_lost":true' "$work/out$i" && lost=$((lost + 1))
      grep -q '"pushed":true' "$work/out$i" && pushes=$((pushes + 1))
    fi
  done
  failed=$((failed + bad))
  [ "$wave" = 1 ] && first=$t
  slowest=$(python3 -c "print(max($slowest, $t))")
  echo "wave $wave (clones $start-$end): $t s, failed $bad, pushed $pushes, lost the main race $lost"
  if [ "$bad" -gt 0 ]; then
    for i in $(seq "$start" "$end"); do
      [ "$(cat "$work/rc$i")" != 0 ] && { echo "   e.g. clone $i: $(head -c 300 "$work/err$i")"; break; }
    done
  fi
done
echo "failed syncs: $failed of $n; slowest wave / first wave: $(python3 -c "print(f'{$slowest / $first:.2f}')")x"

# ---- how far main lags behind the machine refs ----------------------------
hub="$work/hub.git"
behind=$(git -C "$hub" for-each-ref --no-merged=main --format=x refs/heads/kb/ | wc -l)
in_main=$(git -C "$hub" ls-tree -r --name-only main -- .library/notes | grep -c '^.library/notes/m' || true)
union=$(for r in $(git -C "$hub" for-each-ref --format='%(refname)' refs/heads/); do
  git -C "$hub" ls-tree -r --name-only "$r" -- .library/notes; done | grep '^.library/notes/m' | sort -u | wc -l)
echo "main after the waves: $behind machine refs not in main; documents in main $in_main, in the union of refs $union, written $((2 * n))"

# ---- sequential passes until one tree -------------------------------------
[ -n "$rate" ] && rm -f "$hub/hooks/pre-receive"
passes=0
for pass in 1 2 3 4; do
  passes=$pass
  t0=$(now)
  pass_failed=0
  for i in $(seq 0 $((n - 1))); do
    (cd "$work/c$i" && kb-append sync > "$work/out$i" 2> "$work/err$i") || pass_failed=$((pass_failed + 1))
  done
  main_tree=$(git -C "$hub" rev-parse 'main^{tree}')
  same=0 whole=0
  for i in $(seq 0 $((n - 1))); do
    [ "$(git -C "$work/c$i" rev-parse 'HEAD^{tree}')" = "$main_tree" ] && same=$((same + 1))
    [ "$(find "$work/c$i/.library/notes" -name 'm*.md' | wc -l)" = $((2 * n)) ] && whole=$((whole + 1))
  done
  echo "pass $pass: $(python3 -c "print(f'{$(now) - $t0:.1f}')") s, failed $pass_failed, clones on main's tree $same of $n, holding all $((2 * n)) documents $whole of $n"
  [ "$same" = "$n" ] && [ "$whole" = "$n" ] && break
done
echo "sequential passes until one tree: $passes"
echo "hub refs: $(git -C "$hub" for-each-ref refs/heads/ | wc -l) ($(git -C "$hub" for-each-ref refs/heads/kb/ | wc -l) machine refs + main)"
