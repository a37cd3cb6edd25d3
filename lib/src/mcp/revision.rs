//! Which protocol revision a request is answered on. Clients
//! that handshake (`initialize`, revisions in [`super::PROTOCOL_VERSIONS`])
//! hold one negotiated revision for the connection; a 2026-07-28 client
//! holds none: every request names its revision in
//! `params._meta["io.modelcontextprotocol/protocolVersion"]`, may start
//! with `server/discover`, and is answered with that revision's result
//! conventions (`resultType`, the server's identity in `_meta`, caching
//! hints on the list methods).

use serde_json::{json, Map, Value};

use super::rpc::RpcError;
use super::PROTOCOL_VERSIONS;

/// The stateless revision, named per request.
pub const MODERN: &str = "2026-07-28";

/// The request `_meta` key naming the revision (2026-07-28).
pub const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

/// The result `_meta` key carrying the server's identity (2026-07-28).
pub const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

/// The error for a revision this server does not speak (2026-07-28).
pub const UNSUPPORTED_VERSION: i64 = -32022;

/// How long a client may cache what only a new binary changes (the tool
/// list, the resource template, discover), in milliseconds: an hour.
pub const FIXED_TTL_MS: u64 = 3_600_000;

/// The revision a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// No `_meta` revision: the connection's handshake applies.
    Handshake,
    /// 2026-07-28, for this request alone.
    Modern,
}

/// Every revision this server speaks, oldest first.
pub fn supported() -> Vec<&'static str> {
    PROTOCOL_VERSIONS.iter().copied().chain([MODERN]).collect()
}

/// Reads the request's `_meta` revision; one this server does not speak
/// is refused with -32022 naming the ones it does.
pub fn asked(params: &Map<String, Value>) -> Result<Asked, RpcError> {
    match params.get("_meta").and_then(|m| m.get(VERSION_META)) {
        None => Ok(Asked::Handshake),
        Some(Value::String(v)) if v == MODERN => Ok(Asked::Modern),
        Some(v) => {
            let requested = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            let mut e = RpcError::new(
                UNSUPPORTED_VERSION,
                format!(
                    "unsupported protocol version '{requested}' in _meta: name {MODERN} there, or leave it out \
                     and send initialize ({})",
                    PROTOCOL_VERSIONS.join(", ")
                ),
            );
            e.data = Some(json!({"supported": supported(), "requested": requested}));
            Err(e)
        }
    }
}

/// Methods the 2026-07-28 revision removed (the handshake and ping).
pub fn removed_in_modern(method: &str) -> bool {
    matches!(method, "initialize" | "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe")
}

/// The caching hints of a list result on 2026-07-28: (ttlMs, cacheScope).
/// The tool list and the template are fixed by the binary and hold nothing
/// of the user's; the document list changes with every write.
pub fn cache_hints(method: &str) -> Option<(u64, &'static str)> {
    match method {
        "tools/list" | "resources/templates/list" | "server/discover" => Some((FIXED_TTL_MS, "public")),
        "resources/list" => Some((0, "private")),
        _ => None,
    }
}

/// A 2026-07-28 result: `resultType`, the server's identity in `_meta`,
/// and for a list method its caching hints.
pub fn modern_result(method: &str, mut result: Value, server_info: Value) -> Value {
    if let Value::Object(m) = &mut result {
        m.entry("resultType").or_insert_with(|| json!("complete"));
        if let Some((ttl, scope)) = cache_hints(method) {
            m.insert("ttlMs".into(), json!(ttl));
            m.insert("cacheScope".into(), json!(scope));
        }
        let meta = m.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(meta) = meta {
            meta.insert(SERVER_INFO_META.into(), server_info);
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_revision_comes_from_meta() {
        assert_eq!(asked(&params(json!({}))), Ok(Asked::Handshake));
        assert_eq!(asked(&params(json!({"_meta": {VERSION_META: MODERN}}))), Ok(Asked::Modern));
        let e = asked(&params(json!({"_meta": {VERSION_META: "2025-11-25"}}))).unwrap_err();
        assert_eq!(e.code, UNSUPPORTED_VERSION);
        assert_eq!(
            e.data,
            Some(
                json!({"supported": ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28"], "requested": "2025-11-25"})
            )
        );
    }
}
