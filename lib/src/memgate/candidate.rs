//! Seed 003 "产候选" and "MEM-CANDIDATE": candidates are taken only from
//! the user's own words — selected candidates first, then the evidence
//! spans, then (without spans) the sentences of the text that state a
//! preference, constraint or decision. A refusal, negation or exclusion
//! ("不要 X", "别用 Y", "never Z") yields a constraint candidate whose
//! one-liner states the prohibition. `target_claim` only adds a pointer.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::cue;
use super::input::{Input, Mode};
use crate::text;

/// How strongly and how widely a note applies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// must | should | may.
    pub strength: String,
    /// project | global.
    pub scope: String,
}

/// A memory candidate with the seed's fields; also the content of a note.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Candidate {
    /// Short name of the memory.
    pub title: String,
    /// constraint | preference | decision | (the agent's label).
    pub kind: String,
    /// 1–3 natural-language lines saying when to inject the note.
    pub when_to_load: Vec<String>,
    /// One actionable sentence for injection.
    pub one_liner: String,
    /// The decision in the user's words.
    pub decision: String,
    /// The evidence that supports it.
    pub signals: Vec<String>,
    /// Alternatives the user mentioned (optional).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<String>,
    /// When the note does not apply (optional).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counter_signals: Vec<String>,
    /// Strength and scope.
    pub recommendation: Recommendation,
    /// Who the note is for.
    pub audience: String,
    /// project-specific | portable.
    pub portability: String,
    /// user | auto.
    pub source: String,
    /// Subject words (optional).
    pub tags: Vec<String>,
    /// References: the target claim, files (optional).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pointers: Vec<String>,
    /// Where the candidate came from: selected | evidence | text.
    pub origin: String,
}

impl Candidate {
    /// The user's own words this memory holds — the one-liner, the
    /// decision and a title when they differ from it, the other evidence
    /// spans and the target claim's digest — and nothing kb-memgate
    /// generated ("When the work involves …", subject tags): what
    /// similarity and governance compare. Generated lines repeat the same
    /// template words in every note, which made unrelated rules neighbours.
    pub fn search_text(&self) -> String {
        let one = text::canonical(&self.one_liner);
        let mut parts: Vec<&str> = vec![self.one_liner.as_str()];
        let title = self.title.trim_end_matches('…');
        if !one.contains(&text::canonical(title)) {
            parts.push(&self.title);
        }
        if text::canonical(&self.decision) != one {
            parts.push(&self.decision);
        }
        parts.extend(self.signals.iter().filter_map(|s| span_quote(s)).filter(|q| text::canonical(q) != one));
        parts.extend(self.pointers.iter().filter_map(|p| claim_digest(p)));
        parts.join("\n")
    }

    /// How many of the seed's optional-to-required fields are filled, 0–1:
    /// the "completeness" that picks the survivor of a merge.
    pub fn completeness(&self) -> f64 {
        let filled = [
            !self.title.is_empty(),
            !self.when_to_load.is_empty(),
            !self.one_liner.is_empty(),
            !self.decision.is_empty(),
            !self.signals.is_empty(),
            !self.alternatives.is_empty(),
            !self.counter_signals.is_empty(),
            !self.tags.is_empty(),
            !self.pointers.is_empty(),
            !self.recommendation.strength.is_empty(),
        ];
        let n = filled.iter().filter(|f| **f).count();
        crate::out::round(n as f64 / filled.len() as f64, 2)
    }
}

/// Labels an agent may give a span that are taken as the kind.
const KINDS: &[&str] = &["constraint", "preference", "decision", "convention", "fact", "pitfall", "workflow"];

/// The sentences of a text, split after . ! ? 。！？；; and line breaks.
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        cur.push(c);
        let ends = matches!(c, '。' | '！' | '？' | '；' | '\n' | '!' | '?' | ';')
            || (c == '.' && chars.get(i + 1).is_none_or(|n| n.is_whitespace()));
        if ends {
            push_sentence(&mut out, &cur);
            cur.clear();
        }
    }
    push_sentence(&mut out, &cur);
    out
}

