//! The only module that touches a YAML crate (DESIGN.md "Dependencies"):
//! swapping serde_norway for another maintained drop-in happens here.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};

/// Parses YAML text into a JSON value (mappings become objects, dates stay
/// strings), the shape every other module works with.
pub fn to_value(text: &str) -> Result<Value> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_norway::from_str::<Value>(text).map_err(|e| Error::msg(format!("invalid YAML: {e}")))
}

/// Parses YAML text into a typed value.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T> {
    serde_norway::from_str::<T>(text).map_err(|e| Error::msg(format!("invalid YAML: {e}")))
}

/// Renders a value as YAML text.
pub fn to_string<T: Serialize>(v: &T) -> Result<String> {
    serde_norway::to_string(v).map_err(|e| Error::msg(format!("cannot render YAML: {e}")))
}
