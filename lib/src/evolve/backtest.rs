//! Seed 000 evolve step 4's "historical backtest": every file the library
//! holds (documents, skills, archives; not the rule and proposal files
//! themselves, caches or generated indexes) and any `--corpus DIR` is
//! scanned with the rules in force and with the new rules; what a new rule
//! flags in content that was safe before is its false-positive evidence.

use std::collections::BTreeMap;
use std::path::Path;

use super::proposal::{Backtest, Hit};
use crate::error::{Error, Result};
use crate::fs::walk;
use crate::guard::rules::Rule;
use crate::guard::scan::scan_targets;
use crate::guard::target::{self, Target};
use crate::guard::{Engine, Verdict};
use crate::library::kind;
use crate::library::Library;

/// Most newly flagged lines listed per rule.
pub const MAX_HITS: usize = 20;

/// Library directories the backtest leaves out: rules and proposals (they
/// hold the attack samples on purpose), git, caches, conflict copies.
pub const SKIPPED_DIRS: [&str; 5] = [".git", ".cache", ".core-rule-proposals", ".evolving-rules", ".conflicts"];

/// What the backtest scans, judged once by the rules in force.
pub struct Corpus {
    targets: Vec<Target>,
    safe: Vec<bool>,
    /// Extra directories, as given.
    pub dirs: Vec<String>,
}

impl Corpus {
    /// The library's files (each skill directory as one target) plus the
    /// corpus directories, with the verdict of the rules in force.
    pub fn load(lib: Option<&Library>, dirs: &[String], current: &Engine) -> Result<Corpus> {
        let mut targets = Vec::new();
        if let Some(lib) = lib {
            targets.extend(library_targets(lib));
        }
        for d in dirs {
            if !Path::new(d).is_dir() {
                return Err(Error::msg(format!("--corpus {d}: not a directory")));
            }
            for t in target::collect(std::slice::from_ref(d)) {
                targets.push(t.map_err(|e| Error::msg(format!("--corpus {}: {}", e.path, e.message)))?);
            }
        }
        let before = scan_targets(current, &targets, &[], None, crate::clock::now()?);
        let safe = before.iter().map(|r| r.verdict.verdict == Verdict::Safe).collect();
        Ok(Corpus { targets, safe, dirs: dirs.to_vec() })
    }

    /// Targets scanned.
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    /// Whether nothing is scanned.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Backtests `rules` (ids distinct, patterns valid) in one pass: the
    /// result per rule id.
    pub fn run(&self, rules: &[Rule]) -> Result<BTreeMap<String, Backtest>> {
        let engine = Engine::new(rules.to_vec())?;
        let after = scan_targets(&engine, &self.targets, &[], None, crate::clock::now()?);
        let safe_before = self.safe.iter().filter(|s| **s).count();
        let mut out = BTreeMap::new();
        for r in rules {
            let mut bt =
                Backtest { files: self.targets.len(), safe_before, corpus: self.dirs.clone(), ..Backtest::default() };
            for (res, safe) in after.iter().zip(&self.safe) {
                let hits: Vec<_> = res.findings.iter().filter(|f| f.rule == r.id && f.counts()).collect();
                if hits.is_empty() {
                    continue;
                }
                bt.flagged += 1;
                if *safe {
                    bt.newly_flagged += 1;
                    for f in hits {
                        if bt.hits.len() < MAX_HITS {
                            bt.hits.push(Hit { path: f.path.clone(), line: f.line, matched: f.matched.clone() });
                        }
                    }
                }
            }
            bt.fp_rate =
                if safe_before == 0 { 0.0 } else { super::round4(bt.newly_flagged as f64 / safe_before as f64) };
            out.insert(r.id.clone(), bt);
        }
        Ok(out)
    }
}

/// The backtest of one rule file's `rules` against the rules in force
/// (`in_force`) without them: a file already in force is judged against
/// the rules without it. What `kb-guard rules validate FILE` reports, and
/// what a peer's rule file must pass before it takes effect
/// (`super::peer`).
pub fn rule_file(
    lib: Option<&Library>,
    corpus: &[String],
    in_force: &Engine,
    rules: &[Rule],
) -> Result<BTreeMap<String, Backtest>> {
    let others: Vec<Rule> = in_force.rules().iter().filter(|r| !rules.iter().any(|n| n.id == r.id)).cloned().collect();
    let before = Engine::new(others)?;
    Corpus::load(lib, corpus, &before)?.run(rules)
}

/// Every file of the library outside [`SKIPPED_DIRS`] and the generated
/// or internal files, each skill directory as one target; paths in the
/// targets are library-relative.
pub fn library_targets(lib: &Library) -> Vec<Target> {
    let base = format!("{}/", lib.dir.display());
    let mut paths = Vec::new();
    let skipped = |depth: usize, name: &str| depth == 1 && SKIPPED_DIRS.contains(&name);
    let is_skill = |dir: &Path| dir.join("SKILL.md").is_file();
    for it in walk::entries(&lib.dir, |d| !skipped(d.depth, d.name) && !is_skill(d.path)) {
        if it.depth == 0 || it.error.is_some() {
            continue;
        }
        if it.kind == walk::Kind::Dir {
            if !it.entered && !skipped(it.depth, it.name()) && is_skill(&it.path) {
                paths.push(it.path.display().to_string());
            }
            continue;
        }
        let rel = it.path.strip_prefix(&lib.dir).map(|r| r.to_string_lossy().replace('\\', "/"));
        if rel.is_ok_and(|r| kind::kind(&r).is_content()) {
            paths.push(it.path.display().to_string());
        }
    }
    let rel = |s: &str| s.strip_prefix(&base).unwrap_or(s).to_string();
    // Paths the walk just listed; one that vanished since is not scanned.
    target::collect(&paths)
        .into_iter()
        .filter_map(|t| t.ok())
        .map(|mut t| {
            t.display = rel(&t.display);
            for e in &mut t.entries {
                e.display = rel(&e.display);
            }
            t
        })
        .collect()
}
