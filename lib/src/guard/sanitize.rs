//! Seed 000: "external content is sanitised using 10 injection protection
//! categories before storage" (rules.rs `INJECTION_CATEGORIES`). Hidden
//! characters are removed; every match of a rule tagged with an injection
//! category is neutralised in place: HTML comments are opened up so their
//! text shows, image links lose their `!` and their scheme, base64 payloads
//! that hide a threat are removed, and any other match is defanged (its
//! spaces become `·` and it is wrapped in ⟦ ⟧). The result is checked: if a
//! rule still matches, the span is removed instead. Sanitising sanitised
//! text changes nothing.

use serde::Serialize;

use super::engine::Engine;
use super::normalise;

/// One change `sanitize` made (the `change` record).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "record", rename = "change")]
pub struct Change {
    /// 1-based line.
    pub line: usize,
    /// The rule that asked for it.
    pub rule: String,
    /// The injection category.
    pub category: String,
    /// The text before (a line or a span).
    pub before: String,
    /// The text after.
    pub after: String,
}

/// Sanitises `text`; returns the new text and the changes, in line order.
pub fn sanitize(engine: &Engine, text: &str) -> (String, Vec<Change>) {
    let mut out = String::with_capacity(text.len());
    let mut changes = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&sanitize_line(engine, line, i + 1, &mut changes));
    }
    (out, changes)
}

fn sanitize_line(engine: &Engine, line: &str, line_no: usize, changes: &mut Vec<Change>) -> String {
    let (cleaned, removed) = normalise::strip_hidden(line);
    for (rule, n) in removed {
        changes.push(Change {
            line: line_no,
            rule: rule.into(),
            category: "hidden_text".into(),
            before: format!("{n} hidden character(s)"),
            after: String::new(),
        });
    }
    let folded = normalise::normalise(cleaned.as_bytes()).text.into_owned();
    let spans = merge(engine.inject_spans(&folded));
    if spans.is_empty() {
        return cleaned;
    }
    let mut result = folded.clone();
    for (start, end, rule, category) in spans.iter().rev() {
        let before = &folded[*start..*end];
        let after = defang(category, before);
        result.replace_range(*start..*end, &after);
        changes.push(Change {
            line: line_no,
            rule: rule.clone(),
            category: category.clone(),
            before: before.into(),
            after,
        });
    }
    // Checked: whatever still matches is removed, until nothing does.
    for _ in 0..8 {
        let left = merge(engine.inject_spans(&result));
        let Some((start, end, rule, category)) = left.into_iter().next() else { break };
        let before = result[start..end].to_string();
        let after = format!("⟦removed {rule}⟧");
        result.replace_range(start..end, &after);
        changes.push(Change { line: line_no, rule, category, before, after });
    }
    if !engine.inject_spans(&result).is_empty() {
        result = "⟦removed line⟧".into();
    }
    let first = changes.len() - changes.iter().rev().take_while(|c| c.line == line_no).count();
    changes[first..].sort_by(|a, b| a.rule.cmp(&b.rule));
    result
}

/// Overlapping spans merged (the first rule names the merged span).
fn merge(mut spans: Vec<(usize, usize, String, String)>) -> Vec<(usize, usize, String, String)> {
    spans.sort_by_key(|s| (s.0, std::cmp::Reverse(s.1)));
    let mut out: Vec<(usize, usize, String, String)> = Vec::new();
    for s in spans {
        match out.last_mut() {
            Some(last) if s.0 < last.1 => last.1 = last.1.max(s.1),
            _ => out.push(s),
        }
    }
    out
}

/// The neutral form of a matched span.
fn defang(category: &str, span: &str) -> String {
    match category {
        "hidden_text" if span.starts_with("<!--") => format!("⟦comment:{}⟧", spaced(&span[4..])),
        "exfiltration_link" => {
            let s = span.replacen("![", "⟦image⟧[", 1);
            s.replace("https://", "hxxps://").replace("http://", "hxxp://")
        }
        "encoded_payload" if !span.contains(' ') => format!("⟦base64 payload removed, {} chars⟧", span.len()),
        _ => format!("⟦{}⟧", spaced(span)),
    }
}

/// Spaces become `·`; a span without spaces gets one `·` after its first
/// character, so the words no longer spell what the rule looks for.
fn spaced(s: &str) -> String {
    if s.chars().any(char::is_whitespace) {
        let mut out = String::new();
        let mut in_ws = false;
        for c in s.chars() {
            if c.is_whitespace() {
                if !in_ws {
                    out.push('·');
                }
                in_ws = true;
            } else {
                out.push(c);
                in_ws = false;
            }
        }
        out
    } else {
        let mut it = s.chars();
        let first = it.next().map(String::from).unwrap_or_default();
        format!("{first}·{}", it.as_str())
    }
}
