//! The staging area (seed 004 §2, §6 step 3c): entries that fail validation,
//! conflict with the target or cannot get the lock are written to
//! `last-word/staging/<YYYYMMDD-HHMMSS-xxxx>.yaml` with the error recorded
//! in the file, so nothing an agent declared is ever dropped.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::home::Home;
use crate::error::{Context, Error, Result};

/// What goes into one staging file.
#[derive(Debug, Default)]
pub struct Staged {
    /// The session the entries came from.
    pub source: Option<String>,
    /// The pending file the entries belong to (where resolve returns them).
    pub queue: Option<PathBuf>,
    /// Why they were staged, for the whole file.
    pub error: String,
    /// The entries, each with its own `error` when it has one.
    pub entries: Vec<Value>,
    /// Input that could not be parsed at all, verbatim.
    pub raw: Vec<String>,
}

/// Writes a staging file and returns its path. The name is reserved with
/// an exclusive create first, so two processes never pick the same one.
pub fn write(home: &Home, st: &Staged) -> Result<PathBuf> {
    let (path, text) = prepare(home, st)?;
    crate::fs::atomic::write(&path, &text)?;
    Ok(path)
}

/// Reserves a staging file's name and renders its bytes without writing
/// them, for an apply that puts all its files in place as one journaled
/// group. The reserved file holds only [`RESERVED`] and this process's pid
/// until the bytes land; [`list`] skips it and [`sweep`] removes it once
/// its process is gone.
pub fn prepare(home: &Home, st: &Staged) -> Result<(PathBuf, Vec<u8>)> {
    let dir = home.staging();
    std::fs::create_dir_all(&dir).ctx(|| format!("creating {}", dir.display()))?;
    let now = crate::clock::now()?;
    let stamp = now.strftime("%Y%m%d-%H%M%S").to_string();
    let path = reserve(&dir, &stamp)?;
    let mut m = Map::new();
    m.insert("version".into(), json!(super::delta::VERSION));
    if let Some(s) = &st.source {
        m.insert("source".into(), json!(s));
    }
    m.insert("error".into(), json!(st.error));
    m.insert("staged_at".into(), json!(crate::clock::format(now)));
    if let Some(q) = &st.queue {
        m.insert("queue".into(), json!(home.show(q)));
    }
    if !st.raw.is_empty() {
        m.insert("raw".into(), json!(st.raw));
    }
    m.insert("entries".into(), Value::Array(st.entries.clone()));
    let text = format!(
        "# kb-lastword staging: fix and run `kb-lastword resolve {}`\n{}",
        file_name(&path),
        crate::doc::yaml::to_string(&Value::Object(m))?
    );
    Ok((path, text.into_bytes()))
}

/// What a reserved staging file holds until its bytes land (then the pid).
pub const RESERVED: &str = "# kb-lastword: reserved by pid ";

fn reserve(dir: &Path, stamp: &str) -> Result<PathBuf> {
    for _ in 0..64 {
        let p = dir.join(format!("{stamp}-{}.yaml", random_hex4()));
        match OpenOptions::new().write(true).create_new(true).open(&p) {
            Ok(mut f) => {
                writeln!(f, "{RESERVED}{}", std::process::id()).ctx(|| format!("writing {}", p.display()))?;
                return Ok(p);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(format!("creating {}", p.display()), e)),
        }
    }
    Err(Error::msg(format!("cannot find a free staging file name in {}", dir.display())))
}

/// The pid of a reserved (not yet written) staging file, if it is one.
fn reserved_by(p: &Path) -> Option<u32> {
    let meta = std::fs::symlink_metadata(p).ok()?;
    if !meta.is_file() || meta.len() > 64 {
        return None;
    }
    let text = std::fs::read_to_string(p).ok()?;
    text.strip_prefix(RESERVED)?.trim().parse().ok()
}

/// Removes reserved staging files whose process died before writing them
/// (a kill between the reservation and the write). Callers hold the lock.
pub fn sweep(home: &Home) -> Result<()> {
    for p in candidates(home)? {
        if reserved_by(&p).is_some_and(|pid| !crate::lock::pid_alive(pid)) {
            std::fs::remove_file(&p).ctx(|| format!("removing {}", p.display()))?;
        }
    }
    Ok(())
}

/// A short random hex tag for staging file names.
fn random_hex4() -> String {
    format!("{:04x}", crate::lock::backoff::random() & 0xffff)
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The entry value with its error attached.
pub fn with_error(mut v: Value, error: &str) -> Value {
    if let Value::Object(m) = &mut v {
        m.insert("error".into(), json!(error));
    }
    v
}

/// The staging files present now, sorted by name (oldest first); a
/// reserved file whose bytes have not landed yet is not one.
pub fn list(home: &Home) -> Result<Vec<PathBuf>> {
    Ok(candidates(home)?.into_iter().filter(|p| reserved_by(p).is_none()).collect())
}

fn candidates(home: &Home) -> Result<Vec<PathBuf>> {
    let dir = home.staging();
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(format!("listing {}", dir.display()), e)),
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml") && !file_name(p).starts_with('.'))
        .collect();
    v.sort();
    Ok(v)
}
