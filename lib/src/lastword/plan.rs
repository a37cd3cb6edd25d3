//! `kb-lastword plan` (seed 004 §6 step 3, the pre-session-stop hook): take
//! what a session declared, group it by target file, validate each group
//! (`(heading, level)` unique, target readable, heading not ambiguous),
//! record the section each entry was planned against, stage failures with
//! their error and append the rest to the pending files under the lock.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use super::check::{self, TargetKey};
use super::delta::{self, Entry, Op, Problem};
use super::edit::{Doc, Lookup};
use super::home::Home;
use super::queue;
use super::records::{Delta, InputError, Key};
use super::report::Reporter;
use super::staging::{self, Staged};
use crate::error::{Exit, Result};

/// One declared entry and where it came from in the input.
struct Declared {
    entry: Entry,
    origin: String,
    file_source: Option<String>,
}

/// Input that did not parse into an entry.
struct Rejected {
    origin: String,
    line: Option<usize>,
    raw: Option<Value>,
    text: Option<String>,
    problem: Problem,
}

/// What the plan input held.
#[derive(Default)]
struct Input {
    source: Option<String>,
    good: Vec<Declared>,
    bad: Vec<Rejected>,
}

impl Input {
    fn take(
        &mut self,
        parsed: (delta::File, Vec<delta::Bad>, Vec<Problem>),
        origin: &dyn Fn(usize) -> String,
        line: Option<usize>,
        text: &str,
    ) {
        let (file, bads, top) = parsed;
        // The indexes this call rejects: the good entries are numbered
        // around them (a set of this line's own, not a scan of every
        // rejection so far, which made a long input quadratic).
        let bad_at: std::collections::HashSet<usize> = bads.iter().map(|b| b.index).collect();
        if self.source.is_none() {
            self.source = file.source.clone();
        }
        for p in top {
            self.bad.push(Rejected { origin: origin(0), line, raw: None, text: Some(text.to_string()), problem: p });
        }
        for b in bads {
            self.bad.push(Rejected { origin: origin(b.index), line, raw: Some(b.raw), text: None, problem: b.problem });
        }
        let mut original = (0..).filter(|i| !bad_at.contains(i));
        for e in file.entries {
            let i = original.next().unwrap_or(0);
            self.good.push(Declared { entry: e, origin: origin(i), file_source: file.source.clone() });
        }
    }
}

/// Reads the plan input: JSON Lines (one entry, or one whole delta file,
/// per line) when it starts with `{`, else one YAML delta document.
fn read_input(input: &str) -> Input {
    let mut inp = Input::default();
    if !input.trim_start().starts_with('{') {
        inp.take(delta::parse_text(input), &|i| format!("entries[{i}]"), None, input);
        return inp;
    }
    for (n, line) in input.lines().enumerate() {
        let n = n + 1;
        if line.trim().is_empty() {
            continue;
        }
        let origin = |_: usize| format!("<stdin>:{n}");
        match serde_json::from_str::<Value>(line) {
            Ok(v) if v.get("entries").is_some() => inp.take(delta::parse_file(&v), &origin, Some(n), line),
            Ok(v) => match delta::parse_entry(&v, "entry") {
                Ok(e) => {
                    let file = delta::File { entries: vec![e], ..Default::default() };
                    inp.take((file, vec![], vec![]), &origin, Some(n), line)
                }
                Err(p) => {
                    inp.bad.push(Rejected { origin: origin(0), line: Some(n), raw: Some(v), text: None, problem: p })
                }
            },
            Err(e) => inp.bad.push(Rejected {
                origin: origin(0),
                line: Some(n),
                raw: None,
                text: Some(line.to_string()),
                problem: Problem { entry: None, field: String::new(), message: format!("invalid JSON: {e}") },
            }),
        }
    }
    inp
}

