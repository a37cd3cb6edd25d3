//! `kb-append`: the library's only writer (seed 000 `library write`).

use std::io::Read;

use serde_json::json;

use super::args::{Args, Cmd, Spec};
use crate::error::{Context, Error, Exit};
use crate::maintain::compact;
use crate::out::jsonl::{self, Out};
use crate::score::promote;
use crate::write::{self, Mode, Options};
use crate::{sync, Library};

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("append.txt");

// The flag sets several subcommands share.
const WRITE: &[&str] = &[
    "root",
    "content",
    "content-file",
    "notebook",
    "append",
    "no-commit",
    "allow-risky",
    "allow-empty",
    "max-bytes",
    "timeout",
];
const CONTENT: &[&str] =
    &["root", "content", "content-file", "notebook", "no-commit", "max-bytes", "timeout", "allow-edit", "no-create"];
const CREATE: &[&str] = &[
    "root",
    "stage",
    "content",
    "content-file",
    "notebook",
    "no-commit",
    "max-bytes",
    "timeout",
    "allow-edit",
    "no-create",
];
const FILE: &[&str] =
    &["root", "file-path", "content", "content-file", "notebook", "no-commit", "max-bytes", "timeout"];
const PATCH: &[&str] = &[
    "root",
    "old-string",
    "new-string",
    "file-path",
    "replace-all",
    "notebook",
    "no-commit",
    "timeout",
    "allow-edit",
    "no-create",
];
const REVIEW: &[&str] = &["root", "allow-edit", "no-create", "notebook"];
const PROMOTE_ANSWER: &[&str] = &[
    "root",
    "cites",
    "question",
    "topic",
    "source",
    "no-registries",
    "content",
    "content-file",
    "notebook",
    "no-commit",
    "allow-risky",
    "max-bytes",
    "timeout",
];
const LOCKED: &[&str] = &["root", "notebook", "no-commit", "timeout"];
const BATCH: &[&str] = &["root", "no-commit", "max-bytes", "timeout"];
const REMOVE: &[&str] = &["root", "file-path", "notebook", "no-commit", "timeout"];
const PROMOTE: &[&str] = &["root", "to", "notebook", "no-commit", "timeout"];
const NUDGE: &[&str] = &["root", "calls", "interval", "notebook"];
const SYNC: &[&str] = &["root", "remote", "branch", "no-push", "timeout"];

/// kb-append's subcommands and the flags each uses.
pub static SPEC: Spec = Spec::new(
    "kb-append",
    USAGE,
    &[
        Cmd::new("", "", &["justfile"], "print the justfile's path"),
        Cmd::new("init", "", &["root", "no-commit"], "create the library layout"),
        Cmd::new("write", "PATH", WRITE, "write one document (content from --content, --content-file or stdin)"),
        Cmd::new("batch", "", BATCH, "write the JSONL requests on stdin under one lock and one commit"),
        Cmd::new("event", "referenced|replan|accept PATH", LOCKED, "log a changelog event for a document"),
        Cmd::new("compact", "", &["root", "older-than", "no-commit", "timeout"], "archive old changelog lines"),
        Cmd::new(
            "promote-answer",
            "PATH",
            PROMOTE_ANSWER,
            "file an answer into the local library with its provenance (seed 001 --promote-to-library)",
        ),
        Cmd::new("skill create", "NAME", CREATE, "create a skill"),
        Cmd::new("skill edit", "NAME", CONTENT, "replace a skill's SKILL.md"),
        Cmd::new("skill patch", "NAME", PATCH, "replace text in a skill file"),
        Cmd::new("skill delete", "NAME", LOCKED, "delete a skill"),
        Cmd::new("skill write-file", "NAME", FILE, "write a supporting file"),
        Cmd::new("skill remove-file", "NAME", REMOVE, "remove a supporting file"),
        Cmd::new("skill promote", "NAME", PROMOTE, "move a skill to drafts or active"),
        Cmd::new("skill list", "", &["root", "format"], "the skills with stage, trust tier and verdict"),
        Cmd::new("skill nudge", "", NUDGE, "count tool calls; review_due when a skill review is due"),
        Cmd::new(
            "skill review",
            "-- CMD [ARG...]",
            REVIEW,
            "run a skill reviewer under allowedEditSkills/allowCreateNew; report the skills it created",
        ),
        Cmd::new("sync", "", SYNC, "commit, fetch, merge and push with the git remote"),
        Cmd::new("resolve", "PATH", &["root", "keep", "no-commit", "timeout"], "end a kept conflict"),
        Cmd::new("merge-log", "BASE OURS THEIRS", &[], "git merge driver for logs"),
        Cmd::new("merge-derived", "BASE OURS THEIRS PATH", &[], "git merge driver for derived files"),
        Cmd::new("completions", "bash", &[], "shell completions for the nine binaries"),
        Cmd::new("man", "BIN", &[], "the man page (roff) of one of the nine binaries"),
        Cmd::new("skill", "[ACTION NAME...]", &[], "manage skills"),
    ],
);

