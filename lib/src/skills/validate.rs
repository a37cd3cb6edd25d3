//! Seed 002 `validateName` / `validateFrontmatter` and the LIMITS, checked
//! before anything is written: the guard's structure scan judges the skill
//! afterwards, but a request that breaks a limit never touches the disk.

use crate::doc::frontmatter;
use crate::guard::structure::{valid_name, ALLOWED_SUBDIRS, BLOCKED_EXTENSIONS, LIMITS};
use crate::library;

/// The trust tiers a skill may carry, lowest first (one list: sync's
/// judgement of a peer's tiers reads the same).
pub use crate::library::trust::TIERS;

/// A skill name: the seed's `^[a-z0-9][a-z0-9._-]*$`, at most 64 long,
/// and never a path (`/`, `..`).
pub fn name(name: &str) -> Result<(), String> {
    if name.contains('/') || name.contains('\\') || name.contains("..") {
        return Err(format!("skill name {name:?} must not contain '/', '\\' or '..'"));
    }
    if name.is_empty() || name.len() > LIMITS.max_name_length {
        return Err(format!("skill name must be 1-{} characters long", LIMITS.max_name_length));
    }
    if !valid_name(name) {
        return Err(format!(
            "skill name {name:?} may hold only lowercase letters, digits, '.', '_' and '-', and must start with a letter or digit"
        ));
    }
    Ok(())
}

/// SKILL.md content: within the content limit, YAML frontmatter with a
/// `name` equal to the skill's and a `description` within its limit, and
/// a `trust_tier` (when given) of T1–T4.
pub fn skill_md(content: &str, skill: &str) -> Result<(), String> {
    let chars = content.chars().count();
    if chars > LIMITS.max_content_length {
        return Err(format!("SKILL.md is {chars} characters, over the limit of {}", LIMITS.max_content_length));
    }
    let fm = frontmatter::parse(content);
    if let Some(e) = fm.error {
        return Err(format!("SKILL.md frontmatter does not parse: {e}"));
    }
    if !fm.present {
        return Err("SKILL.md must open with YAML frontmatter (--- ... ---)".into());
    }
    match frontmatter::text(&fm.fields, "name") {
        None => return Err("SKILL.md frontmatter needs a name".into()),
        Some(n) if n != skill => {
            return Err(format!("SKILL.md frontmatter name {n:?} differs from the skill name {skill:?}"))
        }
        Some(_) => {}
    }
    match frontmatter::text(&fm.fields, "description") {
        Some(d) if d.trim().is_empty() => return Err("SKILL.md frontmatter needs a description".into()),
        None => return Err("SKILL.md frontmatter needs a description".into()),
        Some(d) if d.chars().count() > LIMITS.max_description_length => {
            return Err(format!(
                "description is {} characters, over the limit of {}",
                d.chars().count(),
                LIMITS.max_description_length
            ))
        }
        Some(_) => {}
    }
    if let Some(t) = frontmatter::text(&fm.fields, "trust_tier") {
        if !TIERS.contains(&t.as_str()) {
            return Err(format!("trust_tier {t:?} is not one of T1, T2, T3, T4"));
        }
    }
    Ok(())
}

/// A supporting file's path inside the skill: normalised, under one of the
/// seed's ALLOWED_SUBDIRS, not a blocked extension. Returns it normalised.
pub fn file_path(path: &str) -> Result<String, String> {
    let norm = library::normalise(path).map_err(|e| e.to_string())?;
    if norm == "SKILL.md" {
        return Err("SKILL.md is written with create, edit or patch, not as a supporting file".into());
    }
    let mut parts = norm.split('/');
    let top = parts.next().unwrap_or_default();
    if !ALLOWED_SUBDIRS.contains(&top) || parts.next().is_none() {
        return Err(format!("supporting files go under {}/ (got {norm:?})", ALLOWED_SUBDIRS.join("/, ")));
    }
    if norm.split('/').any(|p| p.starts_with('.')) {
        return Err(format!("{norm:?}: hidden files and directories are not allowed in a skill"));
    }
    let file = norm.rsplit('/').next().unwrap_or(&norm);
    let ext = file.rfind('.').map(|i| file[i..].to_ascii_lowercase()).unwrap_or_default();
    if BLOCKED_EXTENSIONS.contains(&ext.as_str()) {
        return Err(format!("{norm:?}: the extension {ext} is blocked"));
    }
    Ok(norm)
}

/// A supporting file's size against the per-file limit.
pub fn file_size(path: &str, bytes: usize) -> Result<(), String> {
    if bytes as u64 > LIMITS.max_file_size {
        return Err(format!("{path} is {bytes} bytes, over the per-file limit of {}", LIMITS.max_file_size));
    }
    Ok(())
}

/// The whole skill after a write: file count and total size within LIMITS.
pub fn totals(files: usize, bytes: u64) -> Result<(), String> {
    if files > LIMITS.max_file_count {
        return Err(format!("the skill would hold {files} files, over the limit of {}", LIMITS.max_file_count));
    }
    if bytes > LIMITS.max_total_size {
        return Err(format!("the skill would be {bytes} bytes, over the limit of {}", LIMITS.max_total_size));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        assert!(name("pdf-tools").is_ok());
        assert!(name("../x").unwrap_err().contains("must not contain"));
        assert!(name("a/b").is_err());
        assert!(name("Bad").is_err());
        assert!(name(&"a".repeat(65)).is_err());
        assert_eq!(file_path("scripts/./run.sh").unwrap(), "scripts/run.sh");
        assert!(file_path("run.sh").is_err());
        assert!(file_path("scripts/../../x").is_err());
        assert!(file_path("assets/tool.exe").is_err());
        assert!(file_path("SKILL.md").is_err());
        assert!(file_path("references/.hidden").is_err());
    }

    #[test]
    fn skill_md_rules() {
        let ok = "---\nname: x\ndescription: does x\n---\nbody\n";
        assert!(skill_md(ok, "x").is_ok());
        assert!(skill_md(ok, "y").unwrap_err().contains("differs"));
        assert!(skill_md("no frontmatter", "x").is_err());
        assert!(skill_md("---\nname: x\n---\n", "x").unwrap_err().contains("description"));
        assert!(skill_md("---\nname: x\ndescription: d\ntrust_tier: T9\n---\n", "x").is_err());
    }
}
