//! YAML frontmatter, the ground truth of every document (DESIGN.md "The
//! library on disk"): split it from the body, read typed fields leniently,
//! and add a missing field without touching any other byte.

use serde_json::{Map, Value};

use crate::doc::yaml;

/// A document split into its frontmatter fields and its body.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// The frontmatter mapping; empty when there is none or it is broken.
    pub fields: Map<String, Value>,
    /// Byte offset where the body starts.
    pub body_start: usize,
    /// 1-based line number of the body's first line.
    pub body_line: usize,
    /// Why the frontmatter could not be read, when it could not.
    pub error: Option<String>,
    /// Whether the document opened a frontmatter block at all.
    pub present: bool,
}

/// Where the YAML block sits: `(yaml_start, yaml_end, body_start)` in bytes.
/// A leading BOM and CRLF line ends are accepted.
pub fn locate(text: &str) -> Option<(usize, usize, usize)> {
    let start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let rest = &text[start..];
    let first_end = rest.find('\n')?;
    if rest[..first_end].trim_end_matches('\r') != "---" {
        return None;
    }
    let yaml_start = start + first_end + 1;
    let mut pos = yaml_start;
    for line in text[yaml_start..].split_inclusive('\n') {
        let bare = line.trim_end_matches('\n').trim_end_matches('\r');
        if bare == "---" || bare == "..." {
            return Some((yaml_start, pos, pos + line.len()));
        }
        pos += line.len();
    }
    None
}

/// Where the body starts, as [`parse`] says, without reading the YAML.
pub fn body_start(text: &str) -> usize {
    locate(text).map_or(0, |(_, _, body)| body)
}

/// Parses a document's frontmatter. Never fails: a broken block is reported
/// in `error` and the document is still usable by its path and body.
pub fn parse(text: &str) -> Parsed {
    let Some((ys, ye, body)) = locate(text) else {
        let unterminated = text.trim_start_matches('\u{feff}').starts_with("---\n")
            || text.trim_start_matches('\u{feff}').starts_with("---\r\n");
        return Parsed {
            body_start: 0,
            body_line: 1,
            error: unterminated.then(|| "frontmatter block is not closed by '---'".to_string()),
            present: unterminated,
            ..Parsed::default()
        };
    };
    let body_line = text[..body].matches('\n').count() + 1;
    let (fields, error) = match yaml::to_value(&text[ys..ye]) {
        Ok(Value::Object(m)) => (m, None),
        Ok(Value::Null) => (Map::new(), None),
        Ok(_) => (Map::new(), Some("frontmatter is not a mapping".to_string())),
        Err(e) => (Map::new(), Some(e.to_string())),
    };
    Parsed { fields, body_start: body, body_line, error, present: true }
}

/// A field as text: strings as they are, numbers and booleans printed.
pub fn text(fields: &Map<String, Value>, key: &str) -> Option<String> {
    match fields.get(key)? {
        Value::String(s) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A list field: a YAML sequence, or one comma-separated string.
pub fn list(fields: &Map<String, Value>, key: &str) -> Vec<String> {
    match fields.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(s.trim().to_string()),
                Value::Number(n) => Some(n.to_string()),
                Value::Object(m) => m.get("path").and_then(Value::as_str).map(str::to_string),
                _ => None,
            })
            .filter(|s| !s.is_empty())
            .collect(),
        Some(Value::String(s)) => s.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect(),
        _ => Vec::new(),
    }
}

/// A boolean field; `"true"`/`"yes"` strings count.
pub fn flag(fields: &Map<String, Value>, key: &str) -> bool {
    match fields.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "yes" | "1"),
        Some(Value::Number(n)) => n.as_i64() == Some(1),
        _ => false,
    }
}

