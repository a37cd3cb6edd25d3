//! `kb-lastword apply` (seed 004 §6 step 4): read the pending files, edit
//! each target's Markdown in one pass, write it atomically under the lock,
//! then drop the applied entries from the pending file. Entries that cannot
//! apply (ambiguous heading, a section changed since plan by a person or
//! another session, a target that is a directory or binary) are staged
//! with their error; URL targets stay pending. Entries apply in the order queued, each on the
//! text the ones before it left (like one plan + apply per entry).
//! Re-applying is idempotent: an entry whose result is already in the file
//! changes nothing.

use std::path::Path;

use serde::Serialize;

use super::check::{self, TargetKey};
use super::delta::{Entry, File, Op, Target};
use super::edit::{Doc, Found};
use super::home::Home;
use super::journal::{self, Group};
use super::records::{Applied, FileError, Key};
use super::report::Reporter;
use super::staging::{self, Staged};
use super::{outline, queue};
use crate::error::{Exit, Result};

/// What became of one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The file changed.
    Applied,
    /// The heading was missing: update or clear added it at the end.
    Created,
    /// The file already said so (no-op, re-apply).
    Unchanged,
    /// A delete of a heading the file does not have: what the entry
    /// declares is already true.
    Absent,
    /// It cannot apply; staged with this message.
    Failed(String),
}

impl Outcome {
    /// The record's status and note for an entry that was not staged.
    fn status(&self, e: &Entry) -> (&'static str, Option<String>) {
        match self {
            Outcome::Applied => ("applied", None),
            Outcome::Created => {
                ("applied", Some(format!("heading \"{}\" was not in {}: added at the end", e.heading, e.target_text())))
            }
            Outcome::Unchanged => ("unchanged", None),
            Outcome::Absent => {
                ("unchanged", Some(format!("no heading \"{}\" in {}: nothing to delete", e.heading, e.target_text())))
            }
            Outcome::Failed(_) => ("staged", None),
        }
    }
}

/// Applies `entries` in order to a Markdown text: each sees the text the
/// ones before it left, exactly as if they were planned and applied one at
/// a time. The outline is updated incrementally; if a fresh parse
/// disagrees at the end (an inserted body changed how the text after it
/// parses), the whole run is redone with a full re-parse after every
/// entry, which defines the result. When the text comes out as it went in,
/// no entry reports a change (a re-applied delta whose entries undo and
/// redo each other, like a parent's update and its child's, is unchanged).
pub fn apply_entries(text: &str, entries: &[&Entry]) -> (String, Vec<Outcome>) {
    let start = Doc::new(text.to_string(), false);
    let (mut doc, mut outcomes) = run_entries(&start, entries);
    if !doc.consistent() {
        let mut start = start;
        start.exhaustive = true;
        (doc, outcomes) = run_entries(&start, entries);
    }
    if doc.text == text {
        for o in &mut outcomes {
            if matches!(o, Outcome::Applied | Outcome::Created) {
                *o = Outcome::Unchanged;
            }
        }
    }
    (doc.text, outcomes)
}

fn run_entries(start: &Doc, entries: &[&Entry]) -> (Doc, Vec<Outcome>) {
    let mut doc = start.clone();
    let mut changed: Vec<usize> = Vec::new();
    let mut outcomes = Vec::with_capacity(entries.len());
    for k in 0..entries.len() {
        let o = apply_one(&mut doc, start, entries, &changed, k);
        if matches!(o, Outcome::Applied | Outcome::Created) {
            changed.push(k);
        }
        outcomes.push(o);
    }
    (doc, outcomes)
}

