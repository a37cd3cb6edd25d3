//! kb-index's subcommand table: which flags each subcommand takes (the
//! flags themselves are the typed `Flags` of `index.rs`, declared in the
//! Options section of `index.txt`).

use super::super::args::{Cmd, Spec};
use super::{Flags, USAGE};

const LIST: &[&str] = &["root", "type", "topic", "format"];
const LOCKED: &[&str] = &["root", "timeout", "format"];
const CRON: &[&str] = &["root", "just", "justfile", "format"];
const STALE: &[&str] = &["root", "days", "format"];
const STATUS: &[&str] = &["root", "format", "timeout"];

/// kb-index's subcommands and the flags each uses.
pub static SPEC: Spec = Spec::new(
    "kb-index",
    USAGE,
    Flags::NAMES,
    &[
        Cmd::new("", "", LIST, "list (the default command)"),
        Cmd::new("list", "", LIST, "library contents per category"),
        Cmd::new(
            "rebuild",
            "",
            &["root", "incremental", "no-commit", "timeout", "format"],
            "regenerate every .index.md, .master-index.md and .ioc.md",
        ),
        Cmd::new("check", "", LOCKED, "index rows vs files; logs .inconsistency.log; exit 1 on problems"),
        Cmd::new("stale", "", STALE, "stale references and provisional experiences (report only)"),
        Cmd::new("status", "", STATUS, "the six audit dimensions; exit 1 when one needs attention"),
        Cmd::new("quick", "", LOCKED, "re-index what changed since .last-maintained"),
        Cmd::new(
            "scheduled",
            "",
            &["root", "force", "no-commit", "timeout", "format"],
            "the 24 h-gated daily maintenance",
        ),
        Cmd::new(
            "commit",
            "full|scheduled",
            &["root", "format"],
            "commit every library change as task-ai(library):maintain ...",
        ),
        Cmd::new("cron install", "", CRON, "add the daily `just maintain scheduled` line to the crontab"),
        Cmd::new(
            "changes",
            "",
            &["root", "notebook", "timeout", "format"],
            "what was written, referenced or archived since the notebook's last read",
        ),
        Cmd::new("cron uninstall", "", &["root", "format"], "remove this library's cron line"),
    ],
);
