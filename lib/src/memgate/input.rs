//! Seed 003 "输入约定": the structured input the parent agent passes
//! (mode, input.user_input, input.target_claim, selected_candidates,
//! confidence, conversation_id, generation_id), checked for what is
//! malformed (an error record) and for what is merely missing (the
//! integrity check: never a silent write).

use serde_json::{Map, Value};

/// `auto` (the agent judged something worth keeping) or `remember` (the
/// user ran /remember).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The parent agent decided on its own; confidence is required.
    Auto,
    /// The user asked to remember; confidence is optional.
    Remember,
}

impl Mode {
    /// The mode's name as in the seed.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Remember => "remember",
        }
    }
}

/// One evidence span: characters `start..end` (Unicode scalar values,
/// end exclusive) of the user's text, with an optional label.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// First character.
    pub start: usize,
    /// One past the last character.
    pub end: usize,
    /// The label the agent gave it (e.g. constraint, preference).
    pub label: Option<String>,
    /// The spanned text itself.
    pub text: String,
}

/// A validated input record.
#[derive(Debug, Clone)]
pub struct Input {
    /// auto or remember.
    pub mode: Mode,
    /// The user's own words.
    pub text: String,
    /// The evidence spans inside `text`.
    pub spans: Vec<Span>,
    /// The claim being confirmed or corrected, if given.
    pub claim_id: Option<String>,
    /// Its short digest, if given.
    pub claim_digest: Option<String>,
    /// Candidates the user picked in a questions round, in order.
    pub selected: Vec<Map<String, Value>>,
    /// The agent's confidence, 0–1.
    pub confidence: Option<f64>,
    /// The conversation, for the audit log and the Session field.
    pub conversation_id: Option<String>,
    /// The turn, for the audit log.
    pub generation_id: Option<String>,
}

impl Input {
    /// What the seed's integrity check finds missing (empty when complete).
    /// In auto mode any gap forbids a silent write; in remember mode only
    /// the user's text and evidence count.
    pub fn gaps(&self) -> Vec<&'static str> {
        let mut gaps = Vec::new();
        if self.text.trim().is_empty() {
            gaps.push("input.user_input.text is empty");
        }
        if self.spans.is_empty() {
            gaps.push("input.user_input.evidence_spans is empty");
        }
        if self.mode == Mode::Auto {
            if self.claim_id.is_none() {
                gaps.push("input.target_claim.id is missing");
            }
            if self.claim_digest.is_none() {
                gaps.push("input.target_claim.digest is missing");
            }
            if self.confidence.is_none() {
                gaps.push("confidence is missing (required in auto mode)");
            }
        }
        gaps
    }
}

fn opt_text(v: Option<&Value>, name: &str) -> Result<Option<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(format!("{name} must be a string")),
    }
}

fn object<'a>(v: Option<&'a Value>, name: &str) -> Result<Option<&'a Map<String, Value>>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(format!("{name} must be an object")),
    }
}

/// Parses and validates one input record. Malformed input (unknown mode,
/// confidence outside 0–1, a span outside the text, wrong types) is an
/// error; missing fields are left to [`Input::gaps`].
pub fn parse(rec: &Map<String, Value>) -> Result<Input, String> {
    let mode = match rec.get("mode") {
        Some(Value::String(s)) if s == "auto" => Mode::Auto,
        Some(Value::String(s)) if s == "remember" => Mode::Remember,
        Some(Value::String(s)) => return Err(format!("unknown mode '{s}' (expected auto or remember)")),
        None | Some(Value::Null) => return Err("missing mode (expected auto or remember)".into()),
        Some(_) => return Err("mode must be a string: auto or remember".into()),
    };
    let input = object(rec.get("input"), "input")?;
    let empty = Map::new();
    let input = input.unwrap_or(&empty);
    let user = object(input.get("user_input"), "input.user_input")?.unwrap_or(&empty);
    // Not trimmed: evidence spans count characters of the text as given.
    let text = match user.get("text") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("input.user_input.text must be a string".into()),
    };
    let spans = spans(user.get("evidence_spans"), &text)?;
    let claim = object(input.get("target_claim"), "input.target_claim")?.unwrap_or(&empty);
    let claim_id = opt_text(claim.get("id"), "input.target_claim.id")?;
    let claim_digest = opt_text(claim.get("digest"), "input.target_claim.digest")?;
    let selected = selected(input.get("selected_candidates").or_else(|| rec.get("selected_candidates")))?;
    let confidence = match rec.get("confidence").or_else(|| input.get("confidence")) {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(c) if (0.0..=1.0).contains(&c) => Some(c),
            _ => return Err(format!("confidence {n} is outside 0–1")),
        },
        Some(_) => return Err("confidence must be a number between 0 and 1".into()),
    };
    Ok(Input {
        mode,
        text,
        spans,
        claim_id,
        claim_digest,
        selected,
        confidence,
        conversation_id: opt_text(rec.get("conversation_id"), "conversation_id")?,
        generation_id: opt_text(rec.get("generation_id"), "generation_id")?,
    })
}

fn spans(v: Option<&Value>, text: &str) -> Result<Vec<Span>, String> {
    let list = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err("input.user_input.evidence_spans must be an array".into()),
    };
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    for (i, s) in list.iter().enumerate() {
        let Value::Object(m) = s else {
            return Err(format!("evidence_spans[{i}] must be an object with start and end"));
        };
        let pos = |k: &str| match m.get(k) {
            Some(Value::Number(n)) => {
                n.as_u64().map(|n| n as usize).ok_or(format!("evidence_spans[{i}].{k} must be a whole number"))
            }
            _ => Err(format!("evidence_spans[{i}].{k} is missing")),
        };
        let (start, end) = (pos("start")?, pos("end")?);
        if start >= end || end > chars.len() {
            return Err(format!("evidence_spans[{i}] {start}..{end} is outside the text ({} characters)", chars.len()));
        }
        let label = opt_text(m.get("label"), "label")?;
        let text: String = chars[start..end].iter().collect();
        out.push(Span { start, end, label, text: text.trim().to_string() });
    }
    Ok(out)
}

fn selected(v: Option<&Value>) -> Result<Vec<Map<String, Value>>, String> {
    let list = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err("input.selected_candidates must be an array".into()),
    };
    list.iter()
        .enumerate()
        .map(|(i, c)| match c {
            Value::String(s) if !s.trim().is_empty() => {
                let mut m = Map::new();
                m.insert("oneLiner".into(), Value::String(s.trim().to_string()));
                Ok(m)
            }
            Value::Object(m) if m.get("oneLiner").or_else(|| m.get("one_liner")).is_some_and(Value::is_string) => {
                Ok(m.clone())
            }
            _ => Err(format!("selected_candidates[{i}] must be a string or an object with a oneLiner")),
        })
        .collect()
}
