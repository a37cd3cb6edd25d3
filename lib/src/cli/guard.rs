//! `kb-guard`: the threat scanner (seed 002 guard, seed 000 sanitising).

use super::args::{typed_flags, Args, Cmd, Spec};
use crate::error::{Error, Exit};
use crate::evolve;
use crate::guard::{self, policy::Policy};
use crate::out::jsonl::{self, Format, Out};

mod rules;
mod sanitize;
mod scan;

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("guard.txt");

typed_flags! { USAGE;
    /// kb-guard's flags.
    pub struct Flags {
        format: Option<String> = "format",
        fail_on: Option<String> = "fail-on",
        policy: Option<std::path::PathBuf> = "policy",
        root: Option<std::path::PathBuf> = "root",
        report: Option<std::path::PathBuf> = "report",
        corpus: Vec<String> = "corpus",
        scheduled: bool = "scheduled",
        force: bool = "force",
        no_commit: bool = "no-commit",
    }
}

const STEP: &[&str] = &["root", "no-commit", "format"];
const PROPOSALS: &str = "[CORE-XXX...|-]";

/// kb-guard's subcommands and the flags each uses.
pub static SPEC: Spec = Spec::new(
    "kb-guard",
    USAGE,
    Flags::NAMES,
    &[
        Cmd::new("scan", "PATH...", &["format", "fail-on", "policy", "root"], SCAN),
        Cmd::new("rules list", "", &["format", "root"], "the rules in force"),
        Cmd::new("rules validate", "[FILE...|CORE-XXX...|-]", &["corpus", "root", "no-commit", "format"], VALIDATE),
        Cmd::new("rules propose", "[INTEL.jsonl|-]", &["scheduled", "force", "root", "no-commit", "format"], PROPOSE),
        Cmd::new("rules review", PROPOSALS, STEP, "composite score; approved at >= 0.95"),
        Cmd::new("rules integrate", PROPOSALS, STEP, "approved rules into the rule set in force"),
        Cmd::new("rules status", "", &["format", "root"], "last scans, proposals by state, rule counts"),
        Cmd::new(
            "filter",
            "",
            &["policy", "root", "format"],
            "pass safe write requests on stdin, refuse dangerous ones",
        ),
        Cmd::new("sanitize", "[FILE|-]", &["report"], "neutralise injected instructions in external text"),
    ],
);

const SCAN: &str = "scan files, skills or '-' (stdin) for threats";
const VALIDATE: &str = "a rule file, or proposals: pattern, examples, historical backtest";
const PROPOSE: &str = "threat intel -> CORE-XXX.md proposals";

/// Runs the parsed command line.
pub fn run(a: Args) -> Result<Exit, Error> {
    let f = Flags::from_args(&a)?;
    let root = f.root.as_deref();
    let all_words: Vec<String> = a.cmd.split(' ').map(str::to_string).chain(a.positional.iter().cloned()).collect();
    let mut out = Out::stdout("kb-guard");
    let table = (f.format.as_deref() == Some("table")).then_some(Format::Table);
    if super::args::generic_table(table, a.cmd, &["scan", "rules list", "rules status"]) {
        out.as_tables();
    }
    let words: Vec<&str> = all_words.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["rules", step @ ("propose" | "validate" | "review" | "integrate" | "status"), rest @ ..] => {
            let format = f.format.as_deref().map(Format::parse).transpose()?;
            let recs = rules::run(root, step, rest, &f, format)?;
            evolve::print(&mut out, recs)?;
            return out.finish();
        }
        ["sanitize", rest @ ..] if rest.len() <= 1 => {
            return sanitize::run(f.report.as_deref(), rest.first().copied(), out)
        }
        _ => {}
    }
    let scan_paths = match words.as_slice() {
        ["scan", paths @ ..] if !paths.is_empty() => Some(paths),
        _ => None,
    };
    let fail_on = scan_paths.map(|_| scan::fail_on(&f)).transpose()?;
    let (engine, targets) = guard::load_for_scan(root, scan_paths);
    let (engine, errors) = engine?;
    // The engine lives as long as the process: freeing its automata's
    // states (tens of MB after a long scan) just before exit is work the
    // system does anyway.
    let engine: &'static guard::Engine = Box::leak(Box::new(engine));
    for e in &errors {
        out.error_about(&format!("{}: {}", e.source, e.message), &e.about())?;
    }
    let policy = f.policy.as_deref().map(|p| Policy::load(p, engine)).transpose()?;
    let now = crate::clock::now()?;
    match words.as_slice() {
        ["scan", ..] if targets.is_some() => {
            let targets = targets.unwrap_or_default();
            scan::run(&f, engine, targets, fail_on.flatten(), policy.as_ref(), now, &mut out)?;
        }
        ["rules", "list"] => rules::list(&f, engine, &mut out)?,
        ["filter"] => {
            let lines =
                jsonl::read_objects(std::io::stdin().lock()).map(|(n, o)| (n, o.map_err(|e| e.message))).collect();
            guard::filter::print(guard::filter::filter(engine, policy.as_ref(), now, lines), &mut out)?;
        }
        _ => {
            return Err(Error::usage(
                "expected scan PATH..., rules list|validate|propose|review|integrate|status, filter or sanitize",
            ))
        }
    }
    out.finish()
}
