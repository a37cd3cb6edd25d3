//! Seed 000 `list [--type <type>]`: one `entry` record per document, or the
//! seed's per-category tables for people — references (version count,
//! marked version, staleness), experiences (entries per type and semantic
//! name), type profiles (last updated), thinking patterns (lifecycle state),
//! raw thinking (counts by semantic name and quality tier H/M/L), plus
//! skills and user folders. `--type` takes pipe-separated segments.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::{Map, Value};

use crate::library::entry::{Category, Entry};
use crate::out::jsonl;
use crate::report::lifecycle;
use crate::report::stale;
use crate::report::usage::Usage;

/// Which documents to list.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// `--type`: the segments of a pipe-separated list (lowercase).
    pub types: Vec<String>,
    /// `--topic`: an exact topic (case-insensitive).
    pub topic: Option<String>,
}

impl Filter {
    /// Builds a filter from the flags as typed.
    pub fn new(types: Option<&str>, topic: Option<&str>) -> Filter {
        Filter { types: segments(types.unwrap_or("")), topic: topic.map(|t| t.trim().to_lowercase()) }
    }

    /// Whether a document passes: its type shares a segment with `--type`
    /// (experiences' type directory counts), its topic equals `--topic`.
    pub fn matches(&self, e: &Entry) -> bool {
        let type_ok = self.types.is_empty()
            || segments(e.doc_type.as_deref().unwrap_or("")).iter().any(|s| self.types.contains(s));
        let topic_ok = self.topic.as_ref().is_none_or(|t| e.topic.to_lowercase() == *t);
        type_ok && topic_ok
    }
}

fn segments(s: &str) -> Vec<String> {
    s.split('|').map(|x| x.trim().to_lowercase()).filter(|x| !x.is_empty()).collect()
}

/// The lifecycle state list shows for a pattern: the one its frontmatter
/// records, else the one the changelog gives.
fn pattern_state(e: &Entry, usage: &BTreeMap<String, Usage>) -> String {
    e.lifecycle.clone().unwrap_or_else(|| {
        lifecycle::state(&crate::report::usage::of(usage, &e.path), e.superseded_by.is_some()).to_string()
    })
}

/// The `entry` record of a document: its entry with `record` first, the
/// `stale` flag for references and the lifecycle state for patterns.
pub fn record(e: &Entry, now: Timestamp, usage: &BTreeMap<String, Usage>) -> Value {
    let mut m = Map::new();
    m.insert("record".into(), Value::String("entry".into()));
    if let Ok(Value::Object(fields)) = serde_json::to_value(e) {
        m.extend(fields);
    }
    if e.category == Category::Reference {
        m.insert("stale".into(), Value::Bool(stale::reference(e, now, None).is_some()));
    }
    if e.category == Category::ThinkingPattern {
        m.insert("lifecycle".into(), Value::String(pattern_state(e, usage)));
    }
    Value::Object(m)
}

