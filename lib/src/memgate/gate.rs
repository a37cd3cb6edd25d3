//! Seed 003 "门控" and "new 路径可靠性分流": merge and replace always ask
//! (the seed's questions JSON: confirm / cancel / new_instead / show_diff);
//! new is silent only at high reliability — the user's own words near
//! verbatim, no hedge ("maybe", "可能", "也许", "先别记"…), complete input,
//! or a short unambiguous constraint — and asks otherwise; veto writes
//! nothing and asks which note to keep. When in doubt: ask. Also the one
//! sentence returned to the main conversation. Questions, options and
//! that sentence follow the user's language: the seed's Chinese for
//! Chinese input, English otherwise.

use serde_json::{json, Value};

use super::candidate::Candidate;
use super::cue;
use super::govern::Action;
use super::input::Input;
use crate::text;

/// Confidence under which a new note is never written silently.
pub const CONFIDENCE_MIN: f64 = 0.7;
/// A one-liner longer than this is a summary, not the user's words.
pub const VERBATIM_MAX_CHARS: usize = 200;
/// A constraint this short is unambiguous enough to keep silently.
pub const SHORT_CONSTRAINT_CHARS: usize = 80;

/// How reliable a new candidate is, with the reasons it is not.
#[derive(Debug, Clone)]
pub struct Reliability {
    /// Whether it may be written silently.
    pub high: bool,
    /// Why not (empty when high).
    pub reasons: Vec<String>,
}

/// The seed's high/low judgement for the new path.
pub fn reliability(input: &Input, c: &Candidate) -> Reliability {
    let mut reasons: Vec<String> = input.gaps().into_iter().map(String::from).collect();
    if let Some(h) = cue::hedge(&input.text).or_else(|| cue::hedge(&c.one_liner)) {
        reasons.push(format!("hedge word \"{h}\""));
    }
    if let Some(conf) = input.confidence.filter(|c| *c < CONFIDENCE_MIN) {
        reasons.push(format!("confidence {conf} is below {CONFIDENCE_MIN}"));
    }
    let verbatim = text::canonical(&input.text).contains(&text::canonical(&c.one_liner));
    match c.origin.as_str() {
        "text" => reasons.push("not marked as evidence: taken from the text, not an evidence span".into()),
        "evidence" if !verbatim => reasons.push("the one-liner is not the user's words".into()),
        _ => {}
    }
    let chars = c.one_liner.chars().count();
    let short_constraint = c.kind == "constraint" && chars <= SHORT_CONSTRAINT_CHARS;
    if chars > VERBATIM_MAX_CHARS {
        reasons.push(format!("long ({chars} characters): a summary rather than a direct statement"));
    } else if super::candidate::sentences(&c.one_liner).len() > 2 && !short_constraint {
        reasons.push("several sentences: ambiguous".into());
    }
    Reliability { high: reasons.is_empty(), reasons }
}

/// Whether the user writes Chinese: the language of the questions and of
/// the sentence for the main conversation.
pub fn chinese(user_text: &str, c: &Candidate) -> bool {
    text::mostly_cjk(user_text) || text::mostly_cjk(&c.one_liner)
}

/// The questions JSON a gated decision carries, in the user's language:
/// seed 003's Chinese strings for Chinese input, English otherwise. The
/// option values are the same in both.
pub fn question(action: Action, c: &Candidate, zh: bool) -> Value {
    let (question, options): (String, &[(&str, &str, &str)]) = match action {
        Action::Merge | Action::Replace => {
            let up = action.as_str().to_uppercase();
            let q = match zh {
                true => format!("治理方案（待确认）：{up}，是否执行？"),
                false => format!("Proposed change to memory: {up}. Go ahead?"),
            };
            (
                q,
                &[
                    ("确认执行", "Yes, go ahead", "confirm"),
                    ("取消", "Cancel", "cancel"),
                    ("改为新增", "Add as a new note instead", "new_instead"),
                    ("查看对比", "Show the difference", "show_diff"),
                ],
            )
        }
        Action::Veto => {
            let q = match zh {
                true => format!("记忆冲突（未写入）：「{}」与已有记忆结论相反，保留哪一条？", c.title),
                false => format!(
                    "Memory conflict (nothing written): \"{}\" contradicts a note already kept. Which one stays?",
                    c.title
                ),
            };
            (
                q,
                &[
                    ("保留现有", "Keep the existing note", "keep_existing"),
                    ("改用新结论", "Use the new one", "replace"),
                    ("取消", "Cancel", "cancel"),
                ],
            )
        }
        Action::New | Action::Skip => {
            let q = match zh {
                true => format!("新增记忆（待确认）：「{}」，是否写入？", c.title),
                false => format!("New memory (to confirm): \"{}\". Save it?", c.title),
            };
            (q, &[("确认写入", "Yes, save it", "confirm"), ("取消", "Cancel", "cancel")])
        }
    };
    let options: Vec<Value> = options
        .iter()
        .map(|(zh_label, en_label, value)| json!({"label": if zh { zh_label } else { en_label }, "value": value}))
        .collect();
    json!({"tool": "questions", "parameters": {"question": question, "options": options}})
}

