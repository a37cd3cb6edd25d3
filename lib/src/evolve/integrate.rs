//! Seed 000 evolve step 6, INTEGRATE: an approved Extended proposal becomes
//! its own hot-loaded file `.evolving-rules/security/active/<rule-id>.yaml`;
//! an approved Core proposal is appended to the library's core rule file
//! `.evolving-rules/security/core.yaml`, which every scanner of the library
//! loads after the compiled-in core. Each new file is checked as the hot
//! loader checks it, then the rule set is loaded as it will be with it
//! (`Engine::load_with`, before anything is written) and must hold every
//! rule it held before plus the new one with no new load error — otherwise
//! the proposal is not integrated, so a failed integration never weakens
//! the rules in force. The files and the proposals marked `integrated`
//! then land as one journaled group (`super::journal`), which the next run
//! finishes if a kill stops this one.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use serde_json::{json, Value};

use super::audit::Line;
use super::proposal::{self, Integrated, Layer, Loaded, Status};
use super::select::{self, About, Item, Selection};
use super::validate::into_rec;
use super::{Rec, ACTIVE_DIR, CORE_FILE};
use crate::clock;
use crate::doc::yaml;
use crate::error::{Error, Result};
use crate::guard::engine::Engine;
use crate::guard::rules::{self, Rule};
use crate::library::Library;
use crate::lock;
use crate::write::integrate::Group;

/// The rule file text: a header, then `rules:` without loader-only fields.
pub fn render(rules: &[Rule], header: &str) -> Result<String> {
    let list: Vec<Value> = rules
        .iter()
        .map(|r| {
            let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
            if let Value::Object(m) = &mut v {
                m.remove("source");
            }
            v
        })
        .collect();
    let body = yaml::to_string(&json!({ "rules": list }))?;
    Ok(format!("{header}{}", body.trim_start_matches("---\n")))
}

/// The rule files this run has planned so far: their texts by path.
pub type Planned = HashMap<PathBuf, String>;

/// Where proposal `p`'s rule goes, and the file's text with it (on top of
/// what this run already planned for that file).
fn target(lib: &Library, l: &Loaded, rule: Rule, planned: &Planned) -> Result<(String, String)> {
    let p = &l.proposal;
    match p.layer {
        Layer::Extended => {
            let rel = format!("{ACTIVE_DIR}/{}.yaml", p.rule_id);
            if lib.path(&rel).exists() || planned.contains_key(&lib.path(&rel)) {
                return Err(Error::msg(format!("{rel} already exists")));
            }
            let header =
                format!("# kb-guard extended rule from {} (source {}): kb-guard rules integrate\n", p.id, p.source);
            Ok((rel, render(&[rule], &header)?))
        }
        Layer::Core => {
            let path = lib.path(CORE_FILE);
            // Never through a link, never blocking on a FIFO.
            let text = match planned.get(&path) {
                Some(t) => Some(t.clone()),
                None => rules::read_library(&path)?,
            };
            let mut current = match text {
                Some(t) => rules::parse(&t, CORE_FILE)
                    .map_err(|e| Error::msg(format!("the library core rule file is broken; fix it first: {e}")))?,
                None => Vec::new(),
            };
            current.push(rule);
            let header =
                "# kb-guard library core rules: approved Core proposals, appended by kb-guard rules integrate\n";
            Ok((CORE_FILE.to_string(), render(&current, header)?))
        }
    }
}

/// Plans one proposal's rule: the rule file and its text, checked as the
/// rule set will load with it (on top of `planned`); nothing is written.
fn plan_one(lib: &Library, l: &Loaded, planned: &Planned) -> Result<(String, String)> {
    let rule = l.proposal.rule().ok_or_else(|| Error::msg(format!("{} has no pattern or category", l.proposal.id)))?;
    let id = rule.id.clone();
    let (rel, text) = target(lib, l, rule, planned)?;
    let check = crate::guard::engine::validate(&text, &rel);
    if !check.valid {
        return Err(Error::msg(format!("{rel} would not load: {}", check.problems.join("; "))));
    }
    match rule_set_check(lib, planned, &rel, &text, std::slice::from_ref(&id))? {
        Some(e) => Err(Error::msg(format!("{}: not integrated: {e}", l.proposal.id))),
        None => Ok((rel, text)),
    }
}

