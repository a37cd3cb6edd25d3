//! kb-score: seed 000's search (formula, BM25 tier, graph hops, table,
//! tiers and budget, filters) and seed 001's many libraries, run on real
//! libraries written by kb-append with KB_NOW fixed.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::util::{records, Lib};

const JWT: &str = ".memory/.references/jwt-auth-v1.md";
const SESSION: &str = ".memory/.references/session-management-v1.md";
const RATE: &str = ".memory/.references/rate-limiting-v1.md";
const OAUTH: &str = ".memory/.references/oauth-flow-v1.md";
const ZH: &str = "notes/知识库/知识库搜索.md";
const EXP: &str = ".memory/.experiences/software/login-retry-impl.md";

/// The seed's example library: jwt-auth (used by 3, 2 days old) ←
/// session-management (used by 1, 20 days) ← rate-limiting (0.9 days);
/// oauth-flow → jwt-auth; plus a Chinese note and an experience.
pub fn seed_library() -> Lib {
    let lib = Lib::new();
    let docs = [
        (JWT, "---\ntopic: jwt-auth\nkeywords: [bearer token, authentication]\nlast_verified_at: 2026-02-27T12:00:00Z\n---\n# JWT authentication\n\nSigned JSON Web Tokens carry the user's claims; verify the signature and expiry on every request.\n"),
        (SESSION, "---\ntopic: session-management\nkeywords: [cookies, sessions]\nlast_verified_at: 2026-02-09T12:00:00Z\nrelated: [jwt-auth]\n---\n# Session management\n\nServer-side sessions keep state in a store keyed by a cookie.\n"),
        (RATE, "---\ntopic: rate-limiting\nkeywords: [throttling]\nlast_verified_at: 2026-02-28T14:24:00Z\nrelated: [session-management]\n---\n# Rate limiting\n\nToken buckets throttle clients per session.\n"),
        (OAUTH, "---\ntopic: oauth-flow\nkeywords: [oauth2, authorization code]\nlast_verified_at: 2026-01-01T00:00:00Z\nrelated: [jwt-auth]\n---\n# OAuth flow\n\nThe authorization code flow with PKCE for public clients.\n"),
        (ZH, "---\ntitle: 知识库搜索指南\nkeywords: [检索]\nlast_verified_at: 2026-02-15T12:00:00Z\n---\n# 知识库搜索指南\n\n本文介绍如何在知识库中查找参考资料和经验，包括关键词匹配与全文检索。\n"),
        (EXP, "---\ntype: software\nkeywords: [retries]\nsources:\n  notebook: nb-login\nlast_verified_at: 2026-02-25T12:00:00Z\n---\n# Login retry\n\nExponential backoff with jitter for the login endpoint.\n"),
    ];
    let batch: String =
        docs.iter().map(|(p, c)| json!({"path": p, "content": c, "notebook": "nb-seed"}).to_string() + "\n").collect();
    lib.cmd("kb-append").args(["batch", "--no-commit"]).write_stdin(batch).assert().success();
    lib.cmd("kb-append").args(["event", "referenced", JWT, "--notebook", "nb-a"]).assert().success();
    lib
}

