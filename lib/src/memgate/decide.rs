//! `kb-memgate decide`: seed 003's 产候选 → 治理 → 门控 as a filter. One
//! `decision` record per input (one more per extra selected candidate or
//! uncovered prohibition), each with its action, gate, question, the
//! candidate, the judged neighbours and the one sentence for the main
//! conversation. Decide never writes.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::candidate::{self, Candidate};
use super::dense::Semantic;
use super::gate;
use super::govern::{self, Action};
use super::input::{self, Input};
use super::search::View;
use super::similarity;
use super::store::{self, Loaded, Paths};
use crate::error::Result;
use crate::out::jsonl::{read_objects, Out};
use crate::text;

/// The decision record (schemas/decision.schema.json); apply reads it back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Decision {
    /// Always "decision".
    pub record: String,
    /// The input line it answers.
    pub line: usize,
    /// auto | remember.
    pub mode: String,
    /// From the input, for the audit log and the Session field.
    pub conversation_id: Option<String>,
    /// From the input, for the audit log.
    pub generation_id: Option<String>,
    /// new | merge | replace | veto | skip.
    pub action: String,
    /// silent | question.
    pub gate: String,
    /// The questions JSON when gated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<Value>,
    /// high | low (new path), or n/a.
    pub reliability: String,
    /// Why reliability is low, or why nothing is remembered.
    #[serde(default)]
    pub reasons: Vec<String>,
    /// Governance's reason.
    pub reason: String,
    /// The note that will be written (new id or merge survivor).
    #[serde(default)]
    pub note_id: Option<String>,
    /// The notes acted on (merged, replaced, in conflict).
    #[serde(default)]
    pub targets: Vec<String>,
    /// The notes that leave notes/ for the archive when applied.
    #[serde(default)]
    pub archive: Vec<String>,
    /// Content digests of the targets at decide time.
    #[serde(default)]
    pub digests: BTreeMap<String, String>,
    /// The candidate.
    #[serde(default)]
    pub candidate: Option<Candidate>,
    /// The judged Top 5 neighbours.
    #[serde(default)]
    pub neighbours: Vec<Value>,
    /// The seed's one sentence for the main conversation ("" = silent).
    pub message: String,
    /// The user's answer to the question (set by the caller before apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// For a `refuse`: the guard's findings behind it (rule, severity,
    /// line, matched), as kb-guard reports them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Value>,
}

/// The id a new note for this one-liner gets: `MEM-` and the first hex
/// digits of its canonical digest, lengthened past any file that holds a
/// different one-liner. Stable: the same words give the same id.
pub fn new_id(paths: &Paths, one_liner: &str) -> Result<String> {
    let canon = text::canonical(one_liner);
    let hex = crate::doc::digest::sha256_hex(canon.as_bytes());
    for len in (10..=hex.len()).step_by(2) {
        let id = format!("MEM-{}", &hex[..len]);
        match store::read_note(paths, &super::note::file_name(&id)) {
            Ok(None) => return Ok(id),
            Ok(Some(l)) if l.note.canonical() == canon => return Ok(id),
            Ok(Some(_)) | Err(_) => continue,
        }
    }
    Ok(format!("MEM-{hex}"))
}

fn skip(line: usize, inp: &Input, reasons: Vec<String>) -> Decision {
    Decision {
        record: "decision".into(),
        line,
        mode: inp.mode.as_str().into(),
        conversation_id: inp.conversation_id.clone(),
        generation_id: inp.generation_id.clone(),
        action: "skip".into(),
        gate: "silent".into(),
        question: None,
        reliability: "n/a".into(),
        reasons,
        reason: "no candidate: nothing to remember".into(),
        note_id: None,
        targets: Vec::new(),
        archive: Vec::new(),
        digests: BTreeMap::new(),
        candidate: None,
        neighbours: Vec::new(),
        message: String::new(),
        answer: None,
        findings: Vec::new(),
    }
}

/// Decides one validated input against the notes behind `view`.
/// `semantic`: the sentence encoder and the notes' vectors, if configured.
pub fn decide_one(
    paths: &Paths,
    view: &View<'_>,
    semantic: Option<&Semantic>,
    line: usize,
    inp: &Input,
) -> Result<Vec<Decision>> {
    let claim_note = match inp.claim_id.as_deref().filter(|id| id.starts_with("MEM-")) {
        Some(id) => match store::read_note(paths, &super::note::file_name(id))? {
            Some(l) => Some(l),
            None => return Err(crate::Error::msg(format!("target_claim.id {id} names no note in memory/notes/"))),
        },
        None => None,
    };
    // "别存这个" / "No need to remember this": the user's word is final,
    // even when the rest of the text states a rule.
    if let Some(p) = super::cue::no_record(&inp.text) {
        return Ok(vec![skip(line, inp, vec![format!("the user asked not to remember this (\"{p}\")")])]);
    }
    let cands = candidate::build(inp);
    if cands.is_empty() {
        let why = if inp.text.trim().is_empty() {
            "input.user_input.text is empty"
        } else {
            "no preference, constraint or decision in the user's words"
        };
        let mut reasons = vec![why.to_string()];
        reasons.extend(inp.gaps().into_iter().map(String::from).filter(|g| g != why));
        return Ok(vec![skip(line, inp, reasons)]);
    }
    cands.into_iter().map(|c| decide_candidate(paths, view, semantic, line, inp, c, claim_note.as_ref())).collect()
}

