//! `kb-memgate apply`: seed 003 "写入" for decisions decide made (and the
//! user answered where gated). Under the memory dir's lock, atomically:
//! write the note, move every note a merge or replace removes to
//! `archive/` (recoverable), update INDEX.md and the search index, and
//! append one audit line per change with the file's digest before and
//! after. A decision applied twice changes nothing (same content digest).
//! The changes of one decision are one journaled group
//! (kb::memgate::journal): a kill at any step is finished by the next
//! apply or `reindex`, which prints a `recovered` record.

use std::io::BufRead;

use serde_json::{json, Value};

use super::audit::{self, Line};
use super::candidate::Candidate;
use super::decide::{new_id, Decision};
use super::dense;
use super::gate;
use super::govern::Action;
use super::note::{file_digest, Note};
use super::store::{self, Loaded, Paths};
use super::{index_digest, index_md, journal};
use crate::error::{Context, Error, Exit, Result};
use crate::fs::{atomic, crash};
use crate::out::jsonl::{read_objects, Out};
use crate::text;
use crate::text::bert::Encoder;
use crate::{clock, lock};

/// What an answered decision asks apply to do.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// Write with this action.
    Write(Action),
    /// Write nothing; report this status.
    Nothing(&'static str),
    /// Gated and unanswered: hand the question back.
    Pending,
    /// Show old and new side by side, write nothing.
    Diff,
}

fn parse_action(s: &str) -> Result<Action> {
    Ok(match s {
        "new" => Action::New,
        "merge" => Action::Merge,
        "replace" => Action::Replace,
        "veto" => Action::Veto,
        "skip" => Action::Skip,
        other => return Err(Error::msg(format!("unknown action '{other}'"))),
    })
}

fn step(d: &Decision) -> Result<Step> {
    // The guard refused it at decide (super::refuse): nothing to write.
    if d.action == "refuse" {
        return Ok(Step::Nothing("refused"));
    }
    let action = parse_action(&d.action)?;
    if action == Action::Skip {
        return Ok(Step::Nothing("skipped"));
    }
    if d.gate == "silent" {
        return match action {
            Action::New => Ok(Step::Write(Action::New)),
            _ => Err(Error::msg(format!(
                "a {} decision is never silent (merge, replace and veto always ask the user)",
                d.action
            ))),
        };
    }
    if d.gate != "question" {
        return Err(Error::msg(format!("unknown gate '{}' (expected silent or question)", d.gate)));
    }
    let Some(answer) = d.answer.as_deref() else { return Ok(Step::Pending) };
    if !gate::answers(action).contains(&answer) {
        return Err(Error::msg(format!(
            "answer '{answer}' does not fit a {} question (expected one of: {})",
            d.action,
            gate::answers(action).join(", ")
        )));
    }
    Ok(match (action, answer) {
        (_, "cancel") => Step::Nothing("cancelled"),
        (Action::Veto, "keep_existing") => Step::Nothing("kept"),
        (Action::Veto, "replace") => Step::Write(Action::Replace),
        (_, "new_instead") => Step::Write(Action::New),
        (_, "show_diff") => Step::Diff,
        (a, _) => Step::Write(a),
    })
}

fn union(into: &mut Vec<String>, from: &[String]) {
    for x in from {
        if !into.iter().any(|y| text::canonical(y) == text::canonical(x)) {
            into.push(x.clone());
        }
    }
}

fn strength_rank(s: &str) -> u8 {
    match s {
        "must" => 3,
        "should" => 2,
        "may" => 1,
        _ => 0,
    }
}

/// Folds another memory's supporting fields into `base` (merge keeps the
/// more complete version and loses none of the other's evidence).
fn absorb(base: &mut Candidate, other: &Candidate) {
    union(&mut base.when_to_load, &other.when_to_load);
    base.when_to_load.truncate(3);
    union(&mut base.signals, &other.signals);
    union(&mut base.alternatives, &other.alternatives);
    union(&mut base.counter_signals, &other.counter_signals);
    union(&mut base.tags, &other.tags);
    union(&mut base.pointers, &other.pointers);
    if strength_rank(&other.recommendation.strength) > strength_rank(&base.recommendation.strength) {
        base.recommendation.strength = other.recommendation.strength.clone();
    }
}

/// The end state one decision calls for.
struct Plan {
    /// The note to write (or keep).
    note: Note,
    /// That note as it is now, if it exists.
    existing: Option<Loaded>,
    /// Notes to move to the archive, as they are now.
    archived: Vec<Loaded>,
    /// The audit source of this change: user | auto | user-confirmed.
    source: String,
}

