//! The last good text of each rule file of a library, kept as local state
//! (`.cache/guard-rules/`, never committed, never taken from a peer;
//! issue 35). Validating a rule file compiles its patterns and runs each
//! rule's examples against all of them, a cost that grows faster than the
//! file: with a kept copy it is paid once per distinct text, not on every
//! write. And a rule file broken in place (a hand edit, an old merge) does
//! not lock writers out nor quietly weaken their scan: its last good
//! version stays in force, with a warning.
//!
//! A kept copy is `# kb-guard kept <build> sha256:<digest>` then the text.
//! It is used only when its build is this one and its bytes hash to its
//! digest: what is trusted is what this build validated.

use std::path::{Path, PathBuf};

use crate::doc::digest::sha256_hex;

/// Where the kept copies live, under the library root.
pub const DIR: &str = ".cache/guard-rules";

/// What makes a validation this build's: the package version and the
/// compiled-in core rules (extended rules are checked against them).
fn build() -> String {
    let core = sha256_hex(super::rules::CORE_YAML.as_bytes());
    format!("{}+{}", env!("CARGO_PKG_VERSION"), &core[..16])
}

fn header(text: &str) -> String {
    format!("# kb-guard kept {} sha256:{}\n", build(), sha256_hex(text.as_bytes()))
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

    /// The kept text of `source`, when it is there, of this build, and its
    /// bytes match its digest.
    pub fn last_good(&self, source: &str) -> Option<String> {
        let kept = crate::fs::read::optional_text(&self.path(source)).ok()??;
        let (head, text) = kept.split_once('\n')?;
        (format!("{head}\n") == header(text)).then(|| text.to_string())
    }

    /// Whether `text` is the kept (validated) text of `source`.
    pub fn holds(&self, source: &str, text: &str) -> bool {
        self.last_good(source).is_some_and(|t| t == text)
    }

    /// Keeps `text` as the last good text of `source`. Best effort: a
    /// library on a read-only disk validates again next time.
    pub fn keep(&self, source: &str, text: &str) {
        let _ = crate::fs::atomic::write(&self.path(source), format!("{}{text}", header(text)).as_bytes());
    }
}