fn push_sentence(out: &mut Vec<String>, s: &str) {
    let t = s.trim();
    if t.chars().any(char::is_alphanumeric) {
        out.push(t.to_string());
    }
}

/// Builds the candidates of one input, in priority order: each selected
/// candidate; else one candidate from the evidence spans (the first span
/// states it, the others support it); else, in remember mode, the user's
/// text, and in auto mode its cue-bearing sentences. Prohibitions in the
/// text that no span covers become constraint candidates of their own.
pub fn build(input: &Input) -> Vec<Candidate> {
    let source = match input.mode {
        Mode::Auto => "auto",
        Mode::Remember => "user",
    };
    let mut out: Vec<Candidate> = Vec::new();
    for sel in &input.selected {
        out.push(from_selected(sel, input));
    }
    if out.is_empty() {
        if let Some(first) = input.spans.first() {
            let mut c = from_words(&first.text, first.label.as_deref(), input, source, "evidence");
            for s in &input.spans[1..] {
                c.signals.push(quote(&s.text, s.label.as_deref()));
            }
            out.push(c);
        } else if !input.text.trim().is_empty() {
            let sents = sentences(&input.text);
            let cued: Vec<&String> = sents
                .iter()
                .filter(|s| cue::prohibition(s).is_some() || cue::must(s) || cue::decision(s) || cue::preference(s))
                .collect();
            let chosen = match (input.mode, cued.first()) {
                (_, Some(s)) => Some((*s).clone()),
                (Mode::Remember, None) => sents.first().cloned(),
                (Mode::Auto, None) => None,
            };
            if let Some(s) = chosen {
                out.push(from_words(&s, None, input, source, "text"));
            }
        }
    }
    // Refusals the spans did not cover still yield constraint candidates.
    let covered: Vec<String> = out.iter().flat_map(|c| [c.one_liner.clone(), c.decision.clone()]).collect();
    let span_texts: Vec<&str> = input.spans.iter().map(|s| s.text.as_str()).collect();
    for s in sentences(&input.text) {
        if cue::prohibition(&s).is_none() || cue::hedge(&s).is_some() {
            continue;
        }
        let inside = |t: &str| t.contains(s.as_str()) || (!t.is_empty() && s.contains(t));
        if covered.iter().any(|t| inside(t)) || span_texts.iter().any(|t| inside(t)) {
            continue;
        }
        out.push(from_words(&s, Some("constraint"), input, source, "text"));
    }
    out
}

/// The quoted words of a signal written by [`quote`] (`"…"` or
/// `label: "…"`); `None` for generated signals (`prohibition: 不要`).
fn span_quote(signal: &str) -> Option<&str> {
    let s = signal.strip_suffix('"')?;
    let at = s.find('"')?;
    let label = &s[..at];
    (label.is_empty() || label.ends_with(": ")).then_some(&s[at + 1..])
}

/// The digest of a `claim ID: digest` or `claim: digest` pointer.
fn claim_digest(pointer: &str) -> Option<&str> {
    let rest = pointer.strip_prefix("claim")?;
    let (_, d) = rest.split_once(": ")?;
    Some(d)
}

fn quote(text: &str, label: Option<&str>) -> String {
    match label {
        Some(l) => format!("{l}: \"{}\"", one_line(text)),
        None => format!("\"{}\"", one_line(text)),
    }
}

/// Collapses whitespace so a field fits on one line of a note or table.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The subject words of a text: tokens that are not function words or
/// bare numbers, in order of first use, at most `n`.
pub fn keywords(text: &str, n: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in text::tokens(text) {
        if cue::is_function_word(&t)
            || t.chars().all(|c| c.is_ascii_digit())
            || t.chars().count() < 2
            || t.chars().any(cue::is_function_char)
        {
            continue;
        }
        if !out.contains(&t) {
            out.push(t);
        }
        if out.len() == n {
            break;
        }
    }
    out
}

