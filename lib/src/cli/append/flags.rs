//! kb-append's flags as one typed struct, and the flag sets each shared
//! by the subcommands named in `spec.rs` (the flags themselves are
//! declared in the Options section of `append.txt`).

use std::path::PathBuf;

use crate::cli::args::typed_flags;
use crate::out::jsonl::Format;

typed_flags! { super::USAGE;
    /// kb-append's flags: four programs (the writer, skills, sync,
    /// compaction) share one namespace.
    pub struct Flags {
        root: Option<PathBuf> = "root",
        content: Option<String> = "content",
        content_file: Option<PathBuf> = "content-file",
        notebook: Option<String> = "notebook",
        append: bool = "append",
        no_commit: bool = "no-commit",
        allow_risky: Option<String> = "allow-risky",
        allow_empty: bool = "allow-empty",
        justfile: bool = "justfile",
        older_than: Option<String> = "older-than",
        remote: Vec<String> = "remote",
        branch: Option<String> = "branch",
        no_push: bool = "no-push",
        max_commit_files: Option<usize> = "max-commit-files",
        max_commit_bytes: Option<u64> = "max-commit-bytes",
        max_file_bytes: Option<u64> = "max-file-bytes",
        max_deletes: Option<usize> = "max-deletes",
        accept_deletes: bool = "accept-deletes",
        merge_outside: bool = "merge-outside",
        min_interval: Option<String> = "min-interval",
        prune_idle: Option<String> = "prune-idle",
        max_refs: Option<usize> = "max-refs",
        keep: Option<String> = "keep",
        max_bytes: Option<usize> = "max-bytes",
        timeout: Option<String> = "timeout",
        stage: Option<String> = "stage",
        old_string: Option<String> = "old-string",
        new_string: Option<String> = "new-string",
        replace_all: bool = "replace-all",
        file_path: Option<String> = "file-path",
        to: Option<String> = "to",
        format: Option<Format> = "format",
        calls: Option<u64> = "calls",
        interval: Option<u64> = "interval",
        allow_edit: Vec<String> = "allow-edit",
        no_create: bool = "no-create",
        cites: Vec<String> = "cites",
        question: Option<String> = "question",
        topic: Option<String> = "topic",
        source: Vec<String> = "source",
        no_registries: bool = "no-registries",
    }
}

pub const WRITE: &[&str] = &[
    "root",
    "content",
    "content-file",
    "notebook",
    "append",
    "no-commit",
    "allow-risky",
    "allow-empty",
    "max-bytes",
    "timeout",
    "format",
];
pub const CONTENT: &[&str] = &[
    "root",
    "content",
    "content-file",
    "notebook",
    "no-commit",
    "max-bytes",
    "timeout",
    "allow-edit",
    "no-create",
    "format",
];
pub const CREATE: &[&str] = &[
    "root",
    "stage",
    "content",
    "content-file",
    "notebook",
    "no-commit",
    "max-bytes",
    "timeout",
    "allow-edit",
    "no-create",
    "format",
];
pub const FILE: &[&str] =
    &["root", "file-path", "content", "content-file", "notebook", "no-commit", "max-bytes", "timeout", "format"];
pub const PATCH: &[&str] = &[
    "root",
    "old-string",
    "new-string",
    "file-path",
    "replace-all",
    "notebook",
    "no-commit",
    "timeout",
    "allow-edit",
    "no-create",
    "format",
];
pub const REVIEW: &[&str] = &["root", "allow-edit", "no-create", "notebook", "format"];
pub const PROMOTE_ANSWER: &[&str] = &[
    "root",
    "cites",
    "question",
    "topic",
    "source",
    "no-registries",
    "content",
    "content-file",
    "notebook",
    "no-commit",
    "allow-risky",
    "max-bytes",
    "timeout",
    "format",
];
pub const LOCKED: &[&str] = &["root", "notebook", "no-commit", "timeout", "format"];
pub const BATCH: &[&str] = &["root", "no-commit", "max-bytes", "timeout", "format"];
pub const REMOVE: &[&str] = &["root", "file-path", "notebook", "no-commit", "timeout", "format"];
pub const PROMOTE: &[&str] = &["root", "to", "notebook", "no-commit", "timeout", "format"];
pub const NUDGE: &[&str] = &["root", "calls", "interval", "notebook", "format"];
pub const SYNC: &[&str] = &[
    "root",
    "remote",
    "branch",
    "no-push",
    "timeout",
    "accept-deletes",
    "merge-outside",
    "min-interval",
    "prune-idle",
    "max-refs",
    "max-deletes",
    "max-commit-files",
    "max-commit-bytes",
    "max-file-bytes",
    "format",
];
