//! Seed 002 `scanSkill` on library skills: the guard's structure and
//! content checks over whole skill directories, with library-relative paths
//! in the findings.

use crate::error::Result;
use crate::guard::scan::{scan_targets, TargetResult};
use crate::guard::target;
use crate::guard::Engine;
use crate::library::Library;

/// Judges the skill directories `dirs` (library-relative), in parallel;
/// one result per directory, in order.
pub fn skills(lib: &Library, engine: &Engine, dirs: &[String]) -> Result<Vec<TargetResult>> {
    let base = format!("{}/", lib.dir.display());
    let mut targets = Vec::with_capacity(dirs.len());
    for d in dirs {
        let mut found = target::collect(&[lib.path(d).display().to_string()]);
        let mut t = match (found.pop(), found.is_empty()) {
            (Some(Ok(t)), true) if t.kind == target::TargetKind::Skill => t,
            (Some(Err(e)), _) => return Err(crate::Error::msg(format!("{d}: {}", e.message))),
            _ => return Err(crate::Error::msg(format!("{d} is not a skill directory (no SKILL.md)"))),
        };
        let rel = |s: &str| s.strip_prefix(&base).unwrap_or(s).to_string();
        t.display = rel(&t.display);
        for e in &mut t.entries {
            e.display = rel(&e.display);
        }
        targets.push(t);
    }
    Ok(scan_targets(engine, &targets, &[], None, crate::clock::now()?))
}

/// Judges skill directory `dir` as it will be once each `(path inside the
/// skill, staged temp or None for a removal)` of `over` lands
/// (kb::guard::target::skill_overlaid).
pub fn skill_as(
    lib: &Library,
    engine: &Engine,
    dir: &str,
    over: &[(String, Option<std::path::PathBuf>)],
) -> Result<TargetResult> {
    let base = format!("{}/", lib.dir.display());
    let root = lib.path(dir);
    let mut t = target::skill_overlaid(&root, &root.display().to_string(), over);
    let rel = |s: &str| s.strip_prefix(&base).unwrap_or(s).to_string();
    t.display = rel(&t.display);
    for e in &mut t.entries {
        e.display = rel(&e.display);
    }
    let mut r = scan_targets(engine, &[t], &[], None, crate::clock::now()?);
    r.pop().ok_or_else(|| crate::Error::msg(format!("{dir}: nothing to scan")))
}

/// Judges one skill directory.
pub fn skill(lib: &Library, engine: &Engine, dir: &str) -> Result<TargetResult> {
    let mut r = skills(lib, engine, &[dir.to_string()])?;
    r.pop().ok_or_else(|| crate::Error::msg(format!("{dir}: nothing to scan")))
}
