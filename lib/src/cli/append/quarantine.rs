//! `kb-append quarantine`: what sync held back from peers, and
//! the user's release or drop of each hold.

use serde_json::json;

use super::flags::Flags;
use crate::cli::args::Args;
use crate::error::Error;
use crate::out::jsonl::Out;
use crate::write::Options;
use crate::{sync, Library};

/// `quarantine`: list what sync held; `quarantine release|drop PATH...`
/// ends holds, under the library lock.
pub fn quarantine(a: &Args, f: &Flags, lib: &Library, opts: &Options, out: &mut Out) -> Result<(), Error> {
    if a.cmd == "quarantine" {
        let held = sync::hold::read(lib)?;
        if crate::cli::args::format_or_default(f.format) == crate::out::jsonl::Format::Table {
            let rows: Vec<Vec<String>> = held
                .iter()
                .map(|h| vec![h.path.clone(), format!("{:?}", h.why).to_lowercase(), h.reason.clone()])
                .collect();
            return out.text(&crate::out::jsonl::table(&["PATH", "WHY", "REASON"], &rows));
        }
        for h in &held {
            out.record(h)?;
        }
        return Ok(());
    }
    let release = a.cmd == "quarantine release";
    for path in &a.positional {
        let done = crate::lock::with_lock(lib, &opts.lock, || sync::hold::settle(lib, path, release, opts.commit));
        match done {
            Ok(r) => out.record(&r)?,
            Err(e) => out.error(&e.to_string(), json!({"command": a.cmd, "path": path}))?,
        }
    }
    Ok(())
}
