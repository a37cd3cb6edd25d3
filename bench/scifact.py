#!/usr/bin/env python3
"""kb-score retrieval quality on BEIR SciFact (../shared/data/scifact).

usage: scifact.py KB_SCORE_BIN [WORKDIR] [--splits train,test] [--variants realistic,title]
                  [--baseline-bin OTHER_KB_SCORE] [--latency 100] [--tune 'k1=1.0,gamma=2;...']

Builds libraries of the 5,183 abstracts (one user document per abstract,
body = BEIR's document text) in two variants:

  realistic  frontmatter as a user's library has it: `title`, `topic` (the
             title as a slug), `keywords:` the five most frequent content
             words of title and abstract, `last_verified_at` spread over
             the two years before the pinned now (KB_NOW below)
  title      `title:` only (what this benchmark wrote before the ranking work)

then runs every query of the chosen splits through
`kb-score --no-recommend --limit 100` and reports nDCG@10 and Recall@100
side by side with plain BM25 (k1 0.9, b 0.4, title + abstract, lowercase
word tokens, computed here) and SQLite FTS5 (`porter unicode61`, the
query's words OR-ed, ranked by bm25(); the data README's reference).
With --baseline-bin, a second kb-score binary (e.g. main's) runs on the
same libraries in the same run, for a before/after ratio.

Then times one CLI call per query (--latency N test queries): kb-score
(and the baseline) warm, `rg -l -i -F` on the query's longest word and an
FTS5 CLI (python3 + sqlite3), p50/p95 wall and CPU, in the same run.

Tune on train only (--tune, which runs train only, or --splits train);
test is reported once.
Skips with a message when the data set is absent.
"""
import argparse
import ast
import csv
import datetime
import io
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import time
import zipfile
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("KB_SCIFACT", os.path.join(HERE, "..", "..", "shared", "data", "scifact"))
LIT = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", re.S)
# Pinned so freshness (and so the ranking) is the same on every run.
NOW = "2026-03-01T00:00:00Z"
NOW_DT = datetime.datetime(2026, 3, 1, tzinfo=datetime.timezone.utc)

# A common English stop list (function words only) for choosing keywords
# the way a person or a keyword extractor would: content words.
STOP = set("""
a about above after again against all also am an and any are aren as at be because been before being below
between both but by can cannot could did didn do does doesn doing don down during each few for from further
had has have having he her here hers herself him himself his how i if in into is isn it its itself just
let me more most my myself no nor not now of off on once only or other ought our ours ourselves out over own
same she should so some such than that the their theirs them themselves then there these they this those
through to too under until up upon very was we were what when where which while who whom why will with would
you your yours yourself yourselves may might must shall however thus among within without via using used use
""".split())


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


def keywords(title, text, n=5):
    """The n most frequent content words of title and abstract (first seen wins a tie)."""
    words = [w for w in re.findall(r"[a-z][a-z0-9-]*[a-z0-9]|[a-z]", (title + " " + text).lower())
             if w not in STOP and len(w) > 2 and not w.isdigit()]
    c = Counter(words)
    first = {}
    for i, w in enumerate(words):
        first.setdefault(w, i)
    return sorted(c, key=lambda w: (-c[w], first[w]))[:n]


def slug(title, limit=60):
    words = re.findall(r"[a-z0-9]+", title.lower())
    out = ""
    for w in words:
        nxt = (out + "-" + w) if out else w
        if len(nxt) > limit:
            break
        out = nxt
    return out or "untitled"


def verified(did):
    """A last_verified_at spread over the two years before NOW, fixed per document."""
    days = (int(did) * 7919) % 730
    secs = (int(did) * 104729) % 86400
    return (NOW_DT - datetime.timedelta(days=days, seconds=secs)).strftime("%Y-%m-%dT%H:%M:%SZ")


def frontmatter(variant, did, title, text):
    if variant == "title":
        return "title: " + json.dumps(title) + "\n"
    kw = keywords(title, text)
    return ("title: " + json.dumps(title) + "\n" + "topic: " + slug(title) + "\n"
            + "keywords: [" + ", ".join(kw) + "]\n" + "last_verified_at: " + verified(did) + "\n")


def write_library(work, variant, docs):
    lib = os.path.join(work, ".library")
    stamp = os.path.join(work, ".variant")
    if os.path.isdir(lib) and os.path.exists(stamp) and open(stamp).read() == variant + "-v2":
        return
    subprocess.run(["rm", "-rf", work], check=True)
    for did, title, text in docs:
        p = os.path.join(lib, "scifact", f"doc-{did}.md")
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write("---\n" + frontmatter(variant, did, title, text) + "---\n" + text + "\n")
    with open(stamp, "w") as f:
        f.write(variant + "-v2")


