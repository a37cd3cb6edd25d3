#!/usr/bin/env python3
"""Scores kb-guard scans of a generated corpus (bench/guard-gen.py) against
its manifest, per class and family, for several builds side by side.

usage: guard_report.py MANIFEST NAME=SCAN.jsonl [NAME=SCAN.jsonl ...] [--misses NAME]
"""
import json, sys
from collections import Counter, defaultdict

TARGETS = {"plain": ("dangerous", ">= 98 %"), "evasive": ("dangerous", ">= 98 %"),
           "near_miss": ("dangerous", "<= 2 %"), "clean": ("flagged", "0 %")}


def load(path):
    ver, rules = {}, defaultdict(set)
    for line in open(path):
        r = json.loads(line)
        skill = r.get("target", r.get("path", "")).split("corpus/", 1)[-1].split("/", 1)[0]
        if r["record"] == "verdict":
            ver[skill] = r["verdict"]
        elif r["record"] == "finding" and not r.get("suppressed"):
            rules[skill].add(f'{r["rule"]}:{r["severity"]}')
    return ver, rules


def main():
    args = sys.argv[1:]
    show = args[args.index("--misses") + 1] if "--misses" in args else None
    if show:
        i = args.index("--misses")
        args = args[:i] + args[i + 2:]
    man = [json.loads(l) for l in open(args[0])]
    builds = [a.split("=", 1) for a in args[1:]]
    scans = {n: load(p) for n, p in builds}
    names = [n for n, _ in builds]

    def rate(cls, fam, name):
        ver = scans[name][0]
        rows = [m for m in man if m["class"] == cls and (fam is None or m.get("family") == fam)]
        if not rows:
            return None, 0
        want = TARGETS[cls][0]
        hit = sum(1 for m in rows if (ver.get(m["skill"], "missing") != "safe" if want == "flagged"
                                       else ver.get(m["skill"]) == "dangerous"))
        return 100.0 * hit / len(rows), len(rows)

    head = f'{"class / family":<28}{"n":>5}  ' + "  ".join(f"{n:>10}" for n in names) + "   target"
    print(head)
    for cls in ("plain", "evasive", "near_miss", "clean"):
        fams = sorted({m.get("family") for m in man if m["class"] == cls and m.get("family")})
        for fam in [None] + fams:
            vals = [rate(cls, fam, n) for n in names]
            n = vals[0][1]
            if not n:
                continue
            label = f"{cls} ({TARGETS[cls][0]})" if fam is None else f"  {fam}"
            cells = "  ".join(f"{v:>9.1f}%" for v, _ in vals)
            print(f"{label:<28}{n:>5}  {cells}" + (f"   {TARGETS[cls][1]}" if fam is None else ""))
        if cls == "clean" or cls == "near_miss":
            for n in names:
                c = Counter(scans[n][0].get(m["skill"], "missing") for m in man if m["class"] == cls)
                print(f"  verdicts {n:<17} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
            if cls == "near_miss":  # caution is for real doubt
                for n in names:
                    c = Counter(scans[n][0].get(m["skill"], "missing") for m in man if m["class"] == cls)
                    total = sum(c.values())
                    print(f"  caution or worse {n:<9} {100.0 * (total - c['safe']) / max(total, 1):>9.1f}%   target <= 25 %")
    if show:
        ver, rules = scans[show]
        print(f"\nmisses of {show}:")
        for m in man:
            v = ver.get(m["skill"], "missing")
            bad = (m["class"] in ("plain", "evasive") and v != "dangerous") or \
                  (m["class"] == "near_miss" and v == "dangerous") or (m["class"] == "clean" and v != "safe")
            if bad:
                print(f'  {m["class"]:<9} {m.get("template", m.get("family", "")):<12} {m.get("technique", ""):<12} {v:<9} {sorted(rules[m["skill"]])[:6]}')


if __name__ == "__main__":
    main()
