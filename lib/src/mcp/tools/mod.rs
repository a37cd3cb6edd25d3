//! The tools kb-mcp offers: each a thin call into the same `kb::` function
//! the CLI calls, answering with the records the CLI would print.
//!
//! Two kinds of failure, as MCP (2025-11-25 on) separates them: a tool
//! that does not exist is a JSON-RPC `invalid params` error (the server's
//! dispatch says so); everything about a call to a tool that exists is a
//! result with `isError` and an `error` record the model can correct
//! itself from: a wrong, missing or unknown argument, a path that escapes
//! the library (the handlers' [`RpcError`]s, turned into results by
//! [`Reply::refused`]), and a call that ran and failed (guard refusal,
//! lock timeout) with the CLI's message.

mod lastword;
mod library;
mod memory;
pub mod output;
mod skills;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use super::rpc::RpcError;
use crate::error::Error;
use crate::library::Library;
use crate::lock;

/// What every call needs: the library, where memory notes live, the lock.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The library every tool works on.
    pub lib: Library,
    /// The memory directory for `memory_*` (seed 003).
    pub memory_dir: PathBuf,
    /// Lock timeout; the holder is named after the tool.
    pub lock: lock::Options,
    /// The server's skill_manage permissions (seed 002), before a call narrows them.
    pub skills: crate::skills::permissions::Permissions,
    /// What the server keeps between calls.
    pub warm: Arc<Mutex<Warm>>,
    /// The sentence encoder's folder (`--model`, `KB_MODEL`) for
    /// library_search and the memory tools; `None`: words only.
    pub model: Option<PathBuf>,
}

/// What a server keeps warm between calls, so a call pays for its own
/// work only: the search indexes stay mapped (revalidated by stats). The
/// guard's rules are kept by [`crate::guard::shared_library_engine`].
#[derive(Debug, Default)]
pub struct Warm {
    /// Open search indexes.
    pub score: crate::score::Open,
}

impl Ctx {
    /// A context for `lib`.
    pub fn new(
        lib: Library,
        memory_dir: PathBuf,
        lock: lock::Options,
        skills: crate::skills::permissions::Permissions,
    ) -> Ctx {
        Ctx { lib, memory_dir, lock, skills, warm: Arc::default(), model: None }
    }

    /// What the server keeps warm (a panicked call's state is still usable:
    /// it only holds caches that revalidate themselves).
    pub fn warm(&self) -> std::sync::MutexGuard<'_, Warm> {
        self.warm.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The library's guard engine, compiled once and again only when one
    /// of its rule files changed (the rules are hot-loaded).
    pub fn guard_engine(
        &self,
    ) -> crate::Result<(Arc<crate::guard::engine::Engine>, Vec<crate::guard::engine::LoadError>)> {
        crate::guard::shared_library_engine(&self.lib)
    }
}

impl Ctx {
    /// Lock options naming the tool as the holder (shown by `kb-lock status`).
    pub fn lock_for(&self, tool: &str) -> lock::Options {
        lock::Options { timeout: self.lock.timeout, cmd: format!("kb-mcp {tool}") }
    }
}

/// What a call answers: the CLI's records, and whether it failed.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Reply {
    /// The records, in the CLI's order.
    pub records: Vec<Value>,
    /// Whether the call failed (MCP `isError`).
    pub is_error: bool,
    /// A note for the model beside the records (a second text content
    /// item), e.g. that document text in them is data.
    pub notice: Option<&'static str>,
}

impl Reply {
    /// Adds a record.
    pub fn push(&mut self, rec: impl serde::Serialize) {
        self.records.push(serde_json::to_value(rec).unwrap_or(Value::Null));
    }

    /// Adds an `error` record and marks the call failed.
    pub fn error(&mut self, message: &str, extra: Value) {
        let mut rec = json!({"record": "error", "message": message});
        if let (Value::Object(m), Value::Object(extra)) = (&mut rec, extra) {
            for (k, v) in extra {
                m.entry(k).or_insert(v);
            }
        }
        self.records.push(rec);
        self.is_error = true;
    }

    /// A call refused before it ran: one `error` record with what to change.
    pub fn refused(message: &str) -> Reply {
        let mut r = Reply::default();
        r.error(message, json!({}));
        r
    }

