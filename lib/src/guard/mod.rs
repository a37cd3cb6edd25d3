//! kb-guard: the threat scanner of seed 002 (guard_patterns + guard) and
//! seed 000's "external content is sanitised before storage". Rules are data
//! (`rules/core.yaml` plus hot-loaded extended rules), all compiled into one
//! linear-time automaton; text is normalised before matching so encodings,
//! invisible characters and look-alike letters do not hide a threat.

pub mod deobfuscate;
pub mod engine;
pub mod filter;
pub mod finding;
pub mod gate;
pub mod intent;
pub mod kept;
pub mod literal;
pub mod mention;
pub mod normalise;
pub mod pattern;
#[cfg(test)]
mod pieces;
pub mod policy;
pub mod rules;
pub mod sanitize;
pub mod sarif;
pub mod scan;
pub mod sniff;
pub mod structure;
pub mod svg;
pub mod table;
pub mod target;
pub mod typosquat;
pub mod verdict;
pub mod work;

pub use engine::{Engine, LoadError, Scanned};
pub use finding::{Context, Finding};
pub use rules::{Rule, Severity};
pub use scan::{scan_text, scan_text_with, Report};
pub use verdict::Verdict;

/// The engine a command runs with: core rules plus the extended rules of
/// the library (`--root` > `KB_ROOT` > the nearest `.library`), when there
/// is one. Broken extended files come back as errors to report.
pub fn load_engine(root: Option<&std::path::Path>) -> crate::Result<(Engine, Vec<LoadError>)> {
    // A library reached through a link is refused, not scanned without.
    let dir = crate::Library::find(root)?.map(|lib| lib.dir.join(".evolving-rules/security/active"));
    Engine::load(dir.as_deref())
}

/// An engine with the errors of the rule files left out of it.
pub type Loaded = crate::Result<(Engine, Vec<LoadError>)>;

/// [`load_engine`], and for a scan the targets of its `paths`
/// ([`target::collect`]), walked while the engine compiles: the walk is
/// mostly system calls on one core, the compile mostly work for the other
/// (one after the other, they were a fifth of a 12,000-file library's
/// scan). The engine is warmed ([`Engine::warm`]) before a scan's first
/// file.
pub fn load_for_scan(root: Option<&std::path::Path>, paths: Option<&[&str]>) -> (Loaded, Option<Vec<target::Found>>) {
    let paths: Option<Vec<String>> = paths.map(|p| p.iter().map(|s| s.to_string()).collect());
    let paths = paths.as_deref();
    rayon::join(
        || {
            let loaded = load_engine(root);
            if let (Ok((engine, _)), Some(_)) = (&loaded, paths) {
                engine.warm();
            }
            loaded
        },
        || paths.map(target::collect),
    )
}

/// The engine in force for an opened library: core rules, the library's
/// evolved core rules and its extended rules (broken files come back as
/// errors to report). Every writer and every evolve step scans with it.
pub fn library_engine(lib: &crate::Library) -> crate::Result<(Engine, Vec<LoadError>)> {
    Engine::load(Some(&lib.path(crate::library::GUARD_RULES)))
}

/// [`library_engine`] for a long-lived process (kb-mcp): compiled once per
/// rule set and shared, rebuilt only when a rule file of the library
/// changes (see [`Engine::shared`]).
pub fn shared_library_engine(lib: &crate::Library) -> crate::Result<(std::sync::Arc<Engine>, Vec<LoadError>)> {
    Engine::shared(Some(&lib.path(crate::library::GUARD_RULES)))
}
