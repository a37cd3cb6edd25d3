//! Progress for long runs, on stderr and only when stderr is a terminal, so
//! pipes and logs stay clean; and only once the work has taken a second,
//! so a single write or a quick run never flashes a counter. (A counter
//! this small needs no progress-bar crate.) Parallel scans count through
//! [`Progress::count`], which takes `&self`.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A throttled `label: done/total` counter on stderr.
pub struct Progress {
    label: &'static str,
    total: usize,
    done: AtomicUsize,
    last: Mutex<Option<Instant>>,
    start: Instant,
    enabled: bool,
}

/// Work shorter than this shows no progress at all.
const QUIET_FOR: Duration = Duration::from_secs(1);

impl Progress {
    /// A counter for `total` items; silent unless stderr is a terminal.
    pub fn new(label: &'static str, total: usize) -> Progress {
        let enabled = std::io::stderr().is_terminal() && total > 1;
        Progress { label, total, done: AtomicUsize::new(0), last: Mutex::new(None), start: Instant::now(), enabled }
    }

    /// Counts one item (see [`Progress::count`]).
    pub fn tick(&mut self) {
        self.count();
    }

    /// Counts one item from any thread, redrawing at most four times a
    /// second once the work has taken [`QUIET_FOR`].
    pub fn count(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if now - self.start < QUIET_FOR {
            return;
        }
        // A busy lock means another thread is drawing: skip this redraw.
        let Ok(mut last) = self.last.try_lock() else { return };
        if last.is_none_or(|t| now - t >= Duration::from_millis(250)) {
            *last = Some(now);
            eprint!("\r{}: {}/{}", self.label, done, self.total);
            let _ = std::io::stderr().flush();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        let drawn = self.last.get_mut().map(|l| l.is_some()).unwrap_or(false);
        if self.enabled && drawn {
            eprint!("\r{}: {}/{}\n", self.label, self.done.load(Ordering::Relaxed), self.total);
        }
    }
}
