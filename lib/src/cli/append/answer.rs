//! `kb-append promote-answer`: file an answer into the local library with
//! its provenance (seed 001 `--promote-to-library`).

use super::flags::Flags;
use crate::cli::args::Args;
use crate::error::Error;
use crate::out::jsonl::Out;
use crate::score::{answer, sources};
use crate::write::{self, Mode, Options};
use crate::Library;

/// Checks the target and the cited files, builds the page and writes it.
pub fn run(a: &Args, f: &Flags, lib: &Library, opts: &Options, out: &mut Out) -> Result<(), Error> {
    let [path] = a.positional.as_slice() else {
        return Err(Error::usage("promote-answer takes exactly one PATH"));
    };
    let mut spec = sources::Spec {
        root: Some(lib.dir.clone()),
        registries: !f.no_registries,
        home: std::env::var_os("HOME").map(std::path::PathBuf::from),
        ..Default::default()
    };
    for s in &f.source {
        spec.cli.push(sources::parse_source_flag(s)?);
    }
    let resolved = sources::resolve(&spec)?;
    for e in &resolved.errors {
        crate::out::warn("kb-append", &format!("warning: source '{}' skipped: {}: {}", e.source, e.path, e.message));
    }
    answer::check_target(&resolved.sources, path)?;
    let cites = answer::check_cites(&resolved.sources, &f.cites)?;
    let req =
        write::request(lib, path, String::new(), Mode::Overwrite, None, None, opts.max_bytes).map_err(Error::msg)?;
    if answer::exists(lib, &req.path) {
        return Err(Error::msg(format!(
            "refused: '{}' exists; a promoted answer is a new page (choose another PATH)",
            req.path
        )));
    }
    let answer = super::write::content_arg(f, opts.max_bytes)?;
    let now = crate::clock::format(crate::clock::now()?);
    let text = answer::page(&req.path, &answer, &cites, f.question.as_deref(), f.topic.as_deref(), &now)?;
    let notebook = f.notebook.clone();
    let risky = f.allow_risky.clone();
    let req =
        write::request(lib, &req.path, text, Mode::Overwrite, notebook, risky, opts.max_bytes).map_err(Error::msg)?;
    let result = write::batch(lib, vec![(0, Ok(req.clone()))], opts)?;
    let landed = result.outcomes.iter().any(|(_, o)| o.is_ok());
    super::write::report(out, result, false)?;
    if landed {
        out.record(&answer::Promoted { path: req.path, cites })?;
    }
    Ok(())
}
