#!/usr/bin/env python3
"""kb-memgate governance over generated sequences: what a user
says one statement after another about one choice (a package manager, a
test runner, an ORM…), in English, Chinese or both, with unrelated rules
around it. Each sequence runs `decide` then `apply` on a fresh store,
confirming every gated question as a user who agrees would; a sequence
scores when the one-liners in force at the end are exactly those expected.

Families:
- restate:   a pick, then the same pick in other words → one note;
- from_now:  a pick, then the same pick ending in "from now on" → one note;
- reverse:   a pick, a restatement, then a reversal → one note, the reversal;
- apart:     two wordings of a pick kept as two notes (the user answered
             "new_instead"), then a reversal → one note, the reversal;
- back:      a pick, a reversal, a reversal back → one note, the last;
- narrow:    a pick, then another tool "only in" a narrower place → both.
Two unrelated rules are remembered first in every sequence and must stay.

Train / held out: the choices are split by domain (train: package
managers, test runners, formatters, bundlers, Python environments; held:
ORMs, linters, CSS tools, HTTP clients). Tune on train; the held part is
reported once.

Usage: memgate_sequences.py [--train|--held] [--model DIR] [--lang en|zh|mixed]
                            KB_MEMGATE [KB_MEMGATE_BEFORE]
--model DIR: decide with that sentence encoder (each decide loads it);
--lang: only the sequences in that language."""
import json, os, random, subprocess, sys, tempfile, glob
from collections import defaultdict

# (domain, split, scope en, scope zh, tools)
DOMAINS = [
    ("package manager", "train", "JavaScript projects", "JavaScript 项目", ["pnpm", "yarn", "npm", "bun"]),
    ("test runner", "train", "unit tests", "单元测试", ["jest", "vitest", "mocha"]),
    ("formatter", "train", "formatting", "代码格式化", ["prettier", "biome", "dprint"]),
    ("bundler", "train", "frontend builds", "前端构建", ["webpack", "vite", "esbuild", "rollup"]),
    ("python env", "train", "Python dependencies", "Python 依赖管理", ["poetry", "pipenv", "uv"]),
    ("orm", "held", "database access", "数据库访问", ["prisma", "sequelize", "typeorm", "drizzle"]),
    ("linter", "held", "linting", "代码检查", ["eslint", "oxlint", "standard"]),
    ("css", "held", "styling", "样式", ["tailwind", "sass", "less"]),
    ("http", "held", "HTTP requests", "HTTP 请求", ["axios", "ky", "got"]),
]
UNRELATED = [
    "Write commit messages in English.",
    "Never commit secrets to the repository.",
    "Use tabs in Go files.",
    "日志里不要打印用户手机号。",
    "发布前必须跑一遍集成测试。",
    "Keep functions under fifty lines.",
]
PICK_EN = [
    "Use {a} for {s}.",
    "I prefer {a} over {b} for {s}.",
    "Use {a}, not {b}, for {s}.",
    "We settled on {a} for {s}.",
    "Always use {a} for {s}.",
]
PICK_ZH = ["{z}用 {a}", "{z}统一用 {a}，不用 {b}", "{z}都用 {a} 而不是 {b}", "{z}一律使用 {a}"]
FROM_NOW_EN = ["Use {a} for {s} from now on.", "From now on, {a} for {s}, as before."]
FROM_NOW_ZH = ["以后{z}也继续用 {a}"]
REVERSE_EN = [
    "From now on use {b} instead of {a} for {s}.",
    "Switch to {b} for {s}, not {a}.",
    "We no longer use {a}; use {b} for {s}.",
]
REVERSE_ZH = ["从现在开始不用 {a} 了，改用 {b}", "以后{z}改用 {b}，不再用 {a}", "{z}换成 {b}，别用 {a} 了"]
NARROW_EN = ["Use {b} only in the legacy repo.", "Use {b} only for the docs site."]
NARROW_ZH = ["只有老仓库里用 {b}"]


def fill(t, a, b, dom):
    return t.format(a=a, b=b, s=dom[2], z=dom[3])


