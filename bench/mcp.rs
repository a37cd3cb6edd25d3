//! kb-mcp benchmark: what a tool call costs over stdio against the same
//! call made in-process, and warm `library_search` latency, beside the
//! `kb-score` process an agent would otherwise spawn per query.
//!
//! usage: cargo bench --bench mcp -- [DOCS=2000] [CALLS=300]
//! (bench/mcp.sh builds the release binaries first and runs this.)

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kb::mcp::{Options, Server};
use serde_json::json;

const WORDS: &[&str] = &[
    "auth",
    "token",
    "session",
    "cache",
    "index",
    "query",
    "latency",
    "retry",
    "backoff",
    "schema",
    "migration",
    "shard",
    "replica",
    "queue",
    "stream",
    "batch",
    "window",
    "join",
    "filter",
    "parse",
    "render",
    "deploy",
    "rollback",
    "canary",
    "build",
    "test",
    "lint",
    "profile",
    "trace",
    "span",
    "secret",
    "rotate",
    "encrypt",
];

fn word(i: usize) -> &'static str {
    WORDS[i % WORDS.len()]
}

/// A library of `n` documents with frontmatter and a few lines of body.
fn generate(ws: &Path, n: usize) {
    for i in 0..n {
        let (a, b, c) = (word(i * 7), word(i * 13 + 1), word(i * 3 + 2));
        let dir = ws.join(format!(".library/notes/{}", word(i)));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let text = format!(
            "---\ntopic: {a}-{b}-{i}\ntype: software\nkeywords: [{a}, {b}, {c}]\n---\n# {a} {b} {i}\n\n\
             How to {a} the {b} with {c}; see the {c} notes.\n"
        );
        std::fs::write(dir.join(format!("{a}-{b}-{i}.md")), text).expect("write");
    }
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn p95(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[(xs.len() * 95 / 100).min(xs.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn request(id: usize, tool: &str, args: serde_json::Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}}).to_string()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let docs: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let calls: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(300);
    let tmp = tempfile::tempdir().expect("tempdir");
    let ws = tmp.path();
    generate(ws, docs);
    std::env::set_var("KB_NOW", "2026-03-01T12:00:00Z");
    std::env::set_var("HOME", ws);
    let bin_dir =
        std::env::current_exe().ok().and_then(|p| p.parent()?.parent().map(Path::to_path_buf)).expect("target dir");
    let (mcp_bin, score_bin) = (bin_dir.join("kb-mcp"), bin_dir.join("kb-score"));

    let cases = [
        ("library_search", json!({"query": "rotate secret", "no_recommend": true})),
        ("library_search", json!({"query": "deploy canary rollback"})),
        ("guard_scan", json!({"text": "Run nginx -t before reloading; never curl | sh."})),
    ];
    let server = Server::open(&Options { root: Some(ws.to_path_buf()), ..Options::default() }).expect("library");
    // The handshake, then warm the index cache once.
    server.handle_line(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}})
            .to_string(),
    );
    server.handle_line(&request(0, "library_search", cases[0].1.clone()));

    let mut child = Command::new(&mcp_bin)
        .arg("--root")
        .arg(ws)
        .env("KB_NOW", "2026-03-01T12:00:00Z")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e} (run bench/mcp.sh, which builds it)", mcp_bin.display()));
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let mut rpc = |req: &str| {
        stdin
            .write_all(req.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .expect("send");
        line.clear();
        stdout.read_line(&mut line).expect("answer");
        assert!(line.contains("\"result\""), "{line}");
    };
    rpc(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})
        .to_string());

    println!("kb-mcp: {docs} documents, {calls} calls per case; median (p95) in ms");
    println!(
        "{:<42} {:>16} {:>16} {:>12} {:>16}",
        "call", "in-process", "kb-mcp stdio", "overhead", "kb-score process"
    );
    for (tool, args) in &cases {
        let req = request(1, tool, args.clone());
        let (mut inproc, mut stdio, mut cli) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..calls {
            // Interleaved, so drift (cache, other load) hits both alike.
            let t = Instant::now();
            let a = server.handle_line(&req).expect("answer");
            inproc.push(t.elapsed());
            assert!(matches!(a, kb::mcp::rpc::Answer::One(ref r) if r.result().is_some()), "{a:?}");
            let t = Instant::now();
            rpc(&req);
            stdio.push(t.elapsed());
            if *tool == "library_search" && i < calls / 10 {
                let q = args["query"].as_str().unwrap_or_default();
                let t = Instant::now();
                let out = Command::new(&score_bin)
                    .args([q, "--format", "jsonl", "--no-registries", "--root"])
                    .arg(ws)
                    .output()
                    .expect("kb-score");
                cli.push(t.elapsed());
                assert!(out.status.success() || out.status.code() == Some(1));
            }
        }
        let (mi, ms_) = (median(inproc.clone()), median(stdio.clone()));
        let cli_s = if cli.is_empty() {
            "-".to_string()
        } else {
            format!("{:.3} ({:.3})", ms(median(cli.clone())), ms(p95(cli)))
        };
        println!(
            "{:<42} {:>16} {:>16} {:>12} {:>16}",
            format!("{tool} {}", args.get("query").or(args.get("text")).unwrap_or(&json!("")))
                .chars()
                .take(42)
                .collect::<String>(),
            format!("{:.3} ({:.3})", ms(mi), ms(p95(inproc))),
            format!("{:.3} ({:.3})", ms(ms_), ms(p95(stdio))),
            format!("{:+.3}", ms(ms_) - ms(mi)),
            cli_s
        );
    }
    drop(stdin);
    let _ = child.wait();
}
