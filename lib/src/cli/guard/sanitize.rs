//! `kb-guard sanitize`: neutralise injected instructions in external text.

use crate::error::{Context, Error, Exit};
use crate::fs::nofollow;
use crate::guard;
use crate::out::jsonl::Out;

/// `kb-guard sanitize`: the sanitised text on stdout, changes to --report.
pub fn run(report: Option<&std::path::Path>, file: Option<&str>, mut out: Out) -> Result<Exit, Error> {
    // Read like every named input: a FIFO or device is an error, never a
    // hang, and no more than a document can be.
    let limit = crate::library::scan::MAX_DOC_BYTES;
    let bytes = match file {
        None | Some("-") => nofollow::read_capped(std::io::stdin().lock(), limit, "stdin").ctx(|| "reading stdin")?,
        Some(f) => nofollow::read_input(std::path::Path::new(f), limit).ctx(|| format!("reading {f}"))?,
    };
    let engine = guard::Engine::core()?;
    let text = guard::normalise::decode_lossy(&bytes);
    let (clean, changes) = guard::sanitize::sanitize(engine, &text);
    out.raw(&clean)?;
    match report {
        Some(p) => {
            let lines: Vec<String> = changes.iter().filter_map(|c| serde_json::to_string(c).ok()).collect();
            let body = if lines.is_empty() { String::new() } else { lines.join("\n") + "\n" };
            std::fs::write(p, body).ctx(|| format!("writing {}", p.display()))?;
        }
        None => changes
            .iter()
            .for_each(|c| eprintln!("kb-guard: sanitize: line {}: {} {:?} -> {:?}", c.line, c.rule, c.before, c.after)),
    }
    out.finish()
}
