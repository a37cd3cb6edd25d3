//! Seed 000 `status`: the library's health in six dimensions, one report —
//! (1) index consistency, (2) reference staleness, (3) usage and
//! effectiveness_mark suggestions, (4) domain convergence (`.ioc.md`),
//! (5) thinking-pattern lifecycle, (6) input integrity (unreadable files,
//! broken frontmatter, bad changelog lines, dead lock directories). Index
//! problems are appended to `.inconsistency.log` as the seed asks. Domain
//! convergence leaves out well-known code hosts and documentation sites
//! (`config::KNOWN_DOMAINS` and the user's own `status.known_domains`).

use serde::Serialize;
use serde_json::{json, Value};

use crate::clock;
use crate::derived::consistency::{self, Inconsistency};
use crate::derived::ioc;
use crate::error::Result;
use crate::library::entry::Entry;
use crate::library::scan;
use crate::library::Library;
use crate::lock;
use crate::report::lifecycle;
use crate::report::stale;
use crate::report::usage;

/// One dimension of the report.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "record", rename = "audit")]
pub struct Dimension {
    /// 1–6.
    pub dimension: u8,
    /// index, staleness, effectiveness, ioc, lifecycle, integrity.
    pub name: &'static str,
    /// Whether a person should look at it.
    pub attention: bool,
    /// One line for people.
    pub summary: String,
    /// The findings behind the summary (records of their own types).
    pub items: Vec<Value>,
}

fn dim(n: u8, name: &'static str, summary: String, items: Vec<Value>) -> Dimension {
    Dimension { dimension: n, name, attention: !items.is_empty(), summary, items }
}

fn values<T: Serialize>(xs: &[T]) -> Vec<Value> {
    xs.iter().filter_map(|x| serde_json::to_value(x).ok()).collect()
}

const ROW_KINDS: &[&str] = &["missing-file", "missing-row", "missing-index", "stale-row"];

/// Audits the library. Index problems are logged under the lock.
pub fn audit(lib: &Library, lock_opts: &lock::Options) -> Result<Vec<Dimension>> {
    let now = clock::now()?;
    let scan = scan::library(lib);
    let problems = consistency::check(lib, &scan)?;
    let (rows, inputs): (Vec<Inconsistency>, Vec<Inconsistency>) =
        problems.into_iter().partition(|p| ROW_KINDS.contains(&p.kind.as_str()));
    if !rows.is_empty() {
        lock::with_lock(lib, lock_opts, || consistency::log(lib, &rows))?;
    }
    let entries: Vec<Entry> = scan.docs.into_iter().map(|d| d.entry).collect();
    let refs = entries.iter().filter(|e| e.category == crate::library::entry::Category::Reference).count();
    let stale: Vec<_> = entries.iter().filter_map(|e| stale::reference(e, now, None)).collect();
    let usage = usage::load(lib)?;
    let marked: std::collections::BTreeSet<&str> =
        entries.iter().filter(|e| e.effectiveness_mark).map(|e| e.path.as_str()).collect();
    let suggestions: Vec<_> =
        usage.values().filter(|u| u.suggest_mark && !marked.contains(u.path.as_str())).cloned().collect();
    // Code hosts and documentation sites are cited for unrelated pages:
    // they are shown, not counted (the built-in list plus the user's own).
    let config = crate::config::Config::load()?;
    let (known, domains): (Vec<ioc::Domain>, Vec<ioc::Domain>) =
        ioc::tally(&entries).into_iter().partition(|d| config.known_domain(&d.domain));
    let patterns = lifecycle::compute(&entries, &usage);
    let counts = lifecycle::counts(&patterns);
    let review: Vec<_> = patterns.iter().filter(|p| p.needs_review).cloned().collect();
    let mut integrity = values(&inputs);
    if let Ok(lock::State::Legacy { pid, alive: false }) = lock::status(lib) {
        integrity.push(json!({"record": "inconsistency", "kind": "dead-lock", "path": ".lock",
            "message": format!("a mkdir lock of dead pid {pid:?} is left; run kb-lock sweep")}));
    }
    for c in crate::sync::conflicts::list(lib) {
        integrity.push(json!({"record": "inconsistency", "kind": "conflict", "path": c.path,
            "message": format!("an overlapping edit is kept in {}; end it with kb-append resolve {} --keep ours|theirs|FILE", c.kept, c.path)}));
    }
    // What sync kept out of the library: a person decides.
    for h in crate::sync::hold::read(lib)? {
        let what = match h.why {
            crate::sync::hold::Why::Dangerous => "quarantined",
            crate::sync::hold::Why::Review => "waiting-review",
        };
        integrity.push(json!({"record": "inconsistency", "kind": what, "path": h.path,
            "message": format!("{}; see it with git show {}, then kb-append quarantine release|drop {}", h.reason, h.theirs.as_deref().unwrap_or("(deleted)"), h.path)}));
    }
    let count_text = counts.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", ");
    Ok(vec![
        dim(1, "index", format!("{} index problems (logged to {})", rows.len(), consistency::LOG), values(&rows)),
        dim(2, "staleness", format!("{} of {refs} references stale", stale.len()), values(&stale)),
        dim(
            3,
            "effectiveness",
            format!("{} files used, {} effectiveness_mark suggestions", usage.len(), suggestions.len()),
            values(&suggestions),
        ),
        dim(4, "ioc", ioc_summary(&domains, &known), values(&domains)),
        dim(
            5,
            "lifecycle",
            format!("{} patterns: {count_text}; {} deprecated need review", patterns.len(), review.len()),
            values(&review),
        ),
        dim(
            6,
            "integrity",
            format!("{} unreadable or malformed inputs, kept conflicts or held peer changes", integrity.len()),
            integrity,
        ),
    ])
}

/// Dimension 4's line: the converging domains, and the well-known ones
/// left out of the count.
fn ioc_summary(domains: &[ioc::Domain], known: &[ioc::Domain]) -> String {
    let mut line = format!("{} domains in ≥ {} references", domains.len(), ioc::MIN_DOCS);
    if !known.is_empty() {
        let names: Vec<String> = known.iter().map(|d| format!("{} ({})", d.domain, d.doc_count)).collect();
        line.push_str(&format!("; well known, not counted: {}", names.join(", ")));
    }
    line
}

/// The report for people: one block per dimension, `!` marking attention.
pub fn render(dims: &[Dimension]) -> String {
    let mut out = String::new();
    for d in dims {
        let mark = if d.attention { "!" } else { "ok" };
        out.push_str(&format!("[{mark}] {}. {}: {}\n", d.dimension, d.name, d.summary));
        for it in &d.items {
            let path = it.get("path").and_then(Value::as_str).or_else(|| it.get("domain").and_then(Value::as_str));
            let what = ["kind", "reason", "state", "risk"]
                .iter()
                .find_map(|k| it.get(*k).and_then(Value::as_str))
                .map(str::to_string)
                .or_else(|| it.get("usage_count").map(|u| format!("usage {u}, failure {}%", it["failure_rate"])));
            out.push_str(&format!("      {}  {}\n", what.unwrap_or_default(), path.unwrap_or("")));
        }
    }
    out
}

/// `kb-index status`: the dimensions as a table or records; exit 1 when
/// one needs attention.
pub fn print(dims: &[Dimension], table: bool, out: &mut crate::out::jsonl::Out) -> Result<()> {
    if table {
        out.text(&render(dims))?;
    } else {
        dims.iter().try_for_each(|d| out.record(d))?;
    }
    out.raise(if dims.iter().any(|d| d.attention) { crate::Exit::Negative } else { crate::Exit::Success });
    Ok(())
}
