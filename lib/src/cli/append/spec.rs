//! kb-append's subcommand table: which flags each subcommand takes (the
//! shared sets are in `flags.rs`, the flags themselves are read from the
//! Options section of `append.txt`).

use super::super::args::{Cmd, Spec};
use super::flags::*;
use super::USAGE;

/// kb-append's subcommands and the flags each uses.
pub static SPEC: Spec = Spec::new(
    "kb-append",
    USAGE,
    super::Flags::NAMES,
    &[
        Cmd::new("", "", &["justfile"], "print the justfile's path"),
        Cmd::new("init", "", &["root", "no-commit", "format"], "create the library layout"),
        Cmd::new("write", "PATH", WRITE, "write one document (content from --content, --content-file or stdin)"),
        Cmd::new("batch", "", BATCH, "write the JSONL requests on stdin under one lock and one commit"),
        Cmd::new("event", "referenced|replan|accept PATH", LOCKED, "log a changelog event for a document"),
        Cmd::new(
            "compact",
            "",
            &["root", "older-than", "no-commit", "timeout", "format"],
            "archive old changelog lines",
        ),
        Cmd::new(
            "promote-answer",
            "PATH",
            PROMOTE_ANSWER,
            "file an answer into the local library with its provenance (kb-query's --promote-to-library)",
        ),
        Cmd::new("skill create", "NAME", CREATE, "create a skill"),
        Cmd::new("skill edit", "NAME", CONTENT, "replace a skill's SKILL.md"),
        Cmd::new("skill patch", "NAME", PATCH, "replace text in a skill file"),
        Cmd::new("skill delete", "NAME", LOCKED, "delete a skill"),
        Cmd::new("skill write-file", "NAME", FILE, "write a supporting file"),
        Cmd::new("skill remove-file", "NAME", REMOVE, "remove a supporting file"),
        Cmd::new("skill promote", "NAME", PROMOTE, "move a skill to drafts or active"),
        Cmd::new("skill list", "", &["root", "format"], "the skills with stage, trust tier and verdict"),
        Cmd::new("skill nudge", "", NUDGE, "count tool calls; review_due when a skill review is due"),
        Cmd::new(
            "skill review",
            "-- CMD [ARG...]",
            REVIEW,
            "run a skill reviewer under allowedEditSkills/allowCreateNew; report the skills it created",
        ),
        Cmd::new("sync", "", SYNC, "commit, fetch, merge and push with the git remote"),
        Cmd::new("resolve", "PATH", &["root", "keep", "no-commit", "timeout", "format"], "end a kept conflict"),
        Cmd::new(
            "quarantine",
            "",
            &["root", "format"],
            "what sync kept out of the library: dangerous, or waiting for review",
        ),
        Cmd::new(
            "quarantine release",
            "PATH...",
            &["root", "no-commit", "timeout", "format"],
            "let a peer's held version in",
        ),
        Cmd::new(
            "quarantine drop",
            "PATH...",
            &["root", "no-commit", "timeout", "format"],
            "keep this machine's version of a held path",
        ),
        Cmd::new("merge-log", "BASE OURS THEIRS", &[], "git merge driver for logs"),
        Cmd::new("merge-derived", "BASE OURS THEIRS PATH", &[], "git merge driver for derived files"),
        Cmd::new("completions", "bash", &[], "shell completions for the nine binaries"),
        Cmd::new("man", "BIN", &[], "the man page (roff) of one of the nine binaries"),
        Cmd::new("skill", "[ACTION NAME...]", &[], "manage skills"),
    ],
);