fn apply_one(doc: &mut Doc, start: &Doc, entries: &[&Entry], changed: &[usize], k: usize) -> Outcome {
    let e = entries[k];
    if e.op == Op::NoOp {
        return Outcome::Unchanged;
    }
    let found = doc.find(&e.heading, e.level);
    if let Found::Many(lines) = &found {
        return Outcome::Failed(check::ambiguous(e, lines));
    }
    let level = match &found {
        Found::One(i) => doc.heads[*i].level,
        _ => e.level.unwrap_or(2),
    };
    if let Some(m) = check::escaping_heading(e, level) {
        return Outcome::Failed(m);
    }
    if found == Found::Missing && e.op != Op::Delete && !writable_heading(&e.heading) {
        return Outcome::Failed(format!(
            "heading \"{}\" cannot be written as an ATX heading that reads back the same",
            e.heading
        ));
    }
    if as_planned(doc, start, entries, changed, k) {
        return match (edit(doc, e, &found), &found) {
            (true, Found::Missing) => Outcome::Created,
            (true, _) => Outcome::Applied,
            (false, Found::Missing) if e.op == Op::Delete => Outcome::Absent,
            (false, _) => Outcome::Unchanged,
        };
    }
    // The section is not what the entry was planned against: fine only if
    // the entry's result is already there (a re-apply after a crash).
    let mut trial = doc.clone();
    if !edit(&mut trial, e, &found) {
        return Outcome::Unchanged;
    }
    Outcome::Failed(format!(
        "section \"{}\" of {} changed since the entry was planned (by a person, or by another session's entry); \
         check it, then `kb-lastword resolve --force FILE` applies the entry over the current text",
        e.heading,
        e.target_text()
    ))
}

/// Whether entry `k`'s section is still the one it was planned against
/// (its `base`), counting only changes made by someone else: a person
/// before this run, or an entry of another session earlier in this run.
/// Entries of one session were planned together against one text, so the
/// changes they make to each other's sections (a child's update inside its
/// parent, a parent's update removing its child) are the composition the
/// session declared, not a conflict.
fn as_planned(doc: &Doc, start: &Doc, entries: &[&Entry], changed: &[usize], k: usize) -> bool {
    let e = entries[k];
    let Some(base) = e.base.as_deref() else { return true };
    if check::base_matches(doc, e, base) {
        return true;
    }
    if !check::base_matches(start, e, base) {
        return false;
    }
    let others: Vec<&Entry> = changed.iter().map(|&j| entries[j]).filter(|o| o.source != e.source).collect();
    if others.is_empty() {
        return true;
    }
    // Replay only the other sessions' changes on the text as read.
    let mut replay = start.clone();
    for o in others {
        let found = replay.find(&o.heading, o.level);
        if !matches!(found, Found::Many(_)) {
            edit(&mut replay, o, &found);
        }
    }
    check::base_matches(&replay, e, base)
}

fn edit(doc: &mut Doc, e: &Entry, found: &Found) -> bool {
    let content = e.content.as_deref().unwrap_or("");
    let level = e.level.unwrap_or(2);
    match (e.op, found) {
        (Op::Update, Found::One(i)) => doc.update(*i, content),
        (Op::Clear, Found::One(i)) => doc.clear(*i),
        (Op::Delete, Found::One(i)) => doc.delete(*i),
        (Op::Update | Op::Clear, Found::Missing) => doc.append(&e.heading, level, content),
        _ => false,
    }
}

fn writable_heading(text: &str) -> bool {
    let line = format!("## {text}{}\n", if text.ends_with('#') { " #" } else { "" });
    matches!(outline::fragment_headings(&line, 0).as_slice(), [h] if h.text == text)
}

/// What `apply` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Print a unified diff and change nothing.
    pub dry_run: bool,
    /// Only entries whose target is this file (name or path).
    pub file: Option<String>,
}

/// Applies every pending file. Records one `result` per entry.
pub fn apply(home: &Home, opts: &Options, rep: &mut Reporter) -> Result<()> {
    if opts.dry_run {
        return run(home, opts, rep);
    }
    home.with_lock(|| run(home, opts, rep))
}

fn run(home: &Home, opts: &Options, rep: &mut Reporter) -> Result<()> {
    if !opts.dry_run {
        journal::recover(home, rep)?;
    }
    for q in home.queues()? {
        apply_queue(home, &q, opts, rep)?;
    }
    Ok(())
}

