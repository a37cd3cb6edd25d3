#!/usr/bin/env python3
"""kb-score retrieval quality on BEIR SciFact (../shared/data/scifact).

usage: scifact.py KB_SCORE_BIN [WORKDIR]

Builds a library of the 5,183 abstracts (one user document per abstract,
frontmatter title, body = BEIR's document text), runs every train and test
query through `kb-score --no-recommend --limit 100`, and reports nDCG@10
and Recall@100 for kb-score's full ranking and, side by side, for plain
BM25 (k1 0.9, b 0.4, title + abstract, lowercase word tokens) computed
here. Parameters are tuned on train only; test is the reported figure.
Skips with a message when the data set is absent.
"""
import ast
import csv
import io
import json
import math
import os
import re
import subprocess
import sys
import time
import zipfile
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("KB_SCIFACT", os.path.join(HERE, "..", "..", "shared", "data", "scifact"))
LIT = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", re.S)


def corpus():
    z = zipfile.ZipFile(os.path.join(DATA, "scifact.zip"))
    rows = csv.DictReader(io.TextIOWrapper(z.open("corpus_train.csv"), encoding="utf-8"))
    for row in rows:
        sents = [ast.literal_eval(m.group(0)) for m in LIT.finditer(row["abstract"])]
        yield row["doc_id"], row["title"], " ".join(sents)


def qrels(split):
    out = defaultdict(dict)
    with open(os.path.join(DATA, "beir_scifact", "qrels", f"{split}.tsv")) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[-1].isdigit():
                out[parts[0]][parts[-2]] = int(parts[-1])
    return out


def ndcg10(ranked, rel):
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(rel.values(), reverse=True)[:10]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall100(ranked, rel):
    rel_docs = {d for d, r in rel.items() if r > 0}
    return len(rel_docs & set(ranked[:100])) / len(rel_docs) if rel_docs else 0.0


class PlainBM25:
    def __init__(self, docs, k1=0.9, b=0.4):
        self.k1, self.b = k1, b
        self.tf = {}
        self.len = {}
        self.df = Counter()
        self.post = defaultdict(list)
        for did, title, text in docs:
            toks = re.findall(r"[a-z0-9]+", (title + " " + text).lower())
            c = Counter(toks)
            self.len[did] = len(toks)
            for t, n in c.items():
                self.post[t].append((did, n))
        self.n = len(self.len)
        self.avg = sum(self.len.values()) / self.n

    def search(self, q, k=100):
        scores = Counter()
        for t in set(re.findall(r"[a-z0-9]+", q.lower())):
            p = self.post.get(t, [])
            idf = math.log(1 + (self.n - len(p) + 0.5) / (len(p) + 0.5))
            for d, tf in p:
                scores[d] += idf * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * self.len[d] / self.avg))
        return [d for d, _ in sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:k]]


def main():
    if not os.path.exists(os.path.join(DATA, "scifact.zip")):
        print(f"scifact: data set not found under {DATA}; skipped")
        return 0
    kb = os.path.abspath(sys.argv[1])
    work = sys.argv[2] if len(sys.argv) > 2 else "/tmp/kb-scifact"
    lib = os.path.join(work, ".library")
    docs = list(corpus())
    if not os.path.isdir(lib):
        for did, title, text in docs:
            p = os.path.join(lib, "scifact", f"doc-{did}.md")
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write("---\n" + "title: " + json.dumps(title) + "\n---\n" + text + "\n")
    env = dict(os.environ, KB_ROOT=work)
    env.pop("KB_NOW", None)
    t0 = time.perf_counter()
    subprocess.run([kb, "warmup", "--no-registries", "--limit", "1"], env=env, capture_output=True)
    build = time.perf_counter() - t0
    queries = {}
    with open(os.path.join(DATA, "beir_scifact", "queries.jsonl")) as f:
        for line in f:
            q = json.loads(line)
            queries[q["_id"]] = q["text"]
    plain = PlainBM25(docs)
    print(f"scifact: {len(docs)} abstracts, index built in {build:.2f} s")
    print(f"{'split':6} {'queries':>7}  {'kb-score nDCG@10':>16} {'R@100':>6}   {'plain BM25 nDCG@10':>18} {'R@100':>6}")
    for split in ("train", "test"):
        rels = qrels(split)
        m = {"kb": [0.0, 0.0], "plain": [0.0, 0.0]}
        lat = []
        for qid, rel in rels.items():
            t = time.perf_counter()
            out = subprocess.run(
                [kb, "--no-registries", "--no-recommend", "--limit", "100", "--format", "jsonl", "--", queries[qid]],
                env=env, capture_output=True, text=True)
            lat.append(time.perf_counter() - t)
            ranked = []
            for line in out.stdout.splitlines():
                r = json.loads(line)
                if r.get("record") == "hit":
                    ranked.append(os.path.basename(r["path"])[4:-3])
            p = plain.search(queries[qid])
            for key, rk in (("kb", ranked), ("plain", p)):
                m[key][0] += ndcg10(rk, rel)
                m[key][1] += recall100(rk, rel)
        n = len(rels)
        lat.sort()
        print(f"{split:6} {n:7}  {m['kb'][0] / n:16.3f} {m['kb'][1] / n:6.3f}   {m['plain'][0] / n:18.3f} {m['plain'][1] / n:6.3f}"
              f"   (query p50 {lat[len(lat) // 2] * 1000:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
