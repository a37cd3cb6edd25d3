//! `kb-guard`: the threat scanner (seed 002 guard, seed 000 sanitising).

use std::io::Read;

use serde_json::json;

use super::args::{Args, Cmd, Spec};
use crate::error::{Context, Error, Exit};
use crate::guard::{self, filter::Outcome, policy::Policy, scan, target, Verdict};
use crate::out::jsonl::{self, Format, Out};

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("guard.txt");

const STEP: &[&str] = &["root", "no-commit"];
const PROPOSALS: &str = "[CORE-XXX...|-]";

/// kb-guard's subcommands and the flags each uses.
pub static SPEC: Spec = Spec::new(
    "kb-guard",
    USAGE,
    &[
        Cmd::new("scan", "PATH...", &["format", "fail-on", "policy", "root"], SCAN),
        Cmd::new("rules list", "", &["format", "root"], "the rules in force"),
        Cmd::new("rules validate", "[FILE...|CORE-XXX...|-]", &["corpus", "root", "no-commit"], VALIDATE),
        Cmd::new("rules propose", "[INTEL.jsonl|-]", &["scheduled", "force", "root", "no-commit"], PROPOSE),
        Cmd::new("rules review", PROPOSALS, STEP, "composite score; approved at >= 0.95"),
        Cmd::new("rules integrate", PROPOSALS, STEP, "approved rules into the rule set in force"),
        Cmd::new("rules status", "", &["format", "root"], "last scans, proposals by state, rule counts"),
        Cmd::new("filter", "", &["policy", "root"], "pass safe write requests on stdin, refuse dangerous ones"),
        Cmd::new("sanitize", "[FILE|-]", &["report"], "neutralise injected instructions in external text"),
    ],
);

const SCAN: &str = "scan files, skills or '-' (stdin) for threats";
const VALIDATE: &str = "a rule file, or proposals: pattern, examples, historical backtest";
const PROPOSE: &str = "threat intel -> CORE-XXX.md proposals";

