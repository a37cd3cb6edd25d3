//! Seed 000's skill pipeline moves: `kb-append skill promote NAME --to
//! drafts|active` moves a skill forward (candidates → drafts → active),
//! sets its trust tier to the stage's (T2, T3) unless it already holds a
//! higher one, and refuses a skill the guard judges dangerous. Journaled
//! like a batch (kb::write::journal): the new SKILL.md is staged, the
//! journal names the directory move and every file, then the tier lands
//! and the directory is renamed (both atomic), then the changelog line,
//! indexes and commit. A kill before the journal changed nothing; one
//! after it is finished by the next writer (the move completed, its line,
//! indexes and commit made once).

use std::fs;

use super::guard_scan;
use super::manage::{Options, Written};
use super::stage::{self, Stage};
use crate::clock;
use crate::doc::{digest, frontmatter};
use crate::error::{Error, Result};
use crate::fs::atomic;
use crate::fs::crash::{self, Step};
use crate::guard::Verdict;
use crate::library::changelog::Event;
use crate::library::entry::Entry;
use crate::library::relations;
use crate::library::Library;
use crate::lock;
use crate::write;

/// Moves skill `name` to stage `to`. Returns the `skill_write` record
/// (action `promote`), evolved-rule load errors, and a commit error.
pub fn promote(
    lib: &Library,
    name: &str,
    to: Stage,
    notebook: Option<&str>,
    opts: &Options,
) -> Result<(Written, Vec<String>, Option<String>)> {
    super::validate::name(name).map_err(Error::msg)?;
    if to == Stage::Candidates {
        return Err(Error::usage("a skill is promoted to drafts or active; candidates is where skills start"));
    }
    let (engine, guard_errors) = super::engine(lib)?;
    lock::with_lock(lib, &opts.lock, || {
        // A killed promote of this skill to this stage, which the recovery
        // finishes: rerunning it reports that promote (exit 0), not "is in".
        let killed = write::journal::read(lib)?.filter(|j| {
            j.moves.iter().any(|m| m.to == stage::skill_dir(to, name))
                && j.events.iter().any(|e| e.action.as_deref() == Some("promote"))
        });
        let recovered = crate::write::recover(lib)?;
        let finished = killed.zip(recovered.clone());
        crate::write::journal::note(recovered);
        let from = stage::require(lib, name)?;
        if let Some((j, r)) = finished.filter(|_| from == to) {
            return finished_promote(lib, &engine, name, to, &j, &r).map(|(w, e)| (w, guard_errors.clone(), e));
        }
        if from >= to {
            return Err(Error::msg(format!(
                "skill '{name}' is in {from}; promotion moves forward only (candidates -> drafts -> active)"
            )));
        }
        let old_dir = stage::skill_dir(from, name);
        let new_dir = stage::skill_dir(to, name);
        lib.check_inside(&old_dir)?;
        let judged = guard_scan::skill(lib, &engine, &old_dir)?;
        if judged.verdict.verdict == Verdict::Dangerous {
            let report = crate::guard::Report { verdict: Verdict::Dangerous, findings: judged.findings };
            return Err(Error::msg(format!("refused: skill '{name}' cannot be promoted ({})", report.reason())));
        }
        let old_md = format!("{old_dir}/SKILL.md");
        let text = fs::read_to_string(lib.path(&old_md)).map_err(|e| Error::io(format!("reading {old_md}"), e))?;
        let fm = frontmatter::parse(&text);
        let current = frontmatter::text(&fm.fields, "trust_tier");
        let tier = match current.as_deref() {
            Some(t) if super::validate::TIERS.contains(&t) && t > to.tier() => t.to_string(),
            _ => to.tier().to_string(),
        };
        let new_text = frontmatter::set_field(&text, "trust_tier", &tier);
        let files: Vec<String> = super::manage::files_under(&lib.path(&old_dir))?.into_iter().map(|e| e.rel).collect();
        // Step 1: the new SKILL.md staged beside the old one (it moves
        // with the directory if recovery has to finish the move).
        let staged = match &new_text {
            Some(new) => {
                let s = atomic::stage(&lib.path(&old_md), new.as_bytes(), true)?;
                crash::at(Step::WriteTemp);
                Some(s)
            }
            None => None,
        };
        let text = new_text.unwrap_or(text);
        let new_md = format!("{new_dir}/SKILL.md");
        let ts = clock::format(clock::now()?);
        let event = Event {
            ts: ts.clone(),
            event: "skill".into(),
            path: new_md.clone(),
            action: Some("promote".into()),
            notebook: notebook.map(str::to_string),
            category: Some("skill".into()),
            topic: Some(name.to_string()),
            reason: Some(format!("{from} -> {to}")),
            ..Event::default()
        };
        // Step 2: the journal names the move and every file: each leaves
        // the old stage (a removal) and arrives in the new one with its
        // bytes (SKILL.md with the tier), so a kill from here on is
        // finished by the next writer (see kb::write::journal::Move).
        let staged_rel = staged.as_ref().map(|s| super::manage::rel_to(lib, &s.tmp));
        let journaled = (|| {
            let mut j = write::journal::new(lib, opts.commit)?;
            for f in &files {
                let sha = if f == "SKILL.md" {
                    digest::sha256_hex(text.as_bytes())
                } else {
                    let p = format!("{old_dir}/{f}");
                    digest::sha256_hex(&fs::read(lib.path(&p)).map_err(|e| Error::io(format!("reading {p}"), e))?)
                };
                let tmp = if f == "SKILL.md" { staged_rel.clone().unwrap_or_default() } else { String::new() };
                j.files.push(write::journal::Planned {
                    path: format!("{new_dir}/{f}"),
                    tmp,
                    sha256: sha,
                    replay: None,
                });
                j.files.push(write::journal::Planned {
                    path: format!("{old_dir}/{f}"),
                    tmp: String::new(),
                    sha256: String::new(),
                    replay: None,
                });
            }
            j.events.push(event.clone());
            j.moves.push(write::journal::Move { from: old_dir.clone(), to: new_dir.clone() });
            fs::create_dir_all(lib.path(&to.dir())).map_err(|e| Error::io(format!("creating {}", to.dir()), e))?;
            write::journal::begin(lib, &j)
        })();
        if let Err(e) = journaled {
            if let Some(s) = &staged {
                let _ = fs::remove_file(&s.tmp);
            }
            return Err(e);
        }
        // Step 3: the tier lands in the old place, then the directory moves.
        if let Some(s) = staged {
            atomic::put_in_place(std::slice::from_ref(&s), || crash::at(Step::Rename))?;
        }
        atomic::rename_onto(&lib.path(&old_dir), &lib.path(&new_dir), true)
            .map_err(|e| Error::io(format!("moving {old_dir} to {new_dir}"), e))?;
        crash::at(Step::Rename);
        crash::at(Step::Renamed);
        // Step 4: as a batch's, the changelog line, indexes, relations and commit.
        let entry = Entry::from_text(&new_md, &text);
        let edges = entry.as_ref().map(|e| relations::doc_edges(e, &text)).unwrap_or_default();
        let touched: Vec<String> =
            files.iter().flat_map(|f| [format!("{old_dir}/{f}"), format!("{new_dir}/{f}")]).collect();
        let message = format!("task-ai(library):skill promote {name} {from}->{to}");
        let (committed, commit_error) = write::record(
            lib,
            std::slice::from_ref(&event),
            &[(old_md, None), (new_md.clone(), entry)],
            vec![(format!("{old_dir}/SKILL.md"), Vec::new()), (new_md.clone(), edges)],
            touched,
            opts.commit.then_some(message.as_str()),
        )?;
        write::journal::end(lib)?;
        let written = written(name, from, to, new_md, tier, &judged, committed, ts);
        Ok((written, guard_errors.clone(), commit_error))
    })
}

