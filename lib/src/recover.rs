//! Recovery from one place: `kb-lock sweep` finishes every kind of group a
//! killed writer left, wherever its journal lives. The library's kinds (a
//! batch, an evolve run) are finished under the library lock by
//! [`crate::write::recover`], which every library writer also calls first;
//! kb-memgate's apply (in the project's memory store) and kb-lastword's
//! apply (in last word's home) are finished under each store's own lock,
//! which the library lock does not cover. This sits above every writer so
//! it can reach them all.

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::library::{git_state, Library};
use crate::lock;

fn value(v: &impl serde::Serialize) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| Error::msg(format!("encoding a record: {e}")))
}

/// Sweeps `lib` (when there is one) and the stores outside it; returns the
/// records in order: `cleared` git state, `recovered` groups, then the
/// removed stale locks and temps (each also told on stderr). Temps go
/// last: a recovery may still rename a killed batch's staged file in.
pub fn sweep(lib: Option<&Library>, memory_dir: Option<&Path>) -> Result<Vec<Value>> {
    let mut recs = Vec::new();
    let mut swept = Vec::new();
    if let Some(lib) = lib {
        swept = lock::sweep(lib, lock::Sweep::Locks)?;
        if crate::write::pending(lib) || git_state::present(lib) {
            let opts = lock::Options { cmd: "kb-lock sweep".into(), ..lock::Options::default() };
            let (cleared, recovered) = lock::with_lock(lib, &opts, || {
                let cleared = git_state::clear(lib, git_state::WAIT)?;
                Ok((cleared, crate::write::recover(lib)?))
            })?;
            for c in &cleared {
                recs.push(value(c)?);
            }
            if let Some(r) = recovered {
                recs.push(value(&r)?);
            }
        }
    }
    recs.extend(outside(memory_dir)?);
    if let Some(lib) = lib {
        swept.extend(lock::sweep(lib, lock::Sweep::Temps)?);
    }
    swept.sort_by(|a, b| a.path.cmp(&b.path));
    for s in &swept {
        let pid = s.pid.map_or("unknown".into(), |p| p.to_string());
        crate::out::warn("kb-lock", &format!("removed stale lock {} (pid {pid})", s.path));
        recs.push(value(s)?);
    }
    Ok(recs)
}

/// Finishes the applies a killed kb-memgate or kb-lastword left. With no
/// `memory_dir`, a project with no store (or none that resolves) has
/// nothing to finish.
fn outside(memory_dir: Option<&Path>) -> Result<Vec<Value>> {
    let mut recs = Vec::new();
    let store = match memory_dir {
        Some(dir) => Some(crate::memgate::store::Paths::new(Some(dir))?),
        None => crate::memgate::store::Paths::new(None).ok(),
    };
    if let Some(r) = store.map(|p| crate::memgate::journal::finish_pending(&p)).transpose()?.flatten() {
        recs.push(value(&r)?);
    }
    if let Ok(home) = crate::lastword::home::Home::from_env() {
        let lines = crate::lastword::journal::finish_pending(&home)?;
        recs.extend(String::from_utf8_lossy(&lines).lines().filter_map(|l| serde_json::from_str(l).ok()));
    }
    Ok(recs)
}
