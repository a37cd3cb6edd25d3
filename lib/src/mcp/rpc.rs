//! JSON-RPC 2.0 as MCP's stdio transport uses it: one message per line,
//! requests answered in order, notifications never answered. Kept apart
//! from the tools so the framing rules (parse error, invalid request,
//! batches) live in one place.

use serde_json::{json, Map, Value};

/// The request could not be parsed as JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The method's parameters are wrong (unknown tool, bad argument, a path
/// escaping the library).
pub const INVALID_PARAMS: i64 = -32602;
/// The server failed while answering.
pub const INTERNAL_ERROR: i64 = -32603;

/// A JSON-RPC error: code and message, turned into the `error` member.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// One of the codes above.
    pub code: i64,
    /// What went wrong, in the CLIs' words.
    pub message: String,
}

impl RpcError {
    /// An invalid-params error.
    pub fn invalid(message: impl Into<String>) -> RpcError {
        RpcError { code: INVALID_PARAMS, message: message.into() }
    }

    /// Any other error code.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into() }
    }
}

/// One parsed message.
#[derive(Debug)]
pub enum Message {
    /// A request to answer: its id, method and params (an object or null).
    Request {
        /// The id, echoed in the answer.
        id: Value,
        /// The method.
        method: String,
        /// The params.
        params: Value,
    },
    /// A notification: nothing is sent back.
    Notification {
        /// The method.
        method: String,
    },
    /// A response from the client (to a request we never send): ignored.
    Response,
    /// Not a valid message: answered with this error and this id (null
    /// when the id could not be read).
    Invalid(Value, RpcError),
}

/// Classifies one JSON value as a message.
pub fn classify(v: Value) -> Message {
    let Value::Object(mut m) = v else {
        return Message::Invalid(Value::Null, RpcError::new(INVALID_REQUEST, "a message must be a JSON object"));
    };
    let id = m.remove("id");
    let id_ok = matches!(id, None | Some(Value::String(_)) | Some(Value::Number(_)));
    let shown_id = if id_ok { id.clone().unwrap_or(Value::Null) } else { Value::Null };
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Message::Invalid(shown_id, RpcError::new(INVALID_REQUEST, "\"jsonrpc\" must be \"2.0\""));
    }
    if !id_ok {
        return Message::Invalid(Value::Null, RpcError::new(INVALID_REQUEST, "\"id\" must be a string or a number"));
    }
    let method = match m.remove("method") {
        Some(Value::String(s)) => s,
        Some(_) => return Message::Invalid(shown_id, RpcError::new(INVALID_REQUEST, "\"method\" must be a string")),
        None if m.contains_key("result") || m.contains_key("error") => return Message::Response,
        None => return Message::Invalid(shown_id, RpcError::new(INVALID_REQUEST, "missing \"method\"")),
    };
    let params = m.remove("params").unwrap_or(Value::Null);
    if !matches!(params, Value::Object(_) | Value::Null) {
        return Message::Invalid(shown_id, RpcError::invalid("\"params\" must be an object"));
    }
    match id {
        Some(id) => Message::Request { id, method, params },
        None => Message::Notification { method },
    }
}

/// A success response.
pub fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response.
pub fn error(id: Value, e: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": e.code, "message": e.message}})
}

/// The params object (empty for null).
pub fn params(p: Value) -> Map<String, Value> {
    match p {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_messages() {
        let r = classify(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        assert!(matches!(r, Message::Request { ref method, .. } if method == "ping"));
        assert!(matches!(
            classify(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
            Message::Notification { .. }
        ));
        assert!(matches!(classify(json!([1])), Message::Invalid(Value::Null, _)));
        assert!(matches!(
            classify(json!({"jsonrpc": "1.0", "id": 3, "method": "x"})),
            Message::Invalid(Value::Number(_), _)
        ));
        assert!(matches!(
            classify(json!({"jsonrpc": "2.0", "id": {}, "method": "x"})),
            Message::Invalid(Value::Null, _)
        ));
        assert!(matches!(classify(json!({"jsonrpc": "2.0", "id": 2, "result": {}})), Message::Response));
        assert!(matches!(
            classify(json!({"jsonrpc": "2.0", "id": 2, "method": "x", "params": [1]})),
            Message::Invalid(_, RpcError { code: INVALID_PARAMS, .. })
        ));
    }
}