fn selected(home: &Home, e: &Entry, file: Option<&str>) -> bool {
    let Some(f) = file else { return true };
    let t = e.target_text();
    t == f
        || Path::new(t).file_name().is_some_and(|n| n == f)
        || matches!(&e.target, Target::Path(p) if home.resolve(p) == home.resolve(f))
}

fn apply_queue(home: &Home, qpath: &Path, opts: &Options, rep: &mut Reporter) -> Result<()> {
    let q = queue::read(qpath)?;
    // Every file this apply changes goes in place as one journaled group
    //: targets, then staging files, the pending file last.
    let mut group = Group::default();
    let result = decide(home, qpath, &q, opts, &mut group, rep);
    match result {
        Ok(recs) if !opts.dry_run => {
            group.commit(home)?;
            emit(recs, rep)
        }
        Ok(_) => {
            group.discard();
            Ok(())
        }
        Err(e) => {
            group.discard();
            Err(e)
        }
    }
}

/// A record `apply` prints: about a queue file, or one of its entries.
#[derive(Serialize)]
#[serde(untagged)]
enum Printed {
    Error(FileError),
    Result(Applied),
}

/// One record to print once the group is in place: the record, its
/// failure message (None: not a failure) and the exit it raises.
type Rec = (Printed, Option<String>, Exit);

fn emit(recs: Vec<Rec>, rep: &mut Reporter) -> Result<()> {
    for (r, failure, exit) in recs {
        match failure {
            Some(m) => rep.failure(&m, &r, exit)?,
            None => rep.record(&r)?,
        }
    }
    Ok(())
}

