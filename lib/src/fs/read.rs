//! Reading a file that may be missing, without turning any other error
//! into an empty value: a missing file is `None`, an unreadable
//! one is an error naming it, never an empty string that a writer would
//! then overwrite or a reader would count as "no history". Reads go
//! through [`super::nofollow`]: a FIFO, device or symlink planted in place
//! of a log or a derived file (`.changelog`, `.index.md`, ...) is an error
//! naming it, never a hang of a CI job or a read outside the library.

use std::path::Path;

use crate::error::{Error, Result};

/// The most bytes read from one such file: far above any real log or
/// index, it only stops an endless read.
pub const LIMIT: u64 = 1 << 32;

/// The bytes of `path`, `None` when it does not exist; a special file or a
/// symlink in its place is an error naming it.
pub fn optional(path: &Path) -> Result<Option<Vec<u8>>> {
    match super::nofollow::read(path, LIMIT) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        // The no-follow reader's own errors name the file already.
        Err(e) if matches!(e.kind(), std::io::ErrorKind::Other | std::io::ErrorKind::IsADirectory) => {
            Err(Error::msg(e.to_string()))
        }
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