/// A non-negative integer field, accepting numeric strings.
pub fn number(fields: &Map<String, Value>, key: &str) -> Option<u64> {
    match fields.get(key)? {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The notebook that produced a document: `sources.notebook` (a mapping or
/// a list of mappings), else `source.notebook`, else a top-level `notebook`.
pub fn notebooks(fields: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["sources", "source"] {
        match fields.get(key) {
            Some(Value::Object(m)) => out.extend(m.get("notebook").and_then(Value::as_str).map(str::to_string)),
            Some(Value::Array(items)) => {
                for it in items {
                    if let Some(nb) = it.get("notebook").and_then(Value::as_str) {
                        out.push(nb.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    out.extend(text(fields, "notebook"));
    out.sort();
    out.dedup();
    out
}

/// Returns `text` with `key: value` added at the end of its frontmatter (a
/// new block is opened when there is none). Every other byte is kept. Returns
/// `None` when the key is already there or the block is broken.
pub fn with_field(text: &str, key: &str, value: &str) -> Option<String> {
    with_field_of(text, &parse(text), key, value)
}

/// [`with_field`] on a text already parsed (`parsed` is [`parse`] of
/// `text`), with the parse of the text it returns. When the block is a
/// mapping written from its first column and `value` a plain word, the
/// added line can only be one more key of that mapping, so the new parse
/// is made from `parsed` instead of reading the YAML again (a batch adds
/// `quality_status` to thousands of experience files); any other shape
/// is parsed again.
pub fn with_field_parsed(text: &str, parsed: &Parsed, key: &str, value: &str) -> Option<(String, Parsed)> {
    let out = with_field_of(text, parsed, key, value)?;
    let plain_block = locate(text).is_some_and(|(ys, ye, _)| {
        let first = text[ys..ye]
            .lines()
            .map(|l| l.trim_end_matches('\r'))
            .find(|l| !l.trim().is_empty() && !l.starts_with('#'));
        first.is_none_or(|l| !l.starts_with(|c: char| c.is_whitespace() || "{[-?%!&*|>@`,#".contains(c)))
    });
    // A word YAML reads as a string: lower-case letters, none of its
    // booleans, nulls or special numbers.
    const TYPED: &[&str] = &["true", "false", "yes", "no", "on", "off", "y", "n", "null", "nan", "inf"];
    let plain_value = !value.is_empty() && value.bytes().all(|b| b.is_ascii_lowercase()) && !TYPED.contains(&value);
    if !(plain_block && plain_value) {
        let reparsed = parse(&out);
        return Some((out, reparsed));
    }
    let added = out.len() - text.len();
    let mut fields = parsed.fields.clone();
    fields.insert(key.to_string(), Value::String(value.to_string()));
    let lines = out[..parsed.body_start + added].matches('\n').count() + 1;
    Some((out, Parsed { fields, body_start: parsed.body_start + added, body_line: lines, error: None, present: true }))
}

fn with_field_of(text: &str, parsed: &Parsed, key: &str, value: &str) -> Option<String> {
    match locate(text) {
        Some((ys, ye, _)) => {
            if parsed.error.is_some() || parsed.fields.contains_key(key) {
                return None;
            }
            let eol = if text[..ys].ends_with("\r\n") { "\r\n" } else { "\n" };
            let mut out = String::with_capacity(text.len() + key.len() + value.len() + 4);
            out.push_str(&text[..ye]);
            if ye > ys && !text[..ye].ends_with('\n') {
                out.push_str(eol);
            }
            out.push_str(&format!("{key}: {value}{eol}"));
            out.push_str(&text[ye..]);
            Some(out)
        }
        None if parsed.present => None,
        None => Some(format!("---\n{key}: {value}\n---\n{text}")),
    }
}

/// Returns `text` with the top-level `key` set to the scalar `value`:
/// its line (and any indented continuation lines) is replaced in place, or
/// the field is added at the end of the block when missing. Every other byte
/// is kept. Returns `None` when the block is broken or `text` already says
/// exactly this (so callers write only real changes).
pub fn set_field(text: &str, key: &str, value: &str) -> Option<String> {
    let Some((ys, ye, _)) = locate(text) else { return with_field(text, key, value) };
    let parsed = parse(text);
    if parsed.error.is_some() {
        return None;
    }
    if !parsed.fields.contains_key(key) {
        return with_field(text, key, value);
    }
    let eol = if text[..ys].ends_with("\r\n") { "\r\n" } else { "\n" };
    let mut out = String::with_capacity(text.len() + value.len());
    out.push_str(&text[..ys]);
    let mut replacing = false;
    for line in text[ys..ye].split_inclusive('\n') {
        let continuation = line.starts_with([' ', '\t', '-']) && !line.trim().is_empty();
        if replacing && continuation {
            continue;
        }
        replacing = false;
        let is_key = line.strip_prefix(key).is_some_and(|rest| rest.trim_start_matches(' ').starts_with(':'));
        if is_key {
            out.push_str(&format!("{key}: {value}{eol}"));
            replacing = true;
        } else {
            out.push_str(line);
        }
    }
    out.push_str(&text[ye..]);
    (out != text).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_reads_fields() {
        let doc = "---\ntopic: jwt-auth\nkeywords: [jwt, auth]\nsources:\n  notebook: nb1\n---\n# Body\n";
        let p = parse(doc);
        assert_eq!(p.error, None);
        assert_eq!(text(&p.fields, "topic").as_deref(), Some("jwt-auth"));
        assert_eq!(list(&p.fields, "keywords"), vec!["jwt", "auth"]);
        assert_eq!(notebooks(&p.fields), vec!["nb1"]);
        assert_eq!(&doc[p.body_start..], "# Body\n");
        assert_eq!(p.body_line, 7);
    }

    #[test]
    fn broken_frontmatter_is_reported_not_fatal() {
        let p = parse("---\ntopic: [unclosed\n---\nbody");
        assert!(p.error.is_some());
        let p = parse("---\ntopic: x\nno end");
        assert!(p.error.is_some());
        assert!(parse("no frontmatter").error.is_none());
    }

    #[test]
    fn adds_a_field_keeping_every_other_byte() {
        assert_eq!(with_field("---\na: 1\n---\nbody", "b", "2").unwrap(), "---\na: 1\nb: 2\n---\nbody");
        assert_eq!(with_field("---\r\na: 1\r\n---\r\nbody", "b", "2").unwrap(), "---\r\na: 1\r\nb: 2\r\n---\r\nbody");
        assert_eq!(with_field("body", "b", "2").unwrap(), "---\nb: 2\n---\nbody");
        assert_eq!(with_field("---\nb: 1\n---\n", "b", "2"), None);
    }

    #[test]
    fn a_field_added_to_a_parsed_text_parses_as_the_new_text_does() {
        let docs = [
            "---\na: 1\n---\nbody",
            "---\r\na: 1\r\nb: [x, y]\r\n---\r\nbody\r\nmore",
            "---\n---\n# Title\n",
            "---\n# only a comment\n---\nbody",
            "---\nkeep: |+\n  text\n\n---\nbody",
            "---\nfold: >\n  a\n  b\n# trailing comment\n---\n",
            "---\nplain: foo\n  bar\n---\nx",
            "---\nlist:\n- 1\n- 2\n---\nx",
            "---\n'quoted key': v\n---\nx",
            "---\n  indented: 1\n  more: 2\n---\nbody",
            "---\n{a: 1}\n---\nbody",
            "---\n&anchor\na: 1\n---\n",
            "\u{feff}---\na: 1\n---\nbody",
            "no frontmatter at all\n",
            "---\na: [unclosed\n---\n",
        ];
        for doc in docs {
            assert_eq!(body_start(doc), parse(doc).body_start, "{doc:?}");
            for value in ["verified", "true", "no", "null", "1"] {
                let before = parse(doc);
                let made = with_field_parsed(doc, &before, "quality_status", value);
                assert_eq!(made.as_ref().map(|(t, _)| t.clone()), with_field(doc, "quality_status", value), "{doc:?}");
                let Some((text, p)) = made else { continue };
                let again = parse(&text);
                assert_eq!(
                    (p.fields, p.body_start, p.body_line, p.error, p.present),
                    (again.fields, again.body_start, again.body_line, again.error, again.present),
                    "{doc:?} with {value}"
                );
            }
        }
    }

    #[test]
    fn sets_a_field_in_place() {
        let doc = "---\na: 1\neffectiveness_mark: true\nlist:\n  - x\n---\nbody";
        assert_eq!(
            set_field(doc, "effectiveness_mark", "false").unwrap(),
            "---\na: 1\neffectiveness_mark: false\nlist:\n  - x\n---\nbody"
        );
        assert_eq!(set_field(doc, "list", "y").unwrap(), "---\na: 1\neffectiveness_mark: true\nlist: y\n---\nbody");
        assert_eq!(
            set_field(doc, "state", "active").unwrap(),
            "---\na: 1\neffectiveness_mark: true\nlist:\n  - x\nstate: active\n---\nbody"
        );
        assert_eq!(set_field("---\na: 1\n---\n", "a", "1"), None);
    }
}
