//! Seed 002 `skill_list`: every skill with its name and description (so a
//! reviewer does not create a duplicate), plus what the library knows on
//! top: stage, trust tier and the guard's current verdict.

use std::fs;

use serde::Serialize;

use super::guard_scan;
use super::stage::{self, ALL};
use crate::doc::frontmatter;
use crate::error::{Error, Result};
use crate::guard::{Engine, Verdict};
use crate::library::Library;
use crate::out::jsonl;

/// One `skill` record.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "skill")]
pub struct Listed {
    /// The skill's name (its directory).
    pub name: String,
    /// SKILL.md's description ("" when missing).
    pub description: String,
    /// candidates, drafts or active.
    pub stage: &'static str,
    /// T1–T4, when SKILL.md says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust_tier: Option<String>,
    /// The guard's verdict on the skill now.
    pub verdict: Verdict,
    /// Findings that count.
    pub findings: usize,
    /// The skill's SKILL.md, library-relative.
    pub path: String,
}

/// Every skill directory (holding SKILL.md) of every stage, stage order
/// then name order, judged in parallel.
pub fn list(lib: &Library, engine: &Engine) -> Result<Vec<Listed>> {
    let mut found = Vec::new();
    for s in ALL {
        let listing = match fs::read_dir(lib.path(&s.dir())) {
            Ok(rd) => rd.collect::<std::io::Result<Vec<_>>>(),
            // A stage nobody used yet has no folder.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        };
        let listing = listing.map_err(|e| Error::io(format!("listing {}", s.dir()), e))?;
        let mut names: Vec<String> = listing
            .into_iter()
            // A name that is not UTF-8 cannot be a skill name (validate::name).
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !n.starts_with('.'))
            .filter(|n| lib.path(&format!("{}/SKILL.md", stage::skill_dir(s, n))).is_file())
            .collect();
        names.sort();
        found.extend(names.into_iter().map(|n| (s, n)));
    }
    let dirs: Vec<String> = found.iter().map(|(s, n)| stage::skill_dir(*s, n)).collect();
    let judged = guard_scan::skills(lib, engine, &dirs)?;
    found
        .into_iter()
        .zip(dirs)
        .zip(judged)
        .map(|(((s, name), dir), j)| {
            let path = format!("{dir}/SKILL.md");
            // Gone since the listing: no description; unreadable: an error.
            let text = crate::fs::read::optional_text(&lib.path(&path))?.unwrap_or_default();
            let fm = frontmatter::parse(&text);
            Ok(Listed {
                name,
                description: frontmatter::text(&fm.fields, "description").unwrap_or_default(),
                stage: s.as_str(),
                trust_tier: frontmatter::text(&fm.fields, "trust_tier"),
                verdict: j.verdict.verdict,
                findings: j.verdict.findings,
                path,
            })
        })
        .collect()
}

/// The list as a table for people (descriptions cut to 60 characters).
pub fn table(skills: &[Listed]) -> String {
    if skills.is_empty() {
        return "(no skills)\n".into();
    }
    let rows: Vec<Vec<String>> = skills
        .iter()
        .map(|s| {
            let mut d: String = s.description.chars().take(60).collect();
            if s.description.chars().count() > 60 {
                d.push('…');
            }
            vec![
                s.name.clone(),
                s.stage.to_string(),
                s.trust_tier.clone().unwrap_or("-".into()),
                s.verdict.to_string(),
                d,
            ]
        })
        .collect();
    jsonl::table(&["NAME", "STAGE", "TRUST", "VERDICT", "DESCRIPTION"], &rows)
}
