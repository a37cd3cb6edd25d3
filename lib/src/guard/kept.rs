//! The last good text of each rule file of a library, kept as local state
//! (`.cache/guard-rules/`, never committed, never taken from a peer).
//! Validating a rule file compiles its patterns and runs each
//! rule's examples against all of them, a cost that grows faster than the
//! file: with a kept copy it is paid once per distinct text, not on every
//! write. And a rule file broken in place (a hand edit, an old merge) does
//! not lock writers out nor quietly weaken their scan: its last good
//! version stays in force, with a warning.
//!
//! A kept copy is `<build> <digest of the text> <digest of the rest>`,
//! then the file's rules as JSON (read far faster than the YAML: a writer
//! with a large rule file in force hashes it, and parses no YAML). It is
//! used only when its build is this one and its rules hash to their
//! digest: what is trusted is what this build validated.

use std::path::{Path, PathBuf};

use super::rules::Rule;
use crate::doc::digest::sha256_hex;

/// Where the kept copies live, under the library root.
pub const DIR: &str = ".cache/guard-rules";

/// What makes a validation this build's: the package version and the
/// compiled-in core rules (extended rules are checked against them).
fn build() -> String {
    let core = sha256_hex(super::rules::CORE_YAML.as_bytes());
    format!("{}+{}", env!("CARGO_PKG_VERSION"), &core[..16])
}

/// The kept copies of one library's rule files.
pub struct Kept {
    dir: PathBuf,
}

impl Kept {
    /// The store for the rule directory `rules_dir` (the library's
    /// `.evolving-rules/security/active`); `None` for any other directory
    /// (a rule directory outside a library keeps nothing).
    pub fn for_rules(rules_dir: &Path) -> Option<Kept> {
        let mut root = rules_dir;
        for part in crate::library::GUARD_RULES.rsplit('/') {
            if root.file_name()? != part {
                return None;
            }
            root = root.parent()?;
        }
        Some(Kept { dir: root.join(DIR) })
    }

    /// The kept copy of the rule file `source` (its path as loaded).
    fn path(&self, source: &str) -> PathBuf {
        self.dir.join(format!("{}.yaml", &sha256_hex(source.as_bytes())[..32]))
    }

    /// The kept rules of `source`, when they are there, of this build,
    /// match their digest and, with `text`, were validated from `text`.
    pub fn rules(&self, source: &str, text: Option<&str>) -> Option<Vec<Rule>> {
        let kept = crate::fs::read::optional_text(&self.path(source)).ok()??;
        let (head, body) = kept.split_once('\n')?;
        let mut parts = head.split(' ');
        let (b, from, digest) = (parts.next()?, parts.next()?, parts.next()?);
        let fresh = b == build() && digest == sha256_hex(body.as_bytes());
        if !fresh || text.is_some_and(|t| from != sha256_hex(t.as_bytes())) {
            return None;
        }
        let mut rules: Vec<Rule> = serde_json::from_str(body).ok()?;
        for r in &mut rules {
            r.source = source.to_string();
        }
        Some(rules)
    }

    /// Keeps `rules`, validated from `text`, as the last good rules of
    /// `source`. Best effort: a library on a read-only disk validates
    /// again next time.
    pub fn keep(&self, source: &str, text: &str, rules: &[Rule]) {
        // Without where each rule was loaded from: not part of a rule file.
        let defs: Vec<serde_json::Value> = rules
            .iter()
            .filter_map(|r| serde_json::to_value(r).ok())
            .map(|mut v| {
                if let Some(m) = v.as_object_mut() {
                    m.remove("source");
                }
                v
            })
            .collect();
        let Ok(body) = serde_json::to_string(&defs) else { return };
        let head = format!("{} {} {}", build(), sha256_hex(text.as_bytes()), sha256_hex(body.as_bytes()));
        let _ = crate::fs::atomic::write(&self.path(source), format!("{head}\n{body}").as_bytes());
    }
}
