#!/usr/bin/env python3
"""Writes N synthetic memory notes in kb-memgate's template into DIR/notes/
(deterministic: seeded), for bench/memgate.sh. Usage: memgate_gen.py N DIR"""
import os, random, sys

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
    title = one.rstrip(".。")
    text = f"""# {nid}: {title}

## Meta

- Id: {nid}
- Kind: preference
- Status: active
- Strength: should
- Scope: project
- Audience: agent
- Portability: project-specific
- Source: user
- Tags:
- Supersedes:
- CreatedAt: 2026-01-01T00:00:00Z
- UpdatedAt: 2026-01-01T00:00:00Z
- Session: bench

## When to load

- When the work involves {title}

## One-liner (for injection)

{one}

## Context / Decision

- Decision: {one}
"""
    with open(os.path.join(out, "notes", nid + ".md"), "w") as f:
        f.write(text)
