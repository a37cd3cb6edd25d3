#!/usr/bin/env bash
# Sync benchmark, three figures side by side:
#  1. a 10,000-document library, 100 new commits on the remote and one
#     local write: `kb-append sync --no-push` vs plain `git pull --no-rebase`
#     (no drivers, so it stops on conflicts in generated files) on an
#     identical clone; best of $REPS. Target: sync <= 2x the pull.
#  2. 4-clone convergence: 200 writes spread over 4 clones with syncs in
#     random order, then sync rounds until nothing changes (wall time).
#  3. the size of .git after $WRITES single-commit writes, before and after
#     `git gc`, and after `kb-append compact` + `git gc`.
#
# Usage: bench/sync.sh [DOCS=10000] [REMOTE_COMMITS=100] [WRITES=10000] [REPS=3]
#        (after cargo build --release; KB_BIN overrides the binary dir)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${KB_BIN:-${CARGO_TARGET_DIR:-$here/../target}/release}
docs=${1:-10000} remote_commits=${2:-100} writes=${3:-10000} reps=${4:-3}
export PATH="$bin:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@localhost \
  GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@localhost
git config --global init.defaultBranch main
now() { date +%s.%N; }
q() { "$@" >/dev/null 2>&1; }

# ---- 1. sync vs pull on a 10,000-document library -------------------------
python3 "$here/gen-writes.py" $((docs * 13 / 10 + remote_commits + 10)) "$work/data"
grep -v '"path": "team-notes/' "$work/data/requests.jsonl" > "$work/docs.jsonl"
sed -n "1,${docs}p" "$work/docs.jsonl" > "$work/base.jsonl"
sed -n "$((docs + 1)),$((docs + remote_commits))p" "$work/docs.jsonl" > "$work/remote.jsonl"
tail -n 1 "$work/docs.jsonl" > "$work/local.jsonl"

git init -q --bare "$work/hub.git"
git clone -q "$work/hub.git" "$work/seed" 2>/dev/null
(cd "$work/seed" && kb-append init >/dev/null && kb-append batch --no-commit < "$work/base.jsonl" >/dev/null \
  && kb-append sync >/dev/null)
git clone -q "$work/hub.git" "$work/local0"
(cd "$work/local0" && kb-append sync --no-push >/dev/null \
  && kb-append batch < "$work/local.jsonl" >/dev/null)
(cd "$work/seed" && while IFS= read -r req; do printf '%s\n' "$req" | kb-append batch >/dev/null; done < "$work/remote.jsonl" \
  && git push -q origin main)
git -C "$work/local0" fetch -q origin    # both clones start with the objects at hand; the timed part merges

best_sync=999 best_pull=999
for r in $(seq "$reps"); do
  rm -rf "$work/s" "$work/p"
  cp -a "$work/local0" "$work/s"
  cp -a "$work/local0" "$work/p"
  git -C "$work/p" config --remove-section merge.kb-log
  git -C "$work/p" config --remove-section merge.kb-derived
  # alternate which goes first, so neither always meets a warmer cache
  for who in $([ $((r % 2)) = 1 ] && echo "sync pull" || echo "pull sync"); do
    t0=$(now)
    if [ "$who" = sync ]; then
      (cd "$work/s" && kb-append sync --no-push > "$work/sync.out")
      best_sync=$(python3 -c "print(min($best_sync, $(now) - $t0))")
    else
      (cd "$work/p" && git pull -q --no-rebase --no-edit origin main >/dev/null 2>&1 || true)
      best_pull=$(python3 -c "print(min($best_pull, $(now) - $t0))")
    fi
  done
done
conflicts=$(git -C "$work/p" diff --name-only --diff-filter=U | tr '\n' ' ')
ndocs=$(grep -c '' "$work/s/.library/.master-index.md")
echo "== 1. merge 100 remote commits into a clone with one local write ($((ndocs - 5)) documents)"
echo "kb-append sync --no-push : $(printf '%.3f' "$best_sync") s   $(cat "$work/sync.out")"
echo "git pull --no-rebase     : $(printf '%.3f' "$best_pull") s   unresolved: ${conflicts:-none}"
python3 -c "print(f'ratio sync / pull        : {$best_sync / $best_pull:.2f}x   (target <= 2x; best of $reps)')"

