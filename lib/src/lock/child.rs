//! `kb-lock -- CMD`: the command runs in its own process group and the
//! signals that would end kb-lock (SIGTERM, SIGINT, SIGHUP) are forwarded
//! to that group instead, so the lock is held until the command has
//! exited. Without this a signal freed the lock while the command went on
//! writing under `KB_LOCK_HELD`, and a second holder got in at once.

use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// Runs `cmd` to its end with the signals kb-lock receives forwarded to its
/// process group; returns its exit status, or the error of starting it
/// (its kind tells "not found" from "cannot run").
pub fn run_forwarding(mut cmd: Command) -> std::io::Result<ExitStatus> {
    // Registered before the spawn, so no signal falls in between.
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    let handle = signals.handle();
    let mut child = match cmd.process_group(0).spawn() {
        Ok(c) => c,
        Err(e) => {
            handle.close();
            return Err(e);
        }
    };
    let pid = rustix::process::Pid::from_raw(child.id() as i32);
    let forwarder = std::thread::spawn(move || {
        for sig in signals.forever() {
            let Some(pgid) = pid else { continue };
            let Some(signal) = rustix::process::Signal::from_named_raw(sig) else { continue };
            // The group may be gone already; nothing to forward to then.
            let _ = rustix::process::kill_process_group(pgid, signal);
        }
    });
    let status = child.wait();
    handle.close();
    let _ = forwarder.join();
    status
}
