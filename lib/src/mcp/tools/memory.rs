//! Seed 003's `/remember` as two tools: `memory_remember` runs
//! `kb-memgate decide | kb-memgate apply` on one input, so a silent
//! decision is written at once and a gated one comes back `pending` with
//! its question and options; `memory_answer` applies the user's choice to
//! that decision (the same answered-decision path `kb-memgate apply` takes).

use serde_json::{json, Map, Value};

use super::{run, schema_file, Called, Ctx, Reply, Tool};
use crate::mcp::args::Args;
use crate::mcp::rpc::RpcError;
use crate::memgate::{apply, decide, Paths};
use crate::out::jsonl::Out;

pub(super) fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "memory_remember",
            title: "Remember (governed memory)",
            description: "Seed 003 /remember: candidate -> govern -> gate -> write -> audit. The argument is one \
                kb-memgate input record (mode, input.user_input.text with evidence_spans, optional \
                selected_candidates). A silent decision is written at once; a gated one comes back as a \
                `decision` with status pending, its question and options: ask the user, then call \
                memory_answer with that decision and the chosen answer.",
            schema: || schema_file(include_str!("../../../../schemas/memgate_input.schema.json")),
            call: remember,
            read_only: false,
            records: &["decision", "result", "error", "text"],
        },
        Tool {
            name: "memory_answer",
            title: "Answer a gated memory decision",
            description: "Apply the user's answer to a pending decision from memory_remember: confirm, cancel, \
                new_instead or show_diff; for a veto: keep_existing, replace or cancel.",
            schema: || {
                json!({"type": "object", "properties": {
                    "decision": {"type": "object", "description": "the pending `decision` record, as memory_remember returned it"},
                    "answer": {"type": "string", "description": "the user's choice among the decision's options"}
                }, "required": ["decision", "answer"], "additionalProperties": false})
            },
            call: answer,
            read_only: false,
            records: &["decision", "result", "error", "text"],
        },
    ]
}

/// Runs one JSON line through apply and returns what it printed.
fn apply_lines(cx: &Ctx, paths: &Paths, lines: &[u8], r: &mut Reply) -> crate::Result<()> {
    let mut out = Out::memory("kb-mcp");
    apply::run(paths, cx.model.as_deref(), lines, &mut out)?;
    let (_, bytes) = out.captured()?;
    r.extend_jsonl(&bytes);
    Ok(())
}

fn remember(cx: &Ctx, map: Map<String, Value>) -> Called {
    let line = serde_json::to_vec(&Value::Object(map)).map_err(|e| RpcError::invalid(e.to_string()))?;
    run(|| {
        let paths = Paths::new(Some(&cx.memory_dir))?;
        let mut out = Out::memory("kb-mcp");
        // The server's sentence encoder (--model, KB_MODEL), if any.
        decide::run(&paths, cx.model.as_deref(), line.as_slice(), &mut out)?;
        let (_, decisions) = out.captured()?;
        let mut r = Reply::default();
        apply_lines(cx, &paths, &decisions, &mut r)?;
        Ok(r)
    })
}

fn answer(cx: &Ctx, map: Map<String, Value>) -> Called {
    let a = Args::new("memory_answer", map, &["decision", "answer"])?;
    let choice = a.need("answer")?;
    let Some(Value::Object(decision)) = a.value("decision").cloned() else {
        return Err(RpcError::invalid("memory_answer: 'decision' must be the decision record (an object)"));
    };
    if decision.get("record").and_then(Value::as_str) != Some("decision") {
        return Err(RpcError::invalid("memory_answer: 'decision' is not a decision record"));
    }
    let mut decision = decision;
    decision.remove("status");
    decision.insert("answer".into(), Value::String(choice));
    let line = serde_json::to_vec(&Value::Object(decision)).map_err(|e| RpcError::invalid(e.to_string()))?;
    run(|| {
        let paths = Paths::new(Some(&cx.memory_dir))?;
        let mut r = Reply::default();
        apply_lines(cx, &paths, &line, &mut r)?;
        Ok(r)
    })
}