# ---- 2. 4-clone convergence -----------------------------------------------
git init -q --bare "$work/hub4.git"
git clone -q "$work/hub4.git" "$work/c0" 2>/dev/null
(cd "$work/c0" && kb-append init >/dev/null && kb-append sync >/dev/null)
for c in 1 2 3; do git clone -q "$work/hub4.git" "$work/c$c"; done
t0=$(now)
python3 - "$work" <<'PY'
import json, random, subprocess, sys
work = sys.argv[1]
rng = random.Random(7)
pool = [f".memory/.references/topic-{i}-v1.md" for i in range(20)] + [f"team-notes/n-{i}.md" for i in range(20)]
def sync(c):
    out = subprocess.run(["kb-append", "sync"], cwd=f"{work}/c{c}", capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"sync failed in c{c}: {out.stdout}{out.stderr}")
    return json.loads(out.stdout)
for i in range(200):
    c = rng.randrange(4)
    content = f"---\ntopic: t{i}\nkeywords: [k{i % 7}]\n---\n# write {i} on c{c}\n"
    subprocess.run(["kb-append", "write", rng.choice(pool), "--content", content, "--notebook", f"nb-{c}"],
                   cwd=f"{work}/c{c}", check=True, capture_output=True)
    if rng.random() < 0.3:
        sync(rng.randrange(4))
for rounds in range(1, 20):
    if all(r["fetched"] == 0 and not r["pushed"] for r in [sync(c) for c in range(4)]):
        break
trees = {subprocess.run(["git", "rev-parse", "HEAD^{tree}"], cwd=f"{work}/c{c}", capture_output=True, text=True).stdout for c in range(4)}
print(f"rounds to converge: {rounds}, distinct trees: {len(trees)}")
PY
t1=$(now)
echo "== 2. 4 clones, 200 writes, random syncs, then sync until quiet"
python3 -c "print(f'wall time                : {$t1 - $t0:.1f} s')"

# ---- 3. .git size after single-commit writes ------------------------------
git init -q "$work/big"
(cd "$work/big" && kb-append init >/dev/null && git add -A && git commit -qm init)
python3 - "$work" "$writes" <<'PY'
import json, subprocess, sys, datetime
work, n = sys.argv[1], int(sys.argv[2])
reqs = [json.loads(l) for l in open(f"{work}/data/requests.jsonl")][:n]
start = datetime.datetime(2025, 9, 1, tzinfo=datetime.timezone.utc)
for i, r in enumerate(reqs):   # one write = one commit, spread over 180 days
    ts = (start + datetime.timedelta(seconds=i * 180 * 86400 // n)).strftime("%Y-%m-%dT%H:%M:%SZ")
    args = ["kb-append", "write", r["path"], "--content", r["content"], "--notebook", r["notebook"]]
    if r["mode"] == "append":
        args.append("--append")
    subprocess.run(args, cwd=f"{work}/big", check=True, capture_output=True, env={**__import__('os').environ, "KB_NOW": ts})
PY
size() { du -sk "$work/big/.git" | cut -f1; }
commits=$(git -C "$work/big" rev-list --count HEAD)
log_before=$(wc -c < "$work/big/.library/.changelog")
raw=$(size)
git -C "$work/big" gc -q
packed=$(size)
(cd "$work/big" && KB_NOW=2026-03-01T00:00:00Z kb-append compact --older-than 90d >/dev/null)
git -C "$work/big" gc -q
compacted=$(size)
log_after=$(wc -c < "$work/big/.library/.changelog")
echo "== 3. .git after $writes single-commit writes ($commits commits)"
echo ".git as written (loose)  : $((raw / 1024)) MiB"
echo ".git after git gc        : $((packed / 1024)) MiB"
echo ".git after compact + gc  : $((compacted / 1024)) MiB   (.changelog $((log_before / 1024)) KiB -> $((log_after / 1024)) KiB)"
