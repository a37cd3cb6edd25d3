#!/usr/bin/env python3
"""A fleet too large to run on one machine, simulated.

bench/fleet.sh runs real clones; 1,000 of them take over an hour on two
cores. This model replays the same protocol on sets instead of git
objects, with each sync's cost taken from measured figures, so its
figures for 1,000 machines can be checked against the real run at 256:

- a commit is the set of documents it holds; a ref contains another when
  its set holds the other's;
- a sync fetches the hub, merges the shared branch and up to
  MAX_REFS - 1 other machine refs it does not contain, those no other
  pending ref contains (git's `merge-base --independent`), in an order
  of its own (a digest of machine and ref, as `sync::fleet::pending`);
- it pushes its own ref (always a fast-forward: it never fails) and
  offers `main` a compare-and-swap, which holds only when `main` is
  still what the sync fetched;
- a wave of C syncs starts at one moment and shares the cores (processor
  sharing); the first to finish wins `main`, the rest lose the race;
- a sync costs BASE + PER_DOC for each document it brings in + PER_REF
  for each ref it folds, in CPU seconds (--base, --per-doc, --per-ref:
  measured with the release build, see bench/RESULTS.md).

It prints what bench/fleet.sh prints: failed syncs, each wave's time,
main's lag behind the machine refs, the sequential passes until every
clone holds main's tree and every document, and the hub's refs.
With --rate R the hub refuses pushes over R a minute (the sync fails
and keeps its work for the next); with --rounds K every machine writes
and syncs K times (the steady state of a fleet that syncs regularly).

Usage: bench/fleet-sim.py [N=1000] [C=64] [--rounds K] [--rate R]
"""

import argparse
import hashlib


def digest(*parts):
    return hashlib.sha256("\n".join(parts).encode()).digest()


class Hub:
    def __init__(self):
        self.main = frozenset()
        self.refs = {}  # machine -> frozenset
        self.pushes = []  # times of accepted pushes


class Machine:
    def __init__(self, name):
        self.name = name
        self.head = frozenset()


def plan(m, hub_main, hub_refs, max_refs):
    """What a sync merges: main, then up to max_refs - 1 independent refs."""
    pending = [(n, s) for n, s in hub_refs.items() if n != m.name and not s <= m.head]
    sets = [s for _, s in pending]
    independent = [(n, s) for n, s in pending if not any(s < o for o in sets)]
    independent.sort(key=lambda p: digest(m.name, p[0]))
    taken = independent[: max_refs - 1]
    new = set(hub_main)
    for _, s in taken:
        new |= s
    return frozenset(new) | m.head, len(taken)


def run_wave(hub, machines, args, clock):
    """C syncs at one moment; returns (wave time, failed, races lost)."""
    snap_main, snap_refs = hub.main, dict(hub.refs)
    jobs = []
    for m in machines:
        head, folded = plan(m, snap_main, snap_refs, args.max_refs)
        brought = len(head - m.head)
        cost = args.base + args.per_doc * brought + args.per_ref * folded
        jobs.append([cost, m, head])
    # Processor sharing on `cores`: finish times in order of cost.
    jobs.sort(key=lambda j: j[0])
    t, done_work, active = 0.0, 0.0, len(jobs)
    finishes = []
    for cost, m, head in jobs:
        share = min(1.0, args.cores / max(active, 1))
        t += (cost - done_work) / share
        done_work = cost
        active -= 1
        finishes.append((t, m, head))
    failed = lost = 0
    for t, m, head in finishes:
        when = clock + t
        recent = [p for p in hub.pushes if p > when - 60]
        if args.rate and len(recent) >= args.rate:
            failed += 1  # refused by the hub: the work stays for the next sync
            continue
        hub.pushes.append(when)
        m.head = head
        hub.refs[m.name] = head
        if hub.main == snap_main and head >= hub.main:
            hub.main = head
        else:
            lost += 1
    return (finishes[-1][0] if finishes else 0.0), failed, lost


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=1000)
    ap.add_argument("c", nargs="?", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--rate", type=int, default=0)
    ap.add_argument("--max-refs", type=int, default=16)
    ap.add_argument("--cores", type=float, default=2.0)
    ap.add_argument("--base", type=float, default=0.12)
    ap.add_argument("--per-doc", type=float, default=0.0038)
    ap.add_argument("--per-ref", type=float, default=0.033)
    args = ap.parse_args()

    hub = Hub()
    machines = [Machine(f"m{i}") for i in range(args.n)]
    rate = f", hub limited to {args.rate} pushes/min" if args.rate else ""
    print(f"== {args.n} machines (simulated), waves of {args.c} at once, {args.rounds} round(s){rate}")
    clock, failed, waves = 0.0, 0, []
    for r in range(args.rounds):
        for m in machines:  # each writes two documents
            m.head = m.head | {f"{m.name}-{r}-0", f"{m.name}-{r}-1"}
        for start in range(0, args.n, args.c):
            t, bad, lost = run_wave(hub, machines[start : start + args.c], args, clock)
            clock += t
            failed += bad
            waves.append(t)
            print(f"round {r + 1} wave {len(waves)}: {t:.1f} s, failed {bad}, lost the main race {lost}")
    first = waves[0]
    print(f"failed syncs: {failed} of {args.n * args.rounds}; slowest wave / first wave: {max(waves) / first:.2f}x")
    later = waves[1:] or waves
    print(f"waves after the first: median {sorted(later)[len(later) // 2]:.1f} s, slowest {max(later):.1f} s")
    written = set().union(*(m.head for m in machines))
    behind = sum(1 for s in hub.refs.values() if not s <= hub.main)
    print(f"main after the waves: {behind} machine refs not in main; documents in main {len(hub.main)}, "
          f"written {2 * args.n * args.rounds}, in the union {len(written | set().union(*hub.refs.values()))}")
    args.rate = 0  # the passes run after the hook is gone, as in fleet.sh
    for p in range(1, 6):
        t = 0.0
        for m in machines:
            wt, _, _ = run_wave(hub, [m], args, clock)
            t += wt
            clock += wt
        same = sum(1 for m in machines if m.head == hub.main)
        whole = sum(1 for m in machines if len(m.head) == 2 * args.n * args.rounds)
        print(f"pass {p}: {t:.0f} s, clones on main's tree {same} of {args.n}, holding every document {whole}")
        if same == args.n and whole == args.n:
            break
    print(f"sequential passes until one tree: {p}")
    print(f"hub refs: {len(hub.refs) + 1} ({len(hub.refs)} machine refs + main)")


if __name__ == "__main__":
    main()
