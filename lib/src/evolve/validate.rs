//! Seed 000 evolve step 4, VALIDATE: the pattern compiles in the guard's
//! linear-time engine (and is neither too broad nor too large to stay
//! fast), its rule id is free, every positive example raises it and no
//! negative one does, the overlap with the rules in force is measured, and
//! the historical backtest says what it would newly flag. The findings go
//! into the proposal's `validation`; its status becomes `validated`,
//! `invalid`, or stays `draft` while something needs elaborating. The same
//! backtest runs for `kb-guard rules validate FILE`.

use std::collections::{BTreeMap, BTreeSet};

use regex_automata::meta;
use serde_json::{json, Value};

use super::audit::Line;
use super::backtest::Corpus;
use super::proposal::{self, Backtest, Loaded, Status, Validation};
use super::select::{self, Item, Selection};
use super::Rec;
use crate::clock;
use crate::error::Result;
use crate::guard::rules::{self, Rule, CATEGORIES};
use crate::guard::{pattern, Engine};
use crate::library::Library;
use crate::lock;
use crate::write::integrate::Group;

/// Largest compiled pattern accepted (bytes of automaton): anything bigger
/// would slow every scan of every document.
pub const NFA_LIMIT: usize = 256 << 10;
/// Shortest text a pattern may match: shorter ones flag everything.
pub const MIN_MATCH_LEN: usize = 3;

/// How VALIDATE runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Directories scanned besides the library.
    pub corpus: Vec<String>,
    /// Commit when the library is a git repository.
    pub commit: bool,
    /// Lock timeout and holder.
    pub lock: lock::Options,
}

/// Checks a pattern the way the guard will run it: compiles to an
/// automaton, cannot match fewer than [`MIN_MATCH_LEN`] characters, and
/// stays within [`NFA_LIMIT`].
pub fn pattern_ok(p: &str) -> std::result::Result<(), String> {
    let hir = pattern::parse(p).map_err(|e| e.to_string())?;
    if hir.properties().minimum_len().unwrap_or(0) < MIN_MATCH_LEN {
        return Err(format!("pattern can match fewer than {MIN_MATCH_LEN} characters (too broad)"));
    }
    meta::Builder::new()
        .configure(meta::Config::new().nfa_size_limit(Some(NFA_LIMIT)).utf8_empty(false).backtrack(false))
        .build_from_hir(&hir)
        .map_err(|_| {
            format!("pattern is too large for the linear-time engine (over {NFA_LIMIT} bytes; would be slow)")
        })?;
    Ok(())
}

/// A proposal's checks without the backtest: the validation so far and
/// the rule when it can be backtested.
pub fn check(p: &proposal::Proposal, engine: &Engine) -> (Validation, Option<Rule>) {
    let mut problems = Vec::new();
    let missing = p.missing();
    if !missing.is_empty() {
        problems.push(format!("needs elaborating: {}", missing.join(", ")));
    }
    if let Some(c) = p.category.as_deref().filter(|c| !CATEGORIES.contains(c) || *c == "structure") {
        problems.push(format!("unknown category '{c}'"));
    }
    let examples = p.matches.len() + p.clean.len();
    let mut passed = 0;
    let mut compiled = None;
    if let Some(rule) = p.rule() {
        if let Err(e) = rules::check_fields(&rule) {
            problems.push(e);
        } else if let Some(old) = engine.rule(&rule.id) {
            problems.push(format!("rule id {} is already defined in {}", rule.id, old.source));
        } else if let Err(e) = rule.pattern.as_deref().map_or(Ok(()), pattern_ok) {
            problems.push(e);
        } else {
            match Engine::new(vec![rule.clone()]) {
                Ok(e) => {
                    let bad = e.check_examples(&rule);
                    passed = examples - bad.len();
                    problems.extend(bad);
                    compiled = Some(rule);
                }
                Err(e) => problems.push(e.to_string()),
            }
        }
    }
    let mut overlap = BTreeSet::new();
    let mut caught = 0;
    for ex in &p.matches {
        let ids: Vec<String> =
            engine.scan_text("example.txt", ex).findings.into_iter().filter(|f| f.counts()).map(|f| f.rule).collect();
        caught += usize::from(!ids.is_empty());
        overlap.extend(ids);
    }
    let fraction = if p.matches.is_empty() { 0.0 } else { super::round4(caught as f64 / p.matches.len() as f64) };
    let v = Validation {
        ts: clock::format(clock::now().unwrap_or_default()),
        valid: problems.is_empty(),
        problems,
        examples,
        examples_passed: passed,
        overlap: overlap.into_iter().collect(),
        overlap_fraction: fraction,
        backtest: None,
    };
    (v, compiled)
}

