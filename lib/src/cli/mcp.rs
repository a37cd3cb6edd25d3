//! `kb-mcp`: the library as Model Context Protocol tools for coding agents
//! (issue 19); the server itself is [`crate::mcp`].

use std::path::PathBuf;

use super::args::{Args, Cmd, Spec};
use crate::error::{Error, Exit};
use crate::mcp::{self, Options};

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("mcp.txt");

/// kb-mcp's one command and its flags.
pub static SPEC: Spec = Spec::new(
    "kb-mcp",
    USAGE,
    &[Cmd::new(
        "",
        "",
        &["root", "memory-dir", "timeout", "allow-edit", "no-create", "model"],
        "serve the library over MCP on stdio",
    )],
);

/// Runs the parsed command line: serves until stdin ends.
pub fn run(a: Args) -> Result<Exit, Error> {
    let timeout = a.get("timeout").map(crate::clock::parse_duration).transpose()?;
    mcp::run(&Options {
        root: a.get("root").map(PathBuf::from),
        memory_dir: a.get("memory-dir").map(PathBuf::from),
        model: a.get("model").map(PathBuf::from),
        timeout,
        skills: crate::skills::permissions::Permissions::from_env()
            .narrow(&crate::skills::permissions::Permissions::new(a.all("allow-edit"), !a.on("no-create"))),
    })
}
