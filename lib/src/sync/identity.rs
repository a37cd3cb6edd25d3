//! Creating and renewing this clone's machine identity: a
//! readable `<hostname>-<6 random hex>` kept in the clone's own git config
//! (`kb.machine`, read by [`crate::library::machine`]), never in the
//! library. The hostname makes `git ls-remote` and the changelog readable;
//! the random part keeps two clones on one host (or two hosts with one
//! name) apart.
//!
//! A clone copied with its config (a CI cache, a VM image, `cp -r`)
//! shares the identity. That shows when the hub's ref for it holds
//! commits this clone never had: its own ref does not fast-forward. Then
//! the clone takes a new identity and says so; it never forces the ref,
//! which would throw away the other copy's work.

use std::hash::{BuildHasher, Hasher};

use crate::error::Result;
use crate::library::machine::{self, KEY};
use crate::library::Library;
use crate::sync::gitcmd::Repo;

/// The identity in the clone's config, created first when there is none
/// (or the value is not one sync writes). Returns it and whether it was
/// created now.
pub fn ensure(lib: &Library, repo: &Repo) -> Result<(String, bool)> {
    let existing = repo.output(&["config", "--local", "--get", KEY]).ok().filter(|o| o.status.success());
    if let Some(id) = existing.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()) {
        if machine::valid(&id) {
            machine::remember(lib, Some(id.clone()));
            return Ok((id, false));
        }
    }
    Ok((set(lib, repo, &fresh())?, true))
}

/// Takes a new identity (the old one is shared with a copy of this
/// clone) and returns it.
pub fn renew(lib: &Library, repo: &Repo, old: &str) -> Result<String> {
    let mut id = fresh();
    // Astronomically unlikely, but a renewal must change the name.
    while id == old {
        id = fresh();
    }
    let id = set(lib, repo, &id)?;
    crate::fs::crash::at(crate::fs::crash::Step::SyncRenewed);
    Ok(id)
}

fn set(lib: &Library, repo: &Repo, id: &str) -> Result<String> {
    repo.run(&["config", "--local", KEY, id], "git config (the machine identity)")?;
    machine::remember(lib, Some(id.to_string()));
    Ok(id.to_string())
}

/// A new identity: the host's name made ref-safe, a dash, six random
/// hex digits.
pub fn fresh() -> String {
    format!("{}-{:06x}", host(), random24())
}

/// The host's name, lowercased, anything but letters and digits turned
/// into single dashes, at most 32 bytes; `machine` when there is none.
fn host() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| {
            let out = std::process::Command::new("uname").arg("-n").output().ok()?;
            out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        })
        .unwrap_or_default();
    let first = raw.trim().split('.').next().unwrap_or_default().to_ascii_lowercase();
    let mut name = String::new();
    for c in first.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else if !name.is_empty() && !name.ends_with('-') {
            name.push('-');
        }
    }
    name.truncate(32);
    let name = name.trim_end_matches('-').to_string();
    if name.is_empty() {
        "machine".into()
    } else {
        name
    }
}

/// 24 random bits. std's `RandomState` is seeded from the operating
/// system's randomness; the time and pid are mixed in so two processes
/// started at once on copied disks still differ. No new dependency for
/// six hex digits that only need to tell clones apart.
fn random24() -> u32 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    (h.finish() & 0x00ff_ffff) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_identity_is_valid_and_differs_each_time() {
        let a = fresh();
        assert!(machine::valid(&a), "{a}");
        let others: std::collections::BTreeSet<String> = (0..50).map(|_| fresh()).collect();
        assert!(others.len() >= 49, "{others:?}");
        assert_eq!(a.rsplit_once('-').map(|(_, hex)| hex.len()), Some(6));
    }
}