impl Plan {
    fn note_changes(&self) -> bool {
        self.existing.as_ref().is_none_or(|e| e.note.content_digest() != self.note.content_digest())
    }
}

fn is_archived(paths: &Paths, id: &str) -> bool {
    std::fs::read_dir(&paths.archive).is_ok_and(|rd| {
        rd.filter_map(|e| e.ok()).any(|e| e.file_name().to_string_lossy().starts_with(&format!("{id}.")))
    })
}

fn plan(paths: &Paths, d: &Decision, action: Action, confirmed: bool, now: &str) -> Result<Plan> {
    let mut c = d.candidate.clone().ok_or_else(|| Error::msg("the decision carries no candidate"))?;
    if c.one_liner.trim().is_empty() {
        return Err(Error::msg("the candidate has an empty oneLiner"));
    }
    if confirmed {
        c.source = "user-confirmed".into();
    }
    let (id, archive_ids) = match action {
        Action::New => (new_id(paths, &c.one_liner)?, Vec::new()),
        _ => (
            d.note_id.clone().ok_or_else(|| Error::msg("the decision carries no note_id"))?,
            if action == Action::Replace && d.action == "veto" { d.targets.clone() } else { d.archive.clone() },
        ),
    };
    super::note::check_id(&id).map_err(Error::msg)?;
    for a in &archive_ids {
        super::note::check_id(a).map_err(Error::msg)?;
    }
    let mut archived = Vec::new();
    for a in &archive_ids {
        match store::read_note(paths, &super::note::file_name(a))? {
            Some(l) => {
                if let Some(want) = d.digests.get(a) {
                    if *want != l.note.content_digest() {
                        return Err(Error::msg(format!("{a} changed since decide; run decide again")));
                    }
                }
                archived.push(l);
            }
            None if is_archived(paths, a) => {}
            None => return Err(Error::msg(format!("{a} no longer exists in notes/; run decide again"))),
        }
    }
    let existing = store::read_note(paths, &super::note::file_name(&id))?;
    if existing.is_none() && action == Action::Merge && d.targets.contains(&id) {
        return Err(Error::msg(format!("{id} no longer exists in notes/; run decide again")));
    }
    let mut note = match &existing {
        Some(l) => l.note.clone(),
        None => Note {
            id: id.clone(),
            body: c.clone(),
            status: "active".into(),
            supersedes: Vec::new(),
            created_at: now.to_string(),
            updated_at: now.to_string(),
            session: String::new(),
        },
    };
    if action == Action::Merge {
        absorb(&mut note.body, &c);
        for l in &archived {
            absorb(&mut note.body, &l.note.body);
        }
    }
    if action != Action::New {
        union(&mut note.supersedes, &archive_ids);
    }
    note.updated_at = now.to_string();
    note.session = d.conversation_id.clone().unwrap_or_default();
    Ok(Plan { note, existing, archived, source: c.source })
}

fn audit_line(d: &Decision, event: &str, op: &str, source: &str, file: String, reason: String) -> Line {
    Line {
        event: event.into(),
        ts: String::new(),
        conversation_id: d.conversation_id.clone(),
        generation_id: d.generation_id.clone(),
        note_id: None,
        operation: op.into(),
        source: source.into(),
        file,
        reason,
        digest_before: None,
        digest_after: None,
        archived_to: None,
    }
}

/// How INDEX.md changes with a plan.
enum IndexChange {
    /// Append this row to the file whose digest state is `Known`.
    Append(String, index_digest::Known),
    /// Write the file whole with this text.
    Rewrite(String),
    /// Nothing to change.
    Same,
}

