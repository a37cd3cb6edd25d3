//! Each tool's `outputSchema`: its `structuredContent` is
//! `{"records": [...]}`, each record one of the kinds the tool answers
//! with, validated by the record's own schema under `schemas/` (compiled
//! in, so the schema a client sees is the one the tests check records
//! against).

use serde_json::{json, Value};

/// Every record schema a tool can answer with, by record name.
const RECORDS: &[(&str, &str)] = &[
    ("audit", include_str!("../../../../schemas/audit.schema.json")),
    ("decision", include_str!("../../../../schemas/decision.schema.json")),
    ("delta", include_str!("../../../../schemas/delta.schema.json")),
    ("entry", include_str!("../../../../schemas/entry.schema.json")),
    ("error", include_str!("../../../../schemas/error.schema.json")),
    ("finding", include_str!("../../../../schemas/finding.schema.json")),
    ("hit", include_str!("../../../../schemas/hit.schema.json")),
    ("pending", include_str!("../../../../schemas/pending.schema.json")),
    ("result", include_str!("../../../../schemas/result.schema.json")),
    ("skill", include_str!("../../../../schemas/skill.schema.json")),
    ("skill_write", include_str!("../../../../schemas/skill_write.schema.json")),
    ("source_error", include_str!("../../../../schemas/source_error.schema.json")),
    ("status", include_str!("../../../../schemas/status.schema.json")),
    ("summary", include_str!("../../../../schemas/summary.schema.json")),
    ("verdict", include_str!("../../../../schemas/verdict.schema.json")),
    ("write", include_str!("../../../../schemas/write.schema.json")),
];

/// One record's schema, embeddable: without `$id` and `$schema`, which
/// only a document's root may carry. `text` (a run of non-JSON output, a
/// dry run's diff) has no file of its own.
pub fn record(name: &str) -> Value {
    if name == "text" {
        return json!({"type": "object", "title": "Output that is not a record (a dry run's unified diff)",
            "required": ["record", "text"], "additionalProperties": false,
            "properties": {"record": {"const": "text"}, "text": {"type": "string"}}});
    }
    let text = RECORDS.iter().find(|(n, _)| *n == name).map_or("{}", |(_, t)| t);
    let mut v: Value = serde_json::from_str(text).unwrap_or_else(|_| json!({}));
    if let Value::Object(m) = &mut v {
        m.remove("$id");
        m.remove("$schema");
    }
    v
}

/// The `outputSchema` of a tool answering with these record kinds.
pub fn schema(kinds: &[&str]) -> Value {
    let branches: Vec<Value> = kinds.iter().map(|k| record(k)).collect();
    json!({
        "type": "object",
        "required": ["records"],
        "additionalProperties": false,
        "properties": {"records": {
            "type": "array",
            "description": "the records the CLI would print, in its order",
            "items": {"anyOf": branches},
        }},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_record_has_its_schema() {
        for (name, _) in RECORDS {
            let s = record(name);
            assert!(s.get("$id").is_none() && s.get("$schema").is_none(), "{name}");
            assert!(s.get("properties").is_some() || s.get("oneOf").is_some(), "{name}: {s}");
        }
        assert_eq!(record("text")["properties"]["record"]["const"], "text");
    }
}
