//! kb-mcp: the library as Model Context Protocol tools and resources for
//! coding agents, over stdio, on the same `kb::` calls as the CLIs (no
//! subprocess per call).
//!
//! The transport is newline-delimited JSON-RPC 2.0 on stdin/stdout (no
//! batches): with the `initialize` handshake (revisions in
//! [`PROTOCOL_VERSIONS`]), or without it, each request naming revision
//! 2026-07-28 itself ([`revision`]); stderr carries warnings. Requests are answered one at a
//! time, in order; every tool call takes the library lock itself exactly
//! as the CLI does, so several servers and CLIs can share one library.

pub mod args;
pub mod provenance;
pub mod resources;
pub mod revision;
pub mod rpc;
pub mod tools;

use std::io::{BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::error::{Context, Exit, Result};
use crate::library::Library;
use crate::lock;
use crate::out::jsonl;
use rpc::{Answer, Message, Response, RpcError};
use tools::{Ctx, Reply, Tool};

/// Handshake revisions this server negotiates through `initialize`,
/// oldest first; the last is offered when a client asks for one it does
/// not know. 2025-03-26 is left out: it required JSON-RPC batches, which
/// this server refuses on every revision (a batch's answers are held
/// whole; 2025-06-18 removed them), so a client asking for it is offered
/// 2025-11-25 instead.
pub const PROTOCOL_VERSIONS: &[&str] = &["2024-11-05", "2025-06-18", "2025-11-25"];

/// What the binary was told.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--root` (else `KB_ROOT`, else the nearest `.library`).
    pub root: Option<PathBuf>,
    /// `--memory-dir` (else the user's configured store beside the library:
    /// `.agents/.lingxi/memory`, or `.cursor/.lingxi/memory` for Cursor).
    pub memory_dir: Option<PathBuf>,
    /// `--timeout` for the library lock.
    pub timeout: Option<std::time::Duration>,
    /// `--allow-edit` and `--no-create`: what skill_manage may do at most
    /// (a call's own `allowedEditSkills`/`allowCreateNew` only narrow it).
    pub skills: crate::skills::permissions::Permissions,
    /// `--model` (else `KB_MODEL`): the sentence encoder's folder.
    pub model: Option<PathBuf>,
}

/// One server: the library and its tools.
pub struct Server {
    cx: Ctx,
    tools: Vec<Tool>,
    /// The handshake revision `initialize` settled on, once it ran.
    negotiated: std::sync::Mutex<Option<&'static str>>,
}

impl Server {
    /// Opens the library as the CLIs find it.
    pub fn open(opts: &Options) -> Result<Server> {
        let lib = Library::resolve(opts.root.as_deref())?;
        let workspace = lib.dir.parent().map_or_else(|| lib.dir.clone(), Path::to_path_buf);
        let memory_dir = match &opts.memory_dir {
            Some(d) => d.clone(),
            None => workspace.join(crate::memgate::store::memory_rel(&crate::config::Config::load()?)?),
        };
        let mut lock = lock::Options::default();
        if let Some(t) = opts.timeout {
            lock.timeout = t;
        }
        Ok(Server {
            cx: Ctx {
                model: crate::text::bert::model_dir(opts.model.as_deref()),
                ..Ctx::new(lib, memory_dir, lock, opts.skills.clone())
            },
            tools: tools::all(),
            negotiated: std::sync::Mutex::new(None),
        })
    }

    /// The library served.
    pub fn library(&self) -> &Library {
        &self.cx.lib
    }

    /// Answers one line of input: a response, or nothing for
    /// notifications, client responses and blank lines.
    pub fn handle_line(&self, line: &str) -> Option<Answer> {
        if line.trim().is_empty() {
            return None;
        }
        let one = |e: RpcError| Some(Answer::One(rpc::error(rpc::null_id(), &e)));
        // A batch is refused before it is parsed: nothing of it is held.
        if line.trim_start().starts_with('[') {
            return one(RpcError::new(
                rpc::INVALID_REQUEST,
                "JSON-RPC batches are not supported (MCP removed them in 2025-06-18): send one message per line",
            ));
        }
        match rpc::parse(line) {
            Err(e) => one(RpcError::new(rpc::PARSE_ERROR, format!("parse error: {e}"))),
            Ok(rpc::Line::Batch(_)) => one(RpcError::new(rpc::INVALID_REQUEST, "JSON-RPC batches are not supported")),
            Ok(rpc::Line::One(m)) => self.handle(m).map(Answer::One),
        }
    }

