//! Where a served document came from, and what the guard says of it
//!, so a client can tell the user's own notes from what a peer
//! brought in. Derived from this clone's own git history, never from
//! anything a peer can write (front matter, commit messages, authors):
//!
//! - `local`: the document has uncommitted changes, or the commit that
//!   last changed it was made here (`git commit` in this clone's HEAD
//!   reflog), or that commit is on no fetched ref (the clone never
//!   received it from anywhere);
//! - `peer`: the commit that last changed it reached this clone by a
//!   fetch (a fetched ref holds it) and was not committed here: a merge
//!   taking the peer's side, a fast-forward, or a merge that combined both
//!   sides (it holds peer text).
//!
//! A reflog entry expires (90 days by default), so an old commit of this
//! clone's that was also pushed reads `peer`: the conservative answer.

use serde_json::{json, Value};

use crate::library::git::{git, is_repo};
use crate::library::Library;

/// `local` or `peer`, with the commit that last changed the document.
pub fn origin(lib: &Library, rel: &str) -> Value {
    if !is_repo(lib) {
        return json!({"origin": "local", "commit": null});
    }
    let run = |args: &[&str]| -> Option<String> {
        let out = git(&lib.dir).args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let changed_here = run(&["status", "--porcelain", "--", rel]).is_some_and(|s| !s.trim().is_empty());
    let last = run(&["log", "-1", "--format=%H", "--", rel]).map(|s| s.trim().to_string()).unwrap_or_default();
    if changed_here || last.is_empty() {
        return json!({"origin": "local", "commit": null});
    }
    let committed_here = run(&["reflog", "show", "--format=%H %gs", "HEAD"]).is_some_and(|log| {
        log.lines().any(|l| {
            l.strip_prefix(last.as_str()).and_then(|s| s.strip_prefix(' ')).is_some_and(|subject| {
                ["commit: ", "commit (initial): ", "commit (amend): "].iter().any(|p| subject.starts_with(p))
            })
        })
    });
    let fetched = run(&["for-each-ref", "--contains", &last, "--format=%(refname)"])
        .is_some_and(|refs| refs.lines().any(|r| !r.starts_with("refs/heads/") && !r.starts_with("refs/tags/")));
    let origin = if committed_here || !fetched { "local" } else { "peer" };
    json!({"origin": origin, "commit": last})
}

/// The guard's verdict on a document's text (core plus the library's
/// evolved rules), with its finding count; `unknown` when the rules
/// cannot be loaded.
pub fn verdict(lib: &Library, rel: &str, text: &str) -> Value {
    match crate::guard::shared_library_engine(lib) {
        Ok((engine, _)) => {
            let r = crate::guard::scan::scan_text_with(&engine, rel, text);
            let counted = r.findings.iter().filter(|f| f.counts()).count();
            json!({"verdict": r.verdict.to_string(), "findings": counted})
        }
        Err(e) => json!({"verdict": "unknown", "error": e.to_string()}),
    }
}

/// A served document's provenance and verdict, read from its library:
/// `local`/`peer` for the library served, the source's registered name
/// for an external one (`commit` null: its history is not this clone's).
pub fn of_document(lib: &Library, source: &str, external: bool, rel: &str) -> (Value, Value) {
    let origin = if external { json!({"origin": source, "commit": null}) } else { origin(lib, rel) };
    let text = crate::fs::nofollow::read(&lib.path(rel), crate::library::scan::MAX_DOC_BYTES)
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let guard = match text {
        Ok(t) => verdict(lib, rel, &t),
        Err(e) => json!({"verdict": "unknown", "error": e.to_string()}),
    };
    (origin, guard)
}
