#!/usr/bin/env python3
"""Generates a deterministic library of N documents for kb-tools benchmarks.

usage: gen-library.py DIR [N=100000] [SEED=42]

Layout follows seed 000: versioned references, experiences by type, thinking
notes and user folders, ~100 documents per directory, YAML frontmatter
(topic, keywords, type, last_verified_at, related), Markdown bodies of
80-300 words drawn from a Zipf-distributed vocabulary, and a
.relations.jsonl with the related edges. The words file DIR/../words.txt
lists vocabulary words for query sampling.
"""
import json
import os
import random
import sys


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    rnd = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 42)
    syll = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "pe", "dra", "gen", "sol", "tri", "ux", "bel", "cor", "fin", "qua"]
    vocab = sorted({"".join(rnd.choice(syll) for _ in range(rnd.randint(2, 4))) for _ in range(30000)})
    rnd.shuffle(vocab)
    weights = [1.0 / (i + 1) ** 1.05 for i in range(len(vocab))]
    cum = []
    s = 0.0
    for w in weights:
        s += w
        cum.append(s)
    import bisect

    def word():
        return vocab[bisect.bisect_left(cum, rnd.random() * s)]

    types = ["software", "data-pipeline", "research", "infra", "security", "frontend", "ml", "ops"]
    lib = os.path.join(out, ".library")
    paths = []
    edges = set()
    for i in range(n):
        r = i % 10
        topic = "-".join(vocab[rnd.randint(0, 5000)] for _ in range(rnd.randint(1, 3)))
        d = i // 100
        if r == 0:
            rel = f".memory/.references/{topic}-{i}-v1.md"
            ty = None
        elif r < 6:
            ty = types[i % len(types)]
            rel = f".memory/.experiences/{ty}/b{d}/{topic}-{i}-impl.md"
            rel = f".memory/.experiences/{ty}/{topic}-{i}-impl.md" if d % 8 == 0 else rel
        elif r < 7:
            rel = f".memory/.thinking/raw/{topic}-{i}.md"
            ty = None
        else:
            ty = None
            rel = f"notes/area{d % 40}/shelf{d}/{topic}-{i}.md"
        paths.append(rel)
        kws = sorted({word() for _ in range(rnd.randint(1, 4))})
        day = rnd.randint(0, 120)
        fm = [f"topic: {topic}", "keywords: [" + ", ".join(kws) + "]", f"last_verified_at: 2026-0{1 + day // 31 if day < 62 else 3}-{1 + day % 28:02d}"]
        if ty:
            fm.append(f"type: {ty}")
        related = []
        if i > 0 and rnd.random() < 0.6:
            j = rnd.randint(max(0, i - 500), i - 1)
            related.append(paths[j])
            edges.add((rel, paths[j], "related"))
        if related:
            fm.append("related: [" + ", ".join(related) + "]")
        body = []
        for _ in range(rnd.randint(2, 6)):
            body.append(" ".join(word() for _ in range(rnd.randint(30, 60))) + ".")
        text = "---\n" + "\n".join(fm) + "\n---\n# " + topic.replace("-", " ") + "\n\n" + "\n\n".join(body) + "\n"
        full = os.path.join(lib, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    with open(os.path.join(lib, ".relations.jsonl"), "w") as f:
        for a, b, k in sorted(edges):
            f.write(json.dumps({"from": a, "to": b, "kind": k}, separators=(",", ":")) + "\n")
    with open(os.path.join(out, "words.txt"), "w") as f:
        f.write("\n".join(vocab[:3000]) + "\n")


if __name__ == "__main__":
    main()