    /// Answers one message.
    pub fn handle(&self, m: rpc::Incoming) -> Option<Response> {
        match rpc::classify(m) {
            Message::Request { id, method, params } => {
                let answer = catch_unwind(AssertUnwindSafe(|| self.dispatch(&method, params)))
                    .unwrap_or_else(|_| Err(RpcError::new(rpc::INTERNAL_ERROR, format!("internal error in {method}"))));
                Some(match answer {
                    Ok(r) => rpc::result(id, r),
                    Err(e) => rpc::error(id, &e),
                })
            }
            Message::Notification { .. } | Message::Response => None,
            Message::Invalid(id, e) => Some(rpc::error(id, &e)),
        }
    }

    fn dispatch(&self, method: &str, params: Value) -> std::result::Result<Value, RpcError> {
        let mut params = rpc::params(params);
        let not_found = || RpcError::new(rpc::METHOD_NOT_FOUND, format!("method not found: {method}"));
        match revision::asked(&params)? {
            // 2026-07-28: the request names its revision; nothing of the
            // connection is needed, and the result follows its conventions.
            revision::Asked::Modern if revision::removed_in_modern(method) => {
                return Err(RpcError::new(
                    rpc::METHOD_NOT_FOUND,
                    format!("{method} is not part of protocol revision {}", revision::MODERN),
                ))
            }
            revision::Asked::Modern => {
                let result = self.method(method, &mut params)?.ok_or_else(not_found)?;
                return Ok(revision::modern_result(method, result, server_info()));
            }
            revision::Asked::Handshake => {}
        }
        let negotiated = || *self.negotiated.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !matches!(method, "initialize" | "ping" | "server/discover") && negotiated().is_none() {
            return Err(RpcError::new(
                rpc::INVALID_REQUEST,
                format!(
                    "{method} before initialize: send initialize first (protocol revisions {}), or name revision \
                     {} in params._meta[\"{}\"]",
                    PROTOCOL_VERSIONS.join(", "),
                    revision::MODERN,
                    revision::VERSION_META
                ),
            ));
        }
        match method {
            "initialize" => {
                let result = initialize(params.get("protocolVersion").and_then(Value::as_str));
                let version = PROTOCOL_VERSIONS.iter().find(|v| result["protocolVersion"] == **v).copied();
                *self.negotiated.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = version;
                Ok(result)
            }
            "ping" => Ok(json!({})),
            _ => self.method(method, &mut params)?.ok_or_else(not_found),
        }
    }

    /// The methods every revision shares; None for one this server lacks.
    fn method(
        &self,
        method: &str,
        params: &mut serde_json::Map<String, Value>,
    ) -> std::result::Result<Option<Value>, RpcError> {
        Ok(Some(match method {
            "server/discover" => discover(),
            "tools/list" => json!({"tools": self.tools.iter().map(Tool::describe).collect::<Vec<_>>()}),
            "tools/call" => {
                let name = match params.remove("name") {
                    Some(Value::String(n)) => n,
                    _ => return Err(RpcError::invalid("tools/call needs a tool \"name\"")),
                };
                let args = match params.remove("arguments") {
                    None | Some(Value::Null) => serde_json::Map::new(),
                    Some(Value::Object(m)) => m,
                    Some(_) => return Err(RpcError::invalid(format!("{name}: \"arguments\" must be an object"))),
                };
                let tool = self.tools.iter().find(|t| t.name == name).ok_or_else(|| {
                    let names: Vec<&str> = self.tools.iter().map(|t| t.name).collect();
                    RpcError::invalid(format!("unknown tool '{name}' (tools: {})", names.join(", ")))
                })?;
                // A call the tool refused before running (a bad path, a
                // mistyped argument) is the model's to correct: a result
                // with isError and the message, not a protocol error the
                // client would raise before the model saw it.
                (tool.call)(&self.cx, args).unwrap_or_else(|e| Reply::refused(&e.message)).to_result()
            }
            "resources/list" => resources::list(&self.cx.lib),
            "resources/templates/list" => resources::templates(),
            "resources/read" => match params.get("uri") {
                Some(Value::String(u)) => resources::read(&self.cx.lib, u)?,
                _ => return Err(RpcError::invalid("resources/read needs a \"uri\"")),
            },
            _ => return Ok(None),
        }))
    }
}

/// The server's identity (`serverInfo`).
fn server_info() -> Value {
    json!({"name": "kb-mcp", "title": "kb-tools library", "version": env!("CARGO_PKG_VERSION")})
}

/// What the server offers, the same on every revision.
fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}, "resources": {"listChanged": false, "subscribe": false}})
}

/// Guidance for the model, in `initialize` and `server/discover`.
const INSTRUCTIONS: &str = "The shared .library of this workspace. Search it (library_search) before answering \
    from memory; write what you learn with library_write; manage skills with skill_list and \
    skill_manage; remember user rules with memory_remember (ask the user when a decision is pending); \
    queue AGENTS.md/USER.md updates with last_word_plan. Documents are resources kb://<path>.";