/// Works out what applying one pending file does: stages every changed
/// file into `group` and returns the records to print after the commit.
fn decide(
    home: &Home,
    qpath: &Path,
    q: &queue::Queue,
    opts: &Options,
    group: &mut Group,
    rep: &mut Reporter,
) -> Result<Vec<Rec>> {
    let qshow = home.show(qpath);
    let mut out: Vec<Rec> = Vec::new();
    if !opts.dry_run {
        if let Some(st) = queue::unreadable(home, qpath, q) {
            let (path, bytes) = staging::prepare(home, &st)?;
            group.replace(&path, &bytes)?;
            for p in q.problems.iter().chain(q.bad.iter().map(|b| &b.problem)) {
                let rec = FileError {
                    file: qshow.clone(),
                    entry: p.entry,
                    field: p.field.clone(),
                    message: p.message.clone(),
                    staging: Some(home.show(&path)),
                };
                out.push((Printed::Error(rec), Some(format!("{qshow}: {p}")), Exit::Failure));
            }
        }
    }
    if !q.problems.is_empty() {
        if !opts.dry_run {
            group.remove(qpath)?;
        }
        return Ok(out);
    }
    let entries = &q.file.entries;
    let mut keep = vec![true; entries.len()];
    let mut staged: Vec<(usize, String)> = Vec::new();
    let mut results: Vec<(usize, &'static str, Option<String>)> = Vec::new();
    let mut groups: Vec<(TargetKey, Vec<usize>)> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if !selected(home, e, opts.file.as_deref()) {
            continue;
        }
        if let Target::Url(_) = e.target {
            results.push((
                i,
                "pending",
                Some("url targets (remote knowledge bases) are not applied yet; kept pending".into()),
            ));
            continue;
        }
        let k = check::target_key(home, e);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(i),
            None => groups.push((k, vec![i])),
        }
    }
    for (key, idx) in &groups {
        let TargetKey::Path(path) = key else { continue };
        // The lexical path, checked against the configured knowledge files;
        // never canonicalised, which would follow a planted link.
        let outcome =
            home.check_queue_target(qpath, path).and_then(|()| target(home, path, entries, idx, opts, group, rep));
        match outcome {
            Ok(outs) => {
                for (&i, o) in idx.iter().zip(outs) {
                    match o {
                        Outcome::Failed(m) => staged.push((i, m)),
                        o => {
                            let (status, note) = o.status(&entries[i]);
                            results.push((i, status, note));
                        }
                    }
                    keep[i] = false;
                }
            }
            Err(m) => {
                for &i in idx {
                    staged.push((i, m.clone()));
                    keep[i] = false;
                }
            }
        }
    }
    let staging = if staged.is_empty() || opts.dry_run {
        None
    } else {
        let st = Staged {
            source: q.file.source.clone(),
            queue: Some(qpath.to_path_buf()),
            error: format!("apply: {}", staged[0].1),
            entries: staged.iter().map(|(i, m)| staging::with_error(entries[*i].to_value(), m)).collect(),
            raw: Vec::new(),
        };
        let (path, bytes) = staging::prepare(home, &st)?;
        group.replace(&path, &bytes)?;
        Some(path)
    };
    if !opts.dry_run {
        let rest = File {
            source: q.file.source.clone(),
            extra: Default::default(),
            entries: entries.iter().zip(&keep).filter(|(_, k)| **k).map(|(e, _)| e.clone()).collect(),
        };
        if rest.entries.len() != entries.len() || !q.bad.is_empty() {
            match queue::render(&rest)? {
                Some(bytes) => group.replace(qpath, &bytes)?,
                None => group.remove(qpath)?,
            }
        }
    }
    let mut all: Vec<(usize, Applied, Option<String>)> =
        results.into_iter().map(|(i, s, note)| (i, record(&qshow, i, &entries[i], s), note)).collect();
    for (i, m) in staged {
        let mut r = record(&qshow, i, &entries[i], if opts.dry_run { "would-stage" } else { "staged" });
        r.error = Some(m.clone());
        r.staging = staging.as_ref().map(|p| home.show(p));
        all.push((i, r, Some(m)));
    }
    all.sort_by_key(|(i, _, _)| *i);
    for (_, mut r, note) in all {
        if r.status.contains("stage") {
            // A refused target is hostile input, not a conflict.
            let exit =
                if note.as_deref().is_some_and(|n| n.starts_with("refused:")) { Exit::Failure } else { Exit::Negative };
            let msg = format!("{qshow}: entries[{}]: {}", r.entry, note.unwrap_or_default());
            if opts.dry_run {
                // The diff owns stdout in a dry run; problems go to stderr only.
                eprintln!("kb-lastword: would stage {}", crate::out::printable(&msg, false));
                rep.raise(exit);
            } else {
                out.push((Printed::Result(r), Some(msg), exit));
            }
        } else {
            r.note = note;
            if !opts.dry_run {
                out.push((Printed::Result(r), None, Exit::Success));
            }
        }
    }
    Ok(out)
}

/// Applies one target's entries and stages (or diffs) the result; an
/// error message when the target cannot be edited or written at all.
fn target(
    home: &Home,
    path: &Path,
    entries: &[Entry],
    idx: &[usize],
    opts: &Options,
    group: &mut Group,
    rep: &mut Reporter,
) -> std::result::Result<Vec<Outcome>, String> {
    let old = check::read_target(path, entries[idx[0]].target_text())?;
    let list: Vec<&Entry> = idx.iter().map(|&i| &entries[i]).collect();
    let text = old.clone().unwrap_or_default();
    let (new, outs) = apply_entries(&text, &list);
    let changed = new != text;
    if opts.dry_run {
        if changed {
            let shown = home.show(path);
            let d = super::diff::unified(&text, &new, &shown);
            rep.text(&d).map_err(|e| e.to_string())?;
        }
        return Ok(outs);
    }
    if changed {
        group.replace(path, new.as_bytes()).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(outs)
}

fn record(queue: &str, i: usize, e: &Entry, status: &'static str) -> Applied {
    Applied { queue: queue.into(), entry: i, key: Key::of(e), status, error: None, staging: None, note: None }
}
