//! What the binaries print: JSON Lines records in and out, and progress on
//! a terminal. Depends on nothing else in the crate but `error`.

pub mod jsonl;
pub mod progress;

/// Rounds `x` to `places` decimals for a record: scores, rates and
/// durations print as short, stable bytes, the same on every platform.
pub fn round(x: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (x * scale).round() / scale
}

/// [`round`] to 4 decimals, the precision of every score and fraction.
pub fn round4(x: f64) -> f64 {
    round(x, 4)
}
