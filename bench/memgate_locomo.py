#!/usr/bin/env python3
"""kb-memgate neighbour quality on LoCoMo (Maharana et al., ACL 2024; CC BY-NC
4.0, read from ../shared/data/locomo, never copied here).

Each conversation's observations become notes (one fact each, its dia_id
kept aside); every question with evidence (categories 1-4) is sent through
`kb-memgate decide`, and a hit is a neighbour note whose dia_id is among the
question's evidence turns. Reported: hit@1 and hit@5 (TopK = 5) for the
fused similarity, side by side with a plain BM25 baseline (k1 0.9, b 0.4,
lowercase word tokens) computed here. Usage: memgate_locomo.py KB_MEMGATE"""
import json, math, os, re, subprocess, sys, tempfile
from collections import Counter

bin_ = sys.argv[1]
data = os.environ.get("LOCOMO", os.path.join(os.path.dirname(__file__), "../../shared/data/locomo/locomo10.json"))
if not os.path.exists(data):
    print(f"skipped: {data} is absent")
    sys.exit(0)

def dia_ids(v):
    out = set()
    for s in (v if isinstance(v, list) else [v]):
        for m in re.finditer(r"D:?(\d+):0*(\d+)", str(s)):
            out.add(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out

def note(nid, fact):
    one = " ".join(fact.split())
    return f"""# {nid}: {one[:60]}

## Meta

- Id: {nid}
- Kind: fact
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
- Session: locomo

## When to load

## One-liner (for injection)

{one}

## Context / Decision

- Decision: {one}
"""

def words(t):
    return re.findall(r"[a-z0-9']+", t.lower())

def bm25_top(docs, q, k=5, k1=0.9, b=0.4):
    toks = [words(d) for d in docs]
    avg = sum(map(len, toks)) / len(toks)
    df = Counter(w for t in toks for w in set(t))
    n = len(docs)
    scores = []
    for i, t in enumerate(toks):
        tf = Counter(t)
        s = sum(math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(t) / avg))
                for w in set(words(q)) if w in tf)
        scores.append((-s, i))
    return [i for _, i in sorted(scores)[:k]]

convs = json.load(open(data))
tot = Counter()
for ci, c in enumerate(convs):
    facts = []
    for sess, by_speaker in sorted(c["observation"].items()):
        for speaker, items in by_speaker.items():
            for fact, ev in items:
                facts.append((fact, dia_ids(ev)))
    qs = [q for q in c["qa"] if q.get("category") != 5 and dia_ids(q.get("evidence", []))]
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/notes")
        for i, (fact, _) in enumerate(facts):
            with open(f"{d}/notes/MEM-{i:06d}.md", "w") as f:
                f.write(note(f"MEM-{i:06d}", fact))
        subprocess.run([bin_, "reindex", "--memory-dir", d], check=True, stdout=subprocess.DEVNULL)
        inp = "".join(json.dumps({"mode": "remember", "input": {"user_input": {"text": q["question"],
                      "evidence_spans": [{"start": 0, "end": len(q["question"])}]}}}) + "\n" for q in qs)
        out = subprocess.run([bin_, "decide", "--memory-dir", d], input=inp.encode(), capture_output=True)
        if out.returncode != 0:
            sys.exit(out.stderr.decode()[:2000])
        recs = [json.loads(l) for l in out.stdout.decode().splitlines()]
        by_line = {}
        for r in recs:
            by_line.setdefault(r["line"], r)
        for li, q in enumerate(qs, 1):
            ev = dia_ids(q["evidence"])
            got = [int(n["id"][4:]) for n in by_line[li].get("neighbours", [])]
            base = bm25_top([f for f, _ in facts], q["question"])
            for name, ranked in (("memgate", got), ("bm25", base)):
                hits = [bool(facts[i][1] & ev) for i in ranked]
                tot[name + "@1"] += hits[:1] == [True]
                tot[name + "@5"] += any(hits[:5])
            tot["questions"] += 1
        tot["notes"] += len(facts)
n = tot["questions"]
print(f"LoCoMo: {len(convs)} conversations, {tot['notes']} observation notes, {n} questions with evidence (categories 1-4)")
print(f"{'ranker':<22}{'hit@1':>8}{'hit@5':>8}")
for name, label in (("bm25", "BM25 baseline"), ("memgate", "kb-memgate fused")):
    print(f"{label:<22}{tot[name + '@1'] / n:>8.3f}{tot[name + '@5'] / n:>8.3f}")
print(f"ratio fused/baseline: hit@1 {tot['memgate@1'] / max(1, tot['bm25@1']):.2f}x, hit@5 {tot['memgate@5'] / max(1, tot['bm25@5']):.2f}x")