/// The `skill_write` record of a promote.
#[allow(clippy::too_many_arguments)]
fn written(
    name: &str,
    from: Stage,
    to: Stage,
    path: String,
    tier: String,
    judged: &crate::guard::scan::TargetResult,
    committed: bool,
    ts: String,
) -> Written {
    let v = &judged.verdict;
    let warning = (v.verdict != Verdict::Safe)
        .then(|| crate::guard::Report { verdict: v.verdict, findings: judged.findings.clone() }.reason());
    Written {
        name: name.to_string(),
        action: "promote",
        stage: to.as_str(),
        path,
        bytes: None,
        sha256: None,
        replaced: None,
        from: Some(from.as_str()),
        trust_tier: Some(tier),
        verdict: v.verdict,
        warning,
        findings: v.findings,
        committed,
        ts,
    }
}

/// The record of a killed promote the recovery `r` of its journal `j` just
/// finished: the stage it left (the move's source), its changelog line's
/// instant, the tier and verdict of the skill as it now is, and whether a
/// commit holds it (made by the recovery, or already by the killed promote).
fn finished_promote(
    lib: &Library,
    engine: &crate::guard::Engine,
    name: &str,
    to: Stage,
    j: &write::journal::Journal,
    r: &write::journal::Recovered,
) -> Result<(Written, Option<String>)> {
    let new_dir = stage::skill_dir(to, name);
    let from = j
        .moves
        .iter()
        .filter(|m| m.to == new_dir)
        .find_map(|m| stage::ALL.into_iter().find(|s| stage::skill_dir(*s, name) == m.from))
        .ok_or_else(|| Error::msg(format!("the recovered journal moved {new_dir} from no stage")))?;
    let new_md = format!("{new_dir}/SKILL.md");
    let text = fs::read_to_string(lib.path(&new_md)).map_err(|e| Error::io(format!("reading {new_md}"), e))?;
    let tier = frontmatter::text(&frontmatter::parse(&text).fields, "trust_tier").unwrap_or_default();
    let judged = guard_scan::skill(lib, engine, &new_dir)?;
    let ts = j.events.iter().find(|e| e.action.as_deref() == Some("promote")).map(|e| e.ts.clone()).unwrap_or_default();
    let committed = j.commit && r.commit_error.is_none() && crate::library::git::is_repo(lib);
    Ok((written(name, from, to, new_md, tier, &judged, committed, ts), r.commit_error.clone()))
}
