//! `kb-guard rules list`, and `kb-guard rules
//! propose|validate|review|integrate|status`: the words and flags kb-guard
//! parsed turned into one step of the evolve loop (`kb::evolve`).

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde_json::Value;

use super::Flags;
use crate::error::{Context, Error, Result};
use crate::evolve::proposal;
use crate::evolve::select::Selection;
use crate::evolve::{integrate, propose, review, status, validate, Lines, Rec};
use crate::library::Library;
use crate::lock;
use crate::out::jsonl::{self, Format};

/// `rules list`: the rules in force, as records or a table.
pub fn list(f: &Flags, engine: &crate::guard::Engine, out: &mut jsonl::Out) -> Result<()> {
    let rules = engine.rules();
    if f.format.as_deref().map_or(Ok(Format::default_for_stdout()), Format::parse)? == Format::Table {
        let rows: Vec<Vec<String>> = rules
            .iter()
            .map(|r| {
                let severity = r.severity.to_string();
                vec![r.id.clone(), r.category.clone(), severity, r.source.clone(), r.description.clone()]
            })
            .collect();
        return out.text(&jsonl::table(&["ID", "CATEGORY", "SEVERITY", "SOURCE", "DESCRIPTION"], &rows));
    }
    rules.iter().try_for_each(|r| out.record(&crate::guard::rules::Listed::from(r)))
}

fn read_lines(path: Option<&str>) -> Result<Lines> {
    let parse =
        |r: Box<dyn std::io::BufRead>| jsonl::read_objects(r).map(|(n, o)| (n, o.map_err(|e| e.message))).collect();
    Ok(match path {
        None | Some("-") => parse(Box::new(std::io::stdin().lock())),
        Some(p) => parse(Box::new(BufReader::new(File::open(p).ctx(|| format!("reading {p}"))?))),
    })
}

/// Whether `validate`'s words name rule files rather than proposals.
fn names_files(words: &[&str]) -> bool {
    !words.is_empty() && words.iter().all(|w| *w != "-" && !proposal::is_id(w))
}

/// Runs one step.
pub fn run(root: Option<&Path>, step: &str, words: &[&str], flags: &Flags, format: Option<Format>) -> Result<Vec<Rec>> {
    let lock = lock::Options::default();
    let commit = !flags.no_commit;
    if step == "validate" && names_files(words) {
        // Rule files validate outside any library too.
        let lib = Library::resolve(root).ok();
        let mut out = Vec::new();
        for f in words {
            let text = crate::guard::rules::read_named(Path::new(f))?;
            out.extend(validate::file(&text, f, lib.as_ref(), &flags.corpus)?);
        }
        return Ok(out);
    }
    let lib = Library::resolve(root)?;
    // Reading stdin cannot fail as a whole (a bad line is a per-line error).
    let selection = || Selection::from_words(words, || Selection::Records(read_lines(None).unwrap_or_default()));
    match step {
        "status" => {
            let s = status::status(&lib)?;
            Ok(vec![match format.unwrap_or_else(Format::default_for_stdout) {
                Format::Table => Rec::Table(status::table(&s)),
                Format::Jsonl => Rec::Record(serde_json::to_value(&s).unwrap_or(Value::Null)),
            }])
        }
        "propose" => {
            let ([] | [_]) = words else {
                return Err(Error::usage("rules propose takes one intel file (or - for stdin)"));
            };
            let opts = propose::Options { scheduled: flags.scheduled, force: flags.force, commit, lock };
            propose::propose(&lib, read_lines(words.first().copied())?, &opts)
        }
        "validate" => {
            let opts = validate::Options { corpus: flags.corpus.clone(), commit, lock };
            validate::validate(&lib, selection(), &opts)
        }
        "review" => review::review(&lib, selection(), commit, &lock),
        "integrate" => integrate::integrate(&lib, selection(), commit, &lock),
        other => Err(Error::usage(format!("unknown rules step '{other}'"))),
    }
}
