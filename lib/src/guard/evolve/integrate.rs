//! Seed 000 evolve step 6, INTEGRATE: an approved Extended proposal becomes
//! its own hot-loaded file `.evolving-rules/security/active/<rule-id>.yaml`;
//! an approved Core proposal is appended to the library's core rule file
//! `.evolving-rules/security/core.yaml`, which every scanner of the library
//! loads after the compiled-in core. The new file is checked as the hot
//! loader checks it before it is written; after the atomic write the rule
//! set is loaded again and must hold every rule it held before plus the
//! new one with no new load error — otherwise the previous bytes come
//! back, so a failed integration never weakens the rules in force.

use std::collections::BTreeSet;
use std::fs;

use serde_json::{json, Value};

use super::audit::{self, Line};
use super::proposal::{self, Integrated, Layer, Loaded, Status};
use super::select::{self, About, Item, Selection};
use super::validate::into_rec;
use super::{Rec, ACTIVE_DIR, CORE_FILE};
use crate::clock;
use crate::doc::yaml;
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::guard::rules::{self, Rule};
use crate::library::git;
use crate::library::Library;
use crate::lock;

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

/// Where proposal `p`'s rule goes, and the file's text with it.
fn target(lib: &Library, l: &Loaded, rule: Rule) -> Result<(String, String)> {
    let p = &l.proposal;
    match p.layer {
        Layer::Extended => {
            let rel = format!("{ACTIVE_DIR}/{}.yaml", p.rule_id);
            if lib.path(&rel).exists() {
                return Err(Error::msg(format!("{rel} already exists")));
            }
            let header =
                format!("# kb-guard extended rule from {} (source {}): kb-guard rules integrate\n", p.id, p.source);
            Ok((rel, render(&[rule], &header)?))
        }
        Layer::Core => {
            let path = lib.path(CORE_FILE);
            let mut current = match fs::read_to_string(&path) {
                Ok(t) => rules::parse(&t, CORE_FILE)
                    .map_err(|e| Error::msg(format!("the library core rule file is broken; fix it first: {e}")))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(Error::io(format!("reading {CORE_FILE}"), e)),
            };
            current.push(rule);
            let header =
                "# kb-guard library core rules: approved Core proposals, appended by kb-guard rules integrate\n";
            Ok((CORE_FILE.to_string(), render(&current, header)?))
        }
    }
}

/// Writes one proposal's rule; on any doubt the previous bytes come back.
fn integrate_one(lib: &Library, l: &Loaded) -> Result<String> {
    let rule = l.proposal.rule().ok_or_else(|| Error::msg(format!("{} has no pattern or category", l.proposal.id)))?;
    let id = rule.id.clone();
    let (rel, text) = target(lib, l, rule)?;
    let check = crate::guard::engine::validate(&text, &rel);
    if !check.valid {
        return Err(Error::msg(format!("{rel} would not load: {}", check.problems.join("; "))));
    }
    let (before, before_errors) = super::engine(lib)?;
    let had: BTreeSet<String> = before.rules().iter().map(|r| r.id.clone()).collect();
    let full = lib.path(&rel);
    // The bytes to restore on a failed check; unreadable is an error (a
    // rollback would delete the file instead of restoring it).
    let old = crate::fs::read::optional(&full)?;
    atomic::write(&full, text.as_bytes())?;
    let verdict = super::engine(lib).map(|(after, errors)| {
        let has: BTreeSet<String> = after.rules().iter().map(|r| r.id.clone()).collect();
        let lost: Vec<&String> = had.difference(&has).collect();
        let new_errors: Vec<String> = errors
            .iter()
            .filter(|e| !before_errors.iter().any(|b| b.source == e.source && b.message == e.message))
            .map(|e| format!("{}: {}", e.source, e.message))
            .collect();
        if !has.contains(&id) {
            Err(format!("rule {id} is not in force after the write"))
        } else if !lost.is_empty() {
            Err(format!("the write would drop rules in force: {lost:?}"))
        } else if !new_errors.is_empty() {
            Err(new_errors.join("; "))
        } else {
            Ok(())
        }
    });
    let problem = match verdict {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e),
        Err(e) => Some(e.to_string()),
    };
    if let Some(e) = problem {
        match old {
            Some(b) => atomic::write(&full, &b)?,
            None => {
                fs::remove_file(&full).map_err(|err| Error::io(format!("rolling back {rel}"), err))?;
            }
        }
        return Err(Error::msg(format!("{}: integration rolled back: {e}", l.proposal.id)));
    }
    Ok(rel)
}

/// INTEGRATE over a selection (default: every approved proposal).
pub fn integrate(lib: &Library, sel: Selection, commit: bool, lock_opts: &lock::Options) -> Result<Vec<Rec>> {
    let ts = clock::format(clock::now()?);
    lock::with_lock(lib, lock_opts, || {
        let items = select::resolve(lib, sel, &[Status::Approved]);
        let mut out = Vec::new();
        let mut audits = Vec::new();
        let mut paths = Vec::new();
        for item in items {
            let Item::Work(mut l) = item else {
                out.push(into_rec(item));
                continue;
            };
            match integrate_one(lib, &l) {
                Ok(rel) => {
                    l.proposal.status = Status::Integrated;
                    l.proposal.integrated = Some(Integrated { ts: ts.clone(), file: rel.clone() });
                    proposal::save(lib, &l)?;
                    audits.push(Line::new(&ts, "integrate", Some(&l.proposal.id), "integrated", json!({"file": rel})));
                    paths.push(l.path.clone());
                    paths.push(rel);
                    out.push(into_rec(Item::Work(l)));
                }
                Err(e) => {
                    audits.push(Line::new(
                        &ts,
                        "integrate",
                        Some(&l.proposal.id),
                        "approved",
                        json!({"error": e.to_string()}),
                    ));
                    out.push(Rec::error_about(e.to_string(), &About { proposal: &l.proposal.id }));
                }
            }
        }
        audit::append(lib, &audits)?;
        if commit && !paths.is_empty() {
            paths.push(audit::FILE.into());
            paths.sort();
            paths.dedup();
            git::commit(lib, &paths, &format!("task-ai(library):evolve integrate {} rules", audits.len()))?;
        }
        Ok(out)
    })
}