/// Characters that end a Chinese content run as a place or time around
/// it, not part of the word: 提交前 → 提交, 测试时 → 测试.
const AROUND_ZH: &str = "前后时中里内上下外间";

/// A statement's salient terms, at most `n`: the names it picks or turns
/// down first (`stance`), then its other content words, each in order — English words
/// that are not function, stop or width words, and whole Chinese words
/// (runs of content characters up to six long, a place or time character
/// at their end left off) rather than bigrams across two words (交前).
pub fn tags(text: &str, n: usize) -> Vec<String> {
    let st = super::stance::of(text);
    let named = |w: &str| {
        let key = crate::text::terms::stem(super::lemma::base(w));
        st.chosen.contains(&key) || st.rejected.contains(&key)
    };
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    let flush = |cur: &mut String, words: &mut Vec<String>| {
        let w = std::mem::take(cur);
        let w = if w.chars().any(text::is_cjk) {
            let word = w.trim_end_matches(|c| AROUND_ZH.contains(c));
            match word.chars().count() {
                _ if cue::is_function_word(word) => return,
                0..=1 => return,
                2..=6 => word.to_string(),
                _ => word.chars().take(4).collect(),
            }
        } else {
            let width = ["every", "each", "over", "any", "only", "whole", "also", "just", "before"];
            let digits = w.chars().all(|c| c.is_ascii_digit());
            if cue::is_function_word(&w)
                || crate::text::terms::is_stop(&w)
                || width.contains(&w.as_str())
                || digits
                || w.chars().count() < 2
            {
                return;
            }
            w
        };
        if !words.contains(&w) {
            words.push(w);
        }
    };
    let norm = super::cue::without_time(text);
    for c in norm.chars() {
        let content_cjk = text::is_cjk(c) && !cue::is_function_char(c) && !super::slot::FILLER_ZH.contains(c);
        let latin = !text::is_cjk(c) && (c.is_alphanumeric() || ((c == '\'' || c == '_') && !cur.is_empty()));
        let same_kind = cur.chars().next().is_none_or(|f| text::is_cjk(f) == text::is_cjk(c));
        if (content_cjk || latin) && same_kind {
            cur.push(c);
        } else {
            flush(&mut cur, &mut words);
            if content_cjk || latin {
                cur.push(c);
            }
        }
    }
    flush(&mut cur, &mut words);
    // The names first; a stable sort keeps each part in order of first use.
    words.sort_by_key(|w| !named(w));
    words.truncate(n);
    words
}

/// A short title: the sentence without its final punctuation, cut at a
/// word (or, in CJK, a character) boundary.
pub fn title_of(s: &str) -> String {
    let s = one_line(s);
    let s = s.trim_end_matches(['.', '!', '?', '。', '！', '？', '；', ';', ',', '，']);
    let limit = if text::mostly_cjk(s) { 24 } else { 60 };
    if s.chars().count() <= limit {
        return s.to_string();
    }
    let cut: String = s.chars().take(limit).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if !text::mostly_cjk(s) && i > limit / 2 => cut[..i].to_string(),
        _ => cut,
    };
    format!("{}…", cut.trim_end())
}