/// VALIDATE over a selection (default: draft, proposed and invalid
/// proposals; named ones may also be validated or rejected ones).
pub fn validate(lib: &Library, sel: Selection, opts: &Options) -> Result<Vec<Rec>> {
    let wanted: &[Status] = match sel {
        Selection::Pending => &[Status::Draft, Status::Proposed, Status::Invalid],
        _ => &[Status::Draft, Status::Proposed, Status::Invalid, Status::Validated, Status::Rejected],
    };
    let (engine, _) = super::engine(lib)?;
    let ts = clock::format(clock::now()?);
    lock::with_lock(lib, &opts.lock, || {
        crate::write::recover_noted(lib)?;
        let mut items = select::resolve(lib, sel, wanted);
        let mut checked: Vec<(usize, Validation, Option<Rule>)> = Vec::new();
        let mut ids = BTreeSet::new();
        for (i, item) in items.iter().enumerate() {
            if let Item::Work(l) = item {
                let (mut v, mut rule) = check(&l.proposal, &engine);
                if let Some(r) = &rule {
                    if !ids.insert(r.id.clone()) {
                        v.problems.push(format!("rule id {} is used by another proposal in this run", r.id));
                        v.valid = false;
                        rule = None;
                    }
                }
                v.ts = ts.clone();
                checked.push((i, v, rule));
            }
        }
        let rules: Vec<Rule> = checked.iter().filter_map(|(_, _, r)| r.clone()).collect();
        let results = if rules.is_empty() {
            BTreeMap::new()
        } else {
            Corpus::load(Some(lib), &opts.corpus, &engine)?.run(&rules)?
        };
        let mut group = Group::default();
        let mut landed = 0;
        for (i, mut v, rule) in checked {
            let Item::Work(l) = &mut items[i] else { continue };
            v.backtest = rule.and_then(|r| results.get(&r.id).cloned());
            let p = &mut l.proposal;
            p.status = if !p.missing().is_empty() {
                Status::Draft
            } else if v.valid {
                Status::Validated
            } else {
                Status::Invalid
            };
            let detail = json!({
                "problems": v.problems,
                "newly_flagged": v.backtest.as_ref().map(|b| b.newly_flagged),
                "fp_rate": v.backtest.as_ref().map(|b| b.fp_rate),
            });
            p.validation = Some(v);
            group.stage(lib, &l.path, &proposal::render(l)?)?;
            let line = Line::new(&ts, "validate", Some(&l.proposal.id), l.proposal.status.as_str(), detail);
            group.owe(&line, vec![l.path.clone()])?;
            landed += 1;
        }
        // One journaled group: the proposals, their audit lines and the
        // commit land together or are finished by the next writer.
        group.land(lib, opts.commit.then(|| format!("task-ai(library):evolve validate {landed} proposals")))?;
        Ok(items.into_iter().map(into_rec).collect())
    })
}

/// An item as the record the step prints.
pub fn into_rec(item: Item) -> Rec {
    match item {
        Item::Pass(r) => r,
        Item::Work(l) => Rec::Record(Loaded::record(&l)),
    }
}

/// `kb-guard rules validate FILE`: the file checked as the hot loader
/// does, plus (when a library or corpus is at hand) the backtest of each
/// of its rules. Exit 1 when the file is invalid.
pub fn file(text: &str, name: &str, lib: Option<&Library>, corpus: &[String]) -> Result<Vec<Rec>> {
    let v = crate::guard::engine::validate(text, name);
    let mut rec = serde_json::to_value(&v).unwrap_or(Value::Null);
    let mut out = Vec::new();
    if !v.valid {
        out.push(Rec::Raise(crate::Exit::Negative));
    } else if lib.is_some() || !corpus.is_empty() {
        let rules = rules::parse(text, name)?;
        let engine = match lib {
            Some(l) => super::engine(l)?.0,
            None => Engine::new(rules::core()?)?,
        };
        let results: BTreeMap<String, Backtest> = super::backtest::rule_file(lib, corpus, &engine, &rules)?;
        if let Value::Object(m) = &mut rec {
            m.insert("backtest".into(), serde_json::to_value(results).unwrap_or(Value::Null));
        }
    }
    out.insert(0, Rec::Record(rec));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_core_pattern_passes_the_evolve_pattern_checks() {
        for r in rules::core().unwrap() {
            if let Some(p) = &r.pattern {
                assert_eq!(pattern_ok(p), Ok(()), "core rule {}", r.id);
            }
        }
    }
}
