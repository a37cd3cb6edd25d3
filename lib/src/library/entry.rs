//! What a library document is, from its path and frontmatter (seed 000's
//! layout: references `<topic>-v<N>.md`, experiences
//! `<type>/<semantic>-{complete,impl,verify,eval}.md`, type profiles,
//! thinking patterns and raw notes, skills, user folders). Every index,
//! listing and search works from these entries.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::doc::frontmatter;

/// Seed 000's quality_status table: the status an experience file gets from
/// its suffix when its frontmatter does not say.
pub const SUFFIX_STATUS: &[(&str, &str)] =
    &[("complete", "verified"), ("impl", "provisional"), ("verify", "provisional"), ("eval", "provisional")];

/// The kinds of documents the library holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    /// `.memory/.references/<topic>-v<N>.md`
    Reference,
    /// `.memory/.experiences/<type>/<semantic>-<suffix>.md`
    Experience,
    /// `.memory/.type-profiles/*.md`
    TypeProfile,
    /// `.memory/.thinking/patterns/*.md`
    ThinkingPattern,
    /// `.memory/.thinking/raw/*.md`
    ThinkingRaw,
    /// `.skills/<stage>/<name>/SKILL.md`
    Skill,
    /// Anything in a user folder (non-dot names) or elsewhere.
    User,
}

impl Category {
    /// The name used in records, indexes and commit messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Reference => "reference",
            Category::Experience => "experience",
            Category::TypeProfile => "type-profile",
            Category::ThinkingPattern => "thinking-pattern",
            Category::ThinkingRaw => "thinking-raw",
            Category::Skill => "skill",
            Category::User => "user",
        }
    }
}

/// What a path alone says about a document.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct PathInfo {
    /// The category; `None` for files that are not documents.
    #[serde(skip)]
    pub category: Option<Category>,
    /// Topic from the file name (references: before `-v<N>`).
    pub topic: String,
    /// Reference version N from `-v<N>.md`.
    pub version: Option<u64>,
    /// Experience type (its directory) or skill stage.
    pub kind: Option<String>,
    /// Experience semantic name (before the suffix).
    pub semantic: Option<String>,
    /// Experience suffix: complete, impl, verify or eval.
    pub suffix: Option<String>,
    /// The directory whose `.index.md` lists this document.
    pub index_dir: String,
}

/// Classifies a library-relative path. Returns `None` for files that are
/// not documents: non-Markdown files, dot files (`.index.md`,
/// `.summary.md`, ...), anything under internal dot directories, and files
/// inside skill directories other than `SKILL.md`.
pub fn classify(rel: &str) -> Option<PathInfo> {
    let parts: Vec<&str> = rel.split('/').collect();
    let name = *parts.last()?;
    if !name.ends_with(".md") || name.starts_with('.') {
        return None;
    }
    let stem = &name[..name.len() - 3];
    let dir = parts[..parts.len() - 1].join("/");
    let mut info = PathInfo { topic: stem.to_string(), index_dir: dir.clone(), ..PathInfo::default() };
    match parts.as_slice() {
        [".memory", ".references", _] => {
            info.category = Some(Category::Reference);
            if let Some((topic, v)) = stem.rsplit_once("-v") {
                if let Ok(n) = v.parse() {
                    info.topic = topic.to_string();
                    info.version = Some(n);
                }
            }
        }
        [".memory", ".experiences", ty, _] => {
            info.category = Some(Category::Experience);
            info.kind = Some((*ty).to_string());
            let (semantic, suffix) = match stem.rsplit_once('-') {
                Some((s, suf)) if SUFFIX_STATUS.iter().any(|(k, _)| *k == suf) => (s, Some(suf.to_string())),
                _ => (stem, None),
            };
            info.semantic = Some(semantic.to_string());
            info.topic = semantic.to_string();
            info.suffix = suffix;
        }
        [".memory", ".type-profiles", _] => info.category = Some(Category::TypeProfile),
        [".memory", ".thinking", "patterns", _] => info.category = Some(Category::ThinkingPattern),
        [".memory", ".thinking", "raw", _] => {
            info.category = Some(Category::ThinkingRaw);
            info.semantic = Some(stem.to_string());
        }
        [".skills", stage, skill, "SKILL.md"] if stage.starts_with('.') && !skill.starts_with('.') => {
            info.category = Some(Category::Skill);
            info.kind = Some(stage.trim_start_matches('.').to_string());
            info.topic = (*skill).to_string();
            info.index_dir = format!(".skills/{stage}");
        }
        _ if parts.iter().any(|p| p.starts_with('.')) => return None,
        _ => info.category = Some(Category::User),
    }
    Some(info)
}