fn from_words(words: &str, label: Option<&str>, input: &Input, source: &str, origin: &str) -> Candidate {
    let one = one_line(words);
    let prohibition = cue::prohibition(&one);
    let kind = match label.map(str::to_lowercase) {
        Some(l) if KINDS.contains(&l.as_str()) => l,
        _ if prohibition.is_some() || cue::must(&one) => "constraint".into(),
        _ if cue::decision(&one) => "decision".into(),
        _ => "preference".into(),
    };
    let tags = tags(&one, 4);
    let cjk = text::mostly_cjk(&one);
    let subject = if tags.is_empty() { title_of(&one) } else { tags.join(if cjk { "、" } else { ", " }) };
    let mut when =
        vec![if cjk { format!("涉及 {subject} 时") } else { format!("When the work involves {subject}") }];
    if kind == "constraint" {
        when.push(if cjk {
            format!("任何涉及 {subject} 的改动都必须遵守该禁止")
        } else {
            format!("Whenever {subject} comes up, this constraint must be obeyed")
        });
    }
    let mut signals = vec![quote(&one, label)];
    if let Some(p) = &prohibition {
        signals.push(format!("prohibition: {p}"));
    }
    let mut c = Candidate {
        title: title_of(&one),
        kind: kind.clone(),
        when_to_load: when,
        one_liner: one.clone(),
        decision: one.clone(),
        signals,
        alternatives: Vec::new(),
        counter_signals: Vec::new(),
        recommendation: Recommendation {
            strength: if cue::hedge(&one).is_some() {
                "may".into()
            } else if kind == "constraint" || cue::must(&one) {
                "must".into()
            } else {
                "should".into()
            },
            scope: if cue::global(&one) { "global".into() } else { "project".into() },
        },
        audience: "agent".into(),
        portability: if cue::global(&one) { "portable".into() } else { "project-specific".into() },
        source: source.into(),
        tags,
        pointers: Vec::new(),
        origin: origin.into(),
    };
    add_claim(&mut c, input);
    c
}

fn add_claim(c: &mut Candidate, input: &Input) {
    match (&input.claim_id, &input.claim_digest) {
        (Some(id), Some(d)) => c.pointers.push(format!("claim {id}: {}", one_line(d))),
        (Some(id), None) => c.pointers.push(format!("claim {id}")),
        (None, Some(d)) => c.pointers.push(format!("claim: {}", one_line(d))),
        (None, None) => {}
    }
}

fn from_selected(sel: &Map<String, Value>, input: &Input) -> Candidate {
    let s = |k: &str, alt: &str| {
        sel.get(k).or_else(|| sel.get(alt)).and_then(Value::as_str).map(one_line).filter(|s| !s.is_empty())
    };
    let list = |k: &str, alt: &str| -> Vec<String> {
        match sel.get(k).or_else(|| sel.get(alt)) {
            Some(Value::Array(a)) => {
                a.iter().filter_map(Value::as_str).map(one_line).filter(|s| !s.is_empty()).collect()
            }
            Some(Value::String(s)) if !s.trim().is_empty() => vec![one_line(s)],
            _ => Vec::new(),
        }
    };
    let one = s("oneLiner", "one_liner").unwrap_or_default();
    let source = if input.mode == Mode::Auto { "auto" } else { "user" };
    let mut c = from_words(&one, s("kind", "kind").as_deref(), input, source, "selected");
    c.pointers.clear();
    if let Some(t) = s("title", "title") {
        c.title = t;
    }
    if let Some(d) = s("decision", "decision") {
        c.decision = d;
    }
    for (field, key, alt) in [
        (&mut c.when_to_load, "whenToLoad", "when_to_load"),
        (&mut c.signals, "signals", "signals"),
        (&mut c.alternatives, "alternatives", "alternatives"),
        (&mut c.counter_signals, "counterSignals", "counter_signals"),
        (&mut c.tags, "tags", "tags"),
        (&mut c.pointers, "pointers", "pointers"),
    ] {
        let given = list(key, alt);
        if !given.is_empty() {
            *field = given;
        }
    }
    c.when_to_load.truncate(3);
    if let Some(Value::Object(r)) = sel.get("recommendation") {
        if let Some(v) = r.get("strength").and_then(Value::as_str) {
            c.recommendation.strength = v.to_string();
        }
        if let Some(v) = r.get("scope").and_then(Value::as_str) {
            c.recommendation.scope = v.to_string();
        }
    }
    for (field, key) in [(&mut c.audience, "audience"), (&mut c.portability, "portability")] {
        if let Some(v) = s(key, key) {
            *field = v;
        }
    }
    add_claim(&mut c, input);
    c
}
