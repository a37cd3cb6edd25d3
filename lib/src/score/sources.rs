//! The libraries a query runs over (seed 001, kb-query): the local library
//! first, then external libraries in alphabetical order, from
//! `--source NAME=DIR` and from the registries the seed names — the global
//! `~/.sdlc/global-libraries.json` (libraries registered on this machine,
//! `schemas/global-libraries.schema.json`) and the project activation
//! `.sdlc/libraries.json` (which of them this project queries, and
//! project-only libraries, `schemas/project-libraries.schema.json`).
//! A source that cannot be used becomes a [`SourceError`]; the query goes
//! on with the others. External libraries are strictly read-only.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::library::{Library, DIR_NAME};

/// The name of the local library in every record.
pub const LOCAL: &str = "local";
/// The global registry, relative to the home directory.
pub const GLOBAL_REGISTRY: &str = ".sdlc/global-libraries.json";
/// The project activation file, relative to the project directory.
pub const PROJECT_REGISTRY: &str = ".sdlc/libraries.json";

/// One library to query.
#[derive(Debug, Clone)]
pub struct Source {
    /// `local` or the external's registered name.
    pub name: String,
    /// The library.
    pub lib: Library,
    /// Whether this is an external (read-only) library.
    pub external: bool,
}

/// A source that could not be queried.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "source_error")]
pub struct SourceError {
    /// The source's name (or `registry:global` / `registry:project`).
    pub source: String,
    /// The path that failed.
    pub path: String,
    /// Why.
    pub message: String,
}

impl SourceError {
    /// A source error record.
    pub fn new(source: &str, path: &Path, message: impl Into<String>) -> SourceError {
        SourceError { source: source.to_string(), path: path.display().to_string(), message: message.into() }
    }
}

/// A library entry of the global registry (or a project-only library).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registered {
    /// The handle findings are attributed to.
    pub name: String,
    /// Only `filesystem` is supported.
    #[serde(default = "filesystem", rename = "type")]
    pub kind: String,
    /// The library directory (or the workspace holding `.library`).
    pub path: String,
    /// Free text for people.
    #[serde(default)]
    pub description: Option<String>,
}

fn filesystem() -> String {
    "filesystem".into()
}

/// `~/.sdlc/global-libraries.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlobalRegistry {
    /// Format version, 1.
    pub version: u32,
    /// The registered libraries.
    #[serde(default)]
    pub libraries: Vec<Registered>,
}

/// An item of the project's `active` list: a registered name, or a
/// project-only library given in full.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Activation {
    /// A name from the global registry.
    Name(String),
    /// A library defined by this project only (path relative to the project).
    Inline(Registered),
}

/// `.sdlc/libraries.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectActivation {
    /// Format version, 1.
    pub version: u32,
    /// The libraries this project queries besides its own.
    #[serde(default)]
    pub active: Vec<Activation>,
}

/// Whether a source name is acceptable: letters, digits, `-`, `_`, `.`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name != LOCAL
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Where the sources come from.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    /// `--root`, when given: then a missing local library is an error.
    pub root: Option<PathBuf>,
    /// `--source NAME=DIR` in the order given.
    pub cli: Vec<(String, PathBuf)>,
    /// Whether to read the two registries.
    pub registries: bool,
    /// The home directory (for the global registry).
    pub home: Option<PathBuf>,
}

/// The resolved sources: local first, externals by name.
#[derive(Debug, Default)]
pub struct Resolved {
    /// Usable sources in query order.
    pub sources: Vec<Source>,
    /// Sources (and registries) that could not be used.
    pub errors: Vec<SourceError>,
}

/// Parses `NAME=DIR`.
pub fn parse_source_flag(s: &str) -> crate::Result<(String, PathBuf)> {
    let (name, dir) =
        s.split_once('=').ok_or_else(|| crate::Error::usage(format!("--source wants NAME=DIR, got '{s}'")))?;
    if !valid_name(name) {
        return Err(crate::Error::usage(format!(
            "--source name '{name}' is not valid (letters, digits, '-', '_', '.'; not 'local')"
        )));
    }
    if dir.is_empty() {
        return Err(crate::Error::usage(format!("--source {name}= has no directory")));
    }
    Ok((name.to_string(), PathBuf::from(dir)))
}

