//! Seed 000's search table for people:
//! `Score Hop Topic Used Fresh Path`, `-` for direct hits, `H1`/`H2` for
//! graph hits whose path ends with `← <topic they were reached from>`; a
//! `Source` column when several libraries were queried; snippets and
//! content (tiers 2 and 3) below the table; a closing summary line.

use crate::out::jsonl;

use super::{Hit, Summary};

/// Renders an outcome as the seed's table.
pub fn render(hits: &[Hit], s: &Summary) -> String {
    let multi = s.sources_queried.len() > 1;
    let mut header = vec!["Score", "Hop", "Topic", "Used", "Fresh"];
    if multi {
        header.push("Source");
    }
    header.push("Path");
    let rows: Vec<Vec<String>> = hits
        .iter()
        .map(|h| {
            let mut r = vec![
                format!("{:.3}", h.score),
                if h.hop == 0 { "-".to_string() } else { format!("H{}", h.hop) },
                h.topic.clone(),
                h.used_by.to_string(),
                format!("{:.2}", h.freshness),
            ];
            if multi {
                r.push(h.source.clone());
            }
            r.push(match &h.via_topic {
                Some(t) if h.hop > 0 => format!("{} ← {t}", h.path),
                _ => h.path.clone(),
            });
            r
        })
        .collect();
    let mut out = jsonl::table(&header, &rows);
    for h in hits {
        if h.summary.is_none() && h.content.is_none() {
            continue;
        }
        out.push_str(&format!("\n── {} ({})\n", h.path, h.source));
        if let Some(sn) = &h.summary {
            out.push_str(marked(sn, &h.marks).trim_end());
            out.push('\n');
        }
        if let Some(c) = &h.content {
            out.push('\n');
            out.push_str(c.trim_end());
            out.push('\n');
        }
    }
    let budget = s.budget.map_or_else(String::new, |b| format!(" of {b}"));
    let omitted = if s.omitted > 0 { format!(", {} omitted by the budget", s.omitted) } else { String::new() };
    let cut = match s.tail_cut {
        Some(share) if s.cut > 0 => format!(" · {} below {:.0}% of the best left out", s.cut, share * 100.0),
        _ => String::new(),
    };
    out.push_str(&format!(
        "\n{} hits: {} of {} matching, {} linked from them · tier {} · ~{} tokens{budget}{omitted}{cut}\n",
        s.hits, s.direct, s.matched, s.recommended, s.tier, s.tokens_used
    ));
    if multi || !s.sources_failed.is_empty() {
        out.push_str(&format!(
            "sources queried: {} · with findings: {} · failed: {}\n",
            s.sources_queried.join(", "),
            list(&s.sources_with_findings),
            list(&s.sources_failed)
        ));
    }
    if let Some(d) = &s.did_you_mean {
        out.push_str(&format!("did you mean: {d}\n"));
    }
    if let Some(a) = &s.answer {
        out.push_str(a);
        out.push('\n');
    }
    out
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// A snippet with the query's words in `**…**` (Markdown bold, readable
/// as plain text too).
fn marked(s: &str, marks: &[std::ops::Range<usize>]) -> String {
    let mut out = String::with_capacity(s.len() + 4 * marks.len());
    let mut at = 0;
    for r in marks {
        if r.start < at || r.end > s.len() {
            continue;
        }
        out.push_str(&s[at..r.start]);
        out.push_str("**");
        out.push_str(&s[r.clone()]);
        out.push_str("**");
        at = r.end;
    }
    out.push_str(&s[at..]);
    out
}
