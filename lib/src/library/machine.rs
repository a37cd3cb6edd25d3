//! This clone's machine identity, as the writers read it: the
//! `kb.machine` value in the clone's own git config, which `kb-append
//! sync` creates on its first run (`sync::identity`). It names the ref
//! the clone pushes (`refs/heads/kb/<machine>`) and is stamped on the
//! changelog events this clone writes, so a fleet's log says where each
//! event came from.
//!
//! It lives in the clone's local config, never in the library: the
//! library is shared, an identity is not, and a peer must not be able to
//! choose this machine's name. It is read once per process and library
//! (one `git config` call), so a writer pays one process start, not one
//! per event.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;

use crate::library::Library;

/// The git config key holding the identity.
pub const KEY: &str = "kb.machine";

/// The identities read so far, per library directory.
static CACHE: Mutex<BTreeMap<PathBuf, Option<String>>> = Mutex::new(BTreeMap::new());

/// This clone's identity: `None` when the library is not in git, sync
/// never ran here, or the value is not one sync would write.
pub fn current(lib: &Library) -> Option<String> {
    // A poisoned cache (a panic elsewhere) only costs a fresh read.
    if let Some(hit) = CACHE.lock().ok().and_then(|m| m.get(&lib.dir).cloned()) {
        return hit;
    }
    let out = crate::library::git::git(&lib.dir)
        .args(["config", "--local", "--get", KEY])
        .stderr(Stdio::null())
        .output()
        .ok();
    let found = out
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|id| valid(id));
    remember(lib, found.clone());
    found
}

/// Records the identity sync just created or renewed, so events this
/// process writes afterwards carry it.
pub fn remember(lib: &Library, id: Option<String>) {
    if let Ok(mut m) = CACHE.lock() {
        m.insert(lib.dir.clone(), id);
    }
}

/// Whether `id` is an identity sync would write: lowercase ASCII letters,
/// digits and inner dashes, at most 48 bytes. It becomes a ref name and
/// a changelog field, so nothing else is taken even from the user's own
/// config.
pub fn valid(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 48
        && !id.starts_with('-')
        && !id.ends_with('-')
        && !id.contains("--")
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Stamps this clone's identity on events that carry none.
pub fn stamp(lib: &Library, events: &mut [crate::library::changelog::Event]) {
    if events.iter().all(|e| e.machine.is_some()) {
        return;
    }
    if let Some(id) = current(lib) {
        for e in events.iter_mut().filter(|e| e.machine.is_none()) {
            e.machine = Some(id.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::valid;

    #[test]
    fn only_ref_safe_names_are_identities() {
        for ok in ["laptop-a1b2c3", "ci-7-0f0f0f", "x"] {
            assert!(valid(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "a--b", "A-b", "a/b", "a b", "a.b", &"x".repeat(49)] {
            assert!(!valid(bad), "{bad}");
        }
    }
}
