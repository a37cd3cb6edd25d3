//! `kb-lastword status` (seed 004 §8 "查看待处理更新"): every pending file
//! with its entry counts by operation, the staging count, and which
//! knowledge bases of `config.yaml` exist.

use super::home::Home;
use super::records::{Base, Pending, Status};
use super::report::Reporter;
use super::{queue, staging};
use crate::error::{Exit, Result};

/// Records one `pending` per pending file and one `status` with totals.
pub fn status(home: &Home, rep: &mut Reporter) -> Result<()> {
    let mut files = 0;
    let mut total = 0;
    for path in home.queues()? {
        let q = queue::read(&path)?;
        files += 1;
        let invalid = q.bad.len() + usize::from(!q.problems.is_empty());
        total += q.file.entries.len();
        if invalid > 0 {
            rep.raise(Exit::Negative);
        }
        rep.record(&Pending::of(home.show(&path), &q.file.entries, invalid))?;
    }
    let staged = staging::list(home)?.len();
    let knowledge_bases: Vec<Base> =
        home.config.bases.iter().map(|(id, file, _)| Base { id, file, exists: home.resolve(file).is_file() }).collect();
    let project: Vec<&String> = home.config.auto_detect.iter().filter(|f| home.project_enabled_file(f)).collect();
    rep.record(&Status {
        file: "(total)",
        pending_files: files,
        entries: total,
        staging: staged,
        knowledge_bases,
        project,
    })?;
    Ok(())
}

impl Home {
    /// Whether a project auto-detect file exists (and project knowledge is on).
    pub fn project_enabled_file(&self, f: &str) -> bool {
        self.config.project_enabled && self.resolve(f).is_file()
    }
}
