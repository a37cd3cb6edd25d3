//! A tool call's `arguments` read by name and type. Every mistake is an
//! invalid-params error naming the argument, so a client learns what to
//! fix; an argument the tool does not know is refused rather than ignored
//! (the CLIs refuse unknown flags the same way).

use serde_json::{Map, Value};

use super::rpc::RpcError;

/// The arguments of one call.
pub struct Args {
    map: Map<String, Value>,
    tool: &'static str,
}

type R<T> = Result<T, RpcError>;

impl Args {
    /// Checks that only `known` names are present.
    pub fn new(tool: &'static str, map: Map<String, Value>, known: &[&str]) -> R<Args> {
        if let Some(k) = map.keys().find(|k| !known.contains(&k.as_str())) {
            let near = crate::text::closest(k, known.iter().copied())
                .map(|s| format!("; did you mean '{s}'?"))
                .unwrap_or_default();
            return Err(RpcError::invalid(format!(
                "{tool}: unknown argument '{k}'{near} (expected one of: {})",
                known.join(", ")
            )));
        }
        Ok(Args { map, tool })
    }

    fn wrong(&self, name: &str, what: &str) -> RpcError {
        RpcError::invalid(format!("{}: '{name}' must be {what}", self.tool))
    }

    /// An optional string (null counts as absent).
    pub fn str(&self, name: &str) -> R<Option<String>> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.wrong(name, "a string")),
        }
    }

    /// A required string.
    pub fn need(&self, name: &str) -> R<String> {
        self.str(name)?.ok_or_else(|| RpcError::invalid(format!("{}: missing argument '{name}'", self.tool)))
    }

    /// An optional boolean (absent: false).
    pub fn flag(&self, name: &str) -> R<bool> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.wrong(name, "true or false")),
        }
    }

    /// An optional whole number.
    pub fn count(&self, name: &str) -> R<Option<usize>> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| self.wrong(name, "a whole number")),
        }
    }

    /// An optional list of strings.
    pub fn strings(&self, name: &str) -> R<Vec<String>> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_string).ok_or_else(|| self.wrong(name, "a list of strings")))
                .collect(),
            Some(_) => Err(self.wrong(name, "a list of strings")),
        }
    }

    /// A raw value (absent: None).
    pub fn value(&self, name: &str) -> Option<&Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    /// The whole argument object.
    pub fn into_map(self) -> Map<String, Value> {
        self.map
    }
}
