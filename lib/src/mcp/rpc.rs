//! JSON-RPC 2.0 as MCP's stdio transport uses it: one message per line,
//! requests answered in order, notifications never answered. Kept apart
//! from the tools so the framing rules (parse error, invalid request,
//! batches) live in one place.

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Serialize;
use serde_json::value::RawValue;
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
    /// The `data` member, when the error carries one.
    pub data: Option<Value>,
}

impl RpcError {
    /// An invalid-params error.
    pub fn invalid(message: impl Into<String>) -> RpcError {
        RpcError { code: INVALID_PARAMS, message: message.into(), data: None }
    }

    /// Any other error code.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into(), data: None }
    }
}

/// A request id exactly as the client wrote it. Ids are echoed, never
/// computed on, and a client matches its answers by them: one parsed into
/// a number would come back rounded past 64 bits (or be refused as out of
/// range), so the id's own text is kept.
pub type Id = Box<RawValue>;

/// The id of an answer whose request id could not be read.
pub fn null_id() -> Id {
    RawValue::from_string("null".into()).unwrap_or_else(|_| unreachable!("null is JSON"))
}

/// One input line as read: one message or a batch of them.
#[derive(Debug)]
pub enum Line {
    /// A single message.
    One(Incoming),
    /// A JSON array of messages.
    Batch(Vec<Incoming>),
}

/// One message as read: an object's members, the id kept as written
/// ([`Id`]), or anything else (answered as invalid).
#[derive(Debug)]
pub enum Incoming {
    /// A JSON object.
    Object {
        /// Its `id` member as written (the last one when repeated, as
        /// for any other member).
        id: Option<Id>,
        /// Its other members.
        members: Map<String, Value>,
    },
    /// Not an object.
    Other,
}

/// Reads one line of input; the error is serde_json's, for a parse error.
pub fn parse(line: &str) -> std::result::Result<Line, serde_json::Error> {
    serde_json::from_str(line)
}

/// The scalar visits of a visitor that answers every scalar alike.
macro_rules! other_scalars {
    ($v:expr) => {
        fn visit_bool<E>(self, _: bool) -> std::result::Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_i64<E>(self, _: i64) -> std::result::Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_u64<E>(self, _: u64) -> std::result::Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_f64<E>(self, _: f64) -> std::result::Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_str<E>(self, _: &str) -> std::result::Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_unit<E>(self) -> std::result::Result<Self::Value, E> {
            Ok($v)
        }
    };
}

impl<'de> Deserialize<'de> for Line {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Line, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Line;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON-RPC message or batch")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Line, A::Error> {
                let mut batch = Vec::new();
                while let Some(m) = seq.next_element()? {
                    batch.push(m);
                }
                Ok(Line::Batch(batch))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Line, A::Error> {
                IncomingVisitor.visit_map(map).map(Line::One)
            }
            other_scalars!(Line::One(Incoming::Other));
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Incoming {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Incoming, D::Error> {
        d.deserialize_any(IncomingVisitor)
    }
}

struct IncomingVisitor;

impl<'de> Visitor<'de> for IncomingVisitor {
    type Value = Incoming;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON-RPC message")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Incoming, A::Error> {
        let (mut id, mut members) = (None, Map::new());
        while let Some(key) = map.next_key::<String>()? {
            if key == "id" {
                id = Some(map.next_value::<Id>()?);
            } else {
                members.insert(key, map.next_value()?);
            }
        }
        Ok(Incoming::Object { id, members })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Incoming, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Incoming::Other)
    }
    other_scalars!(Incoming::Other);
}

