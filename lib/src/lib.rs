//! `kb`: the library behind the kb-tools binaries; the binaries in `bins/`
//! only parse flags, call in here and print records.
//!
//! One folder per layer, so "where is X" has one answer. A module imports
//! only from its own layer or the layers listed above it:
//!
//! - `error`, `clock`: the error type and exit codes; the one "now".
//! - [`out`]: JSON Lines records in and out, progress on a terminal.
//! - [`fs`]: atomic writes, mapped reads, batched stat calls.
//! - [`lock`]: the library lock.
//! - [`text`]: the tokenizer for lexical matching.
//! - [`doc`]: one document's bytes: YAML, frontmatter, Markdown, digests.
//! - [`library`]: where the library is, its documents, logs and the writer.
//! - [`derived`]: every derived file, rebuilt in full or incrementally.
//! - [`report`]: listings, status, staleness, usage, lifecycle.
//! - [`maintain`]: compaction, scheduled maintenance, promotion by usage.
//! - subsystems, one folder each: [`guard`], [`score`], [`memgate`],
//!   [`lastword`], [`skills`], [`sync`], and [`mcp`] (kb-mcp, which calls them all).
//! - [`cli`]: each binary's command line (one table per binary) and what
//!   its subcommands run; `bins/` hands over to it.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod clock;
pub mod error;

pub mod out;

pub mod fs;

pub mod lock;

pub mod text;

pub mod doc;

pub mod library;

pub mod derived;

pub mod report;

pub mod maintain;

pub mod guard;
pub mod lastword;
pub mod mcp;
pub mod memgate;
pub mod score;
pub mod skills;
pub mod sync;

pub mod cli;

pub use error::{Error, Exit, Result};
pub use library::Library;
