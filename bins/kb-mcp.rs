//! kb-mcp: the library as Model Context Protocol tools for coding agents.

use std::path::PathBuf;
use std::process::ExitCode;

use kb::error::{run_main, Error};
use kb::mcp::{self, Options};
use lexopt::prelude::*;

const USAGE: &str = "\
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

fn parse_args() -> Result<Options, Error> {
    let mut p = lexopt::Parser::from_env();
    let mut o = Options::default();
    while let Some(arg) = p.next()? {
        match arg {
            Short('h') | Long("help") => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            Short('V') | Long("version") => {
                println!("kb-mcp {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            Long("root") => o.root = Some(PathBuf::from(p.value()?)),
            Long("memory-dir") => o.memory_dir = Some(PathBuf::from(p.value()?)),
            Long("timeout") => o.timeout = Some(kb::clock::parse_duration(&p.value()?.string()?)?),
            _ => return Err(arg.unexpected().into()),
        }
    }
    Ok(o)
}

fn main() -> ExitCode {
    run_main("kb-mcp", || mcp::run(&parse_args()?))
}
