//! kb-append: the library's only writer (seed 000 `library write`).

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use kb::error::{run_main, Context, Error, Exit};
use kb::library::write::{self, Mode, Options};
use kb::maintain::compact;
use kb::out::jsonl::{self, Out};
use kb::{sync, Library};
use lexopt::prelude::*;
use serde_json::json;

const USAGE: &str = "\
kb-append: write to the library safely (lock, atomic write, changelog,
indexes, relations, git commit)

Usage:
  kb-append init [--root DIR]
  kb-append write PATH [--content S | --content-file F] [--notebook NB] [--append]
                       [--no-commit] [--allow-risky REASON]
  kb-append batch [--no-commit]          JSONL requests on stdin
  kb-append event referenced|replan|accept PATH --notebook NB
  kb-append compact [--older-than 90d] [--no-commit]
  kb-append skill create NAME [--stage candidates|drafts|active] [--content S | --content-file F]
  kb-append skill edit NAME [--content S | --content-file F]
  kb-append skill patch NAME --old-string S --new-string S [--file-path P] [--replace-all]
  kb-append skill delete NAME
  kb-append skill write-file NAME --file-path P [--content S | --content-file F]
  kb-append skill remove-file NAME --file-path P
  kb-append skill promote NAME --to drafts|active
  kb-append skill list [--format jsonl|table]
  kb-append skill nudge [--calls N] [--interval N] [--notebook NB]
  kb-append sync [--remote NAME] [--branch B] [--no-push]
  kb-append resolve PATH --keep ours|theirs|FILE [--no-commit]
  kb-append merge-log BASE OURS THEIRS       git merge driver for logs
  kb-append merge-derived BASE OURS THEIRS PATH   git merge driver, derived files

