//! kb-score's query syntax: `"exact phrase"`, `-term`,
//! `prefix*`, `field:value`, their errors, `-word` after the query on the
//! command line, and the answers: the tail cut, the best-matching snippet
//! and "did you mean". On a small library as people write it: English and
//! Chinese notes, realistic frontmatter, CRLF line ends.

use serde_json::Value;

use crate::util::{records, Lib};

const BOUNCER: &str = "notes/db/pgbouncer-setup.md";
const SIZING: &str = "notes/db/pool-sizing.md";
const THREADS: &str = "notes/runtime/thread-pools.md";
const ZH: &str = "notes/检索/倒排索引.md";
const ZH_APART: &str = "notes/检索/排序.md";
const PIO: &str = "guides/platformio-build.md";
const MEMORY: &str = "notes/agents/openclaw-memory.md";
const RECALL: &str = "notes/agents/memory-recall.md";

fn library() -> Lib {
    let lib = Lib::new();
    let docs = [
        (
            BOUNCER,
            "---\ntitle: PgBouncer setup\ntopic: pgbouncer-setup\ntype: howto\nkeywords: [pgbouncer, connection pooling, postgres]\nlast_verified_at: 2026-02-20T00:00:00Z\n---\n# PgBouncer setup\n\nPgBouncer does connection pooling for Postgres in front of the database.\n\nRun PgBouncer in transaction mode; PgBouncer connection pooling then shares server connections.\n",
        ),
        (
            SIZING,
            "---\r\ntitle: Sizing the connection pool\r\ntopic: pool-sizing\r\ntype: reference\r\nkeywords: [connection pooling, hikaricp]\r\nlast_verified_at: 2026-02-10T00:00:00Z\r\n---\r\n# Sizing the connection pool\r\n\r\nThe service starts with defaults.\r\n\r\nConnection pooling in the application: HikariCP keeps ten connections per instance, and the pool waits when all are busy.\r\n",
        ),
        (
            THREADS,
            "---\ntitle: Thread pools\ntopic: thread-pools\ntype: reference\nkeywords: [threads]\n---\n# Thread pools\n\nThread pooling is not about the database: each connection handler runs on a worker, and pooling of workers bounds them.\n",
        ),
        (
            ZH,
            "---\r\ntitle: 倒排索引\r\ntopic: 倒排索引\r\ntype: reference\r\nkeywords: [检索]\r\n---\r\n# 倒排索引\r\n\r\n知识库检索使用倒排索引，按词查文档。\r\n",
        ),
        (
            ZH_APART,
            "---\ntitle: 排序\ntopic: 排序\ntype: reference\n---\n# 排序\n\n检索结果先倒排，再建索引缓存。\n",
        ),
        (
            PIO,
            "---\ntitle: PlatformIO builds\ntopic: platformio-build\ntype: howto\nkeywords: [platformio, esp32]\n---\n# PlatformIO builds\n\nBuild the firmware with pio run.\n",
        ),
        (
            MEMORY,
            "---\ntitle: OpenClaw memory\ntopic: openclaw-memory\ntype: reference\nkeywords: [openclaw, memory]\n---\n# OpenClaw memory\n\nOpenClaw keeps agent memory in markdown files.\n",
        ),
        (
            RECALL,
            "---\ntitle: Memory recall\ntopic: memory-recall\ntype: reference\nkeywords: [memory]\n---\n# Memory recall\n\nAn agent's memory is recalled by search before each task.\n",
        ),
    ];
    for (p, c) in docs {
        lib.put(p, c);
    }
    lib
}

/// Runs kb-score with `args` (JSON Lines): the direct hits' paths, the
/// summary, the exit code and stderr.
fn run(lib: &Lib, args: &[&str]) -> (Vec<String>, Value, i32, String) {
    let out = lib
        .cmd("kb-score")
        .args(["--no-registries", "--no-recommend", "--format", "jsonl"])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out.status.code().unwrap_or(-1);
    if code == 2 {
        return (Vec::new(), Value::Null, code, stderr);
    }
    let recs = records(&out.stdout);
    let paths = recs.iter().filter(|r| r["record"] == "hit").map(|r| r["path"].as_str().unwrap().to_string()).collect();
    (paths, recs.last().cloned().unwrap_or(Value::Null), code, stderr)
}

/// The direct hits of a query, up to 10 (an explicit limit: no tail cut).
fn paths(lib: &Lib, query: &str) -> Vec<String> {
    let (p, _, code, err) = run(lib, &["--limit", "10", "--", query]);
    assert!(code == 0 || code == 1, "{query}: exit {code}: {err}");
    p
}

#[test]
fn a_phrase_needs_its_words_adjacent_and_in_order() {
    let lib = library();
    // Loose words find the thread-pool note, which holds them apart.
    assert!(paths(&lib, "connection pooling").contains(&THREADS.to_string()));
    assert_eq!(paths(&lib, "\"connection pooling\""), [BOUNCER, SIZING]);
    assert_eq!(paths(&lib, "\"pooling connection\""), Vec::<String>::new());
    // Chinese: 倒排索引 in a row, not 倒排 … 索引 apart; CRLF notes alike.
    assert_eq!(paths(&lib, "\"倒排索引\""), [ZH]);
    assert_eq!(paths(&lib, "倒排 索引").len(), 2);
}

#[test]
fn minus_excludes_a_word_or_a_phrase_never_boosts_it() {
    let lib = library();
    assert_eq!(paths(&lib, "\"connection pooling\" -pgbouncer"), [SIZING]);
    assert_eq!(paths(&lib, "connection pooling -pgbouncer -\"thread pooling\""), [SIZING]);
    assert_eq!(paths(&lib, "memory -openclaw"), [RECALL]);
    assert_eq!(paths(&lib, "检索 -\"倒排索引\""), [ZH_APART]);
}

