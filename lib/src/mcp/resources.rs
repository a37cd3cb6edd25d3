//! The library's documents as MCP resources, `kb://<library-relative
//! path>`: listed from the same scan `kb-index list` makes, read through
//! the same path rules as every writer (no `..`, no absolute path, no
//! symlink, no special file, documents only), each with its provenance
//! and the guard's verdict ([`super::provenance`]).

use serde_json::{json, Value};

use super::rpc::RpcError;
use crate::library::{self, kind, scan, Library};

/// The URI scheme.
pub const SCHEME: &str = "kb://";

/// The `_meta` key of a served document's provenance: `origin` (`local`
/// or `peer`) and the `commit` that last changed it.
pub const PROVENANCE_META: &str = "kb-tools/provenance";

/// The `_meta` key of a served document's guard verdict.
pub const GUARD_META: &str = "kb-tools/guard";

/// MCP's "resource not found" code.
pub const NOT_FOUND: i64 = -32002;

/// `resources/list`: every document.
pub fn list(lib: &Library) -> Value {
    let scan = scan::library(lib);
    let resources: Vec<Value> = scan
        .docs
        .iter()
        .map(|d| {
            let e = &d.entry;
            let mut r = json!({
                "uri": uri(&e.path),
                "name": e.path,
                "title": e.title.clone().unwrap_or_else(|| e.topic.clone()),
                "mimeType": "text/markdown",
                "size": d.size,
            });
            if let (Some(t), Value::Object(m)) = (&e.doc_type, &mut r) {
                m.insert("description".into(), json!(format!("{} ({t})", e.topic)));
            }
            r
        })
        .collect();
    json!({"resources": resources})
}

/// `resources/templates/list`: one template for any document path.
pub fn templates() -> Value {
    json!({"resourceTemplates": [{
        "uriTemplate": "kb://{path}",
        "name": "library document",
        "description": "a Markdown document of the library by its library-relative path",
        "mimeType": "text/markdown",
    }]})
}

/// `resources/read`: one document's text.
pub fn read(lib: &Library, uri_text: &str) -> Result<Value, RpcError> {
    let rel = uri_text
        .strip_prefix(SCHEME)
        .ok_or_else(|| RpcError::invalid(format!("'{uri_text}' is not a kb:// URI")))
        .and_then(|p| decode(p).ok_or_else(|| RpcError::invalid(format!("'{uri_text}' has a bad %-escape"))))?;
    let rel = library::normalise(&rel).map_err(|e| RpcError::invalid(e.to_string()))?;
    if !kind::kind(&rel).is_content() {
        return Err(RpcError::invalid(format!("'{rel}' is not a library document")));
    }
    lib.check_inside(&rel).map_err(|e| RpcError::invalid(e.to_string()))?;
    // Opened as every reader opens a document: no link, no FIFO (a hang
    // of the whole server), at most the size a scan reads.
    let bytes = crate::fs::nofollow::read(&lib.path(&rel), scan::MAX_DOC_BYTES)
        .map_err(|e| RpcError::new(NOT_FOUND, format!("cannot read '{rel}': {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| RpcError::new(NOT_FOUND, format!("cannot read '{rel}': it is not UTF-8 text")))?;
    // Where it came from and what the guard says, beside the text (which
    // is data in its own field, never instructions to the model).
    let meta = json!({
        PROVENANCE_META: super::provenance::origin(lib, &rel),
        GUARD_META: super::provenance::verdict(lib, &rel, &text),
    });
    Ok(json!({"contents": [{"uri": uri(&rel), "mimeType": "text/markdown", "text": text, "_meta": meta}]}))
}

/// The URI of a library-relative path: unreserved characters and `/` as
/// they are, everything else %-escaped.
pub fn uri(rel: &str) -> String {
    let mut s = String::from(SCHEME);
    for b in rel.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

fn decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip() {
        let p = "notes/café setup.md";
        let u = uri(p);
        assert_eq!(u, "kb://notes/caf%C3%A9%20setup.md");
        assert_eq!(decode(u.strip_prefix(SCHEME).unwrap()).as_deref(), Some(p));
        assert_eq!(decode("a%2"), None);
        assert_eq!(decode("a%zz"), None);
    }
}
