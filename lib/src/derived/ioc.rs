//! Domain convergence (seed 000 `--rebuild-index` `.ioc.md` and `status`
//! dimension 4): the web domains the references cite are tallied; any
//! domain cited by ≥ 3 reference documents is listed in `.ioc.md` as
//! `| domain | doc_count | first_seen | last_seen | risk | note |`, because
//! much knowledge resting on one source is a single point of failure (or of
//! injection). The file is derived: removed when no domain qualifies.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::clock;
use crate::library::entry::{Category, Entry};

/// The file's name under the library.
pub const FILE: &str = ".ioc.md";
/// Seed: a domain in this many reference documents is listed.
pub const MIN_DOCS: usize = 3;
/// From this many documents (or half of all references) the risk is high.
pub const HIGH_DOCS: usize = 5;

/// One converging domain.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Domain {
    /// Always `ioc`.
    pub record: &'static str,
    /// The domain, lowercase, without `www.`.
    pub domain: String,
    /// Reference documents citing it.
    pub doc_count: usize,
    /// Earliest date (YYYY-MM-DD) of a citing document, `-` when none is dated.
    pub first_seen: String,
    /// Latest such date.
    pub last_seen: String,
    /// medium (≥ 3 documents) or high (≥ 5, or ≥ half of all references).
    pub risk: &'static str,
    /// The citing topics.
    pub note: String,
}

/// The domains of URLs in a document's frontmatter values and body, sorted
/// and deduplicated.
pub fn domains(fields: &Map<String, Value>, body: &str) -> Vec<String> {
    let mut out = BTreeSet::new();
    let mut texts = vec![body];
    fields.values().for_each(|v| collect_strings(v, &mut texts));
    for t in texts {
        let mut rest = t;
        while let Some(i) = rest.find("://") {
            let scheme_ok =
                rest[..i].to_ascii_lowercase().ends_with("http") || rest[..i].to_ascii_lowercase().ends_with("https");
            let after = &rest[i + 3..];
            let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-')).unwrap_or(after.len());
            let host = after[..end].trim_end_matches('.').to_ascii_lowercase();
            if scheme_ok && host.contains('.') {
                out.insert(host.strip_prefix("www.").unwrap_or(&host).to_string());
            }
            rest = &after[end..];
        }
    }
    out.into_iter().collect()
}

fn collect_strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(m) => m.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

/// Tallies the domains of the reference entries; those in ≥ 3 documents,
/// by descending doc_count then domain.
pub fn tally<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Vec<Domain> {
    let refs: Vec<&Entry> = entries.into_iter().filter(|e| e.category == Category::Reference).collect();
    let mut by: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    for e in &refs {
        for d in &e.domains {
            by.entry(d.as_str()).or_default().push(e);
        }
    }
    let mut out: Vec<Domain> = by
        .into_iter()
        .filter(|(_, docs)| docs.len() >= MIN_DOCS)
        .map(|(domain, docs)| {
            let dates: BTreeSet<String> = docs
                .iter()
                .filter_map(|e| e.last_verified_at.as_deref().or(e.updated_at.as_deref()))
                .filter_map(clock::parse_instant)
                .map(clock::day)
                .collect();
            let topics: BTreeSet<&str> = docs.iter().map(|e| e.topic.as_str()).collect();
            let high = docs.len() >= HIGH_DOCS || docs.len() * 2 >= refs.len();
            Domain {
                record: "ioc",
                domain: domain.to_string(),
                doc_count: docs.len(),
                first_seen: dates.first().cloned().unwrap_or_else(|| "-".into()),
                last_seen: dates.last().cloned().unwrap_or_else(|| "-".into()),
                risk: if high { "high" } else { "medium" },
                note: format!(
                    "{} of {} references rely on it: {}",
                    docs.len(),
                    refs.len(),
                    topics.into_iter().collect::<Vec<_>>().join(", ")
                ),
            }
        })
        .collect();
    out.sort_by(|a, b| b.doc_count.cmp(&a.doc_count).then_with(|| a.domain.cmp(&b.domain)));
    out
}

/// The bytes of `.ioc.md`; `None` when no domain qualifies (no file).
pub fn render(domains: &[Domain]) -> Option<String> {
    if domains.is_empty() {
        return None;
    }
    let mut out = format!(
        "{}\n# Domain convergence (IOC)\n\n| domain | doc_count | first_seen | last_seen | risk | note |\n|---|---|---|---|---|---|\n",
        crate::derived::index::MARK
    );
    for d in domains {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            d.domain,
            d.doc_count,
            d.first_seen,
            d.last_seen,
            d.risk,
            d.note.replace('|', "\\|")
        ));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_hosts_of_web_urls() {
        let mut f = Map::new();
        f.insert("source".into(), Value::String("https://www.OWASP.org/x".into()));
        let d = domains(&f, "see <http://docs.rs/serde> and ftp://no.pe and [a](https://a.example.com:8080/p).");
        assert_eq!(d, vec!["a.example.com", "docs.rs", "owasp.org"]);
    }
}
