//! `kb`: the library behind the kb-tools binaries; the binaries in `bins/`
//! only parse flags, call in here and print records.
//!
//! One folder per layer, so "where is X" has one answer. A module imports
//! only from its own layer or the layers listed above it (the order is the
//! table `LAYERS` in `tests/layers.rs`, which fails on an upward import or
//! a cycle):
//!
//! - `error`, `clock`: the error type and exit codes; the one "now".
//! - [`out`]: JSON Lines records in and out, progress on a terminal.
//! - [`fs`]: atomic writes, mapped reads, batched stat calls, the walker.
//! - [`lock`]: the library lock (takes the library's directory as a path).
//! - [`text`]: the tokenizer for lexical matching, BM25, and the one
//!   binary index format (`text::segment`).
//! - [`doc`]: one document's bytes: YAML, frontmatter, Markdown, digests,
//!   cited domains.
//! - [`library`]: where the library is, what each path is, its documents
//!   and logs, git commits.
//! - [`config`]: the user's own configuration (outside every library).
//! - [`derived`]: every derived file, rebuilt in full or incrementally.
//! - [`guard`]: the threat scanner (below the writer, which runs it).
//! - [`write`]: the one writer (guard scan, atomic write, logs, indexes,
//!   commit), and the journaled groups it lands (a batch, an integrate
//!   run).
//! - [`evolve`]: the guard rules' evolution loop (seed 000), a writer of
//!   proposals and rule files that lands its runs through [`write`].
//! - [`sync`]: git remotes, merge drivers, `init` (which installs them).
//! - [`report`]: listings, status, staleness, usage, lifecycle.
//! - [`maintain`]: compaction, scheduled maintenance, promotion by usage.
//! - subsystems, one folder each: [`score`], [`memgate`], [`lastword`],
//!   [`skills`], and [`mcp`] (kb-mcp, which calls them all).
//! - [`recover`]: `kb-lock sweep`'s recovery of every kind of interrupted
//!   group, the library's and the stores' outside it.
//! - [`cli`]: each binary's command line (one table per binary) and what
//!   its subcommands run; `bins/` hands over to it.
// No `missing_docs` lint: it asked for a doc on every item and got docs
// that restate the code. tests/layers.rs checks that every module opens
// with a `//!` comment saying what it is for.
#![deny(unsafe_code)]

/// The allocator of every binary and test that links this crate. glibc's
/// malloc spent 14 % of a write batch freeing and consolidating small
/// blocks, and its cost per free grew with the heap (`kb-lastword plan`
/// of 40,000 entries took 11.8× the time of 5,000); mimalloc's free lists
/// are per page and per thread.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod clock;
pub mod error;

pub mod out;

pub mod fs;

pub mod lock;

pub mod text;

pub mod doc;

pub mod library;

pub mod config;

pub mod derived;

pub mod guard;

pub mod write;

pub mod evolve;
pub mod sync;

pub mod report;

pub mod maintain;

pub mod lastword;
pub mod mcp;
pub mod memgate;
pub mod recover;
pub mod score;
pub mod skills;

pub mod cli;

pub use error::{Error, Exit, Result};
pub use library::Library;
