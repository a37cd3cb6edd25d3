//! Exponential backoff with jitter, the one copy: the library lock waits
//! with it and sync retries a rejected push with it. The jitter keeps many
//! waiters that started together from waking in step.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// The wait before retry `attempt` (0-based): `first_ms` doubling up to
/// `max_ms`, then scaled by a random factor in [0.5, 1.5].
pub fn delay(attempt: u32, first_ms: u64, max_ms: u64) -> Duration {
    let base = first_ms.saturating_mul(1u64 << attempt.min(20)).min(max_ms);
    Duration::from_millis(base / 2 + random() % (base + 1))
}

/// A random number, different per call and per process (`RandomState` is
/// seeded from the OS once and stepped per instance), for jitter and
/// unique names; not for secrets.
pub fn random() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_within_half_to_one_and_a_half() {
        for (attempt, base) in [(0, 2), (1, 4), (3, 16), (7, 250), (40, 250)] {
            let d = delay(attempt, 2, 250).as_millis() as u64;
            assert!(d >= base / 2 && d <= base / 2 + base, "attempt {attempt}: {d} ms");
        }
    }
}