/// The seed's tables, one per non-empty category, each under a heading.
pub fn tables(entries: &[&Entry], now: Timestamp, usage: &BTreeMap<String, Usage>) -> String {
    let of = |c: Category| entries.iter().copied().filter(move |e| e.category == c);
    let mut out = String::new();
    let mut section = |title: &str, header: &[&str], rows: Vec<Vec<String>>| {
        if rows.is_empty() {
            return;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("{title}\n"));
        out.push_str(&jsonl::table(header, &rows));
    };

    let mut refs: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    for e in of(Category::Reference) {
        refs.entry(&e.topic).or_default().push(e);
    }
    let rows = refs
        .iter()
        .map(|(topic, docs)| {
            let latest = docs.iter().filter_map(|e| e.version).max();
            let marked = docs.iter().find(|e| e.effectiveness_mark).and_then(|e| e.version);
            let stale_n = docs.iter().filter(|e| stale::reference(e, now, None).is_some()).count();
            vec![
                topic.to_string(),
                docs.len().to_string(),
                latest.map_or("-".into(), |v| format!("v{v}")),
                marked.map_or("-".into(), |v| format!("v{v}")),
                if stale_n == 0 { "fresh".into() } else { format!("stale ({stale_n})") },
            ]
        })
        .collect();
    section("References (.memory/.references)", &["Topic", "Versions", "Latest", "Marked", "Staleness"], rows);

    let mut exps: BTreeMap<(String, String), Vec<&Entry>> = BTreeMap::new();
    for e in of(Category::Experience) {
        let key = (e.doc_type.clone().unwrap_or_default(), e.semantic.clone().unwrap_or_else(|| e.topic.clone()));
        exps.entry(key).or_default().push(e);
    }
    let rows = exps
        .iter()
        .map(|((ty, sem), docs)| {
            let mut suffixes: Vec<&str> = docs.iter().filter_map(|e| e.suffix.as_deref()).collect();
            suffixes.sort_unstable();
            let verified = docs.iter().any(|e| e.quality_status.as_deref() == Some("verified"));
            vec![
                ty.clone(),
                sem.clone(),
                docs.len().to_string(),
                suffixes.join(", "),
                if verified { "verified" } else { "provisional" }.into(),
            ]
        })
        .collect();
    section("Experiences (.memory/.experiences)", &["Type", "Semantic", "Entries", "Files", "Quality"], rows);

    let rows = of(Category::TypeProfile)
        .map(|e| {
            vec![e.topic.clone(), e.updated_at.clone().or_else(|| e.last_verified_at.clone()).unwrap_or("-".into())]
        })
        .collect();
    section("Type profiles (.memory/.type-profiles)", &["Profile", "Last updated"], rows);

    let rows = of(Category::ThinkingPattern).map(|e| vec![e.topic.clone(), pattern_state(e, usage)]).collect();
    section("Thinking patterns (.memory/.thinking/patterns)", &["Pattern", "State"], rows);

    let mut raw: BTreeMap<String, [usize; 4]> = BTreeMap::new();
    for e in of(Category::ThinkingRaw) {
        let tier = match e.quality_tier.as_deref().map(str::to_ascii_uppercase).as_deref() {
            Some("H" | "HIGH") => 0,
            Some("M" | "MEDIUM") => 1,
            Some("L" | "LOW") => 2,
            _ => 3,
        };
        raw.entry(e.semantic.clone().unwrap_or_else(|| e.topic.clone())).or_default()[tier] += 1;
    }
    let rows = raw
        .iter()
        .map(|(sem, c)| {
            let mut r = vec![sem.clone()];
            r.extend(c.iter().map(usize::to_string));
            r.push(c.iter().sum::<usize>().to_string());
            r
        })
        .collect();
    section("Raw thinking (.memory/.thinking/raw)", &["Semantic", "H", "M", "L", "Untiered", "Total"], rows);

    let rows = of(Category::Skill)
        .map(|e| {
            let stage = e.path.split('/').nth(1).unwrap_or("").trim_start_matches('.').to_string();
            vec![e.topic.clone(), stage, e.trust_tier.clone().unwrap_or("-".into())]
        })
        .collect();
    section("Skills (.skills)", &["Skill", "Stage", "Trust"], rows);

    let rows = of(Category::User)
        .map(|e| vec![e.path.clone(), e.topic.clone(), e.doc_type.clone().unwrap_or("-".into())])
        .collect();
    section("User folders", &["Path", "Topic", "Type"], rows);
    if out.is_empty() {
        out.push_str("(no documents)\n");
    }
    out
}

/// `kb-index list`: the entries `filter` keeps as records or as tables,
/// then the scan's problems (errors on stderr when printing tables).
pub fn print(lib: &crate::Library, filter: &Filter, table: bool, out: &mut jsonl::Out) -> crate::Result<()> {
    let (now, scan) = (crate::clock::now()?, crate::library::scan::library(lib));
    let used = crate::report::usage::load(lib)?;
    let entries: Vec<_> = scan.docs.iter().map(|d| &d.entry).filter(|e| filter.matches(e)).collect();
    if table {
        out.text(&tables(&entries, now, &used))?;
    } else {
        for e in entries {
            out.record(&record(e, now, &used))?;
        }
    }
    for p in &scan.problems {
        let msg = format!("{}: {} ({})", p.path, p.message, p.kind);
        if table {
            eprintln!("kb-index: {}", crate::out::printable(&msg, false));
            out.raise(crate::Exit::Failure);
        } else {
            out.error(&msg, serde_json::to_value(p).unwrap_or_default())?;
        }
    }
    Ok(())
}