/// What is wrong with the rule set loaded as it will be once the rule
/// file `rel` holds `text` (on top of `planned`), or `None`: it must hold
/// every rule it held before plus each of `ids`, with no new load error,
/// so a rule file never weakens the rules in force. INTEGRATE checks each
/// file before it writes it; a peer's rule file passes the same check
/// before it takes effect (`super::peer`).
pub fn rule_set_check(
    lib: &Library,
    planned: &Planned,
    rel: &str,
    text: &str,
    ids: &[String],
) -> Result<Option<String>> {
    let dir = lib.path(crate::library::GUARD_RULES);
    let (before, before_errors) = Engine::load_with(Some(&dir), planned)?;
    let had: BTreeSet<String> = before.rules().iter().map(|r| r.id.clone()).collect();
    let mut with = planned.clone();
    with.insert(lib.path(rel), text.to_string());
    let verdict = Engine::load_with(Some(&dir), &with).map(|(after, errors)| {
        let has: BTreeSet<String> = after.rules().iter().map(|r| r.id.clone()).collect();
        let lost: Vec<&String> = had.difference(&has).collect();
        let new_errors: Vec<String> = errors
            .iter()
            .filter(|e| !before_errors.iter().any(|b| b.source == e.source && b.message == e.message))
            .map(|e| format!("{}: {}", e.source, e.message))
            .collect();
        if let Some(id) = ids.iter().find(|id| !has.contains(*id)) {
            Err(format!("rule {id} would not be in force after the write"))
        } else if !lost.is_empty() {
            Err(format!("the write would drop rules in force: {lost:?}"))
        } else if !new_errors.is_empty() {
            Err(new_errors.join("; "))
        } else {
            Ok(())
        }
    });
    Ok(match verdict {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e),
        Err(e) => Some(e.to_string()),
    })
}

/// INTEGRATE over a selection (default: every approved proposal). A run
/// a kill left is finished first (see `super::journal`).
pub fn integrate(lib: &Library, sel: Selection, commit: bool, lock_opts: &lock::Options) -> Result<Vec<Rec>> {
    let ts = clock::format(clock::now()?);
    lock::with_lock(lib, lock_opts, || {
        crate::write::recover_noted(lib)?;
        let items = select::resolve(lib, sel, &[Status::Approved]);
        let mut out = Vec::new();
        let mut planned = Planned::new();
        let mut rule_files: Vec<String> = Vec::new();
        let mut proposals: Vec<(String, String)> = Vec::new();
        let mut audits: Vec<(Line, Vec<String>)> = Vec::new();
        for item in items {
            let Item::Work(mut l) = item else {
                out.push(into_rec(item));
                continue;
            };
            match plan_one(lib, &l, &planned) {
                Ok((rel, text)) => {
                    planned.insert(lib.path(&rel), text);
                    if !rule_files.contains(&rel) {
                        rule_files.push(rel.clone());
                    }
                    l.proposal.status = Status::Integrated;
                    l.proposal.integrated = Some(Integrated { ts: ts.clone(), file: rel.clone() });
                    proposals.push((l.path.clone(), proposal::render(&l)?));
                    let line = Line::new(&ts, "integrate", Some(&l.proposal.id), "integrated", json!({"file": rel}));
                    audits.push((line, vec![rel, l.path.clone()]));
                    out.push(into_rec(Item::Work(l)));
                }
                Err(e) => {
                    let detail = json!({"error": e.to_string()});
                    audits.push((Line::new(&ts, "integrate", Some(&l.proposal.id), "approved", detail), Vec::new()));
                    out.push(Rec::error_about(e.to_string(), &About { proposal: &l.proposal.id }));
                }
            }
        }
        // The rule files first, then the proposals that say they are in force.
        let mut group = Group::default();
        let staged = (|| {
            for rel in &rule_files {
                group.stage(lib, rel, &planned[&lib.path(rel)])?;
            }
            for (rel, text) in &proposals {
                group.stage(lib, rel, text)?;
            }
            for (line, files) in &audits {
                group.owe(line, files.clone())?;
            }
            Ok(())
        })();
        if let Err(e) = staged {
            group.discard();
            return Err(e);
        }
        let integrated = proposals.len();
        let message =
            (commit && integrated > 0).then(|| format!("task-ai(library):evolve integrate {} rules", audits.len()));
        group.land(lib, message)?;
        Ok(out)
    })
}