fn decide_candidate(
    paths: &Paths,
    view: &View<'_>,
    semantic: Option<&Semantic>,
    line: usize,
    inp: &Input,
    c: Candidate,
    claim_note: Option<&Loaded>,
) -> Result<Decision> {
    // The guard first: what it calls dangerous is never stored, so it is
    // never governed against the notes either (super::refuse).
    let draft = super::note::Note {
        id: new_id(paths, &c.one_liner)?,
        body: c.clone(),
        status: "active".into(),
        supersedes: Vec::new(),
        created_at: String::new(),
        updated_at: String::new(),
        session: String::new(),
    };
    if let Some((why, findings)) = super::refuse::refusal(&draft)? {
        let mut d = skip(line, inp, Vec::new());
        d.action = "refuse".into();
        d.reason = why;
        d.candidate = Some(c);
        d.findings = findings;
        return Ok(d);
    }
    let asks = super::cue::asks(&inp.text).is_some();
    let q = similarity::query_features(&c.search_text(), &c.one_liner, asks);
    let g = govern::govern(&c, &q, view, semantic, paths, &inp.text, claim_note)?;
    let id = draft.id;
    let rel = gate::reliability(inp, &c);
    let (note_id, archive) = match g.action {
        Action::Merge => {
            let best = g.neighbours.iter().find(|n| n.id == g.targets[0]);
            let best_complete = best.map_or(0.0, |n| n.completeness);
            if c.completeness() > best_complete && !g.targets.contains(&id) {
                (Some(id), g.targets.clone())
            } else {
                (Some(g.targets[0].clone()), g.targets[1..].to_vec())
            }
        }
        Action::Replace | Action::Veto => (Some(id), g.targets.clone()),
        Action::New | Action::Skip => (Some(id), Vec::new()),
    };
    let gated = match g.action {
        Action::New => !rel.high,
        Action::Skip => false,
        _ => true,
    };
    let digests =
        g.neighbours.iter().filter(|n| g.targets.contains(&n.id)).map(|n| (n.id.clone(), n.digest.clone())).collect();
    let neighbours = g.neighbours.iter().map(|n| serde_json::to_value(n).unwrap_or(Value::Null)).collect();
    Ok(Decision {
        record: "decision".into(),
        line,
        mode: inp.mode.as_str().into(),
        conversation_id: inp.conversation_id.clone(),
        generation_id: inp.generation_id.clone(),
        action: g.action.as_str().into(),
        gate: if gated { "question" } else { "silent" }.into(),
        question: gated.then(|| gate::question(g.action, &c, gate::chinese(&inp.text, &c))),
        reliability: if g.action == Action::New {
            if rel.high {
                "high"
            } else {
                "low"
            }
        } else {
            "n/a"
        }
        .into(),
        reasons: if g.action == Action::New { rel.reasons } else { Vec::new() },
        reason: g.reason,
        message: gate::message(g.action, gated, &c, &g.targets, &inp.text),
        note_id,
        targets: g.targets,
        archive,
        digests,
        candidate: Some(c),
        neighbours,
        answer: None,
        findings: Vec::new(),
    })
}

/// Runs decide over a stream of input records. Bad lines become error
/// records and the run goes on. `model`: a sentence encoder's folder
/// (kb::memgate::dense), loaded once for the whole stream.
pub fn run(paths: &Paths, model: Option<&Path>, reader: impl BufRead, out: &mut Out) -> Result<()> {
    let index = store::open_index(paths)?;
    if index.stale {
        eprintln!("kb-memgate: the search index is missing or older than notes/; run 'kb-memgate reindex'");
    }
    let view =
        index.view().ok_or_else(|| crate::Error::msg("the search index is corrupted; run 'kb-memgate reindex'"))?;
    let semantic = model.map(|m| Semantic::open(paths, &view, m)).transpose()?;
    if let Some(s) = semantic.as_ref().filter(|s| s.encoded > 0) {
        eprintln!(
            "kb-memgate: {} notes have no cached vector and were encoded for this run; 'kb-memgate reindex' caches them",
            s.encoded
        );
    }
    for (line, rec) in read_objects(reader) {
        let Some(rec) = out.accept(rec)? else { continue };
        let inp = match input::parse(&rec) {
            Ok(i) => i,
            Err(m) => {
                out.line_error(line, &m, None)?;
                continue;
            }
        };
        match decide_one(paths, &view, semantic.as_ref(), line, &inp) {
            Ok(ds) => {
                for d in ds {
                    out.record(&d)?;
                }
            }
            Err(e) => out.line_error(line, &e.to_string(), Some(&json!({"conversation_id": inp.conversation_id})))?,
        }
    }
    Ok(())
}