def sequences():
    rng = random.Random(34)
    out = []
    for dom in DOMAINS:
        tools = dom[4]
        for lang in ["en", "zh", "mixed"]:
            for rep in range(2):
                a, b = rng.sample(tools, 2)
                others = rng.sample(UNRELATED, 2)
                pick_l = PICK_EN if lang == "en" else PICK_ZH
                rev_l = REVERSE_ZH if lang in ("zh", "mixed") else REVERSE_EN
                p1, p2 = rng.sample(pick_l if lang != "mixed" else PICK_EN, 2)
                p2_mixed = rng.choice(PICK_ZH) if lang == "mixed" else p2
                first, second = fill(p1, a, b, dom), fill(p2_mixed, a, b, dom)
                rev = fill(rng.choice(rev_l), a, b, dom)
                back_l = REVERSE_EN if lang == "mixed" else rev_l
                back = fill(rng.choice(back_l), b, a, dom)
                now = fill(rng.choice(FROM_NOW_EN if lang == "en" else FROM_NOW_ZH), a, b, dom)
                narrow = fill(rng.choice(NARROW_EN if lang != "zh" else NARROW_ZH), a, b, dom)
                pre = [(o, "say") for o in others]
                fam = {
                    "restate": ([(first, "say"), (second, "say")], 1, None),
                    "from_now": ([(first, "say"), (now, "say")], 1, None),
                    "reverse": ([(first, "say"), (second, "say"), (rev, "say")], 1, rev),
                    "apart": ([(first, "apart"), (second, "apart"), (rev, "say")], 1, rev),
                    "back": ([(first, "say"), (rev, "say"), (back, "say")], 1, back),
                    "narrow": ([(first, "say"), (narrow, "say")], 2, None),
                }
                for name, (steps, n_choice, last) in fam.items():
                    out.append({"domain": dom[0], "split": dom[1], "lang": lang, "family": name,
                                "steps": pre + steps, "others": others, "n": n_choice, "last": last,
                                "tool": a})
    return out


def in_force(mem):
    notes = []
    for f in sorted(glob.glob(os.path.join(mem, "notes", "*.md"))):
        lines = open(f, encoding="utf-8").read().split("\n")
        i = next(k for k, l in enumerate(lines) if l.startswith("## One-liner"))
        notes.append(next(l for l in lines[i + 1:] if l.strip()).strip())
    return notes


def run(binary, seq, model=None):
    d = tempfile.mkdtemp(prefix="memseq")
    mem = os.path.join(d, "mem")
    env = {k: v for k, v in os.environ.items() if k not in ("KB_MEMGATE_MODEL", "KB_MODEL")}
    for text, how in seq["steps"]:
        inp = {"mode": "remember", "conversation_id": "c", "generation_id": "g",
               "input": {"user_input": {"text": text, "evidence_spans": [{"start": 0, "end": len(text)}]}}}
        extra = ["--model", model] if model else []
        out = subprocess.run([binary, "decide", "--memory-dir", mem] + extra, input=json.dumps(inp) + "\n",
                             capture_output=True, text=True, env=env, cwd=d)
        for line in out.stdout.splitlines():
            dec = json.loads(line)
            if dec.get("record") != "decision" or dec.get("action") in ("veto", "skip", "refuse"):
                continue
            if dec.get("gate") == "question":
                dec["answer"] = "new_instead" if how == "apart" and dec["action"] != "new" else "confirm"
            subprocess.run([binary, "apply", "--memory-dir", mem], input=json.dumps(dec) + "\n",
                           capture_output=True, text=True, env=env, cwd=d)
    notes = in_force(mem)
    subprocess.run(["rm", "-rf", d])
    return notes


def ok(seq, notes):
    norm = lambda t: t.rstrip("。. ")
    others = [norm(o) for o in seq["others"]]
    got = [norm(n) for n in notes]
    if sorted(o for o in got if o in others) != sorted(others):
        return False
    choice = [n for n in got if n not in others]
    if len(choice) != seq["n"]:
        return False
    return seq["last"] is None or choice == [norm(seq["last"])]


def main():
    argv = sys.argv[1:]
    opt = {}
    for name in ("--model", "--lang"):
        if name in argv:
            i = argv.index(name)
            opt[name] = argv[i + 1]
            del argv[i:i + 2]
    model = opt.get("--model")
    args = [a for a in argv if not a.startswith("--")]
    splits = ["train"] if "--train" in argv else ["held"] if "--held" in argv else ["train", "held"]
    seqs = [s for s in sequences() if s["split"] in splits and opt.get("--lang", s["lang"]) == s["lang"]]
    for binary in args:
        tally = defaultdict(lambda: [0, 0])
        misses = []
        for s in seqs:
            notes = run(binary, s, model)
            good = ok(s, notes)
            for key in [(s["split"], "all"), (s["split"], s["family"]), (s["split"], s["lang"])]:
                tally[key][0] += good
                tally[key][1] += 1
            if not good and len(misses) < 12 and s["split"] == "train":
                misses.append(f"  {s['family']}/{s['lang']}: {[t for t, _ in s['steps'][2:]]} -> {notes}")
        print(f"{binary}{' --model ' + model if model else ''}: sequences ending with the notes expected")
        for split in splits:
            cells = [f"{k[1]} {v[0]}/{v[1]}" for k, v in sorted(tally.items()) if k[0] == split and k[1] != "all"]
            a = tally[(split, "all")]
            print(f"  {split}: {a[0]}/{a[1]} = {a[0] / max(a[1], 1):.3f}  ({', '.join(cells)})")
        if misses:
            print("  train misses (first 12):")
            print("\n".join(misses))


if __name__ == "__main__":
    main()