/// One document as every listing sees it: path facts plus frontmatter.
/// Deserialize reads back what Serialize wrote (the incremental index cache).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Entry {
    /// Library-relative path.
    pub path: String,
    /// reference, experience, type-profile, thinking-pattern, thinking-raw, skill, user.
    pub category: Category,
    /// Frontmatter `topic`, else from the file name.
    pub topic: String,
    /// Reference version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// Frontmatter `type`, else the experience type directory.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub doc_type: Option<String>,
    /// Experience semantic name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic: Option<String>,
    /// Experience suffix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suffix: Option<String>,
    /// Frontmatter `title`, else the first `# ` heading.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Frontmatter `keywords` (or `tags`).
    pub keywords: Vec<String>,
    /// Frontmatter `source` when it is text, or the first notebook.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Notebooks named in `sources.notebook`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notebooks: Vec<String>,
    /// Frontmatter `quality_status`, else from the experience suffix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality_status: Option<String>,
    /// Skills: T1–T4.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust_tier: Option<String>,
    /// Frontmatter `last_verified_at` as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_verified_at: Option<String>,
    /// Frontmatter `staleness_threshold_days`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staleness_threshold_days: Option<u64>,
    /// Frontmatter `effectiveness_mark`.
    pub effectiveness_mark: bool,
    /// Thinking patterns: `state` / `lifecycle` (draft, active, validated, deprecated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<String>,
    /// Frontmatter `related` paths.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<String>,
    /// Frontmatter `derived-from`: the library files a promoted answer
    /// cites (seed 001), local paths or `SOURCE:PATH` for external ones.
    #[serde(rename = "derived-from", skip_serializing_if = "Vec::is_empty")]
    pub derived_from: Vec<String>,
    /// Why the frontmatter could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontmatter_error: Option<String>,
    /// Raw thinking: quality tier H, M or L (`quality_tier`, else `quality`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality_tier: Option<String>,
    /// Thinking patterns: the newer pattern that supersedes this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// Frontmatter `updated_at` / `updated` / `created_at` (type profiles' last-updated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// References: the web domains they cite (frontmatter and body URLs),
    /// sorted; the input of `.ioc.md`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub domains: Vec<String>,
}

impl Default for Entry {
    fn default() -> Entry {
        Entry {
            path: String::new(),
            category: Category::User,
            topic: String::new(),
            version: None,
            doc_type: None,
            semantic: None,
            suffix: None,
            title: None,
            keywords: Vec::new(),
            source: None,
            notebooks: Vec::new(),
            quality_status: None,
            trust_tier: None,
            last_verified_at: None,
            staleness_threshold_days: None,
            effectiveness_mark: false,
            lifecycle: None,
            related: Vec::new(),
            derived_from: Vec::new(),
            frontmatter_error: None,
            quality_tier: None,
            superseded_by: None,
            updated_at: None,
            domains: Vec::new(),
        }
    }
}

impl Entry {
    /// Builds the entry of a document from its path and text; `None` when
    /// the path is not a document.
    pub fn from_text(rel: &str, text: &str) -> Option<Entry> {
        let info = classify(rel)?;
        let parsed = frontmatter::parse(text);
        Some(Entry::from_parts(rel, info, &parsed.fields, parsed.error, &text[parsed.body_start..]))
    }

    /// [`Entry::from_text`] of a text whose frontmatter was parsed already
    /// (`parsed` is `frontmatter::parse(text)`).
    pub fn from_parsed(rel: &str, text: &str, parsed: frontmatter::Parsed) -> Option<Entry> {
        let info = classify(rel)?;
        Some(Entry::from_parts(rel, info, &parsed.fields, parsed.error, &text[parsed.body_start..]))
    }

