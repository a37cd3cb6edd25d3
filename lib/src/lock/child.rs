//! `kb-lock -- CMD`: the command runs in its own process group and the
//! signals that would end kb-lock (SIGTERM, SIGINT, SIGHUP) are forwarded
//! to that group instead, so the lock is held until the command has
//! exited. Without this a signal freed the lock while the command went on
//! writing under `KB_LOCK_HELD`, and a second holder got in at once.

use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// Exit status when the command is not found (a shell's).
pub const NOT_FOUND: u8 = 127;
/// Exit status when the command exists but cannot be run.
pub const CANNOT_RUN: u8 = 126;

/// Runs `cmd[0]` with the rest as its arguments and `var=value` set, as
/// [`run_forwarding`] does, and returns the exit status a shell would:
/// its code, 128 + signal, or 127/126 (printed) when it cannot start.
pub fn run_status(cmd: &[String], var: &str, value: &std::path::Path) -> u8 {
    let Some((prog, args)) = cmd.split_first() else { return CANNOT_RUN };
    let mut c = Command::new(prog);
    c.args(args).env(var, value);
    match run_forwarding(c) {
        Ok(status) => exit_code(status),
        Err(e) => {
            let code = match e.kind() {
                std::io::ErrorKind::NotFound => NOT_FOUND,
                _ => CANNOT_RUN,
            };
            let why = if code == NOT_FOUND { "command not found".to_string() } else { e.to_string() };
            eprintln!("kb-lock: {prog}: {why}");
            code
        }
    }
}

/// The child's status as ours: its code, or 128 + signal like a shell.
fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(sig)) => 128u8.wrapping_add(sig as u8),
        _ => crate::error::Exit::Failure as u8,
    }
}

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
