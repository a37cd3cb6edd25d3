#!/usr/bin/env python3
"""Generates a library of N documents with realistic frontmatter and bodies
for the kb-index benchmark (bench/index.sh). Deterministic for a given seed.

usage: gen_library.py DIR [N] [SEED]   (DIR is the workspace; DIR/.library is made)
"""
import json
import os
import random
import sys

WORDS = (
    "auth token session cache index query latency retry backoff schema migration shard replica "
    "queue stream batch window join filter parse render layout font pdf table chart metric alert "
    "deploy rollback canary build test lint format profile trace span log error budget quota limit "
    "user tenant role policy secret key rotate encrypt sign verify hash digest bloom trie graph node "
    "edge path walk scan merge split compact archive snapshot restore lock mutex atomic rename fsync"
).split()
DOMAINS = ["docs.rs", "datatracker.ietf.org", "owasp.org", "developer.mozilla.org", "kubernetes.io",
           "postgresql.org", "arxiv.org", "martinfowler.com", "sqlite.org", "go.dev"]
TYPES = [f"type-{i:02d}" for i in range(40)] + ["software", "data-pipeline", "research", "writing"]
SUFFIXES = ["complete", "impl", "verify", "eval"]


def sentence(r, n):
    return " ".join(r.choice(WORDS) for _ in range(n)).capitalize() + "."


def body(r, title, links):
    parts = [f"# {title}\n"]
    for _ in range(r.randint(3, 8)):
        parts.append(" ".join(sentence(r, r.randint(6, 16)) for _ in range(r.randint(2, 5))) + "\n")
        if r.random() < 0.3:
            parts.append(f"See https://{r.choice(DOMAINS)}/{r.choice(WORDS)}/{r.randint(1, 999)}.\n")
    for l in links:
        parts.append(f"- [{l.rsplit('/', 1)[-1]}]({l})\n")
    return "\n".join(parts)


def fm(fields):
    lines = ["---"]
    for k, v in fields.items():
        lines.append(f"{k}: {json.dumps(v) if isinstance(v, (list, dict)) else v}")
    lines.append("---\n")
    return "\n".join(lines)


def main():
    root = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    r = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 42)
    lib = os.path.join(root, ".library")
    made = []

    def put(rel, text):
        p = os.path.join(lib, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        made.append(rel)

    def date():
        return f"2025-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"

    counts = {"ref": int(n * 0.30), "exp": int(n * 0.40), "prof": int(n * 0.03), "pat": int(n * 0.05),
              "raw": int(n * 0.07), "skill": int(n * 0.05)}
    counts["user"] = n - sum(counts.values())
    topics = [f"{r.choice(WORDS)}-{r.choice(WORDS)}-{i}" for i in range(max(1, counts["ref"] // 3))]
    refs = []
    for i in range(counts["ref"]):
        topic = topics[i % len(topics)]
        rel = f".memory/.references/{topic}-v{i // len(topics) + 1}.md"
        refs.append(rel)
        f = {"topic": topic, "keywords": r.sample(WORDS, 4), "source": f"https://{r.choice(DOMAINS)}/{topic}",
             "last_verified_at": date(), "staleness_threshold_days": r.choice([30, 60, 90, 180]),
             "related": [r.choice(topics)]}
        if r.random() < 0.05:
            f["effectiveness_mark"] = "true"
        put(rel, fm(f) + body(r, topic, []))
    for i in range(counts["exp"]):
        ty = r.choice(TYPES)
        sem = f"{r.choice(WORDS)}-{r.choice(WORDS)}-{i // 4}"
        suf = SUFFIXES[i % 4]
        f = {"type": ty, "keywords": r.sample(WORDS, 3), "sources": {"notebook": f"nb-{r.randint(1, 500)}"},
             "quality_status": "verified" if suf == "complete" else "provisional", "last_verified_at": date()}
        links = [f"../../.references/{os.path.basename(r.choice(refs))}"] if refs and r.random() < 0.4 else []
        put(f".memory/.experiences/{ty}/{sem}-{suf}.md", fm(f) + body(r, sem, links))
    for i in range(counts["prof"]):
        put(f".memory/.type-profiles/profile-{i}.md", fm({"topic": f"profile-{i}", "updated_at": date()}) + body(r, f"profile {i}", []))
    for i in range(counts["pat"]):
        put(f".memory/.thinking/patterns/pattern-{i}.md", fm({"topic": f"pattern-{i}", "keywords": r.sample(WORDS, 3)}) + body(r, f"pattern {i}", []))
    for i in range(counts["raw"]):
        put(f".memory/.thinking/raw/raw-{i}.md", fm({"quality_tier": r.choice("HML")}) + body(r, f"raw {i}", []))
    for i in range(counts["skill"]):
        stage = r.choice([".candidates", ".drafts", ".active"])
        put(f".skills/{stage}/skill-{i}/SKILL.md", fm({"name": f"skill-{i}", "trust_tier": r.choice(["T1", "T2", "T3", "T4"]), "description": sentence(r, 10)}) + body(r, f"skill {i}", []))
    for i in range(counts["user"]):
        put(f"notes-{i % 20}/sub-{i % 7}/note-{i}.md", fm({"topic": f"note-{i}", "tags": r.sample(WORDS, 2)}) + body(r, f"note {i}", []))
    for d in [".changelog", ".relations.jsonl"]:
        open(os.path.join(lib, d), "a").close()
    print(f"generated {len(made)} documents under {lib}", file=sys.stderr)


if __name__ == "__main__":
    main()