/// Runs the parsed command line.
pub fn run(a: Args) -> Result<Exit, Error> {
    let root = a.root();
    let mut opts = Options { commit: !a.on("no-commit"), lock: a.lock_options()?, ..Options::default() };
    if let Some(m) = a.num("max-bytes")? {
        opts.max_bytes = m;
    }
    let mut out = Out::stdout("kb-append");
    match a.cmd {
            "" if a.on("justfile") => return print_justfile(),
            "" | "skill" => {
                return Err(Error::usage(match a.positional.first() {
                    Some(w) => format!("unknown skill action '{w}' (create, edit, patch, delete, write-file, remove-file, promote, list, nudge, review)"),
                    None if a.cmd == "skill" => "skill needs an action: create, edit, patch, delete, write-file, remove-file, promote, list, nudge, review".into(),
                    None => "missing command (init, write, batch, event, compact, skill, sync, resolve; see --help)".into(),
                }))
            }
            "man" => {
                let spec = super::SPECS
                    .iter()
                    .find(|s| s.bin == a.positional[0])
                    .ok_or_else(|| Error::usage(format!("man: no binary '{}' (kb-append, kb-index, ...)", a.positional[0])))?;
                out.text(&super::args::man_page(spec))?;
            }
            "completions" => {
                if a.positional[0] != "bash" {
                    return Err(Error::usage(format!("completions: only bash is generated, not '{}'", a.positional[0])));
                }
                out.text(&super::args::bash_completion(&super::SPECS))?;
            }
            "init" => {
                let lib = Library::for_init(root)?;
                let created = crate::sync::init(&lib)?.created;
                // The files init writes are part of the library: commit
                // them, so a fresh library starts with a clean tree.
                let files: Vec<String> = created.iter().filter(|p| lib.path(p).is_file()).cloned().collect();
                let committed = opts.commit && crate::library::git::commit(&lib, &files, "task-ai(library):init")?;
                out.record(&json!({"record": "init", "dir": lib.dir, "created": created, "committed": committed}))?;
            }
            "write" => {
                let lib = Library::resolve(root)?;
                let [path] = a.positional.as_slice() else { return Err(Error::usage("write takes exactly one PATH")) };
                let content = content_arg(&a, opts.max_bytes)?;
                if content.is_empty() && !a.on("allow-empty") {
                    return Err(Error::usage(format!(
                        "refusing to write empty content to '{path}' (an empty stdin?); pass --allow-empty to mean it"
                    )));
                }
                let mode = if a.on("append") { Mode::Append } else { Mode::Overwrite };
                let req = write::request(
                    &lib,
                    path,
                    content,
                    mode,
                    a.get("notebook").map(str::to_string),
                    a.get("allow-risky").map(str::to_string),
                    opts.max_bytes,
                );
                report(&mut out, write::batch(&lib, vec![(0, req)], &opts)?, false)?;
            }
            "promote-answer" => {
                let lib = Library::resolve(root)?;
                let [path] = a.positional.as_slice() else {
                    return Err(Error::usage("promote-answer takes exactly one PATH"));
                };
                let mut spec = crate::score::sources::Spec {
                    root: Some(lib.dir.clone()),
                    registries: !a.on("no-registries"),
                    home: std::env::var_os("HOME").map(std::path::PathBuf::from),
                    ..Default::default()
                };
                for s in a.all("source") {
                    spec.cli.push(crate::score::sources::parse_source_flag(&s)?);
                }
                let resolved = crate::score::sources::resolve(&spec)?;
                for e in &resolved.errors {
                    eprintln!("kb-append: warning: source '{}' skipped: {}: {}", e.source, e.path, e.message);
                }
                promote::check_target(&resolved.sources, path)?;
                let cites = promote::check_cites(&resolved.sources, &a.all("cites"))?;
                let req = write::request(&lib, path, String::new(), Mode::Overwrite, None, None, opts.max_bytes)
                    .map_err(Error::msg)?;
                if promote::exists(&lib, &req.path) {
                    return Err(Error::msg(format!(
                        "refused: '{}' exists; a promoted answer is a new page (choose another PATH)",
                        req.path
                    )));
                }
                let answer = content_arg(&a, opts.max_bytes)?;
                let now = crate::clock::format(crate::clock::now()?);
                let text = promote::page(&req.path, &answer, &cites, a.get("question"), a.get("topic"), &now)?;
                let req = write::request(
                    &lib,
                    &req.path,
                    text,
                    Mode::Overwrite,
                    a.get("notebook").map(str::to_string),
                    a.get("allow-risky").map(str::to_string),
                    opts.max_bytes,
                )
                .map_err(Error::msg)?;
                let result = write::batch(&lib, vec![(0, Ok(req.clone()))], &opts)?;
                let landed = result.outcomes.iter().any(|(_, o)| o.is_ok());
                report(&mut out, result, false)?;
                if landed {
                    out.record(&promote::Promoted { path: req.path, cites })?;
                }
            }
            "batch" => {
                let lib = Library::resolve(root)?;
                let stdin = std::io::stdin().lock();
                let mut requests = Vec::new();
                for (line, obj) in jsonl::read_objects(stdin) {
                    let req = match obj {
                        // An upstream refusal (kb-guard filter's error
                        // record) stays a refusal, with its own message.
                        Ok(obj) if obj.get("record").and_then(|r| r.as_str()) == Some("error") => {
                            let msg = obj.get("message").and_then(|m| m.as_str()).unwrap_or("refused upstream");
                            Err(format!("refused: {msg}"))
                        }
                        Ok(obj) => write::parse_request(&lib, &obj, opts.max_bytes),
                        Err(e) => Err(e.message),
                    };
                    requests.push((line, req));
                }
                report(&mut out, write::batch(&lib, requests, &opts)?, true)?;
            }
            "event" => {
                let lib = Library::resolve(root)?;
                let [kind, path] = a.positional.as_slice() else {
                    return Err(Error::usage("event takes KIND PATH (referenced, replan or accept)"));
                };
                let nb = a.get("notebook").ok_or_else(|| Error::usage("event needs --notebook NB"))?;
                let ev = write::event(&lib, kind, path, nb, &opts)?;
                let mut rec = serde_json::Map::new();
                rec.insert("record".into(), json!("event"));
                if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(&ev) {
                    rec.extend(fields);
                }
                out.record(&rec)?;
            }
            "compact" => {
                let lib = Library::resolve(root)?;
                let days = match a.get("older-than") {
                    Some(d) => (crate::clock::parse_duration(d)?.as_secs() / 86_400) as i64,
                    None => 90,
                };
                out.record(&compact::compact(&lib, days, opts.commit, &opts.lock)?)?;
            }
            c if c.starts_with("skill ") => {
                let lib = Library::resolve(root)?;
                let file = a.get("content-file").map(std::path::Path::new);
                let content = || write::bytes_from_args(a.get("content"), file, opts.max_bytes).map(|(b, _)| b);
                // The environment a `skill review` set, narrowed by this call's own flags.
                let permissions = crate::skills::permissions::Permissions::from_env()
                    .narrow(&crate::skills::permissions::Permissions::new(a.all("allow-edit"), !a.on("no-create")));
                let s = crate::skills::Options { commit: opts.commit, lock: opts.lock.clone(), permissions };
                let mut flags = crate::skills::cli::Flags::default();
                for f in ["stage", "old-string", "new-string", "file-path", "to", "format", "calls", "interval"] {
                    if let Some(v) = a.get(f) {
                        flags.set(f, v.to_string())?;
                    }
                }
                flags.replace_all = a.on("replace-all");
                let action = a.cmd.trim_start_matches("skill ").to_string();
                let words: Vec<String> = std::iter::once(action).chain(a.positional.iter().cloned()).collect();
                let recs = crate::skills::cli::run(&lib, &words, &flags, a.get("notebook"), content, &s)?;
                crate::skills::cli::print(&mut out, recs)?;
            }
            "sync" => {
                let lib = Library::resolve(root)?;
                let o = sync::Options {
                    remote: a.get("remote").map(str::to_string),
                    branch: a.get("branch").map(str::to_string),
                    push: !a.on("no-push"),
                    lock: opts.lock,
                    ..Default::default()
                };
                match sync::sync(&lib, &o) {
                    // A peer's commit was refused (issue 21): reported, exit 2.
                    Ok(report) if !report.rejected.is_empty() => {
                        for r in &report.rejected {
                            eprintln!("kb-append: sync rejected {}: {}", r.path, r.reason);
                        }
                        out.record(&report)?;
                        out.raise(Exit::Failure);
                    }
                    Ok(report) => out.record(&report)?,
                    Err(e) => out.error(&e.to_string(), json!({"command": "sync"}))?,
                }
            }
            "resolve" => {
                let lib = Library::resolve(root)?;
                let [path] = a.positional.as_slice() else {
                    return Err(Error::usage("resolve takes exactly one PATH"));
                };
                let keep = a.get("keep").ok_or_else(|| Error::usage("resolve needs --keep ours|theirs|FILE"))?;
                match sync::resolve::resolve(&lib, path, &sync::resolve::Keep::parse(keep), opts.commit, &opts.lock) {
                    Ok(r) => out.record(&r)?,
                    Err(e) => out.error(&e.to_string(), json!({"command": "resolve"}))?,
                }
            }
            "merge-log" => {
                let [base, ours, theirs] = a.positional.as_slice() else {
                    return Err(Error::usage("merge-log takes BASE OURS THEIRS"));
                };
                sync::drivers::merge_log_files(base, ours, theirs)?;
            }
            "merge-derived" => {
                let [_, _, _, path] = a.positional.as_slice() else {
                    return Err(Error::usage("merge-derived takes BASE OURS THEIRS PATH"));
                };
                sync::drivers::merge_derived(path)?;
            }
            other => return Err(Error::usage(format!("unknown command '{other}'"))),
        }
    out.finish()
}