/// Writes a file in the workspace (outside the library), e.g. `.sdlc/`.
fn put_root(lib: &Lib, rel: &str, text: &str) {
    let p = lib.root().join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn search(lib: &Lib, args: &[&str]) -> (Vec<Value>, i32) {
    let out = lib.cmd("kb-score").args(["--no-registries", "--format", "jsonl"]).args(args).output().unwrap();
    (records(&out.stdout), out.status.code().unwrap_or(-1))
}

fn hits(recs: &[Value]) -> Vec<&Value> {
    recs.iter().filter(|r| r["record"] == "hit").collect()
}

fn summary(recs: &[Value]) -> &Value {
    recs.last().filter(|r| r["record"] == "summary").expect("a final summary record")
}

fn paths(recs: &[Value]) -> Vec<String> {
    hits(recs).iter().map(|h| h["path"].as_str().unwrap().to_string()).collect()
}

/// topic, score, used_by, freshness, hop, via, match
type Row<'a> = (String, f64, u64, f64, u64, Option<&'a str>, &'a str);

#[test]
fn seed_example_scores_hops_and_via() {
    let lib = seed_library();
    let (recs, code) = search(&lib, &["jwt"]);
    assert_eq!(code, 0);
    let got: Vec<Row> = hits(&recs)
        .iter()
        .map(|h| {
            (
                h["topic"].as_str().unwrap().to_string(),
                h["score"].as_f64().unwrap(),
                h["used_by"].as_u64().unwrap(),
                h["freshness"].as_f64().unwrap(),
                h["hop"].as_u64().unwrap(),
                h["via"].as_str(),
                h["match"].as_str().unwrap(),
            )
        })
        .collect();
    // final = 0.8 × (0.5 + 0.3 × 3/5 + 0.2 × (1 − 2/30)) = 0.69333;
    // hop k = direct × 0.5^k.
    let want = vec![
        ("jwt-auth".to_string(), 0.6933, 3, 0.9333, 0, None, "topic-contains"),
        ("oauth-flow".to_string(), 0.3467, 0, 0.0, 1, Some(JWT), "graph"),
        ("session-management".to_string(), 0.3467, 1, 0.3333, 1, Some(JWT), "graph"),
        ("rate-limiting".to_string(), 0.1733, 0, 0.97, 2, Some(SESSION), "graph"),
    ];
    assert_eq!(got, want);
    let s = summary(&recs);
    assert_eq!((s["hits"].as_u64(), s["direct"].as_u64(), s["recommended"].as_u64()), (Some(4), Some(1), Some(3)));
    assert_eq!(s["sources_queried"], json!(["local"]));
    assert_eq!(s["synthesis"], json!(false));

    let (recs, _) = search(&lib, &["jwt", "--no-recommend"]);
    assert_eq!(paths(&recs), [JWT]);
}

#[test]
fn seed_table_golden() {
    let lib = seed_library();
    let out = lib.cmd("kb-score").args(["jwt", "--no-registries", "--format", "table"]).output().unwrap();
    assert!(out.status.success());
    crate::util::golden("kb-score/seed-table.txt", &String::from_utf8(out.stdout).unwrap());
}

#[test]
fn labelled_queries_find_their_documents() {
    let lib = seed_library();
    // (query, expected first hit, expected tier of that hit)
    let cases = [
        ("session management", SESSION, "topic-exact"),
        ("how does rate limiting work", RATE, "topic-contains"),
        ("throttling", RATE, "keyword"),
        ("bearer token", JWT, "keyword"),
        ("PKCE for public clients", OAUTH, "fulltext"),
        ("cookie store", SESSION, "fulltext"),
        ("exponential backoff", EXP, "fulltext"),
        ("知识库", ZH, "topic-contains"),
        ("全文检索", ZH, "keyword"),
        ("参考资料", ZH, "fulltext"),
        ("ＪＷＴ", JWT, "topic-contains"),
    ];
    for (q, want, tier) in cases {
        let (recs, code) = search(&lib, &[q, "--no-recommend"]);
        assert_eq!(code, 0, "{q}");
        let first = hits(&recs)[0];
        assert_eq!((first["path"].as_str().unwrap(), first["match"].as_str().unwrap()), (want, tier), "query {q}");
    }
    let (recs, code) = search(&lib, &["quantum chromodynamics"]);
    assert_eq!((code, hits(&recs).len()), (1, 0), "no hits is a clean negative answer");
}

/// The labelled query set over examples/library (English and Chinese):
/// the expected first hit and how it matched. Chosen so the answer does not
/// depend on the mtime of documents without `last_verified_at`.
#[test]
fn examples_library_labelled_queries() {
    let lib = Lib::example();
    let refs = ".memory/.references/";
    let cases = [
        ("jwt auth", "jwt-auth-v2.md", "topic-exact"),
        ("session management", "session-management-v1.md", "topic-exact"),
        ("ＲＥＤＩＳ caching", "redis-caching-v2.md", "topic-exact"),
        ("stampede", ".memory/.thinking/patterns/cache-stampede-guard.md", "topic-contains"),
        ("lock timeout", ".memory/.thinking/raw/ddl-lock-timeout.md", "topic-contains"),
        ("thiserror", "rust-error-handling-v1.md", "keyword"),
        ("sentinel failover", "team-notes/incident-2026-01-redis-failover.md", "keyword"),
        ("credential stuffing", "team-notes/incident-2026-01-redis-failover.md", "fulltext"),
        ("login unthrottled", "team-notes/incident-2026-01-redis-failover.md", "fulltext"),
        ("缓存雪崩", "cache-strategy-zh-v1.md", "keyword"),
        ("布隆过滤器", "cache-strategy-zh-v1.md", "keyword"),
        ("热点键过期", "cache-strategy-zh-v1.md", "fulltext"),
    ];
    for (q, want, tier) in cases {
        let want = if want.contains('/') { want.to_string() } else { format!("{refs}{want}") };
        let (recs, code) = search(&lib, &[q, "--no-recommend"]);
        assert_eq!(code, 0, "{q}");
        let first = hits(&recs)[0];
        assert_eq!((first["path"].as_str().unwrap(), first["match"].as_str().unwrap()), (want.as_str(), tier), "{q}");
    }
}

#[test]
fn fulltext_stays_below_the_keyword_tier() {
    let lib = seed_library();
    let (recs, _) = search(&lib, &["session", "--no-recommend", "--limit", "10"]);
    let by_path: BTreeMap<&str, &Value> = hits(&recs).into_iter().map(|h| (h["path"].as_str().unwrap(), h)).collect();
    assert_eq!(by_path[SESSION]["match"], "topic-contains");
    assert_eq!(by_path[RATE]["match"], "fulltext");
    assert!(by_path[RATE]["base"].as_f64().unwrap() <= 0.5);
}

#[test]
fn filters_type_topic_notebook() {
    let lib = seed_library();
    let (recs, _) = search(&lib, &["login", "--type", "data|software"]);
    assert_eq!(paths(&recs), [EXP]);
    let (recs, code) = search(&lib, &["login", "--type", "data"]);
    assert_eq!((code, hits(&recs).len()), (1, 0));
    let (recs, _) = search(&lib, &["backoff", "--notebook", "nb-login"]);
    assert_eq!(paths(&recs), [EXP]);
    let (recs, _) = search(&lib, &["token", "--topic", "rate", "--no-recommend"]);
    assert_eq!(paths(&recs), [RATE]);
}

#[test]
fn tiers_and_budget() {
    let lib = seed_library();
    lib.put(
        ".memory/.references/.summary.md",
        "# References\n\n- jwt-auth-v1.md: how we sign and check tokens.\n- other\n",
    );
    let (recs, _) = search(&lib, &["jwt", "--tier", "2", "--no-recommend"]);
    assert_eq!(hits(&recs)[0]["summary"], "- jwt-auth-v1.md: how we sign and check tokens.");
    assert!(hits(&recs)[0].get("content").is_none());
    let (recs, _) = search(&lib, &["jwt", "--tier", "3", "--no-recommend"]);
    assert_eq!(hits(&recs)[0]["content"].as_str().unwrap(), lib.read(JWT));

    let (all, _) = search(&lib, &["jwt", "--tier", "3"]);
    let costs: Vec<u64> = hits(&all).iter().map(|h| h["tokens"].as_u64().unwrap()).collect();
    assert_eq!(summary(&all)["tokens_used"].as_u64().unwrap(), costs.iter().sum::<u64>());
    let budget = costs[0] + costs[1] + costs[2] - 1;
    let (recs, _) = search(&lib, &["jwt", "--tier", "3", "--budget", &budget.to_string()]);
    let got = hits(&recs);
    assert_eq!(got.len(), 3, "the third hit is cut to fit, not dropped");
    assert_eq!(got[2]["truncated"], json!(true));
    assert!(got[..2].iter().all(|h| h.get("truncated").is_none()));
    let s = summary(&recs);
    assert_eq!(
        (s["tokens_used"].as_u64().unwrap(), s["budget"].as_u64(), s["omitted"].as_u64()),
        (budget, Some(budget), Some(1))
    );
}

#[test]
fn external_sources_are_attributed_ordered_and_never_written() {
    let lib = seed_library();
    let ext = tempfile::tempdir().unwrap();
    let zed = tempfile::tempdir().unwrap();
    for (dir, body) in
        [(ext.path(), "JWT rotation policy for the corporate platform."), (zed.path(), "JWT audit notes.")]
    {
        let p = dir.join(".library/notes/jwt-rotation.md");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("---\ntopic: jwt-rotation\nlast_verified_at: 2026-02-27T12:00:00Z\n---\n{body}\n"))
            .unwrap();
    }
    let before = (crate::util::tree_times(ext.path()), crate::util::tree_times(zed.path()));
    let missing = lib.root().join("no-such-dir");
    let args = [
        "jwt",
        "--no-recommend",
        "--source",
        &format!("zed={}", zed.path().display()),
        "--source",
        &format!("corp={}", ext.path().display()),
        "--source",
        &format!("gone={}", missing.display()),
    ];
    for _ in 0..2 {
        let out = lib.cmd("kb-score").args(["--no-registries", "--format", "jsonl"]).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("kb-score: warning: source 'gone' skipped"), "{stderr}");
        let recs = records(&out.stdout);
        assert_eq!(recs[0]["record"], "source_error");
        assert_eq!(recs[0]["source"], "gone");
        let got: Vec<(String, String)> = hits(&recs)
            .iter()
            .map(|h| (h["source"].as_str().unwrap().to_string(), h["path"].as_str().unwrap().to_string()))
            .collect();
        assert_eq!(
            got,
            [
                ("local".to_string(), JWT.to_string()),
                ("corp".to_string(), "notes/jwt-rotation.md".to_string()),
                ("zed".to_string(), "notes/jwt-rotation.md".to_string()),
            ]
        );
        let s = summary(&recs);
        assert_eq!(s["sources_queried"], json!(["local", "corp", "zed"]));
        assert_eq!(s["sources_with_findings"], json!(["local", "corp", "zed"]));
        assert_eq!(s["sources_failed"], json!(["gone"]));
        assert_eq!(s["synthesis"], json!(true));
    }
    assert_eq!(
        (crate::util::tree_times(ext.path()), crate::util::tree_times(zed.path())),
        before,
        "externals are read-only"
    );
    let audit = lib.read(".audit.log");
    let last: Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
    assert_eq!(last["event_type"], "query");
    assert_eq!(last["sources_failed"], json!(["gone"]));
    assert_eq!(last["sources_with_findings"], json!(["local", "corp", "zed"]));
    assert_eq!(audit.lines().count(), 2);
}

