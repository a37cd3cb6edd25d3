//! Seed 002's `spawnSkillReview`: the background reviewer runs with the
//! skill_manage permissions its agent's settings give (`allowedEditSkills`
//! = the linked skills when optimising them is allowed, `allowCreateNew`),
//! and the skill list is snapshotted before the run so what the reviewer
//! created can be reported (the seed then links those skills to the
//! agent). Here the reviewer is any command: `kb-append skill review
//! [--allow-edit NAME]... [--no-create] -- CMD...` runs it with the rules
//! in its environment, which every `kb-append skill` it starts obeys
//! (narrowed further by its own flags, never widened), then prints one
//! `skill_review` record.

use std::collections::BTreeSet;
use std::process::Command;

use serde::Serialize;

use super::list;
use super::permissions::{Permissions, ENV_ALLOW_CREATE, ENV_ALLOW_EDIT};
use crate::clock;
use crate::error::{Error, Result};
use crate::library::Library;

/// The `skill_review` record (`schemas/skill_review.schema.json`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "skill_review")]
pub struct Review {
    /// The notebook (agent session) reviewed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notebook: Option<String>,
    /// The reviewer's command line.
    pub command: Vec<String>,
    /// Its exit code (absent when a signal ended it).
    pub exit: Option<i32>,
    /// The rules the reviewer ran under.
    #[serde(flatten)]
    pub permissions: Permissions,
    /// Skills before the run.
    pub before: usize,
    /// Skills the reviewer created, by name (sorted).
    pub created: Vec<String>,
    /// Skills gone after the run, by name (sorted).
    pub removed: Vec<String>,
    /// When the run ended.
    pub ts: String,
}

fn snapshot(lib: &Library) -> Result<BTreeSet<String>> {
    Ok(list::names(lib)?.into_iter().map(|(_, n)| n).collect())
}

/// Runs the reviewer `argv` under `perms` (see the module doc).
pub fn review(lib: &Library, perms: &Permissions, notebook: Option<&str>, argv: &[String]) -> Result<Review> {
    let (prog, args) = argv.split_first().ok_or_else(|| Error::usage("skill review needs a command after --"))?;
    if perms.allowed_edit.as_ref().is_some_and(Vec::is_empty) {
        // Narrowed to no skill at all: an empty variable would mean "any".
        return Err(Error::usage(format!("skill review: --allow-edit names no skill that {ENV_ALLOW_EDIT} allows")));
    }
    let before = snapshot(lib)?;
    let mut cmd = Command::new(prog);
    cmd.args(args).env("KB_ROOT", &lib.dir);
    cmd.env(ENV_ALLOW_EDIT, perms.allowed_edit.as_deref().unwrap_or_default().join(","));
    cmd.env(ENV_ALLOW_CREATE, if perms.allow_create { "1" } else { "0" });
    let status = cmd.status().map_err(|e| Error::io(format!("running {prog}"), e))?;
    let after = snapshot(lib)?;
    Ok(Review {
        notebook: notebook.map(str::to_string),
        command: argv.to_vec(),
        exit: status.code(),
        permissions: perms.clone(),
        before: before.len(),
        created: after.difference(&before).cloned().collect(),
        removed: before.difference(&after).cloned().collect(),
        ts: clock::format(clock::now()?),
    })
}
