//! The union merge of an append-only log: the lines the
//! three versions share as a prefix stay as they are; past it, every line
//! of either side appears once, ordered by its `ts` then its bytes, so any
//! replica merging the same histories gets the same bytes whichever side
//! is "ours". A line one side removed since the base (compaction moved it
//! to an archive) stays removed. Torn and unparsable lines are kept.

use std::collections::HashSet;

use jiff::Timestamp;

/// The lines of a log; a torn last line (no newline) counts as a line.
fn lines(text: &[u8]) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    if out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out
}

/// The sort key of a line: its `ts` when it is a JSON object with one
/// (lines without sort first), then its bytes.
fn key(line: &[u8]) -> (Option<Timestamp>, &[u8]) {
    // Not JSON (a '#' marker, a foreign line): kept, sorted first.
    let ts = serde_json::from_slice::<serde_json::Value>(line)
        .ok()
        .and_then(|v| v.get("ts").and_then(|t| t.as_str()).and_then(crate::clock::parse_instant));
    (ts, line)
}

/// Merges three versions of a log (base, ours, theirs) into one.
pub fn merge(base: &[u8], ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let (b, o, t) = (lines(base), lines(ours), lines(theirs));
    let prefix = b.iter().zip(&o).zip(&t).take_while(|((x, y), z)| x == y && y == z).count();
    let in_base: HashSet<&[u8]> = b[prefix..].iter().copied().collect();
    let in_ours: HashSet<&[u8]> = o.iter().copied().collect();
    let in_theirs: HashSet<&[u8]> = t.iter().copied().collect();
    let mut seen: HashSet<&[u8]> = b[..prefix].iter().copied().collect();
    let mut tail: Vec<&[u8]> = Vec::new();
    for &line in o[prefix..].iter().chain(&t[prefix..]) {
        let removed = in_base.contains(line) && !(in_ours.contains(line) && in_theirs.contains(line));
        if !removed && seen.insert(line) {
            tail.push(line);
        }
    }
    let mut keyed: Vec<_> = tail.into_iter().map(key).collect();
    keyed.sort();
    let mut out = Vec::with_capacity(ours.len().max(theirs.len()) + 64);
    for line in b[..prefix].iter().copied().chain(keyed.into_iter().map(|(_, l)| l)) {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::merge;

    fn ev(ts: &str, n: u32) -> String {
        format!("{{\"ts\":\"{ts}\",\"event\":\"write\",\"path\":\"d{n}.md\"}}\n")
    }

    #[test]
    fn appends_on_both_sides_are_united_in_time_order() {
        let base = ev("2026-01-01T00:00:00Z", 0);
        let ours = format!("{base}{}{}", ev("2026-01-03T00:00:00Z", 1), ev("2026-01-05T00:00:00Z", 2));
        let theirs = format!("{base}{}", ev("2026-01-04T00:00:00Z", 3));
        let a = merge(base.as_bytes(), ours.as_bytes(), theirs.as_bytes());
        let b = merge(base.as_bytes(), theirs.as_bytes(), ours.as_bytes());
        assert_eq!(a, b);
        let want = format!(
            "{base}{}{}{}",
            ev("2026-01-03T00:00:00Z", 1),
            ev("2026-01-04T00:00:00Z", 3),
            ev("2026-01-05T00:00:00Z", 2)
        );
        assert_eq!(String::from_utf8(a).unwrap(), want);
    }

    #[test]
    fn compaction_on_one_side_stays_and_torn_lines_survive() {
        let old = ev("2025-01-01T00:00:00Z", 0);
        let base = format!("{old}{}", ev("2026-01-01T00:00:00Z", 1));
        let ours = format!("# COMPACT 2026-02-01: archived 1 lines -> x\n{}", ev("2026-01-01T00:00:00Z", 1));
        let theirs = format!("{base}{{\"ts\":\"2026-01-0");
        let m = String::from_utf8(merge(base.as_bytes(), ours.as_bytes(), theirs.as_bytes())).unwrap();
        assert!(!m.contains("2025-01-01"), "{m}");
        assert!(m.contains("# COMPACT"), "{m}");
        assert!(m.contains("{\"ts\":\"2026-01-0\n"), "{m}");
        assert_eq!(m.matches("d1.md").count(), 1, "{m}");
    }
}
