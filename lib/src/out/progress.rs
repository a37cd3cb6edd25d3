//! Progress for long runs, on stderr and only when stderr is a terminal, so
//! pipes and logs stay clean.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// A throttled `label: done/total` counter on stderr.
pub struct Progress {
    label: &'static str,
    total: usize,
    done: usize,
    last: Option<Instant>,
    enabled: bool,
}

impl Progress {
    /// A counter for `total` items; silent unless stderr is a terminal.
    pub fn new(label: &'static str, total: usize) -> Progress {
        Progress { label, total, done: 0, last: None, enabled: std::io::stderr().is_terminal() && total > 0 }
    }

    /// Counts one item, redrawing at most four times a second.
    pub fn tick(&mut self) {
        self.done += 1;
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if self.last.is_none_or(|t| now - t >= Duration::from_millis(250)) {
            self.last = Some(now);
            eprint!("\r{}: {}/{}", self.label, self.done, self.total);
            let _ = std::io::stderr().flush();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.enabled && self.last.is_some() {
            eprint!("\r{}: {}/{}\n", self.label, self.done, self.total);
        }
    }
}
