//! Seed 002 `checkStructure` and `validateName`/`validateFrontmatter`: the
//! LIMITS and lists a skill directory must keep (name, SKILL.md frontmatter,
//! file count and sizes, BLOCKED_EXTENSIONS, ALLOWED_SUBDIRS), plus what the
//! seed could not see: symlinks that leave the skill, special files, and
//! execute bits on files that are not scripts.

use std::path::Path;

use super::engine::Engine;
use super::finding::{Context, Finding};
use super::target::{Entry, EntryKind, Target};
use crate::doc::frontmatter;

/// The seed's BLOCKED_EXTENSIONS.
pub const BLOCKED_EXTENSIONS: [&str; 12] =
    [".exe", ".dll", ".so", ".dylib", ".bin", ".dat", ".com", ".msi", ".dmg", ".app", ".deb", ".rpm"];

/// The seed's ALLOWED_SUBDIRS.
pub const ALLOWED_SUBDIRS: [&str; 4] = ["references", "templates", "scripts", "assets"];

/// The seed's LIMITS.
pub struct Limits {
    /// Longest skill name.
    pub max_name_length: usize,
    /// Longest SKILL.md, in characters.
    pub max_content_length: usize,
    /// Largest file, in bytes.
    pub max_file_size: u64,
    /// Largest skill, in bytes.
    pub max_total_size: u64,
    /// Most files.
    pub max_file_count: usize,
    /// Longest description, in characters.
    pub max_description_length: usize,
}

/// The values of the seed's LIMITS.
pub const LIMITS: Limits = Limits {
    max_name_length: 64,
    max_content_length: 100_000,
    max_file_size: 1_048_576,
    max_total_size: 1_048_576,
    max_file_count: 50,
    max_description_length: 1024,
};

/// Extensions of files that may carry an execute bit.
const SCRIPT_EXTENSIONS: [&str; 12] = ["sh", "bash", "zsh", "py", "rb", "pl", "js", "mjs", "cjs", "ts", "ps1", "php"];

/// The seed's `namePattern`: `^[a-z0-9][a-z0-9._-]*$`, at most 64 long.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= LIMITS.max_name_length
        && name.as_bytes()[0].is_ascii_lowercase() | name.as_bytes()[0].is_ascii_digit()
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

/// Checks a skill target's structure; findings are in entry order, the
/// directory-wide ones (name, counts, totals) first.
pub fn check(engine: &Engine, t: &Target) -> Vec<Finding> {
    let mut out = Vec::new();
    let at_dir = |id: &str, matched: &str| engine.builtin(id, &t.display, 0, 0, matched, Context::File);
    let at = |id: &str, e: &Entry, matched: &str| engine.builtin(id, &e.display, 0, 0, matched, Context::File);
    // Not canonical (e.g. gone): the name as given.
    let dir_name = t
        .root
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| t.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
    if !valid_name(&dir_name) {
        out.push(at_dir("invalid_name", &format!("directory name {dir_name:?}")));
    }
    check_skill_md(engine, t, &mut out);
    let files: Vec<&Entry> = t.entries.iter().filter(|e| e.kind == EntryKind::File).collect();
    if files.len() > LIMITS.max_file_count {
        out.push(at_dir("too_many_files", &format!("{} files", files.len())));
    }
    let total: u64 = files.iter().map(|e| e.size).sum();
    if total > LIMITS.max_total_size {
        out.push(at_dir("total_size_exceeded", &format!("{total} bytes")));
    }
    let root = t.root.canonicalize().ok();
    for e in &t.entries {
        let top = !e.rel.contains('/');
        match &e.kind {
            EntryKind::Dir if top && !ALLOWED_SUBDIRS.contains(&e.rel.as_str()) => {
                out.push(at("disallowed_dir", e, &e.rel));
            }
            EntryKind::Dir => {}
            EntryKind::File => {
                out.extend(file_findings(engine, &e.display, &e.rel, e.size));
                if e.executable && !is_script(&e.fs, &extension(&e.rel)) {
                    out.push(at("exec_bit", e, &e.rel));
                }
            }
            EntryKind::Symlink => match (e.fs.canonicalize(), &root) {
                (Err(err), _) => out.push(at("broken_symlink", e, &format!("{}: {err}", e.rel))),
                (Ok(dest), Some(root)) if !dest.starts_with(root) => {
                    out.push(at("symlink_escape", e, &format!("{} -> {}", e.rel, dest.display())));
                }
                _ => {}
            },
            EntryKind::Special(what) => out.push(at("special_file", e, what)),
            EntryKind::Unreadable(why) => out.push(at("unreadable", e, why)),
        }
    }
    out
}

