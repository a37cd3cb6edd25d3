#!/usr/bin/env python3
"""Makes N realistic kb-append write requests for the write benchmark.

Usage: gen-writes.py N OUTDIR
Writes OUTDIR/requests.jsonl (for kb-append batch) and, for the shell
baseline, OUTDIR/manifest.tsv (path, mode, content file) with the contents
under OUTDIR/contents/. Deterministic: the same N gives the same bytes.
"""
import json
import os
import random
import sys

TOPICS = ["jwt-auth", "session-management", "rate-limiting", "oauth-flow", "cache-invalidation",
          "postgres-indexing", "kafka-consumers", "ci-caching", "rust-error-handling", "k8s-rollouts"]
TYPES = ["software", "data-pipeline", "infra"]
SUFFIXES = ["complete", "impl", "verify", "eval"]
WORDS = ("token session expiry refresh rotate cache key shard index query plan vacuum consumer lag "
         "offset retry backoff jitter deploy canary rollback build artifact layer lockfile borrow "
         "lifetime error context trace span metric alert budget").split()


def body(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(42)
    os.makedirs(os.path.join(out, "contents"), exist_ok=True)
    with open(os.path.join(out, "requests.jsonl"), "w") as req, open(os.path.join(out, "manifest.tsv"), "w") as man:
        for i in range(n):
            kind = rng.random()
            topic = rng.choice(TOPICS)
            if kind < 0.4:
                path = f".memory/.references/{topic}-v{i}.md"
            elif kind < 0.8:
                path = f".memory/.experiences/{rng.choice(TYPES)}/{topic}-{i}-{rng.choice(SUFFIXES)}.md"
            else:
                path = f"team-notes/log-{i % 50}.md"
            mode = "append" if path.startswith("team-notes/") else "overwrite"
            related = rng.choice(TOPICS)
            content = (f"---\ntopic: {topic}\ntype: {rng.choice(TYPES)}\nkeywords: [{rng.choice(WORDS)}, {rng.choice(WORDS)}]\n"
                       f"related: [{related}]\n---\n# {topic} note {i}\n\n{body(rng, 120)}\n\nSee [{related}]({related}-v1.md).\n")
            if mode == "append":
                content = f"- {i}: {body(rng, 20)}\n"
            nb = f"nb-{i % 16}"
            req.write(json.dumps({"path": path, "content": content, "mode": mode, "notebook": nb}) + "\n")
            cf = os.path.join("contents", f"{i}.md")
            with open(os.path.join(out, cf), "w") as f:
                f.write(content)
            man.write(f"{path}\t{mode}\t{cf}\t{nb}\n")


if __name__ == "__main__":
    main()