class PlainBM25:
    def __init__(self, docs, k1=0.9, b=0.4):
        self.k1, self.b = k1, b
        self.len = {}
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


class Fts5:
    """SQLite FTS5 (porter unicode61), the query's words OR-ed, ranked by bm25()."""

    def __init__(self, docs, path=":memory:"):
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS d USING fts5(id UNINDEXED, body, tokenize='porter unicode61')")
        if self.db.execute("SELECT count(*) FROM d").fetchone()[0] == 0:
            self.db.executemany("INSERT INTO d VALUES (?, ?)", ((i, t + " " + x) for i, t, x in docs))
            self.db.commit()

    @staticmethod
    def match(q):
        words = re.findall(r"\w+", q.lower())
        return " OR ".join('"' + w + '"' for w in words) or '""'

    def search(self, q, k=100):
        sql = "SELECT id FROM d WHERE d MATCH ? ORDER BY bm25(d) LIMIT ?"
        return [r[0] for r in self.db.execute(sql, (self.match(q), k))]


def kb_ranked(kb, env, q):
    out = subprocess.run([kb, "--no-registries", "--no-recommend", "--limit", "100", "--format", "jsonl", "--", q],
                         env=env, capture_output=True, text=True)
    ranked = []
    for line in out.stdout.splitlines():
        r = json.loads(line)
        if r.get("record") == "hit":
            ranked.append(os.path.basename(r["path"])[4:-3])
    return ranked


FTS_CLI = r'''
import sqlite3, sys, re
db = sqlite3.connect(sys.argv[1])
words = re.findall(r"\w+", sys.argv[2].lower())
q = " OR ".join('"' + w + '"' for w in words) or '""'
for (i,) in db.execute("SELECT id FROM d WHERE d MATCH ? ORDER BY bm25(d) LIMIT 100", (q,)):
    print(i)
'''


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def timed(cmd, env=None, cwd=None):
    import resource
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def latency(a, bins, docs, queries, n):
    """Per-call latency on the realistic library, one process per query,
    every tool in the same run: kb-score (warm cache), rg -l -i -F on the
    query's longest word, and an FTS5 CLI (python3 + sqlite3 on disk)."""
    import shutil
    work = os.path.join(a.work, "realistic")
    write_library(work, "realistic", docs)
    env = dict(os.environ, KB_ROOT=work, KB_NOW=NOW)
    dbp = os.path.join(a.work, "fts5.db")
    Fts5(docs, dbp).db.close()
    qs = [queries[q] for q in list(qrels("test"))[:n]]
    rows = []
    for name, kb in bins:
        for limit in ("10", "100"):
            subprocess.run([kb, "--no-registries", "warmup"], env=env, capture_output=True)
            t = [timed([kb, "--no-registries", "--no-recommend", "--limit", limit, "--format", "jsonl", "--", q], env)
                 for q in qs]
            rows.append((f"{name} --limit {limit}", t))
    rg = shutil.which("rg")
    if rg:
        words = [max(re.findall(r"\w+", q), key=len) for q in qs]
        rows.append(("rg -l -i -F WORD", [timed([rg, "-l", "-i", "-F", "--hidden", w, ".library"], cwd=work) for w in words]))
    else:
        print("rg not installed: no ripgrep baseline")
    rows.append(("FTS5 CLI (python3)", [timed([sys.executable, "-c", FTS_CLI, dbp, q]) for q in qs]))
    base = pct([w for w, _ in rows[0][1]], 0.5)
    print(f"latency per CLI call, {len(qs)} test queries, realistic library (load {os.getloadavg()[0]:.1f}):")
    print(f"{'':24} {'p50 ms':>8} {'p95 ms':>8} {'cpu p50':>8}  {'p50 vs first row':>16}")
    for name, t in rows:
        w = [x for x, _ in t]
        c = [y for _, y in t]
        print(f"{name:24} {pct(w, .5) * 1000:8.1f} {pct(w, .95) * 1000:8.1f} {pct(c, .5) * 1000:8.1f}  "
              f"{pct(w, .5) / base:15.1f}x")


def tune(a, docs, queries):
    """Train split only: nDCG@10 / R@100 per parameter set and variant."""
    rels = qrels("train")
    kb = os.path.abspath(a.kb)
    for variant in [v for v in a.variants.split(",") if v]:
        work = os.path.join(a.work, variant)
        write_library(work, variant, docs)
    for spec in a.tune.split(";"):
        row = []
        for variant in [v for v in a.variants.split(",") if v]:
            env = dict(os.environ, KB_ROOT=os.path.join(a.work, variant), KB_NOW=NOW, KB_SCORE_TUNE=spec)
            nd = rc = 0.0
            for qid, rel in rels.items():
                rk = kb_ranked(kb, env, queries[qid])
                nd += ndcg10(rk, rel)
                rc += recall100(rk, rel)
            row.append(f"{variant} {nd / len(rels):.4f} {rc / len(rels):.3f}")
        print(f"train {spec:20} " + "   ".join(row), flush=True)
    return 0


