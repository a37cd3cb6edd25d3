//! kb-memgate: every branch of seed 003 run through the real binary on real
//! files (silent new, gated new, merge, replace, veto, prohibition
//! candidates, missing evidence, selected candidates, Chinese input), the
//! apply side (notes, INDEX.md, archive, audit), bad input, reindex and
//! concurrent applies.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::util::{golden, records, Lib};

pub(crate) const MEM: &str = ".agents/.lingxi/memory";

pub(crate) fn mem(lib: &Lib, rel: &str) -> PathBuf {
    lib.root().join(MEM).join(rel)
}

pub(crate) fn read(lib: &Lib, rel: &str) -> String {
    std::fs::read_to_string(mem(lib, rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
}

fn audit(lib: &Lib) -> Vec<Value> {
    let p = lib.root().join(".agents/.lingxi/workspace/audit.log");
    std::fs::read_to_string(p).map(|t| records(t.as_bytes())).unwrap_or_default()
}

pub(crate) fn notes(lib: &Lib) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(mem(lib, "notes"))
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// An input record: the text with one evidence span over all of it.
pub(crate) fn said(mode: &str, text: &str) -> Value {
    let n = text.chars().count();
    let mut v = json!({"mode": mode, "conversation_id": "conv-1", "generation_id": "gen-1",
        "input": {"user_input": {"text": text, "evidence_spans": [{"start": 0, "end": n}]},
                  "target_claim": {"id": "claim-1", "digest": "what the user settled"}}});
    if mode == "auto" {
        v["confidence"] = json!(0.9);
    }
    v
}

pub(crate) fn lines(vals: &[Value]) -> String {
    vals.iter().map(|v| format!("{v}\n")).collect()
}

#[track_caller]
pub(crate) fn decide(lib: &Lib, inputs: &[Value]) -> Vec<Value> {
    let out = lib.cmd("kb-memgate").arg("decide").write_stdin(lines(inputs)).assert().success();
    records(&out.get_output().stdout)
}

#[track_caller]
pub(crate) fn apply(lib: &Lib, decisions: &[Value]) -> Vec<Value> {
    let out = lib.cmd("kb-memgate").arg("apply").write_stdin(lines(decisions)).assert().success();
    records(&out.get_output().stdout)
}

pub(crate) fn answered(d: &Value, answer: &str) -> Value {
    let mut d = d.clone();
    d["answer"] = json!(answer);
    d
}

/// Writes one note silently and returns its id.
pub(crate) fn remember(lib: &Lib, text: &str) -> String {
    let d = decide(lib, &[said("remember", text)]);
    assert_eq!((d[0]["action"].as_str(), d[0]["gate"].as_str()), (Some("new"), Some("silent")), "{d:?}");
    let r = apply(lib, &d);
    assert_eq!(r[0]["status"], "applied");
    r[0]["note_id"].as_str().unwrap().to_string()
}

#[test]
fn silent_new_writes_note_index_and_audit() {
    let lib = Lib::project();
    let d = decide(&lib, &[said("auto", "Never use var in this project; use let or const.")]);
    assert_eq!(d.len(), 1);
    let d0 = &d[0];
    assert_eq!(d0["record"], "decision");
    assert_eq!(d0["action"], "new");
    assert_eq!(d0["gate"], "silent");
    assert_eq!(d0["reliability"], "high");
    assert!(d0.get("question").is_none());
    assert_eq!(d0["candidate"]["kind"], "constraint");
    assert_eq!(d0["candidate"]["recommendation"]["strength"], "must");
    assert_eq!(d0["candidate"]["source"], "auto");
    assert_eq!(d0["message"], "Remembered: Never use var in this project; use let or const.");
    assert!(notes(&lib).is_empty(), "decide never writes");

    let r = apply(&lib, &d);
    let id = d0["note_id"].as_str().unwrap();
    assert_eq!(r[0]["status"], "applied");
    assert_eq!(r[0]["note_id"], id);
    assert_eq!(notes(&lib), [format!("{id}.md")]);
    golden("kb-memgate/silent_new.note.md", &read(&lib, &format!("notes/{id}.md")));
    golden("kb-memgate/silent_new.INDEX.md", &read(&lib, "INDEX.md"));
    let a = audit(&lib);
    assert_eq!(a.len(), 2);
    assert_eq!(a[0]["event"], "memory_note_created");
    assert_eq!(a[0]["operation"], "create");
    assert_eq!(a[0]["note_id"], id);
    assert_eq!(a[0]["source"], "auto");
    assert_eq!(a[0]["conversation_id"], "conv-1");
    assert_eq!(a[0]["generation_id"], "gen-1");
    assert_eq!(a[0]["file"], format!("memory/notes/{id}.md"));
    assert_eq!(a[0]["ts"], crate::util::NOW);
    assert_eq!(a[1]["event"], "memory_index_updated");
    assert!(read(&lib, "INDEX.md").lines().nth(2).unwrap().starts_with(
        "| Id | Kind | Title | When to load | Status | Strength | Scope | Supersedes | CreatedAt | UpdatedAt | Source | Session | File |"
    ));

    // The same decision again changes nothing, not even the audit log.
    let r = apply(&lib, &d);
    assert_eq!(r[0]["status"], "unchanged");
    assert_eq!(r[0]["files"], json!([]));
    assert_eq!(audit(&lib).len(), 2);
}

#[test]
fn hedged_new_is_gated_and_waits_for_an_answer() {
    let lib = Lib::project();
    for (text, hedge) in [
        ("Maybe use pnpm for installs.", "maybe"),
        ("可能用 pnpm 安装依赖更好", "可能"),
        ("也许以后都用 tabs 缩进", "也许"),
        ("估计用 pnpm 会快一点", "估计"),
    ] {
        let d = decide(&lib, &[said("remember", text)]);
        assert_eq!(d[0]["action"], "new", "{text}");
        assert_eq!(d[0]["gate"], "question", "{text}");
        assert_eq!(d[0]["reliability"], "low");
        assert_eq!(d[0]["reasons"][0], format!("hedge word \"{hedge}\""));
        assert_eq!(d[0]["question"]["tool"], "questions");
        // asked in the user's language.
        let options = match hedge {
            "maybe" => json!([{"label": "Yes, save it", "value": "confirm"}, {"label": "Cancel", "value": "cancel"}]),
            _ => json!([{"label": "确认写入", "value": "confirm"}, {"label": "取消", "value": "cancel"}]),
        };
        assert_eq!(d[0]["question"]["parameters"]["options"], options, "{text}");
    }
    let d = decide(&lib, &[said("remember", "可能用 pnpm 安装依赖更好")]);
    assert_eq!(d[0]["message"], "需在记忆库对话中确认：NEW「可能用 pnpm 安装依赖更好」");
    // Unanswered: handed back with its question, nothing written.
    let r = apply(&lib, &d);
    assert_eq!(r[0]["record"], "decision");
    assert_eq!(r[0]["status"], "pending");
    assert_eq!(r[0]["question"], d[0]["question"]);
    assert!(notes(&lib).is_empty());
    // Cancelled: nothing written.
    assert_eq!(apply(&lib, &[answered(&d[0], "cancel")])[0]["status"], "cancelled");
    assert!(notes(&lib).is_empty());
    // Confirmed: written, Source says the user confirmed it.
    let r = apply(&lib, &[answered(&d[0], "confirm")]);
    assert_eq!(r[0]["status"], "applied");
    assert_eq!(r[0]["message"], "已记下：可能用 pnpm 安装依赖更好");
    let note = read(&lib, &format!("notes/{}.md", r[0]["note_id"].as_str().unwrap()));
    assert!(note.contains("- Source: user-confirmed\n"), "{note}");
    assert_eq!(audit(&lib)[0]["source"], "user-confirmed");
}

#[test]
fn missing_evidence_in_auto_never_writes_silently() {
    let lib = Lib::project();
    let no_spans = json!({"mode": "auto", "confidence": 0.95,
        "input": {"user_input": {"text": "Always run cargo fmt before committing.", "evidence_spans": []},
                  "target_claim": {"id": "c", "digest": "fmt"}}});
    let no_conf = json!({"mode": "auto",
        "input": {"user_input": {"text": "Always run cargo fmt.", "evidence_spans": [{"start": 0, "end": 21}]}}});
    let empty =
        json!({"mode": "auto", "confidence": 0.9, "input": {"user_input": {"text": "  ", "evidence_spans": []}}});
    let d = decide(&lib, &[no_spans, no_conf, empty]);
    assert_eq!(d.len(), 3);
    assert_eq!((d[0]["action"].as_str(), d[0]["gate"].as_str()), (Some("new"), Some("question")));
    assert!(d[0]["reasons"].as_array().unwrap().contains(&json!("input.user_input.evidence_spans is empty")));
    assert_eq!(d[1]["gate"], "question");
    let reasons = d[1]["reasons"].as_array().unwrap();
    for gap in [
        "input.target_claim.id is missing",
        "input.target_claim.digest is missing",
        "confidence is missing (required in auto mode)",
    ] {
        assert!(reasons.contains(&json!(gap)), "{reasons:?}");
    }
    assert_eq!(d[2]["action"], "skip");
    assert_eq!(d[2]["gate"], "silent");
    assert_eq!(d[2]["message"], "");
    let r = apply(&lib, &d);
    assert_eq!(r.iter().map(|r| r["status"].as_str().unwrap()).collect::<Vec<_>>(), ["pending", "pending", "skipped"]);
    assert!(notes(&lib).is_empty());
    assert!(audit(&lib).is_empty());
}

#[test]
fn merge_is_gated_with_the_seeds_question_in_english_and_folds_into_the_note() {
    let lib = Lib::project();
    let id = remember(&lib, "Never use var in this project; use let or const.");
    let d = decide(&lib, &[said("remember", "Do not use var in this project, use let or const.")]);
    let d0 = &d[0];
    assert_eq!(d0["action"], "merge");
    assert_eq!(d0["gate"], "question");
    assert_eq!(d0["note_id"], id.as_str());
    assert_eq!(d0["targets"], json!([id]));
    assert_eq!(
        d0["question"],
        json!({"tool": "questions", "parameters": {
        "question": "Proposed change to memory: MERGE. Go ahead?",
        "options": [
            {"label": "Yes, go ahead", "value": "confirm"},
            {"label": "Cancel", "value": "cancel"},
            {"label": "Add as a new note instead", "value": "new_instead"},
            {"label": "Show the difference", "value": "show_diff"}]}})
    );
    let n = &d0["neighbours"][0];
    assert_eq!(n["id"], id.as_str());
    assert_eq!(
        (n["same_scenario"].as_bool(), n["same_conclusion"].as_bool(), n["conflict"].as_bool()),
        (Some(true), Some(true), Some(false))
    );
    assert!(n["score"].as_f64().unwrap() > 0.5, "{n}");
    assert_eq!(d0["message"], format!(
        "Needs confirmation in the memory dialog: MERGE \"Do not use var in this project, use let or const\" into {id}"));

    // show_diff writes nothing and shows both sides.
    let diff = apply(&lib, &[answered(d0, "show_diff")]);
    assert_eq!(diff[0]["record"], "diff");
    assert!(diff[0]["before"][&id].as_str().unwrap().contains("Never use var"));
    assert!(diff[0]["after"].as_str().unwrap().contains("Do not use var in this project, use let or const."));
    assert_eq!(audit(&lib).len(), 2);

    let r = apply(&lib, &[answered(d0, "confirm")]);
    assert_eq!(r[0]["status"], "applied");
    assert_eq!(r[0]["applied_as"], "merge");
    assert_eq!(notes(&lib), [format!("{id}.md")]);
    let note = read(&lib, &format!("notes/{id}.md"));
    assert!(note.contains("  - \"Do not use var in this project, use let or const.\"\n"), "{note}");
    let a = audit(&lib);
    // The INDEX row did not change (same title, times and session): no index line.
    assert_eq!(a.len(), 3);
    assert_eq!(a[2]["event"], "memory_note_updated");
    assert_eq!(a[2]["operation"], "update");
    assert_eq!(a[2]["source"], "user-confirmed");
    assert_eq!(a[2]["digest_before"], a[0]["digest_after"]);
    // Applying the same confirmed merge again changes nothing.
    assert_eq!(apply(&lib, &[answered(d0, "confirm")])[0]["status"], "unchanged");
    assert_eq!(audit(&lib).len(), 3);
}

#[test]
fn merge_with_a_more_complete_candidate_archives_the_old_note() {
    let lib = Lib::project();
    let old = remember(&lib, "Use pnpm for installs.");
    let sel = json!({"mode": "remember", "conversation_id": "conv-2", "input": {
        "user_input": {"text": "Use pnpm for installs.", "evidence_spans": [{"start": 0, "end": 22}]},
        "selected_candidates": [{"title": "pnpm for installs", "oneLiner": "Use pnpm for installs.",
            "kind": "preference", "whenToLoad": ["Adding or updating dependencies"],
            "signals": ["user said so twice"], "alternatives": ["npm", "yarn"],
            "counterSignals": ["repos that ship a package-lock.json"], "tags": ["pnpm"],
            "pointers": ["package.json"]}]}});
    let d = decide(&lib, &[sel]);
    assert_eq!(d[0]["action"], "merge");
    assert_eq!(d[0]["candidate"]["origin"], "selected");
    // Same words, so the same stable id: the survivor is the note itself.
    assert_eq!(d[0]["note_id"], old.as_str());
    let r = apply(&lib, &[answered(&d[0], "confirm")]);
    assert_eq!(r[0]["status"], "applied");
    let note = read(&lib, &format!("notes/{old}.md"));
    for part in [
        "- Alternatives:\n  - npm\n  - yarn\n",
        "- Counter-signals:\n  - repos that ship a package-lock.json\n",
        "- Session: conv-2\n",
    ] {
        assert!(note.contains(part), "{part} missing in {note}");
    }
}

#[test]
fn replace_archives_the_old_note_and_fills_supersedes() {
    let lib = Lib::project();
    let old = remember(&lib, "Use yarn for installs.");
    let old_bytes = read(&lib, &format!("notes/{old}.md"));
    let d = decide(&lib, &[said("remember", "From now on use pnpm for installs instead.")]);
    let d0 = &d[0];
    assert_eq!(d0["action"], "replace", "{d0}");
    assert_eq!(d0["gate"], "question");
    assert_eq!(d0["question"]["parameters"]["question"], "Proposed change to memory: REPLACE. Go ahead?");
    assert_eq!(d0["targets"], json!([old]));
    assert!(d0["reason"].as_str().unwrap().contains("from now on"));
    let new = d0["note_id"].as_str().unwrap().to_string();
    let r = apply(&lib, &[answered(d0, "confirm")]);
    assert_eq!(r[0]["status"], "applied");
    assert_eq!(notes(&lib), [format!("{new}.md")]);
    // Nothing lost: the old note is in the archive, byte for byte.
    let archived: Vec<_> = std::fs::read_dir(mem(&lib, "archive")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(archived.len(), 1);
    assert_eq!(std::fs::read_to_string(&archived[0]).unwrap(), old_bytes);
    let index = read(&lib, "INDEX.md");
    assert!(!index.contains(&format!("\n| {old} |")), "old row removed: {index}");
    assert!(index.contains(&format!("| {old} | 2026-03-01T12:00:00Z |")), "Supersedes filled: {index}");
    assert!(read(&lib, &format!("notes/{new}.md")).contains(&format!("- Supersedes: {old}\n")));
    let a = audit(&lib);
    let events: Vec<&str> = a.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(
        events,
        [
            "memory_note_created",
            "memory_index_updated",
            "memory_note_created",
            "memory_note_deleted",
            "memory_index_updated"
        ]
    );
    let del = &a[3];
    assert_eq!(del["note_id"], old.as_str());
    assert_eq!(del["operation"], "delete");
    assert_eq!(del["digest_before"], a[0]["digest_after"]);
    assert_eq!(del["digest_after"], Value::Null);
    assert!(del["archived_to"].as_str().unwrap().starts_with(&format!("memory/archive/{old}.")));
    // Twice: nothing changes.
    assert_eq!(apply(&lib, &[answered(d0, "confirm")])[0]["status"], "unchanged");
    assert_eq!(audit(&lib).len(), 5);
}

#[test]
fn veto_writes_nothing_until_the_user_picks() {
    let lib = Lib::project();
    let old = remember(&lib, "Use yarn for installs.");
    let d = decide(&lib, &[said("remember", "Use pnpm for installs.")]);
    let d0 = &d[0];
    assert_eq!(d0["action"], "veto", "{d0}");
    assert_eq!(d0["gate"], "question");
    assert_eq!(d0["targets"], json!([old]));
    assert_eq!(d0["neighbours"][0]["conflict"], true);
    assert_eq!(
        d0["message"],
        format!("Not written: conflicts with {old}; add the deciding detail or choose which one to keep.")
    );
    assert_eq!(d0["question"]["parameters"]["options"][0]["value"], "keep_existing");
    assert_eq!(apply(&lib, &[answered(d0, "keep_existing")])[0]["status"], "kept");
    assert_eq!(notes(&lib), [format!("{old}.md")]);
    // A wrong answer is an error, not a guess.
    let out = lib.cmd("kb-memgate").arg("apply").write_stdin(lines(&[answered(d0, "confirm")])).assert().code(2);
    assert_eq!(records(&out.get_output().stdout)[0]["record"], "error");
    // Choosing the new conclusion replaces.
    let r = apply(&lib, &[answered(d0, "replace")]);
    assert_eq!(r[0]["applied_as"], "replace");
    assert_eq!(notes(&lib), [format!("{}.md", d0["note_id"].as_str().unwrap())]);
}

#[test]
fn target_claim_naming_a_note_is_decisive() {
    let lib = Lib::project();
    let old = remember(&lib, "Use yarn for installs.");
    let mut inp = said("remember", "Use pnpm for installs.");
    inp["input"]["target_claim"] = json!({"id": old, "digest": "installs use yarn"});
    let d = decide(&lib, &[inp]);
    assert_eq!(d[0]["action"], "replace");
    assert_eq!(d[0]["targets"], json!([old]));
}

#[test]
fn prohibitions_yield_constraint_candidates_in_english_and_chinese() {
    let lib = Lib::project();
    // The span covers a preference; the refusal outside it still yields a candidate.
    let text = "Use tabs for indentation. Don't use semicolons in JavaScript.";
    let inp = json!({"mode": "remember", "input": {"user_input": {"text": text, "evidence_spans": [{"start": 0, "end": 25}]}}});
    let d = decide(&lib, &[inp]);
    assert_eq!(d.len(), 2);
    assert_eq!(d[0]["candidate"]["oneLiner"], "Use tabs for indentation.");
    assert_eq!(d[0]["candidate"]["kind"], "preference");
    assert_eq!(d[1]["candidate"]["kind"], "constraint");
    assert_eq!(d[1]["candidate"]["oneLiner"], "Don't use semicolons in JavaScript.");
    assert_eq!(d[1]["candidate"]["origin"], "text");
    assert_eq!(d[1]["gate"], "question", "not marked as evidence: gated");
    assert_eq!(d[1]["line"], 1);
    for (zh, cue) in [("这里不要用 var，用 let。", "不要"), ("别用 moment.js", "别"), ("这里不能用 Z 库", "不能")]
    {
        let d = decide(&lib, &[said("remember", zh)]);
        assert_eq!(d[0]["candidate"]["kind"], "constraint", "{zh}");
        assert_eq!(d[0]["candidate"]["recommendation"]["strength"], "must");
        assert!(d[0]["candidate"]["signals"].as_array().unwrap().contains(&json!(format!("prohibition: {cue}"))));
        assert_eq!(d[0]["gate"], "silent", "a short clear constraint is high reliability: {zh}");
        assert!(d[0]["message"].as_str().unwrap().starts_with("已记下："));
    }
}

#[test]
fn chinese_notes_merge_and_replace() {
    let lib = Lib::project();
    let id = remember(&lib, "这里不要用 var，用 let 或 const。");
    let d = decide(&lib, &[said("remember", "别用 var，用 let/const")]);
    assert_eq!(d[0]["action"], "merge", "{}", d[0]);
    assert_eq!(d[0]["targets"], json!([id]));
    assert_eq!(d[0]["message"], format!("需在记忆库对话中确认：MERGE「别用 var，用 let/const」→ {id}"));
    let d = decide(&lib, &[said("remember", "以后改用 var 吧")]);
    assert_eq!(d[0]["action"], "replace", "{}", d[0]);
    let r = apply(&lib, &[answered(&d[0], "confirm")]);
    assert_eq!(r[0]["message"], format!("已用 {} 替换 {id}：以后改用 var 吧", d[0]["note_id"].as_str().unwrap()));
    let index = read(&lib, "INDEX.md");
    assert!(index.contains("| 以后改用 var 吧 |"), "{index}");
}

#[test]
fn selected_candidates_come_first() {
    let lib = Lib::project();
    let inp = json!({"mode": "remember", "input": {
        "user_input": {"text": "ok, those two", "evidence_spans": []},
        "selected_candidates": ["Run cargo clippy before every commit.", {"oneLiner": "Keep binaries under 150 lines.", "kind": "convention"}]}});
    let d = decide(&lib, &[inp]);
    assert_eq!(d.len(), 2);
    assert_eq!(d[0]["candidate"]["oneLiner"], "Run cargo clippy before every commit.");
    assert_eq!(d[1]["candidate"]["kind"], "convention");
    assert!(d.iter().all(|x| x["candidate"]["origin"] == "selected" && x["gate"] == "question"));
}

#[test]
fn topk_is_five_nearest() {
    let lib = Lib::project();
    for lang in ["Rust", "Go", "Python", "Java", "Ruby", "Kotlin", "Swift"] {
        // Similar notes are gated (merge); the user keeps each one as new.
        let d = decide(
            &lib,
            &[said("remember", &format!("Format {lang} code with the standard formatter before committing."))],
        );
        let d0 = if d[0]["gate"] == "silent" { d[0].clone() } else { answered(&d[0], "new_instead") };
        assert_eq!(apply(&lib, &[d0])[0]["status"], "applied");
    }
    assert_eq!(notes(&lib).len(), 7);
    let d = decide(&lib, &[said("remember", "Format Zig code with the standard formatter before committing.")]);
    let nb = d[0]["neighbours"].as_array().unwrap();
    assert_eq!(nb.len(), 5);
    let scores: Vec<f64> = nb.iter().map(|n| n["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
}

#[test]
fn a_note_about_whom_the_user_addresses_ranks_below_the_speakers() {
    let lib = Lib::project();
    let nates = remember(&lib, "Nate says Joanna's support means a lot to him.");
    let joannas = remember(&lib, "Joanna thanks Nate for his support.");
    let d = decide(&lib, &[said("remember", "Thanks, Nate! Your support means a lot.")]);
    let nb = d[0]["neighbours"].as_array().unwrap();
    let got: Vec<(&str, Option<&str>)> =
        nb.iter().map(|n| (n["id"].as_str().unwrap(), n["addressee"].as_str())).collect();
    // Nate's note scores higher on words alone; it is about the one thanked.
    assert!(nb[1]["score"].as_f64() > nb[0]["score"].as_f64(), "{nb:?}");
    assert_eq!(got, [(joannas.as_str(), None), (nates.as_str(), Some("Nate"))]);
    // Without a name addressed, the words decide.
    let d = decide(&lib, &[said("remember", "Your support means a lot to Nate.")]);
    assert_eq!(d[0]["neighbours"][0]["id"], nates.as_str());
    assert!(d[0]["neighbours"][0].get("addressee").is_none());
}

#[test]
fn bad_input_is_an_error_record_and_writes_nothing() {
    let lib = Lib::project();
    let good = said("remember", "Use tabs for indentation.");
    let input = format!(
        "{}\n{}\n{}\n{}\nnot json\n{}\n{}\n",
        json!({"mode": "sometimes", "input": {}}),
        json!({"mode": "auto", "confidence": 1.5, "input": {}}),
        json!({"mode": "remember", "input": {"user_input": {"text": "abc", "evidence_spans": [{"start": 1, "end": 9}]}}}),
        json!({"mode": "remember", "input": {"user_input": {"text": "Use tabs."}, "target_claim": {"id": "MEM-nope"}}}),
        json!([1, 2]),
        good
    );
    let out = lib.cmd("kb-memgate").arg("decide").write_stdin(input).assert().code(2);
    let recs = records(&out.get_output().stdout);
    let msgs: Vec<(u64, &str)> = recs
        .iter()
        .filter(|r| r["record"] == "error")
        .map(|r| (r["line"].as_u64().unwrap(), r["message"].as_str().unwrap()))
        .collect();
    assert_eq!(msgs.len(), 6);
    assert_eq!(msgs[0], (1, "unknown mode 'sometimes' (expected auto or remember)"));
    assert_eq!(msgs[1], (2, "confidence 1.5 is outside 0–1"));
    assert_eq!(msgs[2], (3, "evidence_spans[0] 1..9 is outside the text (3 characters)"));
    assert_eq!(msgs[3], (4, "target_claim.id MEM-nope names no note in memory/notes/"));
    assert!(msgs[4].1.starts_with("invalid JSON"));
    assert_eq!(msgs[5], (6, "expected a JSON object, found an array"));
    assert_eq!(recs.last().unwrap()["record"], "decision", "the good line is still decided");
    let stderr = String::from_utf8_lossy(&out.get_output().stderr);
    assert!(stderr.contains("kb-memgate: <stdin>:2: confidence 1.5 is outside 0–1"), "{stderr}");
    assert!(!lib.root().join(".cursor").exists(), "decide writes nothing");

    // decide | apply: the errors pass through, apply still exits 2.
    let out = lib
        .cmd("kb-memgate")
        .arg("apply")
        .write_stdin(String::from_utf8_lossy(&out.get_output().stdout).into_owned())
        .assert()
        .code(2);
    let recs = records(&out.get_output().stdout);
    assert_eq!(recs.iter().filter(|r| r["record"] == "error").count(), 6);
    assert_eq!(recs.last().unwrap()["status"], "applied");
}

#[test]
fn corrupted_index_or_note_stops_the_write_and_reindex_repairs() {
    let lib = Lib::project();
    let id = remember(&lib, "Use tabs for indentation.");
    std::fs::write(mem(&lib, "INDEX.md"), "# Memory Index\n\n| Id | Title |\n|---|---|\n| x | y |\n").unwrap();
    let d = decide(&lib, &[said("remember", "Write commit messages in English.")]);
    let out = lib.cmd("kb-memgate").arg("apply").write_stdin(lines(&d)).assert().code(2);
    let err = &records(&out.get_output().stdout)[0];
    assert!(err["message"].as_str().unwrap().starts_with("INDEX.md has no table with the header"), "{err}");
    assert_eq!(notes(&lib), [format!("{id}.md")], "no note written");
    assert_eq!(audit(&lib).len(), 2);

    let out = lib.cmd("kb-memgate").args(["reindex", "--check"]).assert().code(1);
    let rep = &records(&out.get_output().stdout)[0];
    assert_eq!((rep["corrupted"].as_bool(), rep["in_sync"].as_bool()), (Some(true), Some(false)));
    let out = lib.cmd("kb-memgate").arg("reindex").assert().success();
    assert_eq!(records(&out.get_output().stdout)[0]["added"], json!([id]));
    lib.cmd("kb-memgate").args(["reindex", "--check"]).assert().success();
    assert_eq!(apply(&lib, &d)[0]["status"], "applied");

    // A note without Meta: decide and reindex refuse, nothing rewritten.
    std::fs::write(mem(&lib, "notes/MEM-broken.md"), "# just text\n\nno meta here\n").unwrap();
    let before = read(&lib, "INDEX.md");
    let out = lib.cmd("kb-memgate").arg("reindex").assert().code(2);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("MEM-broken.md: note has no '## Meta' section"));
    assert_eq!(read(&lib, "INDEX.md"), before);
    lib.cmd("kb-memgate").arg("decide").write_stdin(lines(&[said("remember", "x y z")])).assert().code(2);
}

#[test]
fn reindex_respects_hand_edited_notes() {
    let lib = Lib::project();
    let a = remember(&lib, "Use tabs for indentation.");
    let b = remember(&lib, "Write commit messages in English.");
    let p = mem(&lib, &format!("notes/{a}.md"));
    let text = std::fs::read_to_string(&p).unwrap().replace("- Status: active", "- Status: paused");
    std::fs::write(&p, text).unwrap();
    std::fs::remove_file(mem(&lib, &format!("notes/{b}.md"))).unwrap();
    let out = lib.cmd("kb-memgate").arg("reindex").assert().success();
    let rep = &records(&out.get_output().stdout)[0];
    assert_eq!(rep["changed"], json!([a]));
    assert_eq!(rep["removed"], json!([b]));
    let index = read(&lib, "INDEX.md");
    assert!(index.contains(" | paused | "), "{index}");
    assert!(!index.contains(&b));
    assert_eq!(audit(&lib).last().unwrap()["source"], "reindex");
    // A hand edit is what merge builds on.
    let d = decide(&lib, &[said("remember", "Use tabs for indentation in every file.")]);
    assert_eq!(d[0]["action"], "merge", "{}", d[0]);
    apply(&lib, &[answered(&d[0], "confirm")]);
    assert!(read(&lib, &format!("notes/{a}.md")).contains("- Status: paused\n"));
}

#[test]
fn eight_concurrent_applies_leave_index_equal_to_notes() {
    let lib = Lib::project();
    let topics = ["tabs", "commits", "clippy", "pnpm", "rustfmt", "vitest", "english", "semver"];
    let texts = [
        "Use tabs for indentation.",
        "Write commit messages in English.",
        "Run cargo clippy before pushing.",
        "Use pnpm to install packages.",
        "Format Rust with rustfmt defaults.",
        "Test the frontend with vitest.",
        "Answer code reviews in English.",
        "Version releases with semver tags.",
    ];
    let decisions: Vec<Value> = texts.iter().map(|t| decide(&lib, &[said("remember", t)]).remove(0)).collect();
    assert!(decisions.iter().all(|d| d["gate"] == "silent"), "{topics:?}");
    let children: Vec<_> = decisions
        .iter()
        .map(|d| {
            let mut c = lib.std_cmd("kb-memgate");
            c.arg("apply").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
            let mut child = c.spawn().unwrap();
            use std::io::Write;
            child.stdin.take().unwrap().write_all(format!("{d}\n").as_bytes()).unwrap();
            child
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success());
        assert_eq!(records(&out.stdout)[0]["status"], "applied");
    }
    assert_eq!(notes(&lib).len(), 8);
    let out = lib.cmd("kb-memgate").args(["reindex", "--check"]).assert().success();
    assert_eq!(records(&out.get_output().stdout)[0]["in_sync"], true);
    assert_eq!(audit(&lib).len(), 16);
    // The search index kept up too: each text finds its own note first.
    let d = decide(&lib, &[said("remember", "Use pnpm to install packages.")]);
    assert_eq!(d[0]["neighbours"][0]["duplicate"], true);
    assert_eq!(d[0]["action"], "merge");
}

#[test]
fn help_lists_every_flag() {
    let lib = Lib::project();
    let out = lib.cmd("kb-memgate").arg("--help").assert().success();
    let help = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    for flag in ["--memory-dir", "--check", "--help", "--version", "decide", "apply", "reindex"] {
        assert!(help.contains(flag), "{flag}");
    }
    lib.cmd("kb-memgate").arg("frobnicate").assert().code(2);
}

#[test]
fn spans_count_characters_of_the_untrimmed_text() {
    let lib = Lib::project();
    let inp = json!({"mode": "remember", "input": {"user_input": {"text": " 别用 moment.js ", "evidence_spans": [{"start": 1, "end": 14}]}}});
    let d = decide(&lib, &[inp]);
    assert_eq!(d[0]["candidate"]["oneLiner"], "别用 moment.js");
}

#[test]
fn just_remember_composes_decide_and_apply() {
    let lib = Lib::project();
    let input = lines(&[said("remember", "Use tabs for indentation."), said("remember", "Maybe use pnpm.")]);
    let recs = crate::util::ok_records(crate::recipes::just(lib.root()).arg("remember").write_stdin(input));
    assert_eq!(recs[0]["status"], "applied");
    assert_eq!(recs[1]["status"], "pending");
    assert_eq!(recs[1]["question"]["parameters"]["options"][0]["value"], "confirm");
    assert_eq!(notes(&lib).len(), 1);
}

/// a new note adds its INDEX.md row and rewrites only the search
/// index's side segment (`.search.side`, the notes written since the
/// index was written whole) instead of rewriting both files, so apply
/// costs the same at 10,000 notes as at 1,000. decide reads the index with
/// its side as current; past 128 notes in the side apply writes the index
/// whole again; reindex absorbs the side; a side made against another
/// index is not trusted.
#[test]
fn apply_appends_the_row_and_writes_the_side_segment() {
    let lib = Lib::project();
    remember(&lib, "Use tabs for indentation.");
    lib.cmd("kb-memgate").arg("reindex").assert().success();
    assert!(!mem(&lib, ".search.side").exists());
    let before = read(&lib, "INDEX.md");
    let second = remember(&lib, "Write commit messages in English.");
    let index = read(&lib, "INDEX.md");
    assert!(index.starts_with(&before) && index[before.len()..].starts_with(&format!("| {second} | ")), "{index}");
    assert_eq!(index[before.len()..].lines().count(), 1);
    let side = std::fs::read(mem(&lib, ".search.side")).unwrap();
    assert_eq!(&side[..16], b"KBINDEX1memgate\0", "a segment of the shared index format");

    let q = [said("remember", "Commit messages are written in English.")];
    let out = lib.cmd("kb-memgate").arg("decide").write_stdin(lines(&q)).assert().success();
    assert_eq!(String::from_utf8_lossy(&out.get_output().stderr), "", "the index with its side is current");
    let sided = records(&out.get_output().stdout);
    assert_eq!(sided[0]["neighbours"][0]["id"], second.as_str());
    lib.cmd("kb-memgate").args(["reindex", "--check"]).assert().success();
    lib.cmd("kb-memgate").arg("reindex").assert().success();
    assert!(!mem(&lib, ".search.side").exists(), "reindex absorbs the side");
    assert_eq!(decide(&lib, &q)[0]["neighbours"], sided[0]["neighbours"], "same as the index written whole");

    // 130 new notes in one apply: the 129th change writes the index whole,
    // the 130th starts a new side of one note.
    let rules: Vec<Value> =
        (0..130).map(|i| said("remember", &format!("Name the widget{i} module after owner{i}."))).collect();
    let ds = decide(&lib, &rules);
    assert!(ds.iter().all(|d| d["action"] == "new" && d["gate"] == "silent"), "{ds:?}");
    assert!(apply(&lib, &ds).iter().all(|r| r["status"] == "applied"));
    let (idx, side) =
        (std::fs::read(mem(&lib, ".search.idx")).unwrap(), std::fs::read(mem(&lib, ".search.side")).unwrap());
    assert!(side.len() * 20 < idx.len(), "a new side after the rewrite: {} vs {} bytes", side.len(), idx.len());
    assert_eq!(notes(&lib).len(), 132);
    let q = [said("remember", "Name the widget77 module after owner77.")];
    let sided = decide(&lib, &q);
    assert_eq!(sided[0]["action"], "merge", "{}", sided[0]);
    lib.cmd("kb-memgate").args(["reindex", "--check"]).assert().success();

    // A side made against another index is ignored: decide rescans (and says so).
    lib.cmd("kb-memgate").arg("reindex").assert().success();
    std::fs::write(mem(&lib, ".search.side"), &side).unwrap();
    let out = lib.cmd("kb-memgate").arg("decide").write_stdin(lines(&q)).assert().success();
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("run 'kb-memgate reindex'"));
    assert_eq!(records(&out.get_output().stdout)[0]["neighbours"], sided[0]["neighbours"]);
    // ... and the next apply writes the index whole.
    remember(&lib, "Keep the changelog sorted newest first.");
    assert!(!mem(&lib, ".search.side").exists());
    lib.cmd("kb-memgate").args(["reindex", "--check"]).assert().success();

    // An index of the old format (version 03, with its change log) or a
    // damaged one is refused by its header, never read: decide rescans,
    // apply writes it whole in the current format and drops the old log.
    let old = b"KBMGIX03\0\0\0\0\0\0\0\0\x02\0\0\0".to_vec();
    let then = ["Run clippy before every push.", "Pin the nightly toolchain in CI."];
    for (bad, text) in [old, idx[..idx.len() / 2].to_vec()].into_iter().zip(then) {
        let want = decide(&lib, &q);
        std::fs::write(mem(&lib, ".search.idx"), &bad).unwrap();
        std::fs::write(mem(&lib, ".search.log"), "{\"base\":1,\"docs\":1}\n").unwrap();
        let out = lib.cmd("kb-memgate").arg("decide").write_stdin(lines(&q)).assert().success();
        assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("run 'kb-memgate reindex'"));
        assert_eq!(records(&out.get_output().stdout)[0]["neighbours"], want[0]["neighbours"]);
        remember(&lib, text);
        assert_eq!(&std::fs::read(mem(&lib, ".search.idx")).unwrap()[..16], b"KBINDEX1memgate\0");
        assert!(!mem(&lib, ".search.log").exists());
    }
    lib.cmd("kb-memgate").args(["reindex", "--check"]).assert().success();
}

/// apply of a new note no longer reads or hashes all of INDEX.md
/// (`.index.digest` keeps SHA-256's running state), and the audit line's
/// digests stay the SHA-256 of the whole file before and after, through
/// appends, a hand edit (which apply must notice: the saved state is of
/// another file), a lost or damaged state file, and a replace that
/// rewrites the table.
#[test]
fn index_digests_in_the_audit_are_the_whole_files_digests() {
    let lib = Lib::project();
    let sha = |t: &str| kb::doc::digest::sha256_hex(t.as_bytes());
    let index_lines =
        |lib: &Lib| -> Vec<Value> { audit(lib).into_iter().filter(|l| l["event"] == "memory_index_updated").collect() };
    let mut before = String::new();
    let texts = [
        "Use tabs for indentation.",
        "Write commit messages in English.",
        "Run the linter before each push.",
        "Keep secrets out of the repository.",
        "Prefer ripgrep over grep for searching code.",
    ];
    for (i, t) in texts.iter().enumerate() {
        match i {
            // A hand edit that keeps the table appendable: the next digest
            // is of the edited file, not the saved state.
            2 => {
                let edited = read(&lib, "INDEX.md").replace("# Memory Index", "# Memory Index (ours)");
                std::fs::write(mem(&lib, "INDEX.md"), &edited).unwrap();
                before = edited;
            }
            3 => std::fs::write(mem(&lib, ".index.digest"), "{\"size\":1}").unwrap(),
            4 => std::fs::remove_file(mem(&lib, ".index.digest")).unwrap(),
            _ => {}
        }
        remember(&lib, t);
        let after = read(&lib, "INDEX.md");
        let l = index_lines(&lib).pop().unwrap();
        let want_before = if before.is_empty() { Value::Null } else { json!(sha(&before)) };
        assert_eq!((&l["digest_before"], &l["digest_after"]), (&want_before, &json!(sha(&after))), "apply {i}");
        assert!(mem(&lib, ".index.digest").exists(), "apply {i} saves the state");
        before = after;
    }
    // A replace rewrites the table whole; the digests still name the files.
    let q = [said("remember", "Use spaces instead of tabs for indentation, no longer tabs.")];
    let d = decide(&lib, &q);
    assert_eq!(d[0]["action"], "replace", "{}", d[0]);
    let d = if d[0]["gate"] == "question" { answered(&d[0], "confirm") } else { d[0].clone() };
    assert_eq!(apply(&lib, &[d])[0]["status"], "applied");
    let after = read(&lib, "INDEX.md");
    let l = index_lines(&lib).pop().unwrap();
    assert_eq!((&l["digest_before"], &l["digest_after"]), (&json!(sha(&before)), &json!(sha(&after))));
    before = after;
    remember(&lib, "Pin the toolchain version in CI.");
    let l = index_lines(&lib).pop().unwrap();
    assert_eq!((&l["digest_before"], &l["digest_after"]), (&json!(sha(&before)), &json!(sha(&read(&lib, "INDEX.md")))));
}