/// Plans the entries of `input`: records one `delta` per entry (pending or
/// staged) and one `error` per entry that did not parse.
pub fn plan(home: &Home, input: &str, source: Option<String>, rep: &mut Reporter) -> Result<()> {
    home.init()?;
    let Input { source: file_source, mut good, bad } = read_input(input);
    let fallback = format!("session-{}", crate::clock::now()?.strftime("%Y%m%d-%H%M%S"));
    let session = source.clone().or(file_source).unwrap_or(fallback.clone());
    for d in &mut good {
        if d.entry.source.is_none() {
            d.entry.source = Some(source.clone().or(d.file_source.clone()).unwrap_or(fallback.clone()));
        }
    }
    if !bad.is_empty() {
        let st = Staged {
            source: Some(session.clone()),
            error: format!("{} declared entr{} did not validate", bad.len(), if bad.len() == 1 { "y" } else { "ies" }),
            entries: bad
                .iter()
                .filter_map(|r| r.raw.clone().map(|v| staging::with_error(v, &r.problem.to_string())))
                .collect(),
            raw: bad.iter().filter_map(|r| r.text.clone()).collect(),
            ..Staged::default()
        };
        let path = staging::write(home, &st)?;
        for r in &bad {
            let msg = r.problem.to_string();
            let rec = InputError {
                line: r.line,
                origin: &r.origin,
                field: &r.problem.field,
                message: &msg,
                staging: home.show(&path),
            };
            rep.failure(&format!("{}: {msg}", r.origin), &rec, Exit::Failure)?;
        }
    }
    let mut groups: BTreeMap<TargetKey, Vec<usize>> = BTreeMap::new();
    let mut order = Vec::new();
    for (i, d) in good.iter().enumerate() {
        let k = check::target_key(home, &d.entry);
        if !groups.contains_key(&k) {
            order.push(k.clone());
        }
        groups.entry(k).or_default().push(i);
    }
    let mut ready: Vec<(PathBuf, Vec<usize>)> = Vec::new();
    for key in order {
        let idx = &groups[&key];
        let errors = validate_group(home, &key, &mut good, idx);
        if errors.iter().all(Option::is_none) {
            ready.push((home.queue_for(&good[idx[0]].entry.target), idx.clone()));
            continue;
        }
        let first = errors.iter().flatten().next().cloned().unwrap_or_default();
        stage_group(home, &good, idx, &errors, &format!("plan: {first}"), None, rep)?;
    }
    let appended = home.with_lock(|| {
        super::journal::recover(home, rep)?;
        for (q, idx) in &ready {
            let entries: Vec<Entry> = idx.iter().map(|&i| good[i].entry.clone()).collect();
            queue::append(home, q, Some(&session), &entries)?;
        }
        Ok(())
    });
    match appended {
        Ok(()) => {
            for (q, idx) in &ready {
                for &i in idx {
                    let mut rec = record(&good[i], "pending");
                    rec.queue = Some(home.show(q));
                    rep.record(&rec)?;
                }
            }
        }
        Err(e) if e.is_busy() => {
            for (q, idx) in &ready {
                let errs = vec![None; idx.len()];
                stage_group(home, &good, idx, &errs, &e.to_string(), Some(q.clone()), rep)?;
            }
        }
        Err(e) => return Err(e),
    }
    Ok(())
}

/// The per-entry errors of one target group (index-aligned with `idx`),
/// and each good entry's `base` filled from the current target.
fn validate_group(home: &Home, key: &TargetKey, good: &mut [Declared], idx: &[usize]) -> Vec<Option<String>> {
    let mut errors: Vec<Option<String>> = vec![None; idx.len()];
    let entries: Vec<Entry> = idx.iter().map(|&i| good[i].entry.clone()).collect();
    for (j, msg) in check::duplicates(home, &entries, None) {
        errors[j] = Some(msg);
    }
    let TargetKey::Path(path) = key else { return errors };
    if let Err(msg) = home.check_writable(path) {
        return vec![Some(msg); idx.len()];
    }
    let doc = match check::read_target(path, good[idx[0]].entry.target_text()) {
        Ok(Some(text)) => Doc::new(text, true),
        Ok(None) => Doc::new(String::new(), true),
        Err(msg) => return vec![Some(msg); idx.len()],
    };
    let outline = Lookup::new(&doc);
    for (j, &i) in idx.iter().enumerate() {
        let e = &mut good[i].entry;
        if errors[j].is_none() {
            errors[j] = check::against(&outline, e);
        }
        if e.op != Op::NoOp && e.base.is_none() {
            e.base = check::base_of(&outline, e);
        }
    }
    errors
}

fn stage_group(
    home: &Home,
    good: &[Declared],
    idx: &[usize],
    errors: &[Option<String>],
    summary: &str,
    queue: Option<PathBuf>,
    rep: &mut Reporter,
) -> Result<()> {
    let entries = idx
        .iter()
        .zip(errors)
        .map(|(&i, err)| {
            let v = good[i].entry.to_value();
            match err {
                Some(m) => staging::with_error(v, m),
                None => v,
            }
        })
        .collect();
    let st = Staged {
        source: good[idx[0]].entry.source.clone(),
        queue: Some(queue.unwrap_or_else(|| home.queue_for(&good[idx[0]].entry.target))),
        error: summary.to_string(),
        entries,
        raw: Vec::new(),
    };
    let path = staging::write(home, &st)?;
    for (&i, err) in idx.iter().zip(errors) {
        let msg = err.clone().unwrap_or_else(|| format!("staged with its file group: {summary}"));
        let mut rec = record(&good[i], "staged");
        rec.error = Some(msg.clone());
        rec.staging = Some(home.show(&path));
        // A refused target is hostile input, not a conflict.
        let exit = if msg.starts_with("refused:") { Exit::Failure } else { Exit::Negative };
        rep.failure(&format!("{}: {msg}", good[i].origin), &rec, exit)?;
    }
    Ok(())
}

fn record<'a>(d: &'a Declared, status: &'static str) -> Delta<'a> {
    Delta { origin: &d.origin, key: Key::of(&d.entry), status, queue: None, error: None, staging: None }
}
