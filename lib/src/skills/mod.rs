//! Seed 002's SkillWriter, skill_manage, skill_list and review trigger for
//! the library's skills (`.skills/.candidates|.drafts|.active/<name>/`):
//! every operation is validated before anything is written, runs under the
//! library lock with atomic writes, has the guard judge the resulting skill
//! (a dangerous verdict rolls back to the exact previous bytes), and leaves
//! a changelog line and a git commit.

pub mod action;
pub mod guard_scan;
pub mod list;
pub mod manage;
pub mod nudge;
pub mod permissions;
pub mod promote;
pub mod review;
pub mod stage;
pub mod validate;

pub use manage::{Op, Options, Outcome, Request, Written};
pub use stage::Stage;

/// The guard engine every skill operation scans with: the core rules plus
/// the library's evolved rules (broken rule files come back as messages).
pub fn engine(lib: &crate::Library) -> crate::Result<(crate::guard::Engine, Vec<String>)> {
    let (engine, errors) = crate::guard::library_engine(lib)?;
    Ok((engine, errors.into_iter().map(|e| format!("guard rules {}: {}", e.source, e.message)).collect()))
}