/// `kb-append --justfile`: the justfile of the checkout this binary was
/// built from, for a project's `import` or `mod` line.
fn print_justfile() -> Result<Exit, Error> {
    // This crate sits in `lib/` of the checkout; the justfile at its root.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../justfile");
    let path = path.canonicalize().unwrap_or(path);
    if !path.is_file() {
        return Err(Error::msg(format!(
            "{} is gone (the kb-tools checkout moved?); reinstall with `just install` from the checkout",
            path.display()
        )));
    }
    let mut out = Out::stdout("kb-append");
    out.text(&format!("{}\n", path.display()))?;
    out.finish()
}

/// Prints one record per request; rejected ones as error records with
/// their line (batch) or path (write).
/// The content of `write` and `promote-answer`: `--content`,
/// `--content-file` or stdin.
fn content_arg(a: &Args, max_bytes: usize) -> Result<String, Error> {
    match (a.get("content"), a.get("content-file").map(std::path::PathBuf::from)) {
        (Some(_), Some(_)) => Err(Error::usage("give --content or --content-file, not both")),
        (Some(c), None) => Ok(c.to_string()),
        (None, Some(f)) => {
            // A FIFO or device is an error, never a hang (issue 21).
            let bytes =
                crate::fs::nofollow::read_input(&f, max_bytes as u64).ctx(|| format!("reading {}", f.display()))?;
            write::content_from_bytes(bytes, &f.display().to_string(), max_bytes)
        }
        (None, None) => {
            let mut bytes = Vec::new();
            std::io::stdin().read_to_end(&mut bytes).ctx(|| "reading stdin")?;
            write::content_from_bytes(bytes, "stdin", max_bytes)
        }
    }
}

fn report(out: &mut Out, result: write::BatchResult, batch: bool) -> Result<(), Error> {
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