#[test]
fn registries_activate_external_libraries() {
    let lib = seed_library();
    let corp = tempfile::tempdir().unwrap();
    let p = corp.path().join(".library/notes/jwt-corp.md");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, "---\ntopic: jwt-corp\n---\nCorporate JWT rules.\n").unwrap();
    put_root(
        &lib,
        ".sdlc/global-libraries.json",
        &json!({"version": 1, "libraries": [
            {"name": "corporate", "type": "filesystem", "path": corp.path()},
            {"name": "unused", "path": "/nowhere"}
        ]})
        .to_string(),
    );
    put_root(&lib, ".sdlc/libraries.json", &json!({"version": 1, "active": ["corporate", "ghost"]}).to_string());
    let out = lib.cmd("kb-score").args(["jwt", "--no-recommend", "--format", "jsonl"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let recs = records(&out.stdout);
    assert_eq!(recs[0]["record"], "source_error");
    assert_eq!(recs[0]["source"], "ghost");
    assert_eq!(summary(&recs)["sources_queried"], json!(["local", "corporate"]));

    put_root(&lib, ".sdlc/libraries.json", "{not json");
    let out = lib.cmd("kb-score").args(["jwt", "--no-recommend", "--format", "jsonl"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let recs = records(&out.stdout);
    assert_eq!(recs[0]["source"], "registry:project");
    assert!(recs[0]["message"].as_str().unwrap().starts_with("invalid activation JSON"));
    assert_eq!(summary(&recs)["sources_queried"], json!(["local"]));
}

#[test]
fn no_usable_source_is_an_error() {
    let empty = Lib::empty();
    let out = empty.cmd("kb-score").args(["jwt", "--source", "x=/no/such/dir"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no usable source"), "{stderr}");
    let out = empty.cmd("kb-score").arg("jwt").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no knowledge base available"));
    let file = empty.root().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = empty.cmd("kb-score").args(["jwt", "--source", &format!("f={}", file.display())]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a directory"));
}

#[test]
fn bad_queries_are_clear_usage_errors() {
    let lib = seed_library();
    for q in ["", "   ", "?!... --", &"word ".repeat(2000)] {
        let out = lib.cmd("kb-score").args(["--no-registries", "--", q]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{q:.20}");
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("kb-score: "));
    }
    let (recs, code) = search(&lib, &["the", "of"]);
    assert_eq!(summary(&recs)["record"], "summary");
    assert!(code == 0 || code == 1);
    let out = lib.cmd("kb-score").args(["jwt", "--limit", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn cache_is_reused_updated_and_never_trusted_when_corrupt() {
    let lib = seed_library();
    // Cache files of an older format version are removed by the build.
    std::fs::create_dir_all(lib.path(".cache/kb-score")).unwrap();
    for old in ["index-v7.bin", "side-v7.bin"] {
        std::fs::write(lib.path(&format!(".cache/kb-score/{old}")), b"KBSCORE1 old").unwrap();
    }
    let (first, _) = search(&lib, &["jwt"]);
    assert!(!lib.path(".cache/kb-score/index-v7.bin").exists() && !lib.path(".cache/kb-score/side-v7.bin").exists());
    let cache = lib.path(".cache/kb-score/index-v8.bin");
    let m1 = std::fs::metadata(&cache).unwrap().modified().unwrap();
    let (again, _) = search(&lib, &["jwt"]);
    let (again2, _) = search(&lib, &["jwt"]);
    assert_eq!((&first, &again), (&again2, &again2));
    assert_eq!(lib.read(".cache/kb-score/.gitignore"), "*\n");

    // A new document written by kb-append is found on the next query.
    lib.cmd("kb-append")
        .args(["write", "notes/jwt-faq.md", "--content", "---\ntopic: jwt-faq\n---\nQuestions.\n", "--no-commit"])
        .assert()
        .success();
    let (recs, _) = search(&lib, &["jwt", "--no-recommend"]);
    assert!(paths(&recs).contains(&"notes/jwt-faq.md".to_string()));
    assert!(std::fs::metadata(&cache).unwrap().modified().unwrap() >= m1);

    // A hit edited in place (no rename) is re-read before it is shown.
    std::fs::write(lib.path("notes/jwt-faq.md"), "---\ntopic: jwt-faq-renamed\n---\nQuestions, more of them.\n")
        .unwrap();
    let (recs, _) = search(&lib, &["jwt", "--no-recommend"]);
    assert!(hits(&recs).iter().any(|h| h["topic"] == "jwt-faq-renamed"));

    // Truncated and garbage caches are rebuilt, with the same answer.
    let (good, _) = search(&lib, &["jwt"]);
    let bytes = std::fs::read(&cache).unwrap();
    for bad in [bytes[..bytes.len() / 2].to_vec(), vec![0u8; 64], b"KBSCORE1 but not really".to_vec()] {
        std::fs::write(&cache, &bad).unwrap();
        let out = lib.cmd("kb-score").args(["jwt", "--no-registries", "--format", "jsonl"]).output().unwrap();
        assert_eq!(records(&out.stdout), good);
        assert!(String::from_utf8_lossy(&out.stderr).contains("rejected"));
    }
    // An index of an older format version, or of another kind (a memgate
    // index) in the shared segment format, is refused by its header and
    // rebuilt, never read with this layout.
    let mut old = bytes.clone();
    old[16..20].copy_from_slice(&7u32.to_le_bytes());
    let mut other = bytes.clone();
    other[8..16].copy_from_slice(b"memgate\0");
    for (bad, why) in [(old, "score index format 7, expected 8"), (other, "not a score index")] {
        std::fs::write(&cache, &bad).unwrap();
        let out = lib.cmd("kb-score").args(["jwt", "--no-registries", "--format", "jsonl"]).output().unwrap();
        assert_eq!(records(&out.stdout), good);
        assert!(String::from_utf8_lossy(&out.stderr).contains(why), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(std::fs::read(&cache).unwrap()[16..20], 8u32.to_le_bytes(), "rebuilt in the current format");
    }
}

#[test]
fn cache_sees_new_documents_anywhere_and_relation_changes() {
    let lib = seed_library();
    std::fs::create_dir_all(lib.path("notes/later")).unwrap();
    let (recs, _) = search(&lib, &["session management", "--no-recommend"]);
    assert_eq!((paths(&recs)[0].as_str(), hits(&recs)[0]["used_by"].as_u64()), (SESSION, Some(1)));
    // Written straight into a directory that held no document (no kb-append).
    std::fs::write(lib.path("notes/later/session-notes.md"), "---\ntopic: session-notes\n---\nSession notes.\n")
        .unwrap();
    let (recs, _) = search(&lib, &["session", "--no-recommend"]);
    assert!(paths(&recs).contains(&"notes/later/session-notes.md".to_string()), "{:?}", paths(&recs));
    // A new use in .relations.jsonl changes used_by and the score.
    lib.cmd("kb-append").args(["event", "referenced", SESSION, "--notebook", "nb-z"]).assert().success();
    let (recs, _) = search(&lib, &["session management", "--no-recommend"]);
    assert_eq!((paths(&recs)[0].as_str(), hits(&recs)[0]["used_by"].as_u64()), (SESSION, Some(2)));
}

/// kb-score with the full directory check every `recheck` seconds.
fn search_rechecking(lib: &Lib, recheck: &str, args: &[&str]) -> Vec<String> {
    let out = lib
        .cmd("kb-score")
        .env("KB_SCORE_RECHECK_SECS", recheck)
        .args(["--no-registries", "--format", "jsonl", "--no-recommend"])
        .args(args)
        .output()
        .unwrap();
    paths(&records(&out.stdout))
}

/// Makes the last full directory check of the cache `secs` seconds old.
fn age_full_check(lib: &Lib, secs: u64) {
    let f = std::fs::File::options().write(true).open(lib.path(".cache/kb-score/index-v8.bin.checked")).unwrap();
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(secs)).unwrap();
}

#[test]
fn hand_edits_deep_in_the_tree_are_seen_within_the_recheck_and_writes_at_once() {
    // The rule (kb::score::cache): writes through kb-append, the top two
    // levels of directories and the hits themselves are checked on every
    // query; every directory when the last full check is RECHECK old.
    let lib = seed_library();
    let deep = "notes/area/shelf/box";
    std::fs::create_dir_all(lib.path(deep)).unwrap();
    lib.put(&format!("{deep}/old.md"), "---\ntopic: quokka-old\n---\nQuokka notes.\n");
    let hour = "3600";
    assert_eq!(search_rechecking(&lib, hour, &["quokka"]), [format!("{deep}/old.md")]);

    // By hand, three levels down: not looked for within the recheck time...
    lib.put(&format!("{deep}/new.md"), "---\ntopic: quokka-new\n---\nQuokka news.\n");
    assert_eq!(search_rechecking(&lib, hour, &["quokka"]), [format!("{deep}/old.md")]);
    // ...seen by the first query once the last full check is that old;
    age_full_check(&lib, 3600);
    let mut found = search_rechecking(&lib, hour, &["quokka"]);
    found.sort();
    assert_eq!(found, [format!("{deep}/new.md"), format!("{deep}/old.md")]);
    // a hit deleted by hand is never shown (hits are checked every time),
    std::fs::remove_file(lib.path(&format!("{deep}/old.md"))).unwrap();
    assert_eq!(search_rechecking(&lib, hour, &["quokka"]), [format!("{deep}/new.md")]);
    // and with --verify at any time, or a recheck time of 0.
    lib.put(&format!("{deep}/more.md"), "---\ntopic: wombat-more\n---\nWombat notes.\n");
    assert!(search_rechecking(&lib, hour, &["wombat"]).is_empty());
    assert_eq!(search_rechecking(&lib, hour, &["wombat", "--verify"]), [format!("{deep}/more.md")]);
    lib.put(&format!("{deep}/most.md"), "---\ntopic: numbat-most\n---\nNumbat notes.\n");
    assert_eq!(search_rechecking(&lib, "0", &["numbat"]), [format!("{deep}/most.md")]);

    // The default recheck time is 2 s: a check 2 s old is due.
    lib.put(&format!("{deep}/last.md"), "---\ntopic: bilby-last\n---\nBilby notes.\n");
    age_full_check(&lib, 2);
    let (recs, _) = search(&lib, &["bilby", "--no-recommend"]);
    assert_eq!(paths(&recs), [format!("{deep}/last.md")]);

    // A write through kb-append, however deep, is seen at once.
    lib.cmd("kb-append")
        .args(["write", &format!("{deep}/written.md"), "--content", "---\ntopic: dingo\n---\nDingo.\n", "--no-commit"])
        .assert()
        .success();
    assert_eq!(search_rechecking(&lib, hour, &["dingo"]), [format!("{deep}/written.md")]);
    // So is a file added by hand at the top two levels, and a hit edited in place.
    lib.put("notes/echidna.md", "---\ntopic: echidna\n---\nEchidna.\n");
    assert_eq!(search_rechecking(&lib, hour, &["echidna"]), ["notes/echidna.md"]);
    std::fs::write(lib.path("notes/echidna.md"), "---\ntopic: echidna-two\n---\nEchidna, edited.\n").unwrap();
    let out = lib
        .cmd("kb-score")
        .env("KB_SCORE_RECHECK_SECS", hour)
        .args(["echidna", "--no-registries", "--format", "jsonl"])
        .output()
        .unwrap();
    assert!(hits(&records(&out.stdout)).iter().any(|h| h["topic"] == "echidna-two"));
}

#[test]
fn a_huge_keyword_list_is_capped_and_the_rest_left_out_with_a_warning() {
    let lib = seed_library();
    // zzaa, zzab, ... zzln: letters only, so no word shares a run with another.
    let letter = |n: usize| char::from(b'a' + n as u8);
    let kws: Vec<String> = (0..300).map(|i| format!("zz{}{}", letter(i / 26), letter(i % 26))).collect();
    let text = format!("---\ntopic: many-keywords\nkeywords: [{}]\n---\n# Many\n\nA note.\n", kws.join(", "));
    lib.put("notes/many.md", &text);
    let out =
        lib.cmd("kb-score").args(["zzah", "--no-registries", "--format", "jsonl", "--no-recommend"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("notes/many.md: 300 keywords; the first 256 are indexed, the rest are not"), "{err}");
    let recs = records(&out.stdout);
    assert_eq!((paths(&recs), hits(&recs)[0]["match"].as_str()), (vec!["notes/many.md".to_string()], Some("keyword")));
    assert_eq!(hits(&recs)[0]["keywords"].as_array().unwrap().len(), 256);
    // The 257th and later are not indexed (the file keeps them).
    let (recs, _) = search(&lib, &["zzln", "--no-recommend"]);
    assert!(paths(&recs).is_empty(), "{:?}", paths(&recs));
}

#[test]
fn two_processes_building_the_cache_at_once() {
    let lib = seed_library();
    let spawn = || {
        lib.std_cmd("kb-score")
            .args(["token", "--no-registries", "--format", "jsonl"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success() && b.status.success());
    assert_eq!(a.stdout, b.stdout);
    let (warm, _) = search(&lib, &["token"]);
    assert_eq!(warm, records(&a.stdout));
}

#[test]
fn broken_documents_do_not_stop_a_search() {
    let lib = seed_library();
    lib.put("notes/broken.md", "---\ntopic: [unclosed\nkeywords: jwt\n---\nJWT body text survives.\n");
    lib.put("notes/binary.md", "\u{0}\u{1}jwt\u{fffd}");
    std::fs::write(lib.path("notes/latin1.md"), b"caf\xe9 jwt\n").unwrap();
    let (recs, code) = search(&lib, &["jwt", "--no-recommend", "--limit", "10"]);
    assert_eq!(code, 0);
    let ps = paths(&recs);
    for p in ["notes/broken.md", "notes/binary.md", "notes/latin1.md", JWT] {
        assert!(ps.contains(&p.to_string()), "{p} in {ps:?}");
    }
}

#[test]
fn same_output_with_one_thread() {
    let lib = seed_library();
    let a = lib.cmd("kb-score").args(["token session", "--no-registries", "--format", "jsonl"]).output().unwrap();
    std::fs::remove_dir_all(lib.path(".cache")).unwrap();
    let b = lib
        .cmd("kb-score")
        .env("RAYON_NUM_THREADS", "1")
        .args(["token session", "--no-registries", "--format", "jsonl"])
        .output()
        .unwrap();
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn closed_pipe_is_a_quiet_success() {
    use std::io::Read;
    let lib = seed_library();
    lib.put("notes/jwt-big.md", &format!("---\ntopic: jwt-big\n---\n{}\n", "jwt payload line\n".repeat(40_000)));
    let mut child = lib
        .std_cmd("kb-score")
        .args(["jwt", "--tier", "3", "--no-registries", "--format", "jsonl"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!((out.status.code(), String::from_utf8_lossy(&out.stderr).as_ref()), (Some(0), ""));
}

#[test]
fn usage_lists_every_flag() {
    let out = Lib::empty().cmd("kb-score").arg("--help").output().unwrap();
    let usage = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--type",
        "--topic",
        "--notebook",
        "--limit",
        "--no-recommend",
        "--tier",
        "--budget",
        "--source",
        "--no-registries",
        "--verify",
        "--root",
        "--format",
        "--help",
        "--version",
    ] {
        assert!(usage.contains(flag), "{flag}");
    }
}

/// A small team library as people write it: every note has a topic,
/// `keywords:` and `last_verified_at`, in English and Chinese.
fn team_library() -> Lib {
    let lib = Lib::new();
    let v = "last_verified_at: 2026-02-20T12:00:00Z";
    let notes = [
        (
            "notes/db/postgres-connection-pool.md",
            format!("---\ntopic: postgres-connection-pool\nkeywords: [pgbouncer, pool size]\n{v}\n---\n# Connection pool\n\nWhen the service runs out of database connections under load, put PgBouncer in transaction mode in front of Postgres and cap the pool size per service. Connection exhaustion shows up as request timeouts first.\n"),
        ),
        (
            "notes/db/database-backups.md",
            format!("---\ntopic: database-backups\nkeywords: [database, backups, restore]\n{v}\n---\n# Backups\n\nNightly base backups plus WAL archiving; test a restore every month.\n"),
        ),
        (
            "notes/ops/load-testing.md",
            format!("---\ntopic: load-testing\nkeywords: [load, k6]\n{v}\n---\n# Load testing\n\nRun k6 against staging before a release.\n"),
        ),
        (
            "notes/缓存/热点键.md",
            format!("---\ntitle: 热点键与雪崩\nkeywords: [雪崩, ttl]\n{v}\n---\n# 热点键与雪崩\n\n缓存过期时间要加随机抖动，避免大量键在同一时间过期，请求一起打到数据库。\n"),
        ),
        (
            "notes/部署/服务配置.md",
            format!("---\ntitle: 服务配置\nkeywords: [配置, 部署]\n{v}\n---\n# 服务配置\n\n服务的部署流程与环境变量说明。\n"),
        ),
    ];
    for (p, t) in &notes {
        lib.put(p, t);
    }
    lib
}

#[test]
fn a_relevant_text_hit_outranks_a_keyword_only_hit() {
    let lib = team_library();
    // "database" is a keyword of the backups note, which says nothing
    // about connections; the pool note answers the question in its body.
    let (recs, _) = search(&lib, &["database connections exhausted under load", "--no-recommend", "--limit", "10"]);
    let ps = paths(&recs);
    assert_eq!(ps[0], "notes/db/postgres-connection-pool.md", "{ps:?}");
    let first = hits(&recs)[0];
    assert_eq!(first["match"], "fulltext");
    let backups = hits(&recs).into_iter().find(|h| h["path"] == "notes/db/database-backups.md").unwrap();
    assert_eq!(backups["match"], "keyword");
    assert!(backups["base"].as_f64().unwrap() < first["base"].as_f64().unwrap());

    // The same in Chinese: 配置 is a keyword of an unrelated note.
    let (recs, _) = search(&lib, &["缓存过期时间怎么配置", "--no-recommend"]);
    assert_eq!(paths(&recs)[0], "notes/缓存/热点键.md", "{:?}", paths(&recs));

    // A keyword that is the whole query still ranks by its tier.
    let (recs, _) = search(&lib, &["pgbouncer", "--no-recommend"]);
    assert_eq!(
        (paths(&recs)[0].as_str(), hits(&recs)[0]["base"].as_f64()),
        ("notes/db/postgres-connection-pool.md", Some(0.6))
    );
}

#[test]
fn gene_names_and_british_spellings_meet_their_other_spellings() {
    // Biomedical notes write a name "IL-6", "IL6" or "IL 6", and British
    // authors "tumour"; a query in the other spelling must find them.
    let lib = Lib::new();
    let docs = [
        ("notes/cytokine.md", "---\ntitle: Cytokine storm\n---\nSerum IL-6 rises within hours of the infusion.\n"),
        ("notes/growth.md", "---\ntitle: Growth in mice\n---\nTumour volume was measured in randomised cohorts.\n"),
        ("notes/other.md", "---\ntitle: Other\n---\nA note about catalogue formats and nothing else.\n"),
    ];
    for (p, c) in docs {
        lib.put(p, c);
    }
    for (query, want) in
        [("IL6", "notes/cytokine.md"), ("tumor", "notes/growth.md"), ("randomized tumors", "notes/growth.md")]
    {
        let (recs, code) = search(&lib, &[query, "--no-recommend"]);
        assert_eq!((code, paths(&recs)), (0, vec![want.to_string()]), "{query}");
    }
}

#[test]
fn documents_with_different_evidence_are_never_ordered_by_path() {
    // Twenty notes all tagged `deploy`, as a team tags them; only n17 is
    // about rolling a deploy back, and n20 says "deploy" most.
    let lib = Lib::new();
    for i in 1..=20 {
        let body = match i {
            17 => "How to roll back a bad deploy: rollback with the previous image tag, then deploy again.".to_string(),
            20 => "Deploy checklist: deploy to staging, deploy to canary, deploy to production.".to_string(),
            _ => format!("Note {i} about the deploy of service {i}."),
        };
        lib.put(
            &format!("notes/n{i:02}.md"),
            &format!(
                "---\ntopic: note-{i:02}\nkeywords: [deploy]\nlast_verified_at: 2026-01-01T00:00:00Z\n---\n{body}\n"
            ),
        );
    }
    let (recs, _) = search(&lib, &["deploy rollback", "--no-recommend"]);
    assert_eq!(paths(&recs)[0], "notes/n17.md", "{:?}", paths(&recs));
    // One word, every note a keyword hit with the same score: the text
    // evidence orders them, not the path.
    let (recs, _) = search(&lib, &["deploy", "--no-recommend", "--limit", "20"]);
    let hs = hits(&recs);
    assert!(hs.iter().all(|h| h["score"] == hs[0]["score"] && h["match"] == "keyword"));
    assert_eq!(paths(&recs)[0], "notes/n20.md", "{:?}", paths(&recs));
}

#[test]
fn search_is_read_only() {
    let lib = team_library();
    lib.git_init();
    std::fs::write(lib.root().join(".gitignore"), ".library/.cache/\n").unwrap();
    lib.git(&["add", "-A"]);
    lib.git(&["commit", "-qm", "library"]);
    let before = crate::util::tree_times(&lib.dir());
    for q in ["database connections", "pgbouncer", "缓存"] {
        let (_, code) = search(&lib, &[q]);
        assert_eq!(code, 0);
    }
    let after: BTreeMap<_, _> =
        crate::util::tree_times(&lib.dir()).into_iter().filter(|(p, _)| !p.starts_with(".cache/")).collect();
    assert_eq!(after, before, "a search writes nothing in the library but its cache");
    assert_eq!(lib.git(&["status", "--porcelain"]), "");
    // A held library lock does not hold up a search.
    std::fs::create_dir_all(lib.path(".lock")).unwrap();
    std::fs::write(lib.path(".lock/owner"), "pid 1\n").unwrap();
    let (_, code) = search(&lib, &["pgbouncer", "--source", "gone=/no/such/dir"]);
    assert_eq!(code, 0);
    let audit = lib.read(".audit.log");
    assert_eq!(audit.lines().count(), 1, "a failed source is audited, without the lock");
}

#[test]
fn freshness_comes_from_the_last_write_not_the_mtime() {
    let lib = Lib::new();
    lib.git_init();
    // Written by kb-append nine days before now: the changelog says so.
    lib.cmd("kb-append")
        .env("KB_NOW", "2026-02-20T12:00:00Z")
        .args(["write", "notes/logged.md", "--content", "---\ntopic: cache-logged\n---\nCache notes.\n", "--no-commit"])
        .assert()
        .success();
    // Committed by hand fourteen days before now, never logged.
    lib.put("notes/committed.md", "---\ntopic: cache-committed\n---\nCache notes.\n");
    lib.put("notes/unknown.md", "---\ntopic: cache-unknown\n---\nCache notes.\n");
    lib.git(&["add", ".library/notes/committed.md"]);
    let out = std::process::Command::new("git")
        .current_dir(lib.root())
        .env("HOME", lib.root())
        .env("GIT_AUTHOR_DATE", "2026-02-15T12:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-02-15T12:00:00Z")
        .args(["commit", "-qm", "by hand"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Every file looks brand new on disk (a fresh clone, a touch).
    let (recs, _) = search(&lib, &["cache", "--no-recommend"]);
    let fresh: BTreeMap<&str, f64> =
        hits(&recs).iter().map(|h| (h["topic"].as_str().unwrap(), h["freshness"].as_f64().unwrap())).collect();
    assert_eq!(fresh, BTreeMap::from([("cache-committed", 0.5333), ("cache-logged", 0.7), ("cache-unknown", 0.0)]));
}

#[test]
fn a_budget_smaller_than_the_first_hit_cuts_it_instead_of_returning_nothing() {
    let lib = team_library();
    let (recs, code) = search(&lib, &["pgbouncer", "--tier", "3", "--budget", "40", "--no-recommend"]);
    assert_eq!(code, 0);
    let h = hits(&recs);
    assert_eq!((h.len(), &h[0]["truncated"]), (1, &json!(true)));
    // The snippet comes first; what does not fit is cut with an ellipsis.
    let snippet = h[0]["summary"].as_str().unwrap();
    assert!(snippet.ends_with('…') && h[0].get("content").is_none(), "{snippet}");
    assert!(summary(&recs)["tokens_used"].as_u64().unwrap() <= 40);
}

#[test]
fn skill_reference_files_with_frontmatter_are_indexed() {
    let lib = Lib::new();
    lib.put(".skills/.active/pg-tuning/SKILL.md", "---\nname: pg-tuning\n---\n# Postgres tuning\n");
    lib.put(
        ".skills/.active/pg-tuning/references/vacuum.md",
        "---\ntopic: autovacuum\nkeywords: [vacuum]\n---\nAutovacuum thresholds for large tables.\n",
    );
    lib.put(".skills/.active/pg-tuning/references/plain.md", "Autovacuum notes without frontmatter.\n");
    let (recs, _) = search(&lib, &["autovacuum", "--no-recommend"]);
    assert_eq!(paths(&recs), [".skills/.active/pg-tuning/references/vacuum.md"]);
}

#[test]
fn a_fresher_note_does_not_outrank_clearly_stronger_text_evidence() {
    // The guide says both words three times; the notes verified today say
    // them three times in all. On a linear scale the freshness factor
    // (up to 1.4×) put the weaker note first; graded on the squared scale,
    // freshness settles near ties but not a quarter less evidence.
    let lib = Lib::new();
    lib.put(
        "notes/a-rollback-guide.md",
        "---\ntopic: release-guide\nlast_verified_at: 2025-12-01T00:00:00Z\n---\nRollback the canary. A canary rollback needs a canary plan and a rollback window; check early.\n",
    );
    lib.put(
        "notes/b-deploy-notes.md",
        "---\ntopic: deploy-notes\nlast_verified_at: 2026-03-01T00:00:00Z\n---\nRollback the canary. A service rollback needs a staging plan and a release window; check early.\n",
    );
    for (p, t) in [
        ("notes/c.md", "Nightly base backups plus WAL archiving; test a restore every month."),
        ("notes/d.md", "Run k6 against staging before a release."),
        ("notes/e.md", "Cache keys expire with jitter so they do not expire together."),
    ] {
        lib.put(p, &format!("---\ntopic: {}\n---\n{t}\n", &p[6..7]));
    }
    let (recs, _) = search(&lib, &["canary rollback", "--no-recommend"]);
    assert_eq!(paths(&recs), ["notes/a-rollback-guide.md", "notes/b-deploy-notes.md"]);
    let fresh: Vec<f64> = hits(&recs).iter().map(|h| h["freshness"].as_f64().unwrap()).collect();
    assert_eq!(fresh, [0.0, 0.9833]);
}

#[test]
fn feedback_orders_equal_matches_by_the_words_the_best_matches_share() {
    // Two notes mention "statin" once, at the same length: before, a tie
    // left to path order. The three statin notes all talk about LDL
    // cholesterol, so pseudo-relevance feedback ranks the lipid clinic's
    // note above the pharmacy's shelf — and adds no note without "statin".
    let lib = Lib::new();
    let notes = [
        ("s1", "statin-trial", "Statin therapy lowered LDL cholesterol; statin users had less cholesterol."),
        ("s2", "statin-dose", "Higher statin doses cut LDL cholesterol further; statin tolerance varied."),
        ("s3", "statin-review", "A review of statin trials: statin treatment reduces LDL cholesterol."),
        (
            "x-lipids",
            "lipid-clinic",
            "In the lipid clinic, a statin brought LDL cholesterol down within weeks for most patients.",
        ),
        (
            "a-pharmacy",
            "pharmacy-shelf",
            "The pharmacy moved the statin shelf; staff relabelled boxes near the front door.",
        ),
        ("o1", "cholesterol-diet", "Diet alone lowers LDL cholesterol a little."),
    ];
    for (name, topic, body) in notes {
        lib.put(&format!("notes/{name}.md"), &format!("---\ntopic: {topic}\n---\n{body}\n"));
    }
    let (recs, _) = search(&lib, &["statin", "--no-recommend", "--limit", "10"]);
    let ps = paths(&recs);
    assert_eq!(&ps[3..], ["notes/x-lipids.md", "notes/a-pharmacy.md"], "{ps:?}");
    assert_eq!(summary(&recs)["matched"], 5, "feedback reorders the query's matches, it adds none");
}

/// Searches with the cache moved aside: what a cold rebuild answers.
fn cold_search(lib: &Lib, args: &[&str]) -> Vec<Value> {
    let (cache, aside) = (lib.path(".cache/kb-score"), lib.path(".cache/kb-score-aside"));
    std::fs::rename(&cache, &aside).unwrap();
    let (recs, _) = search(lib, args);
    std::fs::remove_dir_all(&cache).unwrap();
    std::fs::rename(&aside, &cache).unwrap();
    recs
}

#[test]
fn side_index_answers_as_a_cold_rebuild_and_leaves_the_main_index_alone() {
    let lib = seed_library();
    let more: String = (0..40)
        .map(|i| {
            let text = format!(
                "---\ntopic: filler-{i}\nkeywords: [token, f{}]\nrelated: [jwt-auth]\n---\n# Filler {i}\n\nToken session note {i} about cookies and authentication.\n",
                i % 7
            );
            json!({"path": format!("notes/filler/f{i}.md"), "content": text}).to_string() + "\n"
        })
        .collect();
    lib.cmd("kb-append").args(["batch", "--no-commit"]).write_stdin(more).assert().success();
    let queries: [&[&str]; 4] = [&["token"], &["session management"], &["authentication", "--limit", "5"], &["jwt"]];
    for q in queries {
        search(&lib, q);
    }
    let main = lib.path(".cache/kb-score/index-v8.bin");
    let side = lib.path(".cache/kb-score/side-v8.bin");
    let main_bytes = std::fs::read(&main).unwrap();
    let same_as_cold = |when: &str| {
        for q in queries {
            let (warm, _) = search(&lib, q);
            assert_eq!(warm, cold_search(&lib, q), "{when}: {q:?}");
        }
    };

    // A new document that links to an existing one (the graph changes).
    let text = "---\ntopic: token-rotation\nkeywords: [token]\nrelated: [session-management]\n---\n# Token rotation\n\nRotate session tokens.\n";
    lib.cmd("kb-append")
        .args(["write", "notes/new/token-rotation.md", "--content", text, "--notebook", "nb-z", "--no-commit"])
        .assert()
        .success();
    same_as_cold("after a write");
    assert!(side.is_file(), "a side index holds the write");
    // Its topic changed: documents linking to the old topic lose it.
    let text = "---\ntopic: sessions-v2\nkeywords: [cookies]\n---\n# Sessions\n\nServer-side sessions.\n";
    lib.cmd("kb-append").args(["write", SESSION, "--content", text, "--no-commit"]).assert().success();
    same_as_cold("after a topic change");
    // Deleted and renamed behind kb-append's back.
    std::fs::remove_file(lib.path(RATE)).unwrap();
    std::fs::rename(lib.path(OAUTH), lib.path("notes/oauth-renamed.md")).unwrap();
    same_as_cold("after a delete and a rename");
    let (recs, _) = search(&lib, &["throttling"]);
    assert!(!paths(&recs).contains(&RATE.to_string()), "deleted: {:?}", paths(&recs));
    let (recs, _) = search(&lib, &["authorization code", "--no-recommend"]);
    assert_eq!(paths(&recs).first().map(String::as_str), Some("notes/oauth-renamed.md"));
    assert!(!paths(&recs).contains(&OAUTH.to_string()));
    // Edited in place (no rename): --verify finds it, and it answers as cold.
    std::fs::write(lib.path("notes/filler/f3.md"), "---\ntopic: filler-3\n---\n# F3\n\nzebracrossing.\n").unwrap();
    let (recs, _) = search(&lib, &["zebracrossing", "--verify", "--no-recommend"]);
    assert_eq!(paths(&recs), ["notes/filler/f3.md"]);
    same_as_cold("after an edit in place");
    assert_eq!(std::fs::read(&main).unwrap(), main_bytes, "the main index was not rewritten");
}

#[test]
fn query_words_side_by_side_in_a_note_outrank_the_same_words_apart() {
    // Three notes with the same words, the same number of times, at the
    // same length: BM25 cannot tell them apart, so before term proximity
    // they tied and path order decided. Only one says "insulin
    // resistance" as the query does; the reversed pair is not the phrase.
    let lib = Lib::new();
    let notes = [
        ("a-apart", "note-one", "Insulin levels rose while resistance training continued."),
        ("b-together", "note-two", "Insulin resistance rose while levels training continued."),
        ("c-reversed", "note-six", "Resistance insulin rose while levels training continued."),
    ];
    for (name, topic, body) in notes {
        lib.put(&format!("notes/{name}.md"), &format!("---\ntopic: {topic}\n---\n{body}\n"));
    }
    let (recs, code) = search(&lib, &["does insulin resistance rise?", "--no-recommend"]);
    assert_eq!(code, 0);
    assert_eq!(paths(&recs), ["notes/b-together.md", "notes/a-apart.md", "notes/c-reversed.md"]);
    let base: Vec<f64> = hits(&recs).iter().map(|h| h["base"].as_f64().unwrap()).collect();
    assert!(base[0] > base[1] && base[1] == base[2], "{base:?}");
    // One word, no pair: the three tie again and path order decides.
    let (recs, _) = search(&lib, &["insulin", "--no-recommend"]);
    assert_eq!(paths(&recs), ["notes/a-apart.md", "notes/b-together.md", "notes/c-reversed.md"]);
}