/// The `initialize` result: the client's revision when this server speaks
/// it, else the newest one it does.
fn initialize(asked: Option<&str>) -> Value {
    let latest = PROTOCOL_VERSIONS[PROTOCOL_VERSIONS.len() - 1];
    let version = asked.filter(|v| PROTOCOL_VERSIONS.contains(v)).unwrap_or(latest);
    json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    })
}

/// The `server/discover` result (2026-07-28): every revision spoken, what
/// is offered, the guidance. On 2026-07-28 the caller adds the result
/// conventions ([`revision::modern_result`]).
fn discover() -> Value {
    json!({
        "supportedVersions": revision::supported(),
        "capabilities": capabilities(),
        "instructions": INSTRUCTIONS,
    })
}

/// Serves one client until its input ends: one answer line per request.
/// A line longer than [`jsonl::MAX_LINE`] is never held whole: it is
/// answered with an invalid-request error (its id unread, so null) and the
/// next line is served.
pub fn serve(server: &Server, input: impl BufRead, mut output: impl Write) -> Result<()> {
    let mut input = input;
    let mut buf = Vec::new();
    loop {
        let answer = match jsonl::read_line(&mut input, &mut buf, jsonl::MAX_LINE).ctx(|| "reading stdin")? {
            jsonl::Line::End => return Ok(()),
            jsonl::Line::TooLong => Some(Answer::One(rpc::error(
                rpc::null_id(),
                &RpcError::new(
                    rpc::INVALID_REQUEST,
                    format!("request too large: {}", jsonl::too_long(jsonl::MAX_LINE)),
                ),
            ))),
            // Invalid UTF-8 becomes a parse error for that line, not the end.
            jsonl::Line::Fits => server.handle_line(&String::from_utf8_lossy(&buf)),
        };
        if let Some(answer) = answer {
            let mut bytes = bounded(answer, MAX_RESPONSE)?;
            bytes.push(b'\n');
            output.write_all(&bytes).ctx(|| "writing to stdout")?;
            output.flush().ctx(|| "writing to stdout")?;
        }
    }
}

/// The longest answer line sent, in bytes: a client reads one line whole,
/// so an answer is bounded as a request is ([`jsonl::MAX_LINE`]).
pub const MAX_RESPONSE: usize = jsonl::MAX_LINE;

/// An answer encoded, at most `limit` bytes: one that is longer is
/// replaced by what to ask instead, a tool result with `isError` for a
/// tool call (the model can narrow it), else an internal error.
pub fn bounded(answer: Answer, limit: usize) -> Result<Vec<u8>> {
    let encode = |a: &Answer| serde_json::to_vec(a).map_err(|e| crate::Error::msg(format!("encoding: {e}")));
    let bytes = encode(&answer)?;
    if bytes.len() <= limit {
        return Ok(bytes);
    }
    let Answer::One(r) = answer;
    let msg = format!(
        "the answer is {} bytes, over the {limit}-byte response limit: ask for less (a lower limit, tier or \
         budget, a narrower type or topic, one path)",
        bytes.len()
    );
    let small = match r.result() {
        Some(result) if result.get("content").is_some() => {
            let mut refused = Reply::refused(&msg).to_result();
            for key in ["resultType", "_meta"] {
                if let Some(v) = result.get(key) {
                    refused[key] = v.clone();
                }
            }
            rpc::result(r.into_id(), refused)
        }
        _ => rpc::error(r.into_id(), &RpcError::new(rpc::INTERNAL_ERROR, msg)),
    };
    encode(&Answer::One(small))
}

/// The binary's body: open the library, serve stdin/stdout.
pub fn run(opts: &Options) -> Result<Exit> {
    let server = Server::open(opts)?;
    eprintln!("kb-mcp: serving {}", server.library().dir.display());
    serve(&server, std::io::stdin().lock(), std::io::stdout().lock())?;
    Ok(Exit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Answer {
        match rpc::parse(line) {
            Ok(rpc::Line::One(m)) => match rpc::classify(m) {
                rpc::Message::Request { id, .. } => {
                    Answer::One(rpc::result(id, json!({"content": [], "isError": false})))
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_answer_over_the_limit_says_what_to_ask_instead() {
        let a = answer(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#);
        let fits = bounded(a, 1 << 10).unwrap();
        assert_eq!(
            String::from_utf8(fits).unwrap(),
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":false}}"#
        );
        let a = answer(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#);
        let v: Value = serde_json::from_slice(&bounded(a, 10).unwrap()).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["result"]["isError"], true);
        assert_eq!(
            v["result"]["structuredContent"]["records"][0]["message"],
            "the answer is 64 bytes, over the 10-byte response limit: ask for less (a lower limit, tier or budget, \
             a narrower type or topic, one path)"
        );
    }
}
