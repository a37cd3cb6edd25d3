//! One skill action from its words and arguments, and its records: the
//! one dispatch of the skill actions, shared by kb-append's `skill`
//! commands (whose typed flags fill [`Flags`]) and kb-mcp's skill tools
//! (whose JSON arguments do), so both run the same checks in the same
//! order.

use serde_json::{json, Value};

use super::manage::{self, Op, Outcome, Request};
use super::{list, nudge, promote, Stage};
use crate::error::{Error, Result};
use crate::library::Library;
use crate::out::jsonl::Format;

/// An action's arguments: kb-append's flags or kb-mcp's tool arguments.
#[derive(Debug, Default, Clone)]
pub struct Flags {
    /// `--stage`.
    pub stage: Option<String>,
    /// `--old-string`.
    pub old_string: Option<String>,
    /// `--new-string`.
    pub new_string: Option<String>,
    /// `--file-path`.
    pub file_path: Option<String>,
    /// `--to`.
    pub to: Option<String>,
    /// `--format`.
    pub format: Option<Format>,
    /// `--calls`.
    pub calls: Option<u64>,
    /// `--interval`.
    pub interval: Option<u64>,
    /// `--replace-all`.
    pub replace_all: bool,
}

pub use crate::out::jsonl::{print, Rec};

fn to_value(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Runs `skill <action> [NAME]`; `content` reads --content, --content-file
/// or stdin when the action needs content (text, but for a supporting file,
/// which may be an image or other asset).
pub fn run(
    lib: &Library,
    words: &[String],
    flags: &Flags,
    notebook: Option<&str>,
    content: impl Fn() -> Result<Vec<u8>>,
    opts: &manage::Options,
) -> Result<Vec<Rec>> {
    let (action, rest) = words.split_first().ok_or_else(|| {
        Error::usage(
            "skill needs an action: create, edit, patch, delete, write-file, remove-file, promote, list, nudge, review",
        )
    })?;
    match (action.as_str(), rest) {
        ("list", []) => {
            let (engine, errors) = super::engine(lib)?;
            let skills = list::list(lib, &engine)?;
            let mut out: Vec<Rec> = errors.into_iter().map(|e| Rec::Error(e, json!({}))).collect();
            match flags.format.unwrap_or_else(Format::default_for_stdout) {
                Format::Table => out.push(Rec::Table(list::table(&skills))),
                Format::Jsonl => out.extend(skills.iter().map(|s| Rec::Record(to_value(s)))),
            }
            Ok(out)
        }
        ("nudge", []) => {
            let n = nudge::nudge(
                lib,
                notebook,
                flags.calls.unwrap_or(1),
                flags.interval.unwrap_or(nudge::DEFAULT_INTERVAL),
            )?;
            Ok(vec![Rec::Record(to_value(&n))])
        }
        ("review", argv) if !argv.is_empty() => {
            let r = super::review::review(lib, &opts.permissions, notebook, argv)?;
            let failed = r.exit != Some(0);
            let mut out = vec![Rec::Record(to_value(&r))];
            if failed {
                out.push(Rec::Error(format!("the reviewer '{}' failed (exit {:?})", argv[0], r.exit), json!({})));
            }
            Ok(out)
        }
        ("promote", [name]) => {
            let to = flags.to.as_deref().ok_or_else(|| Error::usage("skill promote needs --to drafts|active"))?;
            match promote::promote(lib, name, Stage::parse(to)?, notebook, opts) {
                Ok((w, errors, commit_error)) => Ok(finish(to_value(&w), errors, commit_error)),
                Err(e) => refused(e, name, "promote"),
            }
        }
        (op, [name]) => {
            // Before the content is read: a refused reviewer learns it at once.
            if let Err(r) = opts.permissions.check(op, name) {
                return Ok(vec![Rec::Error(r.message, json!({"name": name, "action": op, "rule": r.rule}))]);
            }
            let need = |v: &Option<String>, flag: &str| {
                v.clone().ok_or_else(|| Error::usage(format!("skill {op} needs --{flag}")))
            };
            let text = || {
                String::from_utf8(content()?).map_err(|_| {
                    Error::msg(format!(
                        "skill {op}: SKILL.md must be UTF-8 text (only a supporting file may be binary)"
                    ))
                })
            };
            let op = match op {
                "create" => {
                    let stage = flags.stage.as_deref().map(Stage::parse).transpose()?.unwrap_or(Stage::Candidates);
                    Op::Create { content: text()?, stage }
                }
                "edit" => Op::Edit { content: text()? },
                "patch" => Op::Patch {
                    old: need(&flags.old_string, "old-string")?,
                    new: need(&flags.new_string, "new-string")?,
                    file: flags.file_path.clone(),
                    replace_all: flags.replace_all,
                },
                "delete" => Op::Delete,
                "write-file" => Op::WriteFile { file: need(&flags.file_path, "file-path")?, content: content()? },
                "remove-file" => Op::RemoveFile { file: need(&flags.file_path, "file-path")? },
                other => return Err(Error::usage(format!("unknown skill action '{other}'"))),
            };
            let req = Request { name: name.clone(), op, notebook: notebook.map(str::to_string) };
            let outcome = match manage::run(lib, &req, opts) {
                Ok(o) => o,
                Err(e) => return refused(e, name, req.op.action()),
            };
            match outcome {
                Outcome::Done { written, guard_errors, commit_error } => {
                    Ok(finish(to_value(&written), guard_errors, commit_error))
                }
                Outcome::RolledBack { message, findings, verdict } => {
                    let mut out: Vec<Rec> = findings.iter().map(|f| Rec::Record(to_value(f))).collect();
                    out.push(Rec::Record(to_value(&verdict)));
                    out.push(Rec::Error(message, json!({"name": name, "verdict": "dangerous", "rolled_back": true})));
                    Ok(out)
                }
            }
        }
        (a, _) => Err(Error::usage(format!("skill {a}: wrong number of arguments (see --help)"))),
    }
}

/// An operation's failure as an error record naming the skill (exit 2);
/// usage errors stay errors, printed with the help hint.
fn refused(e: Error, name: &str, action: &str) -> Result<Vec<Rec>> {
    match e {
        Error::Usage(_) => Err(e),
        e => Ok(vec![Rec::Error(e.to_string(), json!({"name": name, "action": action}))]),
    }
}

fn finish(record: Value, guard_errors: Vec<String>, commit_error: Option<String>) -> Vec<Rec> {
    let mut out = vec![Rec::Record(record)];
    out.extend(guard_errors.into_iter().map(|e| Rec::Error(e, json!({}))));
    if let Some(e) = commit_error {
        out.push(Rec::Error(format!("the skill was written but the git commit failed: {e}"), json!({})));
    }
    out
}
