//! The only module that touches a YAML crate (DESIGN.md "Dependencies"):
//! swapping serde_norway for another maintained drop-in happens here.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};

/// The deepest flow nesting (`[`, `{`) accepted: the YAML crate's own
/// recursion limit, so nothing it would read is refused.
pub const MAX_DEPTH: usize = 128;

/// Parses YAML text into a JSON value (mappings become objects, dates stay
/// strings), the shape every other module works with.
pub fn to_value(text: &str) -> Result<Value> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    from_str(text)
}

/// Parses YAML text into a typed value.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T> {
    depth(text)?;
    serde_norway::from_str::<T>(text).map_err(|e| Error::msg(format!("invalid YAML: {e}")))
}

/// Refuses text nested deeper than [`MAX_DEPTH`] before the parser sees
/// it: the parser fails there anyway, but only after scanning every level,
/// in time that grows with the square of the depth (a 400 kB `[[[…]]]`
/// frontmatter took a minute of CPU in every reader). Brackets are counted
/// wherever they are, quoted or not: skipping quotes would let one stray
/// `'` hide the rest, and 128 open brackets in a string are not a note.
fn depth(text: &str) -> Result<()> {
    let (mut level, mut line) = (0usize, 1usize);
    for b in text.bytes() {
        match b {
            b'[' | b'{' => {
                level += 1;
                if level > MAX_DEPTH {
                    return Err(Error::msg(format!(
                        "invalid YAML: nested deeper than {MAX_DEPTH} levels at line {line}"
                    )));
                }
            }
            b']' | b'}' => level = level.saturating_sub(1),
            b'\n' => line += 1,
            _ => {}
        }
    }
    Ok(())
}

/// Renders a value as YAML text.
pub fn to_string<T: Serialize>(v: &T) -> Result<String> {
    serde_norway::to_string(v).map_err(|e| Error::msg(format!("cannot render YAML: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_bounded_at_the_parsers_own_limit() {
        let at = |n: usize| format!("a: 1\nk: {}{}\n", "[".repeat(n), "]".repeat(n));
        assert!(to_value(&at(MAX_DEPTH - 1)).is_ok());
        let e = to_value(&at(MAX_DEPTH + 1)).unwrap_err().to_string();
        assert_eq!(e, "invalid YAML: nested deeper than 128 levels at line 2");
        // Siblings are not depth: a long flat list reads.
        assert!(to_value(&format!("k: [{}x]\n", "[a], ".repeat(10_000))).is_ok());
    }
}
