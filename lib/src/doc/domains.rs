//! The web domains a document cites: the hosts of `http(s)://` URLs in its
//! frontmatter values and body. `Entry` records them for references and
//! `derived::ioc` tallies them; the scan is about one document's bytes, so
//! it lives here.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

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
