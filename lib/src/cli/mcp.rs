//! `kb-mcp`: the library as Model Context Protocol tools for coding agents
//! (issue 19); the server itself is [`crate::mcp`].

use std::path::PathBuf;

use super::args::{Args, Cmd, Spec};
use crate::error::{Error, Exit};
use crate::mcp::{self, Options};

/// The overview `--help` prints.
pub const USAGE: &str = "\
kb-mcp: an MCP server (stdio) with the library's tools and documents

Usage:
  kb-mcp [--root DIR] [--memory-dir DIR] [--timeout DUR]

Speaks newline-delimited JSON-RPC 2.0 on stdin/stdout (MCP stdio transport);
warnings go to stderr. Tools: library_search, library_list, library_status,
library_write, guard_scan, skill_manage, skill_list, memory_remember,
memory_answer, last_word_plan, last_word_apply, last_word_status. Documents
are resources kb://<library-relative path>.

Options:
  --root DIR        the library (default: KB_ROOT, else the nearest .library)
  --memory-dir DIR  memory notes for memory_* [default: .cursor/.lingxi/memory beside the library]
  --timeout DUR     how long a call waits for the library lock [default: 30s]
  -h, --help        show this help
  -V, --version     show the version

Example:
  claude mcp add kb -- kb-mcp --root ~/work/project
";

/// kb-mcp's one command and its flags.
pub static SPEC: Spec = Spec::new(
    "kb-mcp",
    USAGE,
    &[Cmd::new("", "", &["root", "memory-dir", "timeout"], "serve the library over MCP on stdio")],
);

/// Runs the parsed command line: serves until stdin ends.
pub fn run(a: Args) -> Result<Exit, Error> {
    let timeout = a.get("timeout").map(crate::clock::parse_duration).transpose()?;
    mcp::run(&Options {
        root: a.get("root").map(PathBuf::from),
        memory_dir: a.get("memory-dir").map(PathBuf::from),
        timeout,
    })
}
