//! `kb-lastword status` (seed 004 §8 "查看待处理更新"): every pending file
//! with its entry counts by operation, the staging count, and which
//! knowledge bases of `config.yaml` exist.

use serde_json::{json, Map, Value};

use super::delta::{Op, Target};
use super::home::Home;
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
        let mut m = Map::new();
        m.insert("record".into(), json!("pending"));
        m.insert("file".into(), json!(home.show(&path)));
        m.insert("entries".into(), json!(q.file.entries.len()));
        for op in Op::ALL {
            m.insert(op.name().into(), json!(q.file.entries.iter().filter(|e| e.op == op).count()));
        }
        m.insert("url".into(), json!(q.file.entries.iter().filter(|e| matches!(e.target, Target::Url(_))).count()));
        let invalid = q.bad.len() + usize::from(!q.problems.is_empty());
        m.insert("invalid".into(), json!(invalid));
        total += q.file.entries.len();
        if invalid > 0 {
            rep.raise(Exit::Negative);
        }
        rep.record(&Value::Object(m))?;
    }
    let staged = staging::list(home)?.len();
    let bases: Vec<Value> = home
        .config
        .bases
        .iter()
        .map(|(id, f, _)| json!({"id": id, "file": f, "exists": home.resolve(f).is_file()}))
        .collect();
    let project: Vec<&String> = home.config.auto_detect.iter().filter(|f| home.project_enabled_file(f)).collect();
    rep.record(&json!({"record": "status", "file": "(total)", "pending_files": files, "entries": total,
        "staging": staged, "knowledge_bases": bases, "project": project}))?;
    Ok(())
}

impl Home {
    /// Whether a project auto-detect file exists (and project knowledge is on).
    pub fn project_enabled_file(&self, f: &str) -> bool {
        self.config.project_enabled && self.resolve(f).is_file()
    }
}
