//! Seed 004's `last_word.plan(...)`, apply and status as tools, on the
//! same files `kb-lastword` uses (~/.config/agents/last-word/, the
//! project's .agents/), under the same lock.

use serde_json::{json, Map, Value};

use super::{run, Called, Ctx, Reply, Tool};
use crate::error::Exit;
use crate::lastword::{apply, home::Home, plan, report::Reporter, status};
use crate::mcp::args::Args;
use crate::mcp::rpc::RpcError;

pub(super) fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "last_word_plan",
            title: "Queue knowledge deltas",
            description: "Seed 004 last_word.plan(): queue heading-keyed updates to AGENTS.md, SOUL.md or \
                USER.md for the end of the session. Each entry: path (e.g. ~/.config/agents/USER.md) or url, \
                heading, optional level, operation (update by default; no-op, clear, delete) and content. Answers one \
                `delta` record per entry; invalid entries are staged, never lost.",
            schema: || {
                json!({"type": "object", "properties": {
                    "entries": {"type": "array", "minItems": 1, "items": {"type": "object", "properties": {
                        "path": {"type": "string"},
                        "url": {"type": "string"},
                        "heading": {"type": "string"},
                        "level": {"type": "integer", "minimum": 1, "maximum": 6},
                        "operation": {"type": "string", "enum": ["no-op", "update", "clear", "delete"]},
                        "content": {"type": "string"}
                    }, "required": ["heading"]}},
                    "source": {"type": "string", "description": "session id recorded on the entries"}
                }, "required": ["entries"], "additionalProperties": false})
            },
            call: plan_tool,
            read_only: false,
            records: &["delta", "error", "text"],
        },
        Tool {
            name: "last_word_apply",
            title: "Apply queued knowledge deltas",
            description: "Write every pending last-word entry into its Markdown file (kb-lastword apply); \
                dry_run answers the unified diff instead; file limits it to one target (USER.md or a path).",
            schema: || {
                json!({"type": "object", "properties": {
                    "dry_run": {"type": "boolean", "default": false},
                    "file": {"type": "string", "description": "only entries for this target file"}
                }, "additionalProperties": false})
            },
            call: apply_tool,
            read_only: false,
            records: &["result", "text", "error"],
        },
        Tool {
            name: "last_word_status",
            title: "Pending knowledge deltas",
            description: "Pending last-word files with counts by operation, invalid entries and staging \
                (kb-lastword status).",
            schema: || json!({"type": "object", "properties": {}, "additionalProperties": false}),
            call: status_tool,
            read_only: true,
            records: &["pending", "status", "error", "text"],
        },
    ]
}

/// Runs a kb-lastword step with a capturing reporter.
fn with_reporter(f: impl FnOnce(&Home, &mut Reporter) -> crate::Result<()>) -> Called {
    run(|| {
        let home = Home::from_env()?;
        let mut rep = Reporter::memory(&[]);
        f(&home, &mut rep)?;
        let (exit, bytes) = rep.captured()?;
        let mut r = Reply::default();
        r.extend_jsonl(&bytes);
        r.is_error |= exit == Exit::Failure;
        Ok(r)
    })
}

fn plan_tool(_: &Ctx, map: Map<String, Value>) -> Called {
    let a = Args::new("last_word_plan", map, &["entries", "source"])?;
    let source = a.str("source")?;
    let Some(Value::Array(entries)) = a.value("entries") else {
        return Err(RpcError::invalid("last_word_plan: 'entries' must be a list of entries"));
    };
    let input = serde_json::to_string(&json!({"entries": entries})).map_err(|e| RpcError::invalid(e.to_string()))?;
    with_reporter(|home, rep| plan::plan(home, &input, source, rep))
}

fn apply_tool(_: &Ctx, map: Map<String, Value>) -> Called {
    let a = Args::new("last_word_apply", map, &["dry_run", "file"])?;
    let opts = apply::Options { dry_run: a.flag("dry_run")?, file: a.str("file")? };
    with_reporter(|home, rep| apply::apply(home, &opts, rep))
}

fn status_tool(_: &Ctx, map: Map<String, Value>) -> Called {
    Args::new("last_word_status", map, &[])?;
    with_reporter(status::status)
}