/// Runs the parsed command line.
pub fn run(a: Args) -> Result<Exit, Error> {
    let format_flag = a.get("format").map(str::to_string);
    let root = a.get("root").map(std::path::PathBuf::from);
    let policy_path = a.get("policy").map(std::path::PathBuf::from);
    let evolve = guard::evolve::cli::Flags {
        corpus: a.all("corpus"),
        scheduled: a.on("scheduled"),
        force: a.on("force"),
        no_commit: a.on("no-commit"),
    };
    let all_words: Vec<String> = a.cmd.split(' ').map(str::to_string).chain(a.positional.iter().cloned()).collect();
    let mut out = Out::stdout("kb-guard");
    let words: Vec<&str> = all_words.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["rules", step @ ("propose" | "validate" | "review" | "integrate" | "status"), rest @ ..] => {
            let format = format_flag.as_deref().map(Format::parse).transpose()?;
            let recs = guard::evolve::cli::run(root.as_deref(), step, rest, &evolve, format)?;
            guard::evolve::print(&mut out, recs)?;
            return out.finish();
        }
        ["sanitize", rest @ ..] if rest.len() <= 1 => {
            return sanitize(a.get("report").map(std::path::Path::new), rest.first().copied(), out)
        }
        _ => {}
    }
    let (engine, errors) = guard::load_engine(root.as_deref())?;
    for e in &errors {
        out.error(&format!("{}: {}", e.source, e.message), json!({"rule_file": e.source}))?;
    }
    let policy = policy_path.as_deref().map(|p| Policy::load(p, &engine)).transpose()?;
    let now = crate::clock::now()?;
    match words.as_slice() {
        ["scan", paths @ ..] if !paths.is_empty() => {
            let fail_on = Verdict::parse(a.get("fail-on").unwrap_or("dangerous"))?;
            let paths: Vec<String> = paths.iter().map(|s| s.to_string()).collect();
            let mut targets = Vec::new();
            for t in target::collect(&paths) {
                match t {
                    Ok(t) => targets.push(t),
                    Err(e) => out.error(&format!("{}: {}", e.path, e.message), json!({"path": e.path}))?,
                }
            }
            let mut stdin = Vec::new();
            if targets.iter().any(|t| t.kind == target::TargetKind::Stdin) {
                std::io::stdin().read_to_end(&mut stdin).ctx(|| "reading stdin")?;
            }
            let results = scan::scan_targets(&engine, &targets, &stdin, policy.as_ref(), now);
            if results.iter().any(|r| r.verdict.verdict >= fail_on && r.verdict.verdict > Verdict::Safe) {
                out.raise(Exit::Negative);
            }
            match format_flag.as_deref() {
                Some("sarif") => out.text(&format!("{:#}\n", guard::sarif::log(&engine, &results)))?,
                f if f.map_or(Ok(Format::default_for_stdout()), Format::parse)? == Format::Table => {
                    out.text(&scan::table(&results))?
                }
                _ => {
                    for r in &results {
                        r.findings.iter().try_for_each(|f| out.record(f))?;
                        out.record(&r.verdict)?;
                    }
                }
            }
        }
        ["rules", "list"] => {
            let rules = engine.rules();
            if format_flag.as_deref().map_or(Ok(Format::default_for_stdout()), Format::parse)? == Format::Table {
                let rows: Vec<Vec<String>> = rules
                    .iter()
                    .map(|r| {
                        vec![
                            r.id.clone(),
                            r.category.clone(),
                            r.severity.to_string(),
                            r.source.clone(),
                            r.description.clone(),
                        ]
                    })
                    .collect();
                out.text(&jsonl::table(&["ID", "CATEGORY", "SEVERITY", "SOURCE", "DESCRIPTION"], &rows))?;
            } else {
                for r in rules {
                    out.record(&guard::rules::Listed::from(r))?;
                }
            }
        }
        ["filter"] => {
            let lines =
                jsonl::read_objects(std::io::stdin().lock()).map(|(n, o)| (n, o.map_err(|e| e.message))).collect();
            for (line, outcome) in guard::filter::filter(&engine, policy.as_ref(), now, lines) {
                match outcome {
                    Outcome::Pass(obj) => out.record(&obj)?,
                    Outcome::Invalid(msg) => out.line_error(line, &msg, None)?,
                    Outcome::Refused(msg, extra) => {
                        eprintln!("kb-guard: <stdin>:{line}: {msg}");
                        let mut rec = json!({"record": "error", "line": line, "message": msg});
                        rec.as_object_mut()
                            .into_iter()
                            .for_each(|m| m.extend(extra.as_object().cloned().unwrap_or_default()));
                        out.record(&rec)?;
                        out.raise(Exit::Negative);
                    }
                }
            }
        }
        _ => {
            return Err(Error::usage(
                "expected scan PATH..., rules list|validate|propose|review|integrate|status, filter or sanitize",
            ))
        }
    }
    out.finish()
}

/// `kb-guard sanitize`: the sanitised text on stdout, changes to --report.
fn sanitize(report: Option<&std::path::Path>, file: Option<&str>, mut out: Out) -> Result<Exit, Error> {
    let bytes = match file {
        None | Some("-") => {
            let mut b = Vec::new();
            std::io::stdin().read_to_end(&mut b).ctx(|| "reading stdin")?;
            b
        }
        Some(f) => std::fs::read(f).ctx(|| format!("reading {f}"))?,
    };
    let engine = guard::Engine::core()?;
    let text = guard::normalize::decode_lossy(&bytes);
    let (clean, changes) = guard::sanitize::sanitize(engine, &text);
    out.text(&clean)?;
    match report {
        Some(p) => {
            let lines: Vec<String> = changes.iter().filter_map(|c| serde_json::to_string(c).ok()).collect();
            let body = if lines.is_empty() { String::new() } else { lines.join("\n") + "\n" };
            std::fs::write(p, body).ctx(|| format!("writing {}", p.display()))?;
        }
        None => changes
            .iter()
            .for_each(|c| eprintln!("kb-guard: sanitize: line {}: {} {:?} -> {:?}", c.line, c.rule, c.before, c.after)),
    }
    out.finish()
}
