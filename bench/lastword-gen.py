#!/usr/bin/env python3
"""Generates the kb-lastword benchmark: a ~1 MB AGENTS.md (sections, nested
headings, fences full of '#' lines) and N delta entries against it
(updates of existing sections, new headings, clears, deletes), as one YAML
delta file and as N one-entry files. Deterministic (seeded).

usage: lastword-gen.py OUT_DIR [ENTRIES=1000] [BYTES=1048576]
"""
import json, os, random, sys

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
size = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 20
rng = random.Random(4)
words = "agent build test cargo session heading delta apply lock file fence rust shell user soul value".split()

def para():
    return " ".join(rng.choice(words) for _ in range(rng.randint(8, 30))) + "\n"

parts, heads, i = ["# Project knowledge\n\nGenerated for kb-lastword bench.\n\n"], [], 0
total = len(parts[0])
while total < size:
    h = f"Section {i}"
    s = f"## {h}\n\n" + para() + "\n"
    if i % 5 == 0:
        s += "```sh\n# not a heading\n## nor this\ncargo test\n```\n\n"
    if i % 7 == 0:
        s += f"### Detail {i}\n\n" + para() + "\n"
    heads.append(h)
    parts.append(s)
    total += len(s.encode())
    i += 1
os.makedirs(os.path.join(out, "one"), exist_ok=True)
with open(os.path.join(out, "AGENTS.md"), "w") as f:
    f.write("".join(parts))

picks = rng.sample(heads, min(n, len(heads)))
entries = []
for k in range(n):
    r = k % 10
    if r < 6:
        e = {"key": {"path": "AGENTS.md", "heading": picks[k % len(picks)], "level": 2}, "operation": "update",
             "content": f"- fact {k}\n- " + para()}
    elif r < 8:
        e = {"key": {"path": "AGENTS.md", "heading": f"New {k}", "level": 2}, "operation": "update",
             "content": f"created {k}\n"}
    elif r < 9:
        e = {"key": {"path": "AGENTS.md", "heading": picks[k % len(picks)], "level": 2}, "operation": "clear",
             "content": ""}
    else:
        e = {"key": {"path": "AGENTS.md", "heading": picks[k % len(picks)], "level": 2}, "operation": "delete",
             "content": None}
    entries.append(e)

def dump(path, es):
    with open(path, "w") as f:
        json.dump({"version": "1.0.0", "source": "bench", "entries": es}, f, ensure_ascii=False)

dump(os.path.join(out, "all.yaml"), entries)
for k, e in enumerate(entries):
    dump(os.path.join(out, "one", f"{k:05}.yaml"), [e])
print(f"{total} bytes, {len(heads)} sections, {n} entries")
