//! Content digests: the changelog's `sha256` and duplicate detection.

use sha2::{Digest, Sha256};

/// The SHA-256 of some bytes.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Lower-case hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&sha256(bytes))
}

pub use crate::text::hex;

/// Hex back to bytes; `None` on an odd length or a non-hex digit.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// SHA-256 of a file that only grows, kept as the state after its whole
/// 64-byte blocks so appending costs the appended bytes, not the file
/// (kb-memgate's INDEX.md digest). [`Running::hex`] gives the
/// same digest as [`sha256_hex`] of the whole bytes: the state is
/// SHA-256's own chaining value, finished with its standard padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Running {
    state: [u32; 8],
    /// Bytes folded into `state` (a multiple of 64).
    pub len: u64,
}

/// SHA-256's initial chaining value (FIPS 180-4, 5.3.3).
const H0: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

impl Default for Running {
    fn default() -> Running {
        Running { state: H0, len: 0 }
    }
}

impl Running {
    /// Folds in the whole 64-byte blocks of `bytes`; returns the rest
    /// (shorter than a block), which the caller keeps or re-reads.
    pub fn update<'b>(&mut self, bytes: &'b [u8]) -> &'b [u8] {
        use sha2::digest::generic_array::GenericArray;
        let whole = bytes.len() / 64 * 64;
        let blocks: Vec<GenericArray<u8, _>> =
            bytes[..whole].chunks_exact(64).map(GenericArray::clone_from_slice).collect();
        sha2::compress256(&mut self.state, &blocks);
        self.len += whole as u64;
        &bytes[whole..]
    }

    /// The digest of the bytes folded in followed by `tail`, lower-case hex.
    pub fn hex(&self, tail: &[u8]) -> String {
        let mut r = *self;
        let rest = r.update(tail);
        let bits = (r.len + rest.len() as u64) * 8;
        let mut last = rest.to_vec();
        last.push(0x80);
        while last.len() % 64 != 56 {
            last.push(0);
        }
        last.extend(bits.to_be_bytes());
        r.update(&last);
        hex(&r.state.iter().flat_map(|w| w.to_be_bytes()).collect::<Vec<u8>>())
    }

    /// The state as hex (to keep in a file).
    pub fn state_hex(&self) -> String {
        hex(&self.state.iter().flat_map(|w| w.to_be_bytes()).collect::<Vec<u8>>())
    }

    /// A state read back from [`Running::state_hex`] and its length.
    pub fn from_state_hex(s: &str, len: u64) -> Option<Running> {
        let b = unhex(s)?;
        if b.len() != 32 || !len.is_multiple_of(64) {
            return None;
        }
        let mut state = [0u32; 8];
        for (w, c) in state.iter_mut().zip(b.chunks_exact(4)) {
            *w = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        Some(Running { state, len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_digest_equals_the_whole_digest_at_every_length() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 % 251) as u8).collect();
        for n in [0, 1, 55, 56, 63, 64, 65, 119, 128, 200, 300] {
            let mut r = Running::default();
            let tail = r.update(&data[..n]);
            assert_eq!(r.hex(tail), sha256_hex(&data[..n]), "{n} bytes");
            // Continued in two steps, through a saved state.
            let mut r = Running::default();
            let rest = r.update(&data[..n / 2]).to_vec();
            let mut r = Running::from_state_hex(&r.state_hex(), r.len).unwrap();
            let joined = [rest.as_slice(), &data[n / 2..n]].concat();
            let tail = r.update(&joined);
            assert_eq!(r.hex(tail), sha256_hex(&data[..n]), "{n} bytes in two steps");
        }
        assert_eq!(Running::from_state_hex("00", 0), None);
        assert_eq!(Running::from_state_hex(&Running::default().state_hex(), 3), None);
    }
}
