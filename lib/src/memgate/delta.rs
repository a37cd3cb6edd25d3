//! The search index's change log `.search.log`: what `apply` changed
//! since `.search.idx` was last written whole, one JSON line per apply,
//! so that remembering one note costs that note and not the store's size
//! (issue 16: rewriting the whole index at 10,000 notes cost ten times
//! what it did at 1,000). Readers lay the log over the index
//! (`View::overlay`); when it grows past [`MAX_CHANGES`] apply writes the
//! index whole again and starts a new log, which keeps both the log a
//! reader parses and the amortised rewrite small.
//!
//! The first line names the index the log extends (its notes-dir mtime
//! and doc count); a log naming another index, or with a torn last line,
//! is not trusted: the index counts as stale and is rebuilt.

use serde_json::{json, Value};

use super::search::DocEntry;
use super::similarity::Features;

/// Changes after which apply rewrites the index whole.
pub const MAX_CHANGES: usize = 128;

/// One apply's change to the index.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The notes-dir mtime (ns) right after the change.
    pub at: i64,
    /// Notes removed (moved to the archive).
    pub del: Vec<String>,
    /// The note written, replacing any entry with its id.
    pub put: Option<DocEntry>,
}

/// The log's first line, naming the index it extends.
pub fn header(base_mtime_ns: i64, docs: usize) -> String {
    format!("{}\n", json!({"base": base_mtime_ns, "docs": docs}))
}

fn pairs(v: &[(u64, u32)]) -> Value {
    Value::Array(v.iter().map(|(k, n)| json!([k, n])).collect())
}

/// One change as a log line.
pub fn line(c: &Change) -> String {
    let put = c.put.as_ref().map(|e| {
        let f = &e.features;
        json!({"id": e.id, "file": e.file, "size": e.size, "mtime_ns": e.mtime_ns,
            "word_len": f.word_len, "gram_len": f.gram_len, "dup": crate::doc::digest::hex(&f.dup),
            "words": pairs(&f.words), "grams": pairs(&f.grams)})
    });
    format!("{}\n", json!({"at": c.at, "del": c.del, "put": put}))
}

fn parse_pairs(v: &Value) -> Option<Vec<(u64, u32)>> {
    v.as_array()?.iter().map(|p| Some((p.get(0)?.as_u64()?, u32::try_from(p.get(1)?.as_u64()?).ok()?))).collect()
}

fn parse_entry(v: &Value) -> Option<DocEntry> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let n = |k: &str| v.get(k).and_then(Value::as_u64);
    let dup: [u8; 16] = crate::doc::digest::unhex(&s("dup")?)?.try_into().ok()?;
    Some(DocEntry {
        id: s("id")?,
        file: s("file")?,
        size: n("size")?,
        mtime_ns: v.get("mtime_ns")?.as_i64()?,
        features: Features {
            words: parse_pairs(v.get("words")?)?,
            word_len: u32::try_from(n("word_len")?).ok()?,
            grams: parse_pairs(v.get("grams")?)?,
            gram_len: u32::try_from(n("gram_len")?).ok()?,
            dup,
        },
    })
}

/// The changes of a log that extends the index built at `base_mtime_ns`
/// with `docs` notes; `None` when the log extends another index or any
/// line (a torn last one included) cannot be read. An empty log has none.
pub fn parse(text: &str, base_mtime_ns: i64, docs: usize) -> Option<Vec<Change>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    if !text.ends_with('\n') {
        return None;
    }
    let mut lines = text.lines();
    let head: Value = serde_json::from_str(lines.next()?).ok()?;
    if head.get("base")?.as_i64()? != base_mtime_ns || head.get("docs")?.as_u64()? != docs as u64 {
        return None;
    }
    lines
        .map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            let del =
                v.get("del")?.as_array()?.iter().map(|x| x.as_str().map(str::to_string)).collect::<Option<_>>()?;
            let put = match v.get("put")? {
                Value::Null => None,
                p => Some(parse_entry(p)?),
            };
            Some(Change { at: v.get("at")?.as_i64()?, del, put })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_foreign_or_torn_logs_are_refused() {
        let e = DocEntry {
            id: "MEM-a".into(),
            file: "MEM-a.md".into(),
            size: 9,
            mtime_ns: -3,
            features: super::super::similarity::features("use pnpm 不要用 var", "use pnpm"),
        };
        let c = Change { at: 42, del: vec!["MEM-b".into()], put: Some(e) };
        let text = header(7, 3) + &line(&c);
        assert_eq!(parse(&text, 7, 3), Some(vec![c]));
        assert_eq!(parse(&text, 8, 3), None);
        assert_eq!(parse(&text, 7, 4), None);
        assert_eq!(parse(&text[..text.len() - 1], 7, 3), None);
        assert_eq!(parse("", 7, 3), Some(Vec::new()));
    }
}