write reads the content from stdin when neither --content nor
--content-file is given. batch reads one request per line:
  {\"path\": \".memory/.references/jwt-auth-v1.md\", \"content\": \"...\",
   \"mode\": \"overwrite\"|\"append\", \"notebook\": \"nb-42\"}
and prints one write record (path, action, bytes, sha256, ts) per request;
bad requests become error records and the rest are still written (exit 2).

Options:
  --root DIR            the library (default: KB_ROOT, else the nearest .library)
  --content S           content to write
  --content-file F      read the content from file F
  --notebook NB         the notebook (agent session) writing
  --append              append instead of overwriting
  --no-commit           do not git commit (for batching several writes)
  --allow-risky REASON  write content the guard flags, recording why
  --older-than DUR      compact: archive lines older than this [default: 90d]
  --remote NAME         sync: the remote [default: the branch's, else origin]
  --branch B            sync: the branch [default: the current branch]
  --no-push             sync: fetch and merge only
  --keep WHICH          resolve: ours, theirs, or a FILE with the content
  --max-bytes N         largest content accepted [default: 1048576]
  --timeout DUR         how long to wait for the library lock [default: 30s]
  --stage S             skill create: the stage a new skill starts in [default: candidates]
  --old-string S        skill patch: the text to replace (must occur once)
  --new-string S        skill patch: its replacement
  --replace-all         skill patch: replace every occurrence
  --file-path P         skill: a supporting file (references/, templates/, scripts/, assets/)
  --to S                skill promote: drafts or active
  --format F            skill list: jsonl or table [default: table on a terminal]
  --calls N             skill nudge: tool calls to count [default: 1]
  --interval N          skill nudge: calls between reviews [default: 10]
  -h, --help            show this help
  -V, --version         show the version

Examples:
  echo '{\"path\":\"notes/setup.md\",\"content\":\"# Setup\\n\"}' | kb-append batch --no-commit
  kb-append sync --remote origin && kb-index status
";

#[derive(Default)]
struct Args {
    root: Option<PathBuf>,
    command: Option<String>,
    positional: Vec<String>,
    content: Option<String>,
    content_file: Option<PathBuf>,
    notebook: Option<String>,
    append: bool,
    no_commit: bool,
    allow_risky: Option<String>,
    older_than: Option<String>,
    max_bytes: Option<usize>,
    timeout: Option<String>,
    skill: kb::skills::cli::Flags,
    remote: Option<String>,
    branch: Option<String>,
    no_push: bool,
    keep: Option<String>,
}

fn parse_args() -> Result<Args, Error> {
    let mut p = lexopt::Parser::from_env();
    let mut a = Args::default();
    while let Some(arg) = p.next()? {
        match arg {
            Short('h') | Long("help") => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            Short('V') | Long("version") => {
                println!("kb-append {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            Long("root") => a.root = Some(PathBuf::from(p.value()?)),
            Long("content") => a.content = Some(p.value()?.string()?),
            Long("content-file") => a.content_file = Some(PathBuf::from(p.value()?)),
            Long("notebook") => a.notebook = Some(p.value()?.string()?),
            Long("append") => a.append = true,
            Long("no-commit") => a.no_commit = true,
            Long("allow-risky") => a.allow_risky = Some(p.value()?.string()?),
            Long("older-than") => a.older_than = Some(p.value()?.string()?),
            Long("max-bytes") => a.max_bytes = Some(p.value()?.parse()?),
            Long("timeout") => a.timeout = Some(p.value()?.string()?),
            Long(
                f @ ("stage" | "old-string" | "new-string" | "file-path" | "to" | "format" | "calls" | "interval"),
            ) => {
                let f = f.to_string();
                a.skill.set(&f, p.value()?.string()?)?
            }
            Long("replace-all") => a.skill.replace_all = true,
            Long("remote") => a.remote = Some(p.value()?.string()?),
            Long("branch") => a.branch = Some(p.value()?.string()?),
            Long("no-push") => a.no_push = true,
            Long("keep") => a.keep = Some(p.value()?.string()?),
            Value(v) if a.command.is_none() => a.command = Some(v.string()?),
            Value(v) => a.positional.push(v.string()?),
            _ => return Err(arg.unexpected().into()),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    run_main("kb-append", || {
        let a = parse_args()?;
        let command = a
            .command
            .clone()
            .ok_or_else(|| Error::usage("missing command (init, write, batch, event, compact, sync or resolve)"))?;
        let mut opts = Options { commit: !a.no_commit, ..Options::default() };
        if let Some(t) = &a.timeout {
            opts.lock.timeout = kb::clock::parse_duration(t)?;
        }
        if let Some(m) = a.max_bytes {
            opts.max_bytes = m;
        }
        let mut out = Out::stdout("kb-append");
        match command.as_str() {
            "init" => {
                let lib = Library::for_init(a.root.as_deref())?;
                out.record(&json!({"record": "init", "dir": lib.dir, "created": lib.init()?.created}))?;
            }
            "write" => {
                let lib = Library::resolve(a.root.as_deref())?;
                let [path] = a.positional.as_slice() else { return Err(Error::usage("write takes exactly one PATH")) };
                let content = match (&a.content, &a.content_file) {
                    (Some(_), Some(_)) => return Err(Error::usage("give --content or --content-file, not both")),
                    (Some(c), None) => c.clone(),
                    (None, Some(f)) => {
                        let bytes = std::fs::read(f).ctx(|| format!("reading {}", f.display()))?;
                        write::content_from_bytes(bytes, &f.display().to_string(), opts.max_bytes)?
                    }
                    (None, None) => {
                        let mut bytes = Vec::new();
                        std::io::stdin().read_to_end(&mut bytes).ctx(|| "reading stdin")?;
                        write::content_from_bytes(bytes, "stdin", opts.max_bytes)?
                    }
                };
                let mode = if a.append { Mode::Append } else { Mode::Overwrite };
                let req = write::request(
                    &lib,
                    path,
                    content,
                    mode,
                    a.notebook.clone(),
                    a.allow_risky.clone(),
                    opts.max_bytes,
                );
                report(&mut out, write::batch(&lib, vec![(0, req)], &opts)?, false)?;
            }
            "batch" => {
                let lib = Library::resolve(a.root.as_deref())?;
                let stdin = std::io::stdin().lock();
                let mut requests = Vec::new();
                for (line, obj) in jsonl::read_objects(stdin) {
                    let req = match obj {
                        Ok(obj) => write::parse_request(&lib, &obj, opts.max_bytes),
                        Err(e) => Err(e.message),
                    };
                    requests.push((line, req));
                }
                report(&mut out, write::batch(&lib, requests, &opts)?, true)?;
            }
            "event" => {
                let lib = Library::resolve(a.root.as_deref())?;
                let [kind, path] = a.positional.as_slice() else {
                    return Err(Error::usage("event takes KIND PATH (referenced, replan or accept)"));
                };
                let nb = a.notebook.as_deref().ok_or_else(|| Error::usage("event needs --notebook NB"))?;
                let ev = write::event(&lib, kind, path, nb, &opts)?;
                let mut rec = serde_json::Map::new();
                rec.insert("record".into(), json!("event"));
                if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(&ev) {
                    rec.extend(fields);
                }
                out.record(&rec)?;
            }
            "compact" => {
                let lib = Library::resolve(a.root.as_deref())?;
                let days = match &a.older_than {
                    Some(d) => (kb::clock::parse_duration(d)?.as_secs() / 86_400) as i64,
                    None => 90,
                };
                out.record(&compact::compact(&lib, days, opts.commit, &opts.lock)?)?;
            }
            "skill" => {
                let lib = Library::resolve(a.root.as_deref())?;
                let content =
                    || write::content_from_args(a.content.as_deref(), a.content_file.as_deref(), opts.max_bytes);
                let s = kb::skills::Options { commit: opts.commit, lock: opts.lock.clone() };
                let recs = kb::skills::cli::run(&lib, &a.positional, &a.skill, a.notebook.as_deref(), content, &s)?;
                kb::skills::cli::print(&mut out, recs)?;
            }
            "sync" => {
                let lib = Library::resolve(a.root.as_deref())?;
                let o = sync::Options {
                    remote: a.remote,
                    branch: a.branch,
                    push: !a.no_push,
                    lock: opts.lock,
                    ..Default::default()
                };
                match sync::sync(&lib, &o) {
                    Ok(report) => out.record(&report)?,
                    Err(e) => out.error(&e.to_string(), json!({"command": "sync"}))?,
                }
            }
            "resolve" => {
                let lib = Library::resolve(a.root.as_deref())?;
                let [path] = a.positional.as_slice() else {
                    return Err(Error::usage("resolve takes exactly one PATH"));
                };
                let keep = a.keep.as_deref().ok_or_else(|| Error::usage("resolve needs --keep ours|theirs|FILE"))?;
                out.record(&sync::resolve::resolve(
                    &lib,
                    path,
                    &sync::resolve::Keep::parse(keep),
                    opts.commit,
                    &opts.lock,
                )?)?;
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
    })
}

/// Prints one record per request; rejected ones as error records with
/// their line (batch) or path (write).
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