#[test]
fn prefix_star_finds_the_words_it_begins() {
    let lib = library();
    assert_eq!(paths(&lib, "platfor*"), [PIO]);
    assert_eq!(paths(&lib, "pgbounc* -postgres"), Vec::<String>::new());
    assert_eq!(paths(&lib, "hikari*"), [SIZING]);
}

#[test]
fn fields_filter_by_topic_type_keyword_and_path() {
    let lib = library();
    assert_eq!(paths(&lib, "connection type:reference"), [SIZING, THREADS]);
    assert_eq!(paths(&lib, "memory keyword:openclaw"), [MEMORY]);
    assert_eq!(paths(&lib, "topic:pool-sizing"), [SIZING]);
    assert_eq!(paths(&lib, "build path:guides/"), [PIO]);
    assert_eq!(paths(&lib, "connection pooling -type:howto"), [SIZING, THREADS]);
    assert_eq!(paths(&lib, "topic:\"倒排索引\""), [ZH]);
}

#[test]
fn invalid_syntax_is_a_usage_error_saying_what_to_type() {
    let lib = library();
    for (query, says) in [
        ("\"connection pooling", "unbalanced quote at '\"connection pooling': close the phrase with a second \" (or drop the quote)"),
        ("-pgbouncer -postgres", "query '-pgbouncer -postgres' only excludes; give a word to search for besides the -words"),
        ("pooling topic:", "field 'topic:' has no value: write topic:VALUE"),
        ("colour:red", "unknown field 'colour' in 'colour:red': the fields are topic, type, keyword, path; to search for the text itself, quote it (\"colour:red\")"),
        ("p*", "prefix 'p*' is too short: give at least 2 characters before '*'"),
        ("type:howto", "query 'type:howto' only filters by type: or path:; give a word to search for as well"),
    ] {
        let (_, _, code, err) = run(&lib, &["--", query]);
        assert_eq!(code, 2, "{query}");
        assert_eq!(err, format!("kb-score: {says}\nkb-score: try 'kb-score --help'\n"), "{query}");
    }
}

#[test]
fn a_dash_word_after_the_query_is_a_query_term() {
    let lib = library();
    // Unquoted on the command line, as a shell passes it.
    let (p, _, code, err) = run(&lib, &["memory", "-openclaw"]);
    assert_eq!((code, p), (0, vec![RECALL.to_string()]), "{err}");
    let (p, _, code, _) = run(&lib, &["memory", "-openclaw", "--limit", "5"]);
    assert_eq!((code, p), (0, vec![RECALL.to_string()]));
    // Flags still come first, and `--` ends them.
    let (p, _, code, _) = run(&lib, &["--limit", "5", "--", "memory", "-openclaw"]);
    assert_eq!((code, p), (0, vec![RECALL.to_string()]));
    // Before the first query word, a -word is still an unknown flag.
    let (_, _, code, err) = run(&lib, &["-openclaw", "memory"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown flag '-o'"), "{err}");
}

#[test]
fn the_tail_far_below_the_first_hit_is_cut_unless_a_limit_is_given() {
    let lib = library();
    // "pgbouncer pooling": the PgBouncer note, then notes that only say
    // "pooling" somewhere, far below.
    let (p, s, _, _) = run(&lib, &["pgbouncer", "pooling"]);
    assert_eq!(p, [BOUNCER]);
    assert_eq!((s["tail_cut"].as_f64(), s["cut"].as_u64()), (Some(0.2), Some(2)));
    let (p, s, _, _) = run(&lib, &["pgbouncer", "pooling", "--limit", "10"]);
    assert_eq!(p, [BOUNCER, SIZING, THREADS]);
    assert!(s.get("tail_cut").is_none() && s.get("cut").is_none(), "{s}");
}

#[test]
fn the_snippet_is_the_best_matching_passage_with_the_words_marked() {
    let lib = library();
    let out = lib
        .cmd("kb-score")
        .args(["--no-registries", "--no-recommend", "--format", "table", "--tier", "2", "hikaricp", "instance"])
        .output()
        .unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    let snippet = table.split(&format!("── {SIZING} (local)\n")).nth(1).unwrap().lines().next().unwrap();
    assert_eq!(
        snippet,
        "Connection pooling in the application: **HikariCP** keeps ten connections per **instance**, and the pool \
         waits when all are busy."
    );
    let out =
        lib.cmd("kb-score").args(["--no-registries", "--format", "jsonl", "--tier", "2", "hikaricp"]).output().unwrap();
    let hit = records(&out.stdout).into_iter().find(|r| r["record"] == "hit").unwrap();
    assert!(hit["summary"].as_str().unwrap().starts_with("Connection pooling in the application: HikariCP"));
}

#[test]
fn a_query_of_unknown_words_gets_a_did_you_mean() {
    let lib = library();
    let (p, s, code, _) = run(&lib, &["platfromio"]);
    assert_eq!((p.len(), code), (0, 1));
    assert_eq!(s["did_you_mean"], "platformio");
    // A word the library holds in its text only: its written form.
    assert_eq!(run(&lib, &["firmwear"]).1["did_you_mean"], "firmware");
    // One known word: no suggestion.
    let (_, s, _, _) = run(&lib, &["platfromio", "memory", "type:howto"]);
    assert!(s.get("did_you_mean").is_none(), "{s}");
    let out = lib.cmd("kb-score").args(["--no-registries", "--format", "table", "platfromio"]).output().unwrap();
    assert!(String::from_utf8(out.stdout).unwrap().contains("\ndid you mean: platformio\n"));
}