/// One parsed message.
#[derive(Debug)]
pub enum Message {
    /// A request to answer: its id, method and params (an object or null).
    Request {
        /// The id, echoed in the answer.
        id: Id,
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
    Invalid(Id, RpcError),
}

/// Whether an id as written is a string or a number (JSON-RPC's two kinds;
/// null, objects, arrays and booleans are refused).
fn id_ok(id: &RawValue) -> bool {
    matches!(id.get().as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9'))
}

/// Classifies one message.
pub fn classify(m: Incoming) -> Message {
    let Incoming::Object { id, members: mut m } = m else {
        return Message::Invalid(null_id(), RpcError::new(INVALID_REQUEST, "a message must be a JSON object"));
    };
    let id_ok = id.as_deref().is_none_or(id_ok);
    let shown_id = || id.clone().filter(|_| id_ok).unwrap_or_else(null_id);
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Message::Invalid(shown_id(), RpcError::new(INVALID_REQUEST, "\"jsonrpc\" must be \"2.0\""));
    }
    if !id_ok {
        return Message::Invalid(null_id(), RpcError::new(INVALID_REQUEST, "\"id\" must be a string or a number"));
    }
    let method = match m.remove("method") {
        Some(Value::String(s)) => s,
        Some(_) => return Message::Invalid(shown_id(), RpcError::new(INVALID_REQUEST, "\"method\" must be a string")),
        None if m.contains_key("result") || m.contains_key("error") => return Message::Response,
        None => return Message::Invalid(shown_id(), RpcError::new(INVALID_REQUEST, "missing \"method\"")),
    };
    let params = m.remove("params").unwrap_or(Value::Null);
    if !matches!(params, Value::Object(_) | Value::Null) {
        return Message::Invalid(shown_id(), RpcError::invalid("\"params\" must be an object"));
    }
    match id {
        Some(id) => Message::Request { id, method, params },
        None => Message::Notification { method },
    }
}

/// One answer, written member by member so its id goes out as it came in.
#[derive(Debug, Serialize)]
pub struct Response {
    jsonrpc: &'static str,
    id: Id,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
}

impl Response {
    /// The result, for a success.
    pub fn result(&self) -> Option<&Value> {
        self.result.as_ref()
    }

    /// The id it answers, taken out.
    pub fn into_id(self) -> Id {
        self.id
    }

    /// The error member, for a failure.
    pub fn error(&self) -> Option<&Value> {
        self.error.as_ref()
    }
}

/// What one input line is answered with.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Answer {
    /// The answer to one message (batches are refused, see
    /// [`crate::mcp::Server::handle_line`]).
    One(Response),
}

/// A success response.
pub fn result(id: Id, result: Value) -> Response {
    Response { jsonrpc: "2.0", id, result: Some(result), error: None }
}

/// An error response.
pub fn error(id: Id, e: &RpcError) -> Response {
    let mut error = json!({"code": e.code, "message": e.message});
    if let Some(data) = &e.data {
        error["data"] = data.clone();
    }
    Response { jsonrpc: "2.0", id, result: None, error: Some(error) }
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

    fn classify_str(line: &str) -> Message {
        match parse(line) {
            Ok(Line::One(m)) => classify(m),
            other => panic!("{line}: {other:?}"),
        }
    }

    fn invalid_id(m: Message) -> String {
        match m {
            Message::Invalid(id, _) => id.get().to_string(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn classifies_messages() {
        let r = classify_str(r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#);
        assert!(matches!(r, Message::Request { ref method, .. } if method == "ping"));
        assert!(matches!(
            classify_str(r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#),
            Message::Notification { .. }
        ));
        assert!(matches!(parse("[1]"), Ok(Line::Batch(ref b)) if matches!(b[..], [Incoming::Other])));
        assert_eq!(invalid_id(classify(Incoming::Other)), "null");
        assert_eq!(invalid_id(classify_str(r#"{"jsonrpc": "1.0", "id": 3, "method": "x"}"#)), "3");
        assert_eq!(invalid_id(classify_str(r#"{"jsonrpc": "2.0", "id": {}, "method": "x"}"#)), "null");
        assert!(matches!(classify_str(r#"{"jsonrpc": "2.0", "id": 2, "result": {}}"#), Message::Response));
        assert!(matches!(
            classify_str(r#"{"jsonrpc": "2.0", "id": 2, "method": "x", "params": [1]}"#),
            Message::Invalid(_, RpcError { code: INVALID_PARAMS, .. })
        ));
    }

    #[test]
    fn ids_keep_their_text() {
        let Message::Request { id, .. } = classify_str(r#"{"id" : 1e999 , "jsonrpc": "2.0", "method": "x"}"#) else {
            panic!("not a request");
        };
        assert_eq!(id.get(), "1e999");
        let line = serde_json::to_string(&result(id, json!({}))).unwrap_or_default();
        assert_eq!(line, r#"{"jsonrpc":"2.0","id":1e999,"result":{}}"#);
    }
}