/// Executes a plan under the lock: note, archive, INDEX.md, search index,
/// audit, as one journaled group (kb::memgate::journal) that the next
/// apply or `reindex` finishes when a kill interrupts it. Returns the
/// files written and whether anything changed. A note new to the store
/// adds one INDEX.md row and one side-segment entry, so its cost does not
/// grow with the store.
fn execute(paths: &Paths, d: &Decision, action: Action, p: &Plan, now: &str) -> Result<(Vec<String>, bool)> {
    let fresh = p.existing.is_none() && p.archived.is_empty();
    // A new note and INDEX.md as apply left it: append its row without
    // reading or hashing the file (kb::memgate::index_digest).
    let known = if fresh { index_digest::load(paths).filter(|k| k.appendable) } else { None };
    let index_text = if known.is_some() { String::new() } else { store::read_index_md(paths)? };
    let removed: Vec<String> = p.archived.iter().map(|a| a.note.id.clone()).collect();
    let (change, index_before) = if known.is_some() || (fresh && index_md::appendable(&index_text)) {
        let k = known.unwrap_or_else(|| index_digest::Known::of_text(&index_text, true));
        let before = k.digest();
        (IndexChange::Append(index_md::render_row(&index_md::row(&p.note)), k), Some(before))
    } else {
        let mut rows =
            index_md::parse(&index_text).map_err(|e| Error::msg(format!("{e}; run 'kb-memgate reindex'")))?;
        index_md::update(&mut rows, &removed, &[&p.note]);
        let new_index = index_md::render(&rows);
        let before = (!index_text.is_empty()).then(|| file_digest(index_text.as_bytes()));
        (if new_index != index_text { IndexChange::Rewrite(new_index) } else { IndexChange::Same }, before)
    };
    let m0 = store::mtime_ns(&paths.notes);
    let source = p.source.clone();
    let reason = format!("{} ({})", action.as_str(), d.reason);
    let line = |event: &str, op: &str, file: String| {
        let mut l = audit_line(d, event, op, &source, file, reason.clone());
        l.ts = now.to_string();
        l
    };
    let mut group = journal::Group::default();
    let mut files = Vec::new();
    let staged = (|| -> Result<()> {
        if p.note_changes() {
            let bytes = p.note.render();
            let (event, op) = if p.existing.is_some() {
                ("memory_note_updated", "update")
            } else {
                ("memory_note_created", "create")
            };
            let mut l = line(event, op, paths.rel(&p.note.id));
            l.note_id = Some(p.note.id.clone());
            l.digest_before = p.existing.as_ref().map(|e| file_digest(&e.bytes));
            l.digest_after = Some(file_digest(bytes.as_bytes()));
            group.note(paths, &p.note.id, bytes.as_bytes(), l)?;
            files.push(paths.rel(&p.note.id));
        }
        for a in &p.archived {
            let digest = file_digest(&a.bytes);
            let name = format!("{}.{}.md", a.note.id, &digest[..12]);
            let mut l = line("memory_note_deleted", "delete", paths.rel(&a.note.id));
            l.note_id = Some(a.note.id.clone());
            l.digest_before = Some(digest);
            l.archived_to = Some(format!("memory/archive/{name}"));
            group.archive(paths, a, &name, l)?;
            files.push(format!("memory/archive/{name}"));
        }
        Ok(())
    })();
    if let Err(e) = staged {
        group.discard(paths);
        return Err(e);
    }
    if group.is_empty() && matches!(change, IndexChange::Same) {
        return Ok((files, false));
    }
    let index_line = line("memory_index_updated", "index", "memory/INDEX.md".into());
    let j = group.commit(paths, now, Some(p.note.id.clone()), index_before.clone(), index_line)?;
    let index_change = match change {
        IndexChange::Append(row, mut k) => {
            atomic::append_lines(&paths.index_md, &row)?;
            k.append(&row);
            index_digest::save(paths, &k);
            Some((index_before, k.digest()))
        }
        IndexChange::Rewrite(new_index) => {
            atomic::write(&paths.index_md, new_index.as_bytes())?;
            let k = index_digest::Known::of_text(&new_index, index_md::appendable(&new_index));
            index_digest::save(paths, &k);
            Some((index_before, k.digest()))
        }
        IndexChange::Same => None,
    };
    crash::at(crash::Step::MemgateIndex);
    if index_change.is_some() {
        files.push("memory/INDEX.md".into());
    }
    let put = store::read_note(paths, &super::note::file_name(&p.note.id))?.map(|l| l.entry());
    store::record_change(paths, m0, removed, put)?;
    crash::at(crash::Step::MemgateSearch);
    audit::append(paths, &j.lines(index_change))?;
    crash::at(crash::Step::MemgateAudit);
    journal::end(paths)?;
    Ok((files, true))
}

/// The memory dir, created if missing, to lock with the one lock
/// (`crate::lock` on `<dir>/.lock`).
pub fn lockable(paths: &Paths) -> Result<&std::path::Path> {
    std::fs::create_dir_all(&paths.dir).ctx(|| format!("creating {}", paths.dir.display()))?;
    Ok(&paths.dir)
}

