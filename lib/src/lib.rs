//! `kb`: the library behind the kb-tools binaries. Each module holds one
//! concept of DESIGN.md; the binaries in `bins/` only parse flags, call in
//! here and print records.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod atomic;
pub mod changelog;
pub mod clock;
pub mod consistency;
pub mod crash;
pub mod derived;
pub mod digest;
pub mod entry;
pub mod error;
pub mod frontmatter;
pub mod git;
pub mod graph;
pub mod guard;
pub mod index;
pub mod io;
pub mod ioc;
pub mod journal;
pub mod jsonl;
pub mod lastword;
pub mod library;
pub mod lifecycle;
pub mod listing;
pub mod lock;
pub mod maintain;
pub mod markdown;
pub mod marks;
pub mod memgate;
pub mod progress;
pub mod promote;
pub mod reindex;
pub mod relations;
pub mod scan;
pub mod schedule;
pub mod score;
pub mod skills;
pub mod stale;
pub mod stats;
pub mod status;
pub mod sync;
pub mod text;
pub mod usage;
pub mod write;
pub mod yaml;

pub use error::{Error, Exit, Result};
pub use library::Library;
