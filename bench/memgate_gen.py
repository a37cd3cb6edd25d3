#!/usr/bin/env python3
"""Writes N synthetic memory notes in kb-memgate's template into DIR/notes/
(deterministic: seeded), for bench/memgate.sh. Usage: memgate_gen.py N DIR"""
import os, random, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from memgate_note import note  # noqa: E402

n, out = int(sys.argv[1]), sys.argv[2]
rng = random.Random(42)
verbs = ["use", "prefer", "avoid", "never use", "always run", "keep", "format", "test", "pin", "document"]
objs = [f"{a}{b}" for a in ["lib", "tool", "pkg", "mod", "api", "cli", "db", "ui", "net", "fs"]
        for b in ["core", "kit", "lite", "pro", "x", "js", "rs", "py", "go", "ml", "io", "fx", "ql", "sh", "db"]]
ctx = ["in tests", "for builds", "in CI", "for releases", "in the backend", "in the frontend", "for docs",
       "when deploying", "for migrations", "in scripts", "for logging", "for caching", "in reviews"]
zh = ["不要用", "优先用", "别在生产环境用", "测试时用", "发布前检查"]
os.makedirs(os.path.join(out, "notes"), exist_ok=True)
for i in range(n):
    if i % 10 == 0:
        one = f"{rng.choice(zh)} {rng.choice(objs)} {rng.choice(objs)}。"
    else:
        one = f"{rng.choice(verbs).capitalize()} {rng.choice(objs)} {rng.choice(ctx)} with {rng.choice(objs)}."
    nid = f"MEM-{i:010x}"
    text = note(nid, one, kind="preference", when=[f"When the work involves {one.rstrip('.。')}"])
    with open(os.path.join(out, "notes", nid + ".md"), "w") as f:
        f.write(text)