    /// Adds the JSON Lines a captured `Out` wrote; runs of other lines
    /// (a dry run's unified diff) become one `text` record each.
    pub fn extend_jsonl(&mut self, bytes: &[u8]) {
        let mut text = String::new();
        for line in String::from_utf8_lossy(bytes).lines() {
            match serde_json::from_str::<Value>(line) {
                Ok(v @ Value::Object(_)) => {
                    self.flush_text(&mut text);
                    if v.get("record").and_then(Value::as_str) == Some("error") {
                        self.is_error = true;
                    }
                    self.records.push(v);
                }
                _ => {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
        self.flush_text(&mut text);
    }

    fn flush_text(&mut self, text: &mut String) {
        if !text.trim().is_empty() {
            self.records.push(json!({"record": "text", "text": std::mem::take(text)}));
        }
        text.clear();
    }

    /// The MCP `CallToolResult`: the records as JSON Lines text (what the
    /// CLI prints, the first content item; a notice is a second one) and
    /// as structured content.
    pub fn to_result(&self) -> Value {
        let text: String = self.records.iter().map(|r| format!("{r}\n")).collect();
        let mut content = vec![json!({"type": "text", "text": text})];
        if let Some(n) = self.notice {
            content.push(json!({"type": "text", "text": n}));
        }
        json!({
            "content": content,
            "structuredContent": {"records": self.records},
            "isError": self.is_error,
        })
    }
}

/// A call's outcome before it becomes a JSON-RPC answer.
pub type Called = Result<Reply, RpcError>;

/// Turns a `kb` error into the call's answer: usage errors are the
/// caller's mistake (refused, see [`Reply::refused`]); anything else is a
/// failed call.
pub fn failed(e: Error) -> Called {
    match e {
        Error::Usage(m) => Err(RpcError::invalid(m)),
        e => {
            let mut r = Reply::default();
            r.error(&e.to_string(), json!({}));
            Ok(r)
        }
    }
}

/// Runs a `kb` call, turning its error into the answer (see [`failed`]).
pub fn run(f: impl FnOnce() -> crate::Result<Reply>) -> Called {
    f().or_else(failed)
}

/// One tool: its name, what it does, its input schema and its handler.
pub struct Tool {
    /// The tool's name.
    pub name: &'static str,
    /// A title for people.
    pub title: &'static str,
    /// What it does, for the agent choosing a tool.
    pub description: &'static str,
    /// JSON Schema of the arguments.
    pub schema: fn() -> Value,
    /// The handler.
    pub call: fn(&Ctx, Map<String, Value>) -> Called,
    /// Whether it only reads (MCP `readOnlyHint`).
    pub read_only: bool,
    /// The record kinds it answers with (its `outputSchema`, see [`output`]).
    pub records: &'static [&'static str],
}

impl Tool {
    /// The tool's entry in `tools/list`.
    pub fn describe(&self) -> Value {
        json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": (self.schema)(),
            "outputSchema": output::schema(self.records),
            "annotations": {"title": self.title, "readOnlyHint": self.read_only, "openWorldHint": false},
        })
    }
}

/// Every tool, in the order `tools/list` shows them.
pub fn all() -> Vec<Tool> {
    let mut t = library::tools();
    t.extend(skills::tools());
    t.extend(memory::tools());
    t.extend(lastword::tools());
    t
}

/// Parses a schema kept as a file under `schemas/` (compiled in).
fn schema_file(text: &str) -> Value {
    let mut v: Value = serde_json::from_str(text).unwrap_or_else(|_| json!({"type": "object"}));
    if let Value::Object(m) = &mut v {
        m.remove("$id");
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_output_becomes_records_and_text_runs() {
        let mut r = Reply::default();
        r.extend_jsonl(b"{\"record\":\"result\"}\n--- a\n+++ b\n\n{\"record\":\"error\",\"message\":\"x\"}\n");
        assert_eq!(
            r.records,
            vec![
                json!({"record": "result"}),
                json!({"record": "text", "text": "--- a\n+++ b\n\n"}),
                json!({"record": "error", "message": "x"})
            ]
        );
        assert!(r.is_error);
    }

    #[test]
    fn every_schema_is_an_object_schema_and_names_are_unique() {
        let tools = all();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), tools.len());
        for t in &tools {
            assert_eq!((t.schema)()["type"], "object", "{}", t.name);
            // Every record kind it names has a schema (an unknown name would accept anything).
            assert!(!t.records.is_empty(), "{}", t.name);
            for k in t.records {
                assert!(
                    output::record(k).get("properties").is_some() || output::record(k).get("oneOf").is_some(),
                    "{}: {k}",
                    t.name
                );
            }
        }
    }
}
