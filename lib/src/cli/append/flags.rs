//! kb-append's flag sets, each shared by the subcommands named in
//! `spec.rs` (the flags themselves are read from the Options section of
//! `append.txt`).

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
];
pub const CONTENT: &[&str] =
    &["root", "content", "content-file", "notebook", "no-commit", "max-bytes", "timeout", "allow-edit", "no-create"];
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
];
pub const FILE: &[&str] =
    &["root", "file-path", "content", "content-file", "notebook", "no-commit", "max-bytes", "timeout"];
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
];
pub const REVIEW: &[&str] = &["root", "allow-edit", "no-create", "notebook"];
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
];
pub const LOCKED: &[&str] = &["root", "notebook", "no-commit", "timeout"];
pub const BATCH: &[&str] = &["root", "no-commit", "max-bytes", "timeout"];
pub const REMOVE: &[&str] = &["root", "file-path", "notebook", "no-commit", "timeout"];
pub const PROMOTE: &[&str] = &["root", "to", "notebook", "no-commit", "timeout"];
pub const NUDGE: &[&str] = &["root", "calls", "interval", "notebook"];
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
];