/// Applies one decision; returns the records to print. With `encoder`,
/// the note written also gets its vector in the cache (kb::memgate::dense).
pub fn apply_one(paths: &Paths, d: &Decision, encoder: Option<&Encoder>) -> Result<Vec<Value>> {
    let c = d.candidate.clone().unwrap_or_default();
    let zh = text::mostly_cjk(&c.one_liner);
    let base = json!({"record": "result", "line": d.line, "action": d.action, "answer": d.answer});
    let with = |status: &str, extra: Value| {
        let mut r = base.clone();
        if let (Value::Object(m), Value::Object(e)) = (&mut r, extra) {
            m.insert("status".into(), Value::String(status.into()));
            m.extend(e);
        }
        r
    };
    match step(d)? {
        Step::Pending => {
            let mut rec = serde_json::to_value(d).map_err(|e| Error::msg(e.to_string()))?;
            if let Value::Object(m) = &mut rec {
                m.insert("status".into(), Value::String("pending".into()));
            }
            Ok(vec![rec])
        }
        Step::Nothing(status) => Ok(vec![with(status, json!({"note_id": null, "files": [], "message": ""}))]),
        Step::Diff => {
            let now = clock::format(clock::now()?);
            let p = plan(paths, d, parse_action(&d.action)?, true, &now)?;
            let before: serde_json::Map<String, Value> = p
                .existing
                .iter()
                .chain(&p.archived)
                .map(|l| (l.note.id.clone(), Value::String(String::from_utf8_lossy(&l.bytes).into_owned())))
                .collect();
            Ok(vec![json!({"record": "diff", "line": d.line, "action": d.action, "note_id": p.note.id,
                "before": before, "after": p.note.render(), "question": d.question})])
        }
        Step::Write(action) => {
            let confirmed = d.gate == "question";
            let lib = lockable(paths)?;
            let (recovered, note_id, files, changed) = lock::with_lock(lib, &lock::Options::default(), || {
                let recovered = journal::recover(paths)?;
                let now = clock::format(clock::now()?);
                let p = plan(paths, d, action, confirmed, &now)?;
                // Judged again as it would be written: a decision is an
                // input, which may have been edited since decide.
                if let Some((why, _)) = super::refuse::refusal(&p.note)? {
                    return Err(Error::msg(why));
                }
                let (files, changed) = execute(paths, d, action, &p, &now)?;
                if let Some(e) = encoder.filter(|_| changed && p.note_changes()) {
                    cache_vector(paths, e, &p.note.id);
                }
                Ok((recovered, p.note.id.clone(), files, changed))
            })?;
            let msg = gate::applied_message(action, &note_id, &c, &d.targets, zh);
            let status = if changed { "applied" } else { "unchanged" };
            let mut recs = Vec::new();
            if let Some(r) = recovered {
                recs.push(serde_json::to_value(r).map_err(|e| Error::msg(e.to_string()))?);
            }
            recs.push(with(
                status,
                json!({"applied_as": action.as_str(), "note_id": note_id, "files": files, "message": msg}),
            ));
            Ok(recs)
        }
    }
}

/// Adds a written note's vector to the encoder's cache. The note is
/// written and the group ended by then, so a failure here loses nothing:
/// it is said on stderr, and decide encodes the note until a reindex.
fn cache_vector(paths: &Paths, encoder: &Encoder, id: &str) {
    let done = store::read_note(paths, &super::note::file_name(id)).and_then(|l| match l {
        Some(l) => dense::append(paths, encoder, id, l.bytes.len() as u64, l.mtime_ns, &l.note.body.search_text()),
        None => Ok(()),
    });
    if let Err(e) = done {
        eprintln!("kb-memgate: {id}'s vector is not cached ({e}); decide encodes it until 'kb-memgate reindex'");
    }
}

/// Runs apply over a stream of decision records. Error records from decide
/// pass through; other records than decisions pass through untouched.
/// `model`: a sentence encoder's folder, loaded before anything is written.
pub fn run(paths: &Paths, model: Option<&std::path::Path>, reader: impl BufRead, out: &mut Out) -> Result<()> {
    let encoder = model.map(super::dense::load).transpose()?;
    for (line, rec) in read_objects(reader) {
        let Some(rec) = out.accept(rec)? else { continue };
        match rec.get("record").and_then(Value::as_str) {
            Some("decision") => {}
            Some("error") => {
                out.record(&rec)?;
                out.raise(Exit::Failure);
                continue;
            }
            Some(_) => {
                out.record(&rec)?;
                continue;
            }
            None => {
                out.line_error(line, "not a record (no \"record\" field)", None)?;
                continue;
            }
        }
        let d: Decision = match serde_json::from_value(Value::Object(rec)) {
            Ok(d) => d,
            Err(e) => {
                out.line_error(line, &format!("not a decision record: {e}"), None)?;
                continue;
            }
        };
        match apply_one(paths, &d, encoder.as_ref()) {
            Ok(recs) => {
                for r in recs {
                    out.record(&r)?;
                }
            }
            Err(e) => out.line_error(line, &e.to_string(), Some(&json!({"decision_line": d.line})))?,
        }
    }
    Ok(())
}
