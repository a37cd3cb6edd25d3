//! The user's own configuration (DESIGN.md "Trust"): choices that belong
//! to the person at this machine, read from
//! `$XDG_CONFIG_HOME/kb-tools/config.yaml` (else
//! `~/.config/kb-tools/config.yaml`), never from a library or project a
//! peer can change. Today: the domains the domain-convergence check takes
//! as well known (`status.known_domains`, added to [`KNOWN_DOMAINS`]) and
//! where kb-memgate keeps its notes (`memory.store`). A missing file is
//! the defaults; a file that does not parse is an error naming it, so a
//! typo never silently falls back. `schemas/config.schema.json` is its
//! shape.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};

/// The file's place under the configuration folder.
pub const FILE: &str = "kb-tools/config.yaml";

/// Code hosts, package registries and documentation sites that many
/// references cite for unrelated things (each URL names its own project or
/// page): citing them often is not "much knowledge resting on one
/// source", so the convergence check does not count them. A domain
/// matches itself and its subdomains (`gist.github.com`).
pub const KNOWN_DOMAINS: &[&str] = &[
    "github.com",
    "gitlab.com",
    "bitbucket.org",
    "codeberg.org",
    "sourceforge.net",
    "docs.rs",
    "crates.io",
    "pypi.org",
    "npmjs.com",
    "pkg.go.dev",
    "rubygems.org",
    "readthedocs.io",
    "readthedocs.org",
    "developer.mozilla.org",
    "learn.microsoft.com",
    "docs.python.org",
    "doc.rust-lang.org",
    "stackoverflow.com",
    "en.wikipedia.org",
];

/// The configuration file's contents.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `status:` settings.
    #[serde(default)]
    pub status: Status,
    /// `memory:` settings.
    #[serde(default)]
    pub memory: Memory,
}

/// `status:` settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Status {
    /// Domains taken as well known besides [`KNOWN_DOMAINS`].
    #[serde(default)]
    pub known_domains: Vec<String>,
}

/// `memory:` settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    /// `cursor` (`.cursor/.lingxi`, seed 003's place, for Cursor),
    /// `project` (`.agents/.lingxi`, the default, for any agent), or a
    /// folder relative to the project holding `memory/` and `workspace/`.
    pub store: Option<String>,
}

impl Config {
    /// Reads the user's configuration (the defaults when there is none).
    pub fn load() -> Result<Config> {
        match path() {
            Some(p) => Config::read(&p),
            None => Ok(Config::default()),
        }
    }

    /// Reads `path` (the defaults when it does not exist).
    pub fn read(path: &Path) -> Result<Config> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
        };
        if text.trim().is_empty() {
            return Ok(Config::default());
        }
        crate::doc::yaml::from_str(&text).map_err(|e| Error::msg(format!("{}: {e}", path.display())))
    }

    /// Whether `domain` is well known: in [`KNOWN_DOMAINS`] or the user's
    /// list, or a subdomain of one.
    pub fn known_domain(&self, domain: &str) -> bool {
        let own = self.status.known_domains.iter().map(String::as_str);
        KNOWN_DOMAINS.iter().copied().chain(own).any(|k| {
            let k = k.trim().trim_start_matches("www.").to_ascii_lowercase();
            domain == k || domain.strip_suffix(k.as_str()).is_some_and(|p| p.ends_with('.'))
        })
    }
}

/// Where the file is: `$XDG_CONFIG_HOME/kb-tools/config.yaml`, else
/// `$HOME/.config/kb-tools/config.yaml`; `None` without either variable.
pub fn path() -> Option<PathBuf> {
    let set = |v: &str| std::env::var_os(v).filter(|x| !x.is_empty()).map(PathBuf::from);
    set("XDG_CONFIG_HOME").or_else(|| set("HOME").map(|h| h.join(".config"))).map(|d| d.join(FILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_domains_match_themselves_and_subdomains_only() {
        let c: Config = crate::doc::yaml::from_str("status:\n  known_domains: [intranet.example]\n").unwrap();
        assert!(c.known_domain("github.com") && c.known_domain("gist.github.com"));
        assert!(c.known_domain("intranet.example") && c.known_domain("wiki.intranet.example"));
        assert!(!c.known_domain("notgithub.com") && !c.known_domain("evil.example"));
        assert!(!Config::default().known_domain("intranet.example"));
    }

    #[test]
    fn an_unknown_key_is_an_error() {
        assert!(crate::doc::yaml::from_str::<Config>("memory:\n  stor: cursor\n").is_err());
    }
}
