//! Progress for long runs (`kb-index rebuild`, a cold `kb-score`, `kb-guard
//! scan` of a big tree, a big `kb-append batch`): an indicatif bar on
//! stderr, only when stderr is a terminal, so pipes and logs stay clean;
//! only for more than one item, so a single write never shows one; and only
//! once the work has taken a second, so a quick run never flashes a bar.
//! Parallel scans count through [`Progress::count`], which takes `&self`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Work shorter than this shows no progress at all.
pub const QUIET_FOR: Duration = Duration::from_secs(1);

/// Overrides [`QUIET_FOR`] in milliseconds: `0` shows the bar from the
/// first item (tests on a pseudo-terminal; a user who wants it at once).
pub const AFTER_VAR: &str = "KB_PROGRESS_AFTER_MS";

/// Whether a bar is drawn: stderr is a terminal, there is more than one
/// item, and the work has run for `after`.
pub fn shown(stderr_terminal: bool, total: usize, elapsed: Duration, after: Duration) -> bool {
    stderr_terminal && total > 1 && elapsed >= after
}

/// A `label [bar] done/total (eta)` counter on stderr, drawn once
/// [`shown`] says so and cleared when dropped.
pub struct Progress {
    bar: ProgressBar,
    total: usize,
    start: Instant,
    after: Duration,
    terminal: bool,
    drawn: AtomicBool,
}

impl Progress {
    /// A counter for `total` items; draws nothing until [`shown`].
    pub fn new(label: &'static str, total: usize) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} ({eta})")
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(label);
        let after =
            std::env::var(AFTER_VAR).ok().and_then(|v| v.trim().parse().ok()).map_or(QUIET_FOR, Duration::from_millis);
        Progress {
            bar,
            total,
            start: Instant::now(),
            after,
            terminal: std::io::stderr().is_terminal(),
            drawn: AtomicBool::new(false),
        }
    }

    /// Counts one item (see [`Progress::count`]).
    pub fn tick(&mut self) {
        self.count();
    }

    /// Counts one item from any thread; indicatif throttles the redraws.
    pub fn count(&self) {
        if !self.drawn.load(Ordering::Relaxed)
            && shown(self.terminal, self.total, self.start.elapsed(), self.after)
            && !self.drawn.swap(true, Ordering::Relaxed)
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        self.bar.inc(1);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // The records that follow are the result; the bar leaves no line.
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_needs_a_terminal_more_than_one_item_and_time() {
        let s = Duration::from_secs(1);
        assert!(shown(true, 2, s, QUIET_FOR));
        assert!(!shown(false, 1000, s * 10, QUIET_FOR), "never into a pipe or file");
        assert!(!shown(true, 1, s * 10, QUIET_FOR), "never for a single write");
        assert!(!shown(true, 1000, s / 2, QUIET_FOR), "not before a second has passed");
        assert!(shown(true, 2, Duration::ZERO, Duration::ZERO));
    }
}