/// What one file of a skill raises by its place, name and size alone
/// (`rel` inside the skill directory, `display` as findings name it): a
/// blocked extension, a file outside the allowed subdirectories, a file
/// over the size limit. [`check`] adds these for every file; a judgement
/// of one file before its skill is whole (a peer's commit, `guard::gate`)
/// uses them on their own.
pub fn file_findings(engine: &Engine, display: &str, rel: &str, size: u64) -> Vec<Finding> {
    let at = |id: &str, matched: &str| engine.builtin(id, display, 0, 0, matched, Context::File);
    let mut out = Vec::new();
    let ext = extension(rel);
    if BLOCKED_EXTENSIONS.contains(&ext.as_str()) {
        out.push(at("blocked_extension", &ext));
    }
    if !rel.contains('/') && rel != "SKILL.md" {
        out.push(at("file_outside_subdirs", rel));
    }
    if size > LIMITS.max_file_size {
        out.push(at("file_too_large", &format!("{size} bytes")));
    }
    out
}

/// A file's extension with its dot, lower case (`""` when it has none).
fn extension(rel: &str) -> String {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.rfind('.').map(|i| name[i..].to_ascii_lowercase()).unwrap_or_default()
}

/// SKILL.md: present, readable, frontmatter with name and description,
/// description and content within LIMITS (seed `validateFrontmatter`).
fn check_skill_md(engine: &Engine, t: &Target, out: &mut Vec<Finding>) {
    let shown = t.entries.iter().find(|e| e.rel == "SKILL.md").map(|e| e.display.clone());
    let shown = shown.unwrap_or_else(|| format!("{}/SKILL.md", t.display.trim_end_matches('/')));
    let at = |id: &str, line: usize, matched: &str| engine.builtin(id, &shown, line, 1, matched, Context::Frontmatter);
    // Its entry's file: a change judged before it lands reads the staged bytes.
    let path = t.entries.iter().find(|e| e.rel == "SKILL.md").map_or_else(|| t.root.join("SKILL.md"), |e| e.fs.clone());
    let is_file = path.symlink_metadata().map(|m| m.is_file()).unwrap_or(false);
    let text = match std::fs::read(&path) {
        Ok(b) if is_file && b.len() as u64 <= LIMITS.max_file_size * 4 => String::from_utf8_lossy(&b).into_owned(),
        Ok(_) if is_file => {
            out.push(at("content_too_long", 1, "SKILL.md is far over the limit"));
            return;
        }
        _ => {
            out.push(engine.builtin(
                "missing_skill_md",
                &t.display,
                0,
                0,
                "no readable regular SKILL.md",
                Context::File,
            ));
            return;
        }
    };
    let chars = text.chars().count();
    if chars > LIMITS.max_content_length {
        out.push(at("content_too_long", 1, &format!("{chars} characters")));
    }
    let fm = frontmatter::parse(&text);
    if !fm.present || fm.error.is_some() {
        let why = fm.error.unwrap_or_else(|| "no YAML frontmatter (--- ... ---)".into());
        out.push(at("bad_frontmatter", 1, &why));
        return;
    }
    let name = frontmatter::text(&fm.fields, "name");
    match &name {
        None => out.push(at("bad_frontmatter", 1, "frontmatter has no name")),
        Some(n) if !valid_name(n) => out.push(at("invalid_name", 1, &format!("name {n:?}"))),
        _ => {}
    }
    match frontmatter::text(&fm.fields, "description") {
        None => out.push(at("bad_frontmatter", 1, "frontmatter has no description")),
        Some(d) if d.chars().count() > LIMITS.max_description_length => {
            out.push(at("description_too_long", 1, &format!("{} characters", d.chars().count())))
        }
        _ => {}
    }
}

/// A script by extension or by a `#!` first line.
fn is_script(path: &Path, ext: &str) -> bool {
    if SCRIPT_EXTENSIONS.contains(&ext.trim_start_matches('.')) {
        return true;
    }
    let mut head = [0u8; 2];
    std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head)).is_ok() && &head == b"#!"
}
