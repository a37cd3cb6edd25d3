//! `kb-lastword validate FILE` and `resolve FILE` (seed 004 §8): check a
//! delta file's syntax and key uniqueness with precise places; for a staged
//! file, also check it against the targets, show what still conflicts, and
//! move its entries back to their pending file once nothing does.

use std::path::{Path, PathBuf};

use super::check::{self, TargetKey};
use super::delta::{self, Op};
use super::edit::{Doc, Found, Lookup};
use super::home::Home;
use super::queue;
use super::records::{Conflict, Key, Resolved, Validation};
use super::report::Reporter;
use crate::error::{Context, Error, Exit, Result};

/// Reports every problem of a delta file; `Ok(true)` when it is valid.
pub fn validate(home: &Home, path: &Path, rep: &mut Reporter) -> Result<bool> {
    let shown = home.show(path);
    let text = delta::read_input(Some(path))?;
    let (file, bad, top) = delta::parse_text(&text);
    let mut problems = 0;
    for p in &top {
        rep.problem(&shown, p.entry, &p.field, &p.message, Exit::Negative)?;
        problems += 1;
    }
    for b in &bad {
        rep.problem(&shown, Some(b.index), &b.problem.field, &b.problem.message, Exit::Negative)?;
        problems += 1;
    }
    // Indexes of parsed entries in the file skip the bad ones.
    let rejected: std::collections::HashSet<usize> = bad.iter().map(|b| b.index).collect();
    let index: Vec<usize> = (0..file.entries.len() + bad.len()).filter(|i| !rejected.contains(i)).collect();
    for (j, msg) in check::duplicates(home, &file.entries, file.source.as_deref()) {
        let i = index[j];
        rep.problem(&shown, Some(i), &format!("entries[{i}].key"), &msg, Exit::Negative)?;
        problems += 1;
    }
    rep.record(&Validation { file: &shown, entries: file.entries.len() + bad.len(), problems, valid: problems == 0 })?;
    Ok(problems == 0)
}

/// Finds a file named on the command line: as given, else in staging.
pub fn locate(home: &Home, name: &str) -> Result<PathBuf> {
    let p = home.resolve(name);
    if p.is_file() {
        return Ok(p);
    }
    for dir in [home.staging(), home.lastword.clone(), home.project_dir()] {
        let c = dir.join(name);
        if c.is_file() {
            return Ok(c);
        }
    }
    Err(Error::msg(format!("no such delta file: {name} (looked here and in {})", home.show(&home.staging()))))
}

/// Re-validates a staged (or pending) file against its targets. With no
/// problem left, a staged file's entries go back to their pending file and
/// the staged file is removed. `force` drops each entry's `base`, accepting
/// a person's edit of the section as the new starting point.
pub fn resolve(home: &Home, path: &Path, force: bool, rep: &mut Reporter) -> Result<()> {
    if !validate(home, path, rep)? {
        return Ok(());
    }
    let shown = home.show(path);
    let text = std::fs::read_to_string(path).ctx(|| format!("reading {}", path.display()))?;
    let (mut file, _, _) = delta::parse_text(&text);
    let mut conflicts = 0;
    for (i, e) in file.entries.iter_mut().enumerate() {
        e.error = None;
        if force {
            e.base = None;
        }
        let TargetKey::Path(target) = check::target_key(home, e) else { continue };
        // A refused target is neither read nor moved back.
        if let Err(m) = home.check_writable(&target) {
            conflicts += 1;
            rep.failure(&format!("{shown}: entries[{i}]: {m}"), &conflict(&shown, i, e, &m, None), Exit::Failure)?;
            continue;
        }
        let doc = match check::read_target(&target, e.target_text()) {
            Ok(t) => Doc::new(t.unwrap_or_default(), true),
            Err(m) => {
                conflicts += 1;
                rep.failure(&format!("{shown}: entries[{i}]: {m}"), &conflict(&shown, i, e, &m, None), Exit::Negative)?;
                continue;
            }
        };
        let msg = check::against(&Lookup::new(&doc), e).or_else(|| {
            let drift = e.op != Op::NoOp && e.base.as_deref().is_some_and(|b| !check::base_matches(&doc, e, b));
            drift.then(|| format!("section \"{}\" changed since plan; --force applies the entry over it", e.heading))
        });
        if let Some(m) = msg {
            conflicts += 1;
            let current = match doc.find(&e.heading, e.level) {
                Found::One(h) => Some(doc.text[doc.body(h).0..doc.body(h).1].to_string()),
                _ => None,
            };
            rep.failure(&format!("{shown}: entries[{i}]: {m}"), &conflict(&shown, i, e, &m, current), Exit::Negative)?;
        }
    }
    let in_staging = path.parent().is_some_and(|d| d == home.staging());
    if conflicts > 0 || !in_staging {
        return Ok(());
    }
    home.with_lock(|| {
        super::journal::recover(home, rep)?;
        let mut by_queue: Vec<(PathBuf, Vec<delta::Entry>)> = Vec::new();
        for e in &file.entries {
            let q = home.queue_for(&e.target);
            match by_queue.iter_mut().find(|(p, _)| *p == q) {
                Some((_, v)) => v.push(e.clone()),
                None => by_queue.push((q, vec![e.clone()])),
            }
        }
        for (q, entries) in &by_queue {
            queue::append(home, q, file.source.as_deref(), entries)?;
            rep.record(&Resolved { file: &shown, queue: home.show(q), entries: entries.len() })?;
        }
        std::fs::remove_file(path).ctx(|| format!("removing {}", path.display()))
    })
}

fn conflict<'a>(file: &'a str, i: usize, e: &'a delta::Entry, msg: &'a str, current: Option<String>) -> Conflict<'a> {
    Conflict { file, entry: i, key: Key::of(e), message: msg, current, content: e.content.as_deref() }
}
