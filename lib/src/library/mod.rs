//! Where the library is and which paths inside it may be written
//! (DESIGN.md "Root" and "Paths").
//!
//! The folder holds what a library is made of: its documents (`entry`,
//! `scan`), its logs (`changelog`, `relations`, `graph`), and how changes
//! are committed (`git`). The writer that uses all of these is the layer
//! `write` (lib/src/write/), above `derived` and `guard`.

pub mod changelog;
pub mod cursors;
pub mod entry;
pub mod git;
pub mod git_state;
pub mod graph;
pub mod journal;
pub mod kind;
pub mod machine;
pub mod names;
pub mod relations;
pub mod scan;
pub mod trust;

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// The name of the library directory under a workspace.
pub const DIR_NAME: &str = ".library";

/// The subdirectories `kb-append init` creates (seed 000's layout).
pub const LAYOUT: &[&str] = &[
    ".memory/.references",
    ".memory/.experiences",
    ".memory/.type-profiles",
    ".memory/.thinking/patterns",
    ".memory/.thinking/raw",
    ".skills/.candidates",
    ".skills/.drafts",
    ".skills/.active",
    ".changelog-archive",
    ".core-rule-proposals",
    ".evolving-rules/security/active",
];

/// Where the extended guard rules live (hot-loaded by every write batch).
pub const GUARD_RULES: &str = ".evolving-rules/security/active";

/// An opened library: the `.library` directory itself.
#[derive(Debug, Clone)]
pub struct Library {
    /// Absolute path of the `.library` directory.
    pub dir: PathBuf,
}

/// The library is its directory to the layers below it (`fs`, `lock`),
/// which take a path so that they need not know what a library is.
impl AsRef<Path> for Library {
    fn as_ref(&self) -> &Path {
        &self.dir
    }
}

impl Library {
    /// Resolves the library: `--root` > `KB_ROOT` > the nearest `.library`
    /// in the working directory or its ancestors. A root may name the
    /// `.library` directory or the workspace that holds one. A library
    /// found by searching upward is refused when it is reached through a
    /// link ([`unlinked`]); one the user named is theirs to choose.
    pub fn resolve(root: Option<&Path>) -> Result<Library> {
        match Library::find(root)? {
            Some(lib) => Ok(lib),
            None => {
                let cwd = std::env::current_dir().map_err(|e| Error::io("reading the working directory", e))?;
                Err(Error::msg(format!(
                    "no .library found in {} or its parents (use --root DIR, set KB_ROOT, or run 'kb-append init')",
                    cwd.display()
                )))
            }
        }
    }

    /// [`Library::resolve`], where no library is not an error: `None` when
    /// none was named and none is found upward. A named root that is
    /// missing, and a found one reached through a link, are errors (a
    /// caller that goes on without a library must not go on past those).
    pub fn find(root: Option<&Path>) -> Result<Option<Library>> {
        let explicit = root.map(Path::to_path_buf).or_else(|| std::env::var_os("KB_ROOT").map(PathBuf::from));
        if let Some(dir) = explicit {
            let dir = absolute(&dir)?;
            let nested = dir.join(DIR_NAME);
            let chosen = if dir.file_name().is_some_and(|n| n == DIR_NAME) || !nested.is_dir() { dir } else { nested };
            if !chosen.is_dir() {
                return Err(Error::msg(format!(
                    "no library at {} (run 'kb-append init --root {}' to create one)",
                    chosen.display(),
                    chosen.display()
                )));
            }
            return Ok(Some(Library { dir: chosen }));
        }
        let cwd = std::env::current_dir().map_err(|e| Error::io("reading the working directory", e))?;
        for dir in cwd.ancestors() {
            let candidate = dir.join(DIR_NAME);
            unlinked(dir, DIR_NAME, "the library", "--root DIR or KB_ROOT")?;
            if candidate.is_dir() {
                return Ok(Some(Library { dir: candidate }));
            }
        }
        Ok(None)
    }

    /// The library a new `init` creates: `--root`/`KB_ROOT` as given, else
    /// `./.library`.
    pub fn for_init(root: Option<&Path>) -> Result<Library> {
        let explicit = root.map(Path::to_path_buf).or_else(|| std::env::var_os("KB_ROOT").map(PathBuf::from));
        let dir = match explicit {
            Some(d) if d.file_name().is_some_and(|n| n == DIR_NAME) => d,
            Some(d) if d.join(DIR_NAME).is_dir() => d.join(DIR_NAME),
            Some(d) => d,
            None => {
                let cwd = std::env::current_dir().map_err(|e| Error::io("reading the working directory", e))?;
                unlinked(&cwd, DIR_NAME, "the library", "--root DIR or KB_ROOT")?;
                PathBuf::from(DIR_NAME)
            }
        };
        Ok(Library { dir: absolute(&dir)? })
    }