def drop_index(work):
    """Removes kb-score's index cache so each binary builds its own, and
    keeps what a model made there (`*.vectors-*.bin`, the model's and
    tokenizer's copies): re-encoding SciFact costs ~1,000 CPU-seconds,
    and a vector file names the model it came from."""
    cache = os.path.join(work, ".library", ".cache", "kb-score")
    if not os.path.isdir(cache):
        return
    for name in os.listdir(cache):
        if name.startswith("index-") and ".vectors-" not in name:
            os.remove(os.path.join(cache, name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kb")
    ap.add_argument("work", nargs="?", default="/tmp/kb-scifact")
    ap.add_argument("--splits", default="train,test")
    ap.add_argument("--variants", default="realistic,title")
    ap.add_argument("--baseline-bin", default=None)
    ap.add_argument("--latency", type=int, default=100, help="test queries timed per tool (0: skip)")
    ap.add_argument("--tune", default=None,
                    help="';'-separated KB_SCORE_TUNE values (k1=,b=,head=,kw=,gamma=,prf=,fbd=,fbt=,...) to compare on the train split only (bench/rank_tune.rs does the same in process, faster)")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(DATA, "scifact.zip")):
        print(f"scifact: data set not found under {DATA}; skipped")
        return 0
    bins = [("kb-score", os.path.abspath(a.kb))]
    if a.baseline_bin:
        bins.append(("baseline", os.path.abspath(a.baseline_bin)))
    docs = list(corpus())
    queries = {}
    with open(os.path.join(DATA, "beir_scifact", "queries.jsonl")) as f:
        for line in f:
            q = json.loads(line)
            queries[q["_id"]] = q["text"]
    plain = PlainBM25(docs)
    fts = Fts5(docs)
    splits = [s for s in a.splits.split(",") if s]
    refs = {}
    for split in splits:
        rels = qrels(split)
        m = {"plain": [0.0, 0.0], "fts5": [0.0, 0.0]}
        for qid, rel in rels.items():
            for key, rk in (("plain", plain.search(queries[qid])), ("fts5", fts.search(queries[qid]))):
                m[key][0] += ndcg10(rk, rel)
                m[key][1] += recall100(rk, rel)
        refs[split] = {k: (v[0] / len(rels), v[1] / len(rels)) for k, v in m.items()}
    if a.tune:
        return tune(a, docs, queries)
    print(f"scifact: {len(docs)} abstracts; now pinned at {NOW}")
    print(f"{'variant':10} {'split':6} {'ranker':10} {'nDCG@10':>8} {'R@100':>6}  {'vs FTS5':>8}  p50 ms")
    for variant in [v for v in a.variants.split(",") if v]:
        work = os.path.join(a.work, variant)
        write_library(work, variant, docs)
        env = dict(os.environ, KB_ROOT=work, KB_NOW=NOW)
        for name, kb in bins:
            drop_index(work)
            t0 = time.perf_counter()
            subprocess.run([kb, "--no-registries", "--limit", "1", "warmup"], env=env, capture_output=True)
            build = time.perf_counter() - t0
            print(f"{variant:10} {'':6} {name:10} index built in {build:.2f} s")
            for split in splits:
                rels = qrels(split)
                nd = rc = 0.0
                lat = []
                for qid, rel in rels.items():
                    t = time.perf_counter()
                    rk = kb_ranked(kb, env, queries[qid])
                    lat.append(time.perf_counter() - t)
                    nd += ndcg10(rk, rel)
                    rc += recall100(rk, rel)
                n = len(rels)
                lat.sort()
                f_nd = refs[split]["fts5"][0]
                print(f"{variant:10} {split:6} {name:10} {nd / n:8.3f} {rc / n:6.3f}  {nd / n / f_nd:7.2f}x  "
                      f"{lat[len(lat) // 2] * 1000:.1f}")
    for split in splits:
        for key in ("plain", "fts5"):
            nd, rc = refs[split][key]
            label = "plain BM25" if key == "plain" else "FTS5"
            print(f"{'(corpus)':10} {split:6} {label:10} {nd:8.3f} {rc:6.3f}  {nd / refs[split]['fts5'][0]:7.2f}x")
    if a.latency:
        latency(a, bins, docs, queries, a.latency)
    return 0


if __name__ == "__main__":
    sys.exit(main())