/// The answers a gated decision accepts.
pub fn answers(action: Action) -> &'static [&'static str] {
    match action {
        Action::Merge | Action::Replace => &["confirm", "cancel", "new_instead", "show_diff"],
        Action::Veto => &["keep_existing", "replace", "cancel"],
        Action::New | Action::Skip => &["confirm", "cancel"],
    }
}

/// The one sentence for the main conversation, in the user's language.
/// It quotes the user's words, and an agent shows it or puts it into a
/// commit message: control and direction characters come out escaped
/// (`out::printable`), as the writer's commit topics do.
pub fn message(action: Action, gated: bool, c: &Candidate, targets: &[String], user_text: &str) -> String {
    crate::out::printable(&message_text(action, gated, c, targets, user_text), false).into_owned()
}

fn message_text(action: Action, gated: bool, c: &Candidate, targets: &[String], user_text: &str) -> String {
    let zh = chinese(user_text, c);
    let t = targets.join(", ");
    let up = action.as_str().to_uppercase();
    match (action, gated, zh) {
        (Action::Skip, _, _) => String::new(),
        (Action::New, false, true) => format!("已记下：{}", c.one_liner),
        (Action::New, false, false) => format!("Remembered: {}", c.one_liner),
        (Action::Veto, _, true) => format!("未写入：与 {t} 结论冲突，请补充决定性信息或选择保留哪一条。"),
        (Action::Veto, _, false) => {
            format!("Not written: conflicts with {t}; add the deciding detail or choose which one to keep.")
        }
        (Action::New, true, true) => format!("需在记忆库对话中确认：NEW「{}」", c.title),
        (Action::New, true, false) => format!("Needs confirmation in the memory dialog: NEW \"{}\"", c.title),
        (Action::Merge, _, true) => format!("需在记忆库对话中确认：MERGE「{}」→ {t}", c.title),
        (Action::Merge, _, false) => format!("Needs confirmation in the memory dialog: MERGE \"{}\" into {t}", c.title),
        (_, _, true) => format!("需在记忆库对话中确认：{up} {t} →「{}」", c.title),
        (_, _, false) => format!("Needs confirmation in the memory dialog: {up} {t} with \"{}\"", c.title),
    }
}

/// The sentence after apply wrote (or chose not to write) a decision,
/// escaped like [`message`].
pub fn applied_message(action: Action, note_id: &str, c: &Candidate, targets: &[String], zh: bool) -> String {
    crate::out::printable(&applied_text(action, note_id, c, targets, zh), false).into_owned()
}

fn applied_text(action: Action, note_id: &str, c: &Candidate, targets: &[String], zh: bool) -> String {
    let t = targets.join(", ");
    match (action, zh) {
        (Action::New, true) => format!("已记下：{}", c.one_liner),
        (Action::New, false) => format!("Remembered: {}", c.one_liner),
        (Action::Merge, true) => format!("已合并到 {note_id}：{}", c.one_liner),
        (Action::Merge, false) => format!("Merged into {note_id}: {}", c.one_liner),
        (Action::Replace, true) => format!("已用 {note_id} 替换 {t}：{}", c.one_liner),
        (Action::Replace, false) => format!("Replaced {t} with {note_id}: {}", c.one_liner),
        (_, true) => "未写入。".into(),
        (_, false) => "Nothing written.".into(),
    }
}
