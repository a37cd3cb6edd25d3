//! `kb-guard scan PATH...`: files, skills or stdin through the engine;
//! records, a table or SARIF.

use jiff::Timestamp;

use crate::error::{Context, Error, Exit};
use crate::guard::{self, policy::Policy, scan, target, Engine, Verdict};
use crate::out::jsonl::{Format, Out};

/// What `--fail-on` asks for: `None` for `never`; checked before the
/// paths are walked.
pub fn fail_on(f: &super::Flags) -> Result<Option<Verdict>, Error> {
    match f.fail_on.as_deref().unwrap_or("dangerous") {
        // `never`: a report for people (`just scan`), findings shown, exit 0.
        "never" => Ok(None),
        v => Verdict::parse(v)
            .map(Some)
            .map_err(|_| Error::usage(format!("unknown --fail-on '{v}' (expected caution, dangerous or never)"))),
    }
}

/// Scans the `found` targets of the command line's paths (an error record
/// for each path that could not be walked); exit 1 when a verdict reaches
/// `fail_on`.
pub fn run(
    f: &super::Flags,
    engine: &Engine,
    found: Vec<target::Found>,
    fail_on: Option<Verdict>,
    policy: Option<&Policy>,
    now: Timestamp,
    out: &mut Out,
) -> Result<(), Error> {
    let format_flag = f.format.as_deref();
    let mut targets = Vec::new();
    for t in found {
        match t {
            Ok(t) => targets.push(t),
            Err(e) => out.error_about(&format!("{}: {}", e.path, e.message), &e.about())?,
        }
    }
    let mut stdin = Vec::new();
    if targets.iter().any(|t| t.kind == target::TargetKind::Stdin) {
        // No verdict on bytes never read: more than a document is refused.
        let limit = crate::library::scan::MAX_DOC_BYTES;
        stdin = crate::fs::nofollow::read_capped(std::io::stdin().lock(), limit, "stdin").ctx(|| "reading stdin")?;
    }
    let results = scan::scan_targets(engine, &targets, &stdin, policy, now);
    if fail_on.is_some_and(|f| results.iter().any(|r| r.verdict.verdict >= f && r.verdict.verdict > Verdict::Safe)) {
        out.raise(Exit::Negative);
    }
    match format_flag {
        Some("sarif") => out.text(&format!("{:#}\n", guard::sarif::log(engine, &results)))?,
        v if v.map_or(Ok(Format::default_for_stdout()), Format::parse)? == Format::Table => {
            out.text(&scan::table(&results))?
        }
        _ => {
            let records: Vec<Line> = results
                .iter()
                .flat_map(|r| r.findings.iter().map(Line::Finding).chain([Line::Verdict(&r.verdict)]))
                .collect();
            out.records(&records)?;
        }
    }
    Ok(())
}

/// One line of a scan's output: each target's findings, then its verdict.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Line<'a> {
    Finding(&'a guard::finding::Finding),
    Verdict(&'a guard::verdict::Record),
}
