//! A note file `notes/MEM-<id>.md` in the seed's template
//! (memory-note-template.md): Meta (Id, Kind, Status, Strength, Scope,
//! Audience, Portability, Source, Tags, Supersedes, CreatedAt, UpdatedAt,
//! Session), When to load, One-liner (for injection), Context / Decision
//! (Decision, Signals, Alternatives, Counter-signals), Pointers. Parsing is
//! lenient so hand-edited notes are read as they are; a note without a
//! Meta section is an error.

use super::candidate::{one_line, Candidate, Recommendation};
use crate::doc::digest::sha256_hex;

/// A note as on disk.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Note {
    /// `MEM-…`.
    pub id: String,
    /// The memory itself.
    pub body: Candidate,
    /// active (or whatever a hand edit set).
    pub status: String,
    /// Ids this note replaced or absorbed.
    pub supersedes: Vec<String>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// The conversation that last wrote it.
    pub session: String,
}

/// The shape every note id must have; ids become file names, so nothing
/// else (no `/`, no `..`) may reach a path.
pub const ID_RULE: &str = "MEM-[A-Za-z0-9_-]+";

/// Whether `id` matches [`ID_RULE`].
pub fn valid_id(id: &str) -> bool {
    id.strip_prefix("MEM-").is_some_and(|rest| {
        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// [`valid_id`] as an error naming the rule.
pub fn check_id(id: &str) -> Result<(), String> {
    if valid_id(id) {
        Ok(())
    } else {
        Err(format!("note id '{}' does not match {ID_RULE}", crate::library::names::shown(id)))
    }
}

/// The note file name for an id.
pub fn file_name(id: &str) -> String {
    format!("{id}.md")
}

fn bullets(out: &mut String, items: &[String]) {
    for i in items {
        out.push_str(&format!("- {}\n", one_line(i)));
    }
}

impl Note {
    /// Renders the note in the seed's template.
    pub fn render(&self) -> String {
        let b = &self.body;
        let mut out = format!("# {}: {}\n\n## Meta\n\n", self.id, one_line(&b.title));
        let meta: [(&str, String); 13] = [
            ("Id", self.id.clone()),
            ("Kind", b.kind.clone()),
            ("Status", self.status.clone()),
            ("Strength", b.recommendation.strength.clone()),
            ("Scope", b.recommendation.scope.clone()),
            ("Audience", b.audience.clone()),
            ("Portability", b.portability.clone()),
            ("Source", b.source.clone()),
            ("Tags", b.tags.join(", ")),
            ("Supersedes", self.supersedes.join(", ")),
            ("CreatedAt", self.created_at.clone()),
            ("UpdatedAt", self.updated_at.clone()),
            ("Session", self.session.clone()),
        ];
        for (k, v) in meta {
            let v = one_line(&v);
            out.push_str(&if v.is_empty() { format!("- {k}:\n") } else { format!("- {k}: {v}\n") });
        }
        out.push_str("\n## When to load\n\n");
        bullets(&mut out, &b.when_to_load);
        out.push_str(&format!("\n## One-liner (for injection)\n\n{}\n", one_line(&b.one_liner)));
        out.push_str(&format!("\n## Context / Decision\n\n- Decision: {}\n", one_line(&b.decision)));
        for (name, items) in
            [("Signals", &b.signals), ("Alternatives", &b.alternatives), ("Counter-signals", &b.counter_signals)]
        {
            if items.is_empty() {
                continue;
            }
            out.push_str(&format!("- {name}:\n"));
            for i in items {
                out.push_str(&format!("  - {}\n", one_line(i)));
            }
        }
        if !b.pointers.is_empty() {
            out.push_str("\n## Pointers\n\n");
            bullets(&mut out, &b.pointers);
        }
        out
    }

    /// The digest of what the note says, leaving out UpdatedAt and Session,
    /// which change on every write: equal digests mean an apply has
    /// nothing to change.
    pub fn content_digest(&self) -> String {
        let mut n = self.clone();
        n.updated_at.clear();
        n.session.clear();
        sha256_hex(n.render().as_bytes())
    }

    /// The canonical one-liner: what exact-duplicate detection compares.
    pub fn canonical(&self) -> String {
        crate::text::canonical(&self.body.one_liner)
    }
}

/// The digest of a file's bytes, as the audit log's before/after.
pub fn file_digest(bytes: &[u8]) -> String {
    sha256_hex(bytes)
}

fn split_list(v: &str) -> Vec<String> {
    v.split([',', '，', '、']).map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
}

/// Parses a note file. `fallback_id` (from the file name) is used when Meta
/// has no Id. Fails when there is no `## Meta` section.
pub fn parse(text: &str, fallback_id: &str) -> Result<Note, String> {
    let text = text.trim_start_matches('\u{feff}');
    let mut section = String::new();
    let mut saw_meta = false;
    let mut n = Note { id: fallback_id.to_string(), ..Note::default() };
    let mut title = None;
    let mut one_liner = Vec::new();
    let mut sub: Option<String> = None;
    let b = &mut n.body;
    let mut rec = Recommendation::default();
    for raw in text.lines() {
        let line = raw.trim_end();
        if let Some(h) = line.strip_prefix("# ") {
            if section.is_empty() {
                title = Some(h.split_once(": ").map_or(h, |(_, t)| t).trim().to_string());
            }
            continue;
        }
        if let Some(h) = line.strip_prefix("## ") {
            section = h.trim().to_lowercase();
            saw_meta |= section == "meta";
            sub = None;
            continue;
        }
        let item = line.trim_start().strip_prefix("- ").or_else(|| line.trim_start().strip_prefix("* "));
        let nested = line.starts_with("  ") || line.starts_with('\t');
        match section.as_str() {
            "meta" => {
                let Some((k, v)) = item.and_then(|i| i.split_once(':')) else { continue };
                let v = v.trim().to_string();
                match k.trim().to_lowercase().as_str() {
                    "id" if !v.is_empty() => n.id = v,
                    "kind" => b.kind = v,
                    "status" => n.status = v,
                    "strength" => rec.strength = v,
                    "scope" => rec.scope = v,
                    "audience" => b.audience = v,
                    "portability" => b.portability = v,
                    "source" => b.source = v,
                    "tags" => b.tags = split_list(&v),
                    "supersedes" => n.supersedes = split_list(&v),
                    "createdat" | "created_at" | "created" => n.created_at = v,
                    "updatedat" | "updated_at" | "updated" => n.updated_at = v,
                    "session" => n.session = v,
                    _ => {}
                }
            }
            s if s.starts_with("when to load") => {
                if let Some(i) = item {
                    b.when_to_load.push(i.trim().to_string());
                }
            }
            s if s.starts_with("one-liner") && !line.trim().is_empty() => one_liner.push(line.trim().to_string()),
            s if s.starts_with("context") => {
                let Some(i) = item else { continue };
                if nested {
                    let target = match sub.as_deref() {
                        Some("signals") => &mut b.signals,
                        Some("alternatives") => &mut b.alternatives,
                        Some("counter-signals") => &mut b.counter_signals,
                        _ => continue,
                    };
                    target.push(i.trim().to_string());
                    continue;
                }
                let (k, v) = i.split_once(':').map_or((i, ""), |(k, v)| (k, v));
                let key = k.trim().to_lowercase();
                let v = v.trim();
                match key.as_str() {
                    "decision" => b.decision = v.to_string(),
                    "signals" | "alternatives" | "counter-signals" => {
                        let target = match key.as_str() {
                            "signals" => &mut b.signals,
                            "alternatives" => &mut b.alternatives,
                            _ => &mut b.counter_signals,
                        };
                        if !v.is_empty() {
                            target.push(v.to_string());
                        }
                        sub = Some(key);
                    }
                    _ => {}
                }
            }
            "pointers" => {
                if let Some(i) = item {
                    b.pointers.push(i.trim().to_string());
                }
            }
            _ => {}
        }
    }
    if !saw_meta {
        return Err("note has no '## Meta' section".into());
    }
    b.recommendation = rec;
    b.one_liner = one_liner.join(" ");
    b.title = title.unwrap_or_else(|| super::candidate::title_of(&b.one_liner));
    check_id(&n.id)?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_then_parse_round_trips() {
        let n = Note {
            id: "MEM-abc".into(),
            body: Candidate {
                title: "Use pnpm".into(),
                kind: "preference".into(),
                when_to_load: vec!["When installing".into()],
                one_liner: "Use pnpm, not npm.".into(),
                decision: "Use pnpm".into(),
                signals: vec!["\"use pnpm\"".into(), "x: y".into()],
                counter_signals: vec!["not in CI".into()],
                recommendation: Recommendation { strength: "should".into(), scope: "project".into() },
                audience: "agent".into(),
                portability: "project-specific".into(),
                source: "user".into(),
                tags: vec!["pnpm".into(), "npm".into()],
                pointers: vec!["claim c1: x".into()],
                ..Candidate::default()
            },
            status: "active".into(),
            supersedes: vec!["MEM-old".into()],
            created_at: "2026-01-01T00:00:00Z".into(),
            updated_at: "2026-01-02T00:00:00Z".into(),
            session: "conv".into(),
        };
        let text = n.render();
        let back = parse(&text, "MEM-zzz").unwrap();
        assert_eq!(back, n);
        assert!(parse("# x\n\nno meta\n", "MEM-x").is_err());
    }
}
