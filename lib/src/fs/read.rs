//! Reading a file that may be missing, without turning any other error
//! into an empty value (issue 22): a missing file is `None`, an unreadable
//! one is an error naming it, never an empty string that a writer would
//! then overwrite or a reader would count as "no history".

use std::path::Path;

use crate::error::{Error, Result};

/// The bytes of `path`, `None` when it does not exist.
pub fn optional(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!("reading {}", path.display()), e)),
    }
}

/// The text of `path`, `None` when it does not exist; bytes that are not
/// UTF-8 are an error.
pub fn optional_text(path: &Path) -> Result<Option<String>> {
    optional(path)?
        .map(|b| String::from_utf8(b).map_err(|_| Error::msg(format!("{} is not UTF-8", path.display()))))
        .transpose()
}
