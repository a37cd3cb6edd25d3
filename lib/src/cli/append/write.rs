//! `kb-append write`, `batch` and `event`: documents and changelog events
//! through the one writer, and the records a batch result prints.

use serde_json::json;

use super::flags::Flags;
use crate::cli::args::Args;
use crate::error::{Error, Exit};
use crate::out::jsonl::{self, Out};
use crate::write::{self, Mode, Options};
use crate::Library;

/// `write PATH`: one document, content from `--content`, `--content-file` or stdin.
pub fn write(a: &Args, f: &Flags, lib: &Library, opts: &Options, out: &mut Out) -> Result<(), Error> {
    let [path] = a.positional.as_slice() else { return Err(Error::usage("write takes exactly one PATH")) };
    let content = content_arg(f, opts.max_bytes)?;
    if content.is_empty() && !f.allow_empty {
        return Err(Error::usage(format!(
            "refusing to write empty content to '{path}' (an empty stdin?); pass --allow-empty to mean it"
        )));
    }
    let mode = if f.append { Mode::Append } else { Mode::Overwrite };
    let notebook = f.notebook.clone();
    let req = write::request(lib, path, content, mode, notebook, f.allow_risky.clone(), opts.max_bytes);
    report(out, write::batch(lib, vec![(0, req)], opts)?, false)
}

/// `batch`: the JSONL requests on stdin under one lock and one commit.
pub fn batch(lib: &Library, opts: &Options, out: &mut Out) -> Result<(), Error> {
    let limit = jsonl::line_limit_for(opts.max_bytes);
    let lines = jsonl::read_objects_within(std::io::stdin().lock(), limit).collect();
    let requests = write::parse_requests(lib, lines, opts.max_bytes);
    report(out, write::batch(lib, requests, opts)?, true)
}

/// `event KIND PATH --notebook NB`: one changelog event.
pub fn event(a: &Args, f: &Flags, lib: &Library, opts: &Options, out: &mut Out) -> Result<(), Error> {
    let [kind, path] = a.positional.as_slice() else {
        return Err(Error::usage("event takes KIND PATH (referenced, replan or accept)"));
    };
    let nb = f.notebook.as_deref().ok_or_else(|| Error::usage("event needs --notebook NB"))?;
    let ev = write::event(lib, kind, path, nb, opts)?;
    let mut rec = serde_json::Map::new();
    rec.insert("record".into(), json!("event"));
    if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(&ev) {
        rec.extend(fields);
    }
    out.record(&rec)
}

/// The content of `write` and `promote-answer`: `--content`,
/// `--content-file` or stdin.
pub fn content_arg(f: &Flags, max_bytes: usize) -> Result<String, Error> {
    write::content_from_args(f.content.as_deref(), f.content_file.as_deref(), max_bytes)
}

/// Prints one record per request; rejected ones as error records with
/// their line (batch) or path (write).
pub fn report(out: &mut Out, result: write::BatchResult, batch: bool) -> Result<(), Error> {
    for c in &result.cleared {
        out.record(c)?;
    }
    if let Some(r) = &result.recovered {
        out.record(r)?;
    }
    for (line, outcome) in result.outcomes {
        match outcome {
            Ok(w) => out.record(&w)?,
            Err(msg) if batch => out.line_error(line, &msg, None)?,
            Err(msg) => out.error(&msg, json!({}))?,
        }
    }
    for e in &result.guard_errors {
        out.error(e, json!({}))?;
    }
    if let Some(e) = result.commit_error {
        out.error(&format!("the writes landed but the git commit failed: {e}"), json!({}))?;
    }
    out.raise(Exit::Success);
    Ok(())
}
