//! `kb`: the library behind the kb-tools binaries. Each module holds one
//! concept of DESIGN.md; the binaries in `bins/` only parse flags, call in
//! here and print records.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod atomic;
pub mod changelog;
pub mod clock;
pub mod derived;
pub mod digest;
pub mod entry;
pub mod error;
pub mod frontmatter;
pub mod git;
pub mod index;
pub mod jsonl;
pub mod library;
pub mod lock;
pub mod maintain;
pub mod markdown;
pub mod progress;
pub mod relations;
pub mod scan;
pub mod sync;
pub mod write;
pub mod yaml;

pub use error::{Error, Exit, Result};
pub use library::Library;