/// Opens an external library directory read-only: the directory itself
/// or the workspace holding its `.library`.
pub fn open_external(dir: &Path) -> Result<Library, String> {
    let meta = fs::metadata(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    // DIR was named by the user (a flag, their registry) and is followed;
    // its `.library` was not, and a link there is refused (it
    // was followed out of DIR).
    crate::library::unlinked(dir, DIR_NAME, "the external library", "its target as the source's DIR")
        .map_err(|e| e.to_string())?;
    let nested = dir.join(DIR_NAME);
    let chosen = if nested.is_dir() { nested } else { dir.to_path_buf() };
    fs::read_dir(&chosen).map_err(|e| format!("cannot list {}: {e}", chosen.display()))?;
    let abs = chosen.canonicalize().map_err(|e| format!("cannot resolve {}: {e}", chosen.display()))?;
    Ok(Library { dir: abs })
}

/// Resolves the sources of a query.
pub fn resolve(spec: &Spec) -> crate::Result<Resolved> {
    let mut out = Resolved::default();
    // No local library is fine; a named one missing, or a found one
    // reached through a link, is not.
    let local = Library::find(spec.root.as_deref())?;
    let project = match &local {
        Some(l) => l.dir.parent().map(Path::to_path_buf),
        None => std::env::current_dir().ok(),
    };
    let mut externals: BTreeMap<String, PathBuf> = BTreeMap::new();
    if spec.registries {
        let global = spec.home.as_ref().map(|h| h.join(GLOBAL_REGISTRY));
        let registered: BTreeMap<String, Registered> = match global.as_deref().map(read_global) {
            Some(Ok(reg)) => reg.libraries.into_iter().map(|r| (r.name.clone(), r)).collect(),
            Some(Err(e)) => {
                out.errors.extend(e);
                BTreeMap::new()
            }
            None => BTreeMap::new(),
        };
        if let Some(proj) = &project {
            let file = proj.join(PROJECT_REGISTRY);
            match read_project(proj, &file) {
                Ok(Some(act)) => {
                    for a in act.active {
                        match a {
                            Activation::Name(n) => match registered.get(&n) {
                                Some(r) => add(&mut out, &mut externals, &n, Path::new(&r.path), &r.kind, None),
                                None => out.errors.push(SourceError::new(
                                    &n,
                                    &file,
                                    format!("'{n}' is activated but not in the global registry {GLOBAL_REGISTRY}"),
                                )),
                            },
                            Activation::Inline(r) => {
                                add(&mut out, &mut externals, &r.name, Path::new(&r.path), &r.kind, Some(proj))
                            }
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => out.errors.push(e),
            }
        }
    }
    for (name, dir) in &spec.cli {
        externals.insert(name.clone(), dir.clone());
    }
    if let Some(l) = local {
        out.sources.push(Source { name: LOCAL.into(), lib: l, external: false });
    }
    let local_dir = out.sources.first().map(|s| s.lib.dir.clone());
    for (name, dir) in externals {
        match open_external(&dir) {
            Ok(lib) if Some(&lib.dir) == local_dir.as_ref() => out.errors.push(SourceError::new(
                &name,
                &dir,
                "this is the local library; it is queried once, as 'local'",
            )),
            Ok(lib) => out.sources.push(Source { name, lib, external: true }),
            Err(msg) => out.errors.push(SourceError::new(&name, &dir, msg)),
        }
    }
    Ok(out)
}

/// Where a library a registry names is: `path` itself, or for a library
/// the project registry defines (`base`, the workspace) a path inside the
/// workspace reached without a link, or why not. The project registry
/// lives in the workspace, so a peer can commit it (one naming a
/// directory outside made `kb-score --tier 3` and MCP `library_search`
/// serve its files); a library outside the workspace is registered in the
/// user's own `~/.sdlc/global-libraries.json` or named with `--source`.
fn registered_path(path: &Path, base: Option<&PathBuf>) -> Result<PathBuf, String> {
    let Some(base) = base else { return Ok(path.to_path_buf()) };
    let rel = match path.strip_prefix(base) {
        Ok(r) if path.is_absolute() => r,
        _ => path,
    };
    // `./vendor/lib` is written as often as `vendor/lib`; a `..` stays and is refused.
    let rel = if rel.is_absolute() {
        rel.to_string_lossy().into_owned()
    } else {
        let parts: Vec<String> = rel
            .components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        parts.join("/")
    };
    crate::fs::nofollow::inside(base, &rel).map_err(|why| {
        format!(
            "refused: {PROJECT_REGISTRY} is in the workspace, so it names only libraries inside the workspace, \
             reached without links; this path {why} (register a library elsewhere in ~/{GLOBAL_REGISTRY} or pass --source)"
        )
    })
}

fn add(
    out: &mut Resolved,
    externals: &mut BTreeMap<String, PathBuf>,
    name: &str,
    path: &Path,
    kind: &str,
    base: Option<&PathBuf>,
) {
    if !valid_name(name) {
        out.errors.push(SourceError::new(name, path, format!("'{name}' is not a valid library name")));
    } else if kind != "filesystem" {
        out.errors.push(SourceError::new(
            name,
            path,
            format!("library type '{kind}' is not supported (only filesystem)"),
        ));
    } else {
        match registered_path(path, base) {
            Ok(p) => {
                externals.insert(name.to_string(), p);
            }
            Err(msg) => out.errors.push(SourceError::new(name, path, msg)),
        }
    }
}

fn read_global(path: &Path) -> Result<GlobalRegistry, Vec<SourceError>> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(GlobalRegistry { version: 1, libraries: vec![] })
        }
        Err(e) => return Err(vec![SourceError::new("registry:global", path, format!("cannot read: {e}"))]),
    };
    let reg: GlobalRegistry = serde_json::from_str(&text)
        .map_err(|e| vec![SourceError::new("registry:global", path, format!("invalid registry JSON: {e}"))])?;
    if reg.version != 1 {
        return Err(vec![SourceError::new("registry:global", path, format!("unsupported version {}", reg.version))]);
    }
    Ok(reg)
}

/// Reads the project registry `path` in the workspace `proj`: never
/// through a link (`.sdlc` or the file itself), which would make a file
/// elsewhere speak for the workspace.
fn read_project(proj: &Path, path: &Path) -> Result<Option<ProjectActivation>, SourceError> {
    if let Some(link) = crate::fs::nofollow::link_in_chain(proj, PROJECT_REGISTRY) {
        let msg = format!("refused: the registry is reached through the symlink '{link}' in the workspace");
        return Err(SourceError::new("registry:project", path, msg));
    }
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(SourceError::new("registry:project", path, format!("cannot read: {e}"))),
    };
    let act: ProjectActivation = serde_json::from_str(&text)
        .map_err(|e| SourceError::new("registry:project", path, format!("invalid activation JSON: {e}")))?;
    if act.version != 1 {
        return Err(SourceError::new("registry:project", path, format!("unsupported version {}", act.version)));
    }
    Ok(Some(act))
}