    /// The absolute path of a library-relative path.
    pub fn path(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.dir.clone()
        } else {
            self.dir.join(rel)
        }
    }

    /// Checks a library-relative path a request wants to write and returns it
    /// normalised (`/`-separated, no `.` parts). Refused: the names of
    /// [`crate::names`], generated and internal files and directories (in
    /// any case), a path through a symlink, a name that differs only in
    /// case from an existing one, and anything but a regular file in place.
    pub fn writable(&self, rel: &str) -> Result<String> {
        if let Some(why) = names::refusal(rel) {
            return Err(Error::msg(why));
        }
        let norm = normalise(rel)?;
        let parts: Vec<&str> = norm.split('/').collect();
        // Compared folded (case, full-width forms, trailing dots), so a
        // case-insensitive file system cannot turn `.Changelog` into the log.
        let folded: Vec<String> = parts.iter().map(|p| names::fold(p)).collect();
        let folded_norm = folded.join("/");
        let name = folded[folded.len() - 1].as_str();
        let k = kind::kind(&folded_norm);
        if !k.is_content() {
            return Err(Error::msg(match k {
                kind::Kind::Local if kind::is_temp(name) => {
                    format!("refused: '{norm}' looks like a kb-tools temporary file")
                }
                kind::Kind::Unknown if self.path(&norm).is_dir() => format!("'{norm}' is a directory"),
                kind::Kind::Unknown => format!(
                    "refused: '{norm}' is not a kind a library holds (documents are Markdown, text or images \
                     under .memory/ or a folder of yours; scripts belong in a skill under .skills/)"
                ),
                kind::Kind::Rule | kind::Kind::Proposal | kind::Kind::Conflict => {
                    format!("refused: '{norm}' is a {}, an internal file written only by kb-tools", k.name())
                }
                _ => format!("refused: '{norm}' is a generated or internal file; it is written only by kb-tools"),
            }));
        }
        self.check_walk(&norm)?;
        Ok(norm)
    }

    /// One walk down `norm`, each part looked at once: a symlink anywhere
    /// on it is refused (the first one, as `check_chain` names it); the
    /// first part that is not there is compared with its directory's
    /// names, folded ([`names::fold`]): on a case-insensitive or
    /// normalising file system (a peer's macOS, or this one) a name that
    /// differs only in case or Unicode form (`é` precomposed or as `e`
    /// and an accent) is the same file; and a last part that is there
    /// must be a regular file.
    fn check_walk(&self, norm: &str) -> Result<()> {
        let mut here = self.dir.clone();
        // The mtime of the directory the walk is in, as it saw it (the
        // library's own is read only when a top-level name is new).
        let mut dir_mtime = None;
        let mut shown = String::new();
        let mut parts = norm.split('/').peekable();
        while let Some(part) = parts.next() {
            here.push(part);
            let meta = match std::fs::symlink_metadata(&here) {
                Ok(m) => m,
                Err(_) => {
                    here.pop();
                    if shown.is_empty() {
                        dir_mtime = std::fs::symlink_metadata(&here).and_then(|m| m.modified()).ok();
                    }
                    let want = names::fold(part);
                    let clash = dir_mtime
                        .and_then(|t| folded_names(&here, t))
                        .and_then(|names| names.get(&want).filter(|n| *n != part).cloned());
                    if let Some(existing) = clash {
                        return Err(Error::msg(format!(
                            "refused: '{norm}' differs only in case or Unicode form from the existing '{shown}{existing}' (the two collide on case-insensitive or normalising file systems)"
                        )));
                    }
                    return Ok(());
                }
            };
            if meta.file_type().is_symlink() {
                return crate::fs::nofollow::check_chain(&self.dir, norm).map_err(Error::msg);
            }
            if parts.peek().is_none() {
                return match meta {
                    m if m.is_dir() => Err(Error::msg(format!("'{norm}' is a directory"))),
                    m if !m.is_file() => Err(Error::msg(format!("'{norm}' is {}", crate::fs::nofollow::NOT_REGULAR))),
                    _ => Ok(()),
                };
            }
            dir_mtime = meta.modified().ok();
            shown.push_str(part);
            shown.push('/');
        }
        Ok(())
    }

    /// Fails when a path goes through a symlink anywhere below the library
    /// (writes never land through a link, even one pointing back inside).
    pub fn check_inside(&self, rel: &str) -> Result<()> {
        crate::fs::nofollow::check_chain(&self.dir, rel).map_err(Error::msg)
    }
}

