#!/usr/bin/env python3
"""The one library generator of the benchmarks: N documents under
DIR/.library, deterministic for a given seed.

usage: gen_library.py DIR [N=100000] [SEED=42] [--words plain|zipf]

  plain  realistic frontmatter, bodies of 80 engineering words, links and
         cited domains (bench/index.sh, bench/evolve.sh)
  zipf   seed 000's layout, bodies drawn from 30,000 synthetic words with a
         Zipf distribution, and DIR/words.txt for query sampling
         (bench/score.sh, bench/score_costs.py, bench/guard.sh)
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


def plain_library(root, n, seed):
    """`--words plain` (the default): realistic frontmatter and bodies of
    80 engineering words, with links and cited domains (the index and
    evolve benchmarks)."""
    r = random.Random(seed)
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



def zipf_library(out, n, seed):
    """`--words zipf`: ~100 documents per directory in seed 000's layout
    (versioned references, experiences by type, thinking notes, user
    folders), bodies of 80-300 words drawn from 30,000 synthetic words
    with a Zipf distribution (a search benchmark's vocabulary),
    .relations.jsonl with the related edges, and OUT/words.txt listing
    vocabulary words for query sampling."""
    rnd = random.Random(seed)
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



def main():
    args = sys.argv[1:]
    words = "plain"
    if "--words" in args:
        i = args.index("--words")
        words = args[i + 1]
        del args[i:i + 2]
    if not args or words not in ("plain", "zipf"):
        sys.exit(__doc__)
    n = int(args[1]) if len(args) > 1 else 100_000
    seed = int(args[2]) if len(args) > 2 else 42
    (zipf_library if words == "zipf" else plain_library)(args[0], n, seed)


if __name__ == "__main__":
    main()
