//! `kb-mcp`: the library as Model Context Protocol tools for coding agents
//!; the server itself is [`crate::mcp`].

use std::path::PathBuf;

use super::args::{typed_flags, Args, Cmd, Spec};
use crate::error::{Error, Exit};
use crate::mcp::{self, Options};

/// The overview `--help` prints.
pub const USAGE: &str = include_str!("mcp.txt");

/// kb-mcp's one command and its flags.
pub static SPEC: Spec =
    Spec::new("kb-mcp", USAGE, Flags::NAMES, &[Cmd::new("", "", Flags::NAMES, "serve the library over MCP on stdio")]);

typed_flags! { USAGE;
    /// kb-mcp's flags.
    pub struct Flags {
        root: Option<PathBuf> = "root",
        memory_dir: Option<PathBuf> = "memory-dir",
        timeout: Option<String> = "timeout",
        allow_edit: Vec<String> = "allow-edit",
        no_create: bool = "no-create",
        model: Option<PathBuf> = "model",
    }
}

/// Runs the parsed command line: serves until stdin ends.
pub fn run(a: Args) -> Result<Exit, Error> {
    let f = Flags::from_args(&a)?;
    let timeout = f.timeout.as_deref().map(crate::clock::parse_duration).transpose()?;
    mcp::run(&Options {
        root: f.root,
        memory_dir: f.memory_dir,
        model: f.model,
        timeout,
        skills: crate::skills::permissions::Permissions::from_env()
            .narrow(&crate::skills::permissions::Permissions::new(f.allow_edit, !f.no_create)),
    })
}