/// Refuses a root found rather than named when any part of
/// `rel` below the workspace top `top` is a symlink: a peer turned
/// `.library` into a link to a directory of the victim's, and every
/// binary then worked inside it (`kb-append write .ssh/authorized_keys`
/// overwrote the key file). Links above `top` (a home on another mount,
/// the temp directory) are the user's own and are not looked at; so is a
/// path the user named (`named`: the flag or variable that names it,
/// shown in the error). Shared by the library, kb-memgate's store and
/// external libraries.
pub fn unlinked(top: &Path, rel: &str, what: &str, named: &str) -> Result<()> {
    match crate::fs::nofollow::link_in_chain(top, rel) {
        Some(link) => Err(Error::msg(format!(
            "refused: {what} at {} is reached through the symlink {}; kb-tools never follows a link it finds \
             in the workspace (a peer can commit one). If the link is yours, name the path with {named}",
            top.join(rel).display(),
            top.join(link).display()
        ))),
        None => Ok(()),
    }
}

/// Normalises a library-relative path and rejects absolute paths, `..`,
/// empty paths and NUL bytes.
pub fn normalise(rel: &str) -> Result<String> {
    if rel.trim().is_empty() {
        return Err(Error::msg("empty path"));
    }
    if rel.contains('\0') {
        return Err(Error::msg("path contains a NUL byte"));
    }
    if rel.contains('\\') {
        return Err(Error::msg(format!("'{rel}' contains a backslash; paths are '/'-separated")));
    }
    let p = Path::new(rel);
    let mut parts = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str().ok_or_else(|| Error::msg("path is not UTF-8"))?),
            Component::CurDir => {}
            Component::ParentDir => return Err(Error::msg(format!("'{rel}' contains '..'"))),
            Component::RootDir | Component::Prefix(_) => {
                return Err(Error::msg(format!("'{rel}' is absolute; paths are relative to the library")))
            }
        }
    }
    if parts.is_empty() {
        return Err(Error::msg(format!("'{rel}' names the library itself")));
    }
    Ok(parts.join("/"))
}

fn absolute(p: &Path) -> Result<PathBuf> {
    if p.is_absolute() {
        Ok(p.to_path_buf())
    } else {
        let cwd = std::env::current_dir().map_err(|e| Error::io("reading the working directory", e))?;
        Ok(cwd.join(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_and_rejects() {
        assert_eq!(normalise("./a//b/c.md").unwrap(), "a/b/c.md");
        for bad in ["/etc/passwd", "a/../../b", "", "a\\b", "."] {
            assert!(normalise(bad).is_err(), "{bad}");
        }
    }
}

/// What `init` created (library-relative; empty when all was there).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Init {
    /// The library directory.
    pub dir: String,
    /// Directories and files created by this run.
    pub created: Vec<String>,
}

impl Library {
    /// Creates seed 000's layout (idempotent): the category directories and
    /// an empty `.changelog` and `.relations.jsonl`. `kb-append init` calls
    /// `sync::init`, which adds what sync relies on.
    pub fn create_layout(&self) -> Result<Init> {
        let mut created = Vec::new();
        if !self.dir.is_dir() {
            std::fs::create_dir_all(&self.dir).map_err(|e| Error::io(format!("creating {}", self.dir.display()), e))?;
            created.push(".".to_string());
        }
        for d in LAYOUT {
            let p = self.path(d);
            if !p.is_dir() {
                std::fs::create_dir_all(&p).map_err(|e| Error::io(format!("creating {}", p.display()), e))?;
                created.push((*d).to_string());
            }
        }
        for f in [".changelog", ".relations.jsonl"] {
            let p = self.path(f);
            if !p.exists() {
                crate::fs::atomic::write(&p, b"")?;
                created.push(f.to_string());
            }
        }
        Ok(Init { dir: self.dir.display().to_string(), created })
    }
}

/// The names in `dir` by their lower-case form, listed once per directory
/// state: a batch of thousands of new files in one directory lists it once,
/// not once per file (the cache is keyed by the directory's mtime, which
/// every create, rename or delete in it changes; `mtime` is the one the
/// caller's walk just read). `None` when `dir` cannot
/// be listed: it exists (the previous path part did), so the write into it
/// fails with the real error.
fn folded_names(
    dir: &std::path::Path,
    mtime: std::time::SystemTime,
) -> Option<std::sync::Arc<std::collections::HashMap<String, String>>> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    type Listing = (std::time::SystemTime, Arc<HashMap<String, String>>);
    static CACHE: Mutex<Option<HashMap<PathBuf, Listing>>> = Mutex::new(None);
    // A poisoned cache (a panic elsewhere) only costs a fresh listing.
    if let Some((t, names)) = CACHE.lock().ok()?.as_ref().and_then(|c| c.get(dir)) {
        if *t == mtime {
            return Some(names.clone());
        }
    }
    let names: HashMap<String, String> = std::fs::read_dir(dir)
        .ok()?
        // An entry that vanished while listed is gone.
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .map(|n| (names::fold(&n), n))
        .collect();
    let names = Arc::new(names);
    CACHE.lock().ok()?.get_or_insert_with(HashMap::new).insert(dir.to_path_buf(), (mtime, names.clone()));
    Some(names)
}
