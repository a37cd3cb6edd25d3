//! Errors and exit codes: one enum and the statuses (DESIGN.md "Exit
//! codes": 0 success, 1 a clean negative answer, 2 usage or runtime). The
//! one edge that prints an error is `cli::run_main`, up where the escape
//! for people (`out::printable`) can be called.

use std::fmt;
use std::io;

/// What a whole run ended with; `main` turns it into the process status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Everything asked for was done.
    Success = 0,
    /// A clean negative answer: no hits, a verdict at `--fail-on`, problems found.
    Negative = 1,
    /// Usage error, runtime error, or some input lines were rejected.
    Failure = 2,
}

impl Exit {
    /// The worse of two outcomes, so a run can fold its per-record results.
    pub fn max(self, other: Exit) -> Exit {
        if (other as u8) > (self as u8) {
            other
        } else {
            self
        }
    }
}

/// Why a run could not go on; carries its context as text so it prints once.
#[derive(Debug)]
pub enum Error {
    /// The command line was wrong; printed with a hint to `--help`.
    Usage(String),
    /// Something in the library or the input was wrong.
    Msg(String),
    /// A lock stayed held past the caller's timeout. Its own variant so a
    /// caller that can wait for another day (last-word stages its entries)
    /// tells it apart from a real failure without reading the message.
    Busy(String),
    /// An I/O error with the path or action it happened on.
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: io::Error,
    },
}

/// The crate-wide result.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// A plain runtime error from any message.
    pub fn msg(m: impl Into<String>) -> Error {
        Error::Msg(m.into())
    }

    /// A usage error (wrong flags or arguments).
    pub fn usage(m: impl Into<String>) -> Error {
        Error::Usage(m.into())
    }

    /// An I/O error with what was being done when it happened.
    pub fn io(context: impl Into<String>, source: io::Error) -> Error {
        Error::Io { context: context.into(), source }
    }

    /// Whether a lock stayed held past the timeout (see [`Error::Busy`]).
    pub fn is_busy(&self) -> bool {
        matches!(self, Error::Busy(_))
    }

    /// Whether this is a closed stdout pipe, which ends a run quietly.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Msg(m) | Error::Busy(m) => f.write_str(m),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io { context: "i/o error".into(), source: e }
    }
}

impl From<lexopt::Error> for Error {
    fn from(e: lexopt::Error) -> Error {
        Error::Usage(e.to_string())
    }
}

/// Adds context to I/O results: `fs::read(p).ctx(|| format!("reading {p}"))`.
pub trait Context<T> {
    /// Wraps the error with the action that failed.
    fn ctx<S: Into<String>>(self, f: impl FnOnce() -> S) -> Result<T>;
}

impl<T> Context<T> for std::result::Result<T, io::Error> {
    fn ctx<S: Into<String>>(self, f: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| Error::io(f(), e))
    }
}