    fn from_parts(rel: &str, info: PathInfo, f: &Map<String, Value>, error: Option<String>, body: &str) -> Entry {
        let category = info.category.unwrap_or(Category::User);
        let mut keywords = frontmatter::list(f, "keywords");
        if keywords.is_empty() {
            keywords = frontmatter::list(f, "tags");
        }
        let notebooks = frontmatter::notebooks(f);
        let suffix_status = info
            .suffix
            .as_deref()
            .and_then(|s| SUFFIX_STATUS.iter().find(|(k, _)| *k == s))
            .map(|(_, v)| (*v).to_string());
        let title = frontmatter::text(f, "title").or_else(|| first_heading(body));
        Entry {
            path: rel.to_string(),
            category,
            topic: frontmatter::text(f, "topic")
                .or_else(|| frontmatter::text(f, "name").filter(|_| category == Category::Skill))
                .unwrap_or(info.topic),
            version: frontmatter::number(f, "version").or(info.version),
            doc_type: frontmatter::text(f, "type").or(if category == Category::Experience {
                info.kind.clone()
            } else {
                None
            }),
            semantic: info.semantic,
            suffix: info.suffix,
            title,
            keywords,
            source: frontmatter::text(f, "source").or_else(|| notebooks.first().cloned()),
            notebooks,
            quality_status: frontmatter::text(f, "quality_status").or(suffix_status),
            trust_tier: frontmatter::text(f, "trust_tier").filter(|_| category == Category::Skill),
            last_verified_at: frontmatter::text(f, "last_verified_at"),
            staleness_threshold_days: frontmatter::number(f, "staleness_threshold_days"),
            effectiveness_mark: frontmatter::flag(f, "effectiveness_mark"),
            lifecycle: frontmatter::text(f, "state")
                .or_else(|| frontmatter::text(f, "lifecycle"))
                .or_else(|| frontmatter::text(f, "status").filter(|_| category == Category::ThinkingPattern)),
            related: frontmatter::list(f, "related"),
            derived_from: frontmatter::list(f, "derived-from"),
            frontmatter_error: error,
            quality_tier: frontmatter::text(f, "quality_tier").or_else(|| frontmatter::text(f, "quality")),
            superseded_by: frontmatter::text(f, "superseded_by"),
            updated_at: ["updated_at", "updated", "last_updated", "created_at"]
                .iter()
                .find_map(|k| frontmatter::text(f, k)),
            domains: if category == Category::Reference { crate::doc::domains::domains(f, body) } else { Vec::new() },
        }
    }
}

/// The first Markdown `# ` heading of a body, as a fallback title.
pub fn first_heading(body: &str) -> Option<String> {
    body.lines().find_map(|l| l.strip_prefix("# ")).map(|t| t.trim().to_string()).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_the_seed_layout() {
        let r = classify(".memory/.references/jwt-auth-v2.md").unwrap();
        assert_eq!((r.category, r.topic.as_str(), r.version), (Some(Category::Reference), "jwt-auth", Some(2)));
        let e = classify(".memory/.experiences/software/auth-flow-impl.md").unwrap();
        assert_eq!(e.semantic.as_deref(), Some("auth-flow"));
        assert_eq!(e.suffix.as_deref(), Some("impl"));
        let s = classify(".skills/.active/pdf-tools/SKILL.md").unwrap();
        assert_eq!((s.category, s.index_dir.as_str()), (Some(Category::Skill), ".skills/.active"));
        assert!(classify(".skills/.active/pdf-tools/references/x.md").is_none());
        assert!(classify(".memory/.references/.index.md").is_none());
        assert!(classify(".changelog-archive/2026-01.md").is_none());
        assert_eq!(classify("notes/a.md").unwrap().category, Some(Category::User));
    }

    #[test]
    fn suffix_sets_quality_status() {
        let e = Entry::from_text(".memory/.experiences/software/x-eval.md", "# X\n").unwrap();
        assert_eq!(e.quality_status.as_deref(), Some("provisional"));
        let e = Entry::from_text(".memory/.experiences/software/x-complete.md", "---\nquality_status: draft\n---\n")
            .unwrap();
        assert_eq!(e.quality_status.as_deref(), Some("draft"));
    }
}
