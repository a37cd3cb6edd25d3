//! Rules from peers pass the local gates. Git shares the rule
//! and proposal files so a team evolves one rule set, but a peer's commit
//! is data: a rule it adds is not in force until it passes here what
//! `kb-guard rules integrate` checks before it writes a rule file (the hot
//! loader's validate, evolve's pattern checks, the rule set keeping every
//! rule it held) and the historical backtest over this library; a rule it
//! removes or changes, the library core rule file, and a proposal's
//! status are decided by a person here. Sync calls [`judge_rule_change`]
//! for each such path of a fetched change before anything is merged, and
//! keeps what must wait for review (`kb-append quarantine list`).

use std::collections::BTreeSet;

use serde_json::Value;

use super::backtest;
use super::integrate::{self, Planned};
use super::proposal;
use super::validate::pattern_ok;
use super::{ACTIVE_DIR, CORE_FILE, DIR};
use crate::doc::frontmatter;
use crate::error::{Error, Result};
use crate::guard::rules::{self, Rule};
use crate::library::Library;

/// The command a user reviews what waits with (sync's quarantine).
pub const REVIEW: &str = crate::library::trust::REVIEW;

/// Most backtest hits named in a reason.
const HITS_SHOWN: usize = 3;

/// Whether a peer's change of one rule or proposal file may take effect now
/// (`None`) or waits for local review (`Some(why)`, saying what to do).
/// `rel` is library-relative under `.evolving-rules/` or
/// `.core-rule-proposals/` (anything else is an error: not ours to judge);
/// `ours` its bytes here (`None`: we do not have it), `theirs` the peer's
/// (`None`: the peer deletes it). The rules in force and the backtest
/// corpus are this library's as they are on disk now, before the merge.
///
/// - An extended rule file (`.evolving-rules/security/active/*.yaml`):
///   removing or changing a rule in force waits; a new rule takes effect
///   only when the file passes validate (hot loader, pattern checks, the
///   rule set keeps every rule) and the backtest flags nothing the rules in
///   force call safe (one false positive in ten already fails review).
/// - The library core rule file: any change waits.
/// - A proposal (`.core-rule-proposals/CORE-N.md`): a new one whose status
///   is not the one PROPOSE gives it, or a change of an existing one's
///   `status`, waits; other edits and deletions do not change a rule.
/// - The scan stamps (`.last-scan-*`) wait: they are each machine's own
///   schedule. The audit log is a log (sync's append-only rule): `None`.
/// - Any other file there waits: nothing kb-guard writes or reads.
pub fn judge_rule_change(
    lib: &Library,
    rel: &str,
    ours: Option<&[u8]>,
    theirs: Option<&[u8]>,
) -> Result<Option<String>> {
    if ours == theirs {
        return Ok(None);
    }
    if let Some(name) = rel.strip_prefix(DIR).and_then(|r| r.strip_prefix('/')) {
        return Ok(judge_proposal_dir(rel, name, ours, theirs));
    }
    if rel == CORE_FILE {
        return Ok(Some(format!(
            "a peer changed the library core rule file '{rel}'; core rules are integrated here by `kb-guard rules integrate`, so the change waits; review with `{REVIEW}`"
        )));
    }
    if let Some(name) = rel.strip_prefix(ACTIVE_DIR).and_then(|r| r.strip_prefix('/')) {
        if !name.contains('/') && (name.ends_with(".yaml") || name.ends_with(".yml")) {
            return judge_extended(lib, rel, theirs);
        }
    }
    if rel.starts_with(".evolving-rules/") {
        return Ok(Some(format!(
            "a peer changed '{rel}', which is no rule file the guard loads or kb-guard writes; review with `{REVIEW}`"
        )));
    }
    Err(Error::msg(format!("'{rel}' is neither a rule file nor a proposal")))
}

/// An extended rule file, judged against the rules in force from it.
fn judge_extended(lib: &Library, rel: &str, theirs: Option<&[u8]>) -> Result<Option<String>> {
    let (engine, _broken) = crate::guard::shared_library_engine(lib)?;
    let source = lib.path(rel).display().to_string();
    let in_force: Vec<&Rule> = engine.rules().iter().filter(|r| r.source == source).collect();
    let ids = |rs: &[&Rule]| rs.iter().map(|r| format!("'{}'", r.id)).collect::<Vec<_>>().join(", ");
    let Some(theirs) = theirs else {
        return Ok((!in_force.is_empty()).then(|| {
            format!(
                "a peer removed the rule(s) in force {} (file '{rel}'); the removal waits for review; review with `{REVIEW}`",
                ids(&in_force)
            )
        }));
    };
    let wait = |problems: Vec<String>| {
        Some(format!("a peer's rule file '{rel}' is not in force: {}; review with `{REVIEW}`", problems.join("; ")))
    };
    let Ok(text) = std::str::from_utf8(theirs) else {
        return Ok(wait(vec!["it is not UTF-8".into()]));
    };
    let parsed = match rules::parse(text, rel) {
        Ok(p) => p,
        Err(e) => return Ok(wait(vec![format!("validate fails: {e}")])),
    };
    let mut problems = Vec::new();
    let removed: Vec<&Rule> = in_force.iter().copied().filter(|r| !parsed.iter().any(|p| p.id == r.id)).collect();
    if !removed.is_empty() {
        problems.push(format!("it removes the rule(s) in force {}", ids(&removed)));
    }
    let changed: Vec<&Rule> = in_force
        .iter()
        .copied()
        .filter(|r| parsed.iter().any(|p| p.id == r.id && definition(p) != definition(r)))
        .collect();
    if !changed.is_empty() {
        problems.push(format!("it changes the rule(s) in force {}", ids(&changed)));
    }
    let held: BTreeSet<&str> = in_force.iter().map(|r| r.id.as_str()).collect();
    let new: Vec<Rule> = parsed.into_iter().filter(|r| !held.contains(r.id.as_str())).collect();
    if !new.is_empty() {
        problems.extend(gate(lib, &engine, rel, text, &new)?);
    }
    Ok(if problems.is_empty() { None } else { wait(problems) })
}

/// What `kb-guard rules integrate` and the backtest find wrong with the
/// new rules of a rule file (empty: they may take effect).
fn gate(lib: &Library, engine: &crate::guard::Engine, rel: &str, text: &str, new: &[Rule]) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let v = crate::guard::engine::validate(text, rel);
    if !v.valid {
        problems.push(format!("validate fails: {}", v.problems.join("; ")));
    }
    for r in new {
        if let Err(e) = r.pattern.as_deref().map_or(Ok(()), pattern_ok) {
            problems.push(format!("validate fails: rule '{}': {e}", r.id));
        }
    }
    let ids: Vec<String> = new.iter().map(|r| r.id.clone()).collect();
    if v.valid {
        if let Some(e) = integrate::rule_set_check(lib, &Planned::new(), rel, text, &ids)? {
            // The loader names files by absolute path; the reason, by library path.
            problems.push(format!("validate fails: {}", e.replace(&format!("{}/", lib.dir.display()), "")));
        }
    }
    match backtest::rule_file(Some(lib), &[], engine, new) {
        Ok(results) => {
            for (id, b) in results.iter().filter(|(_, b)| b.newly_flagged > 0) {
                let hits: Vec<String> =
                    b.hits.iter().take(HITS_SHOWN).map(|h| format!("{}:{} {:?}", h.path, h.line, h.matched)).collect();
                problems.push(format!(
                    "the backtest fails: rule '{id}' newly flags {} of the {} files the rules in force call safe ({})",
                    b.newly_flagged,
                    b.safe_before,
                    hits.join(", ")
                ));
            }
        }
        // A pattern that does not compile cannot be backtested; validate
        // has said why.
        Err(_) if !problems.is_empty() => {}
        Err(e) => problems.push(format!("the backtest cannot run: {e}")),
    }
    Ok(problems)
}

/// A rule as its file defines it (where it was loaded from left out).
fn definition(r: &Rule) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.remove("source");
    }
    v
}

/// A path under `.core-rule-proposals/` (`name` below it).
fn judge_proposal_dir(rel: &str, name: &str, ours: Option<&[u8]>, theirs: Option<&[u8]>) -> Option<String> {
    if let Some(id) = name.strip_suffix(".md").filter(|id| proposal::is_id(id)) {
        return judge_proposal(rel, id, ours, theirs?);
    }
    if rel == super::audit::FILE {
        return None;
    }
    if rel == super::LAST_SCAN_CORE || rel == super::LAST_SCAN_EXTENDED {
        return Some(format!(
            "a peer changed the scan stamp '{rel}'; it gates this machine's own scheduled scans; review with `{REVIEW}`"
        ));
    }
    Some(format!("a peer changed '{rel}', which is no proposal file kb-guard writes; review with `{REVIEW}`"))
}

/// A proposal the peer adds or changes.
fn judge_proposal(rel: &str, id: &str, ours: Option<&[u8]>, theirs: &[u8]) -> Option<String> {
    let theirs = String::from_utf8_lossy(theirs);
    let Some(ours) = ours else {
        let l = match proposal::parse(&theirs, rel) {
            Ok(l) => l,
            Err(e) => {
                return Some(format!(
                    "a peer added the proposal {id}, which does not parse ({e}); review with `{REVIEW}`"
                ))
            }
        };
        let initial = l.proposal.initial_status();
        return (l.proposal.status != initial).then(|| {
            format!(
                "a peer added the proposal {id} with status '{}'; a new proposal starts as '{}' and only the local evolve steps move it on; review with `{REVIEW}`",
                l.proposal.status.as_str(),
                initial.as_str()
            )
        });
    };
    let status = |b: &str| frontmatter::text(&frontmatter::parse(b).fields, "status");
    let (before, after) = (status(&String::from_utf8_lossy(ours)), status(&theirs));
    (before != after).then(|| {
        let shown = |s: Option<String>| s.unwrap_or_else(|| "none".into());
        format!(
            "a peer changed the status of proposal {id} from '{}' to '{}'; a proposal's status moves only by the local evolve steps; review with `{REVIEW}`",
            shown(before),
            shown(after)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A library on disk with clean documents and one integrated rule.
    fn library() -> (tempfile::TempDir, Library) {
        let tmp = tempfile::tempdir().unwrap();
        let lib = Library { dir: tmp.path().join(".library") };
        let put = |rel: &str, text: &str| {
            let p = lib.path(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put("notes/a.md", "# Deploy\n\nThe service and the worker restart after a deploy.\n");
        put("notes/b.md", "# Cache\n\nA cache and a queue keep the latency low.\n");
        put("notes/c.md", "# Review\n\nReviews happen on Tuesdays.\n");
        put(&format!("{ACTIVE_DIR}/kept.yaml"), &rule_file("kept-01", "critical", "zx-exfil-[0-9]+", "zx-exfil-42"));
        (tmp, lib)
    }

    fn rule_file(id: &str, severity: &str, pattern: &str, example: &str) -> String {
        format!(
            "rules:\n- id: {id}\n  category: exfiltration\n  severity: {severity}\n  description: test rule\n  pattern: '{pattern}'\n  match: ['{example}']\n  clean: ['nothing to see']\n"
        )
    }

    fn judge(lib: &Library, rel: &str, ours: Option<&str>, theirs: Option<&str>) -> Option<String> {
        judge_rule_change(lib, rel, ours.map(str::as_bytes), theirs.map(str::as_bytes)).unwrap()
    }

    #[test]
    fn a_good_new_rule_takes_effect() {
        let (_t, lib) = library();
        let rel = format!("{ACTIVE_DIR}/new.yaml");
        let text = rule_file("new-01", "high", "qq-beacon-[a-f0-9]{8}", "qq-beacon-deadbeef");
        assert_eq!(judge(&lib, &rel, None, Some(&text)), None);
    }

    #[test]
    fn a_rule_that_flags_the_librarys_clean_documents_fails_the_backtest() {
        let (_t, lib) = library();
        let rel = format!("{ACTIVE_DIR}/broad.yaml");
        let text = rule_file("broad-01", "critical", "the|a|and", "the");
        let why = judge(&lib, &rel, None, Some(&text)).expect("waits");
        assert!(why.contains("the backtest fails: rule 'broad-01' newly flags"), "{why}");
        assert!(why.contains("notes/"), "names a flagged document: {why}");
        assert!(why.contains(REVIEW), "{why}");
        // Longer words pass the pattern checks and still fail the backtest.
        let text = rule_file("broad-02", "critical", "\\b(the|and)\\b", "the");
        let why = judge(&lib, &rel, None, Some(&text)).expect("waits");
        assert!(why.contains("the backtest fails") && !why.contains("validate fails"), "{why}");
    }

    #[test]
    fn a_rule_that_does_not_parse_or_load_fails_validate() {
        let (_t, lib) = library();
        let rel = format!("{ACTIVE_DIR}/bad.yaml");
        for text in [
            "rules: [ {id: x".to_string(),
            "rules:\n- id: nope\n  category: not-a-category\n  severity: high\n  description: d\n  pattern: 'abcdef'\n  match: ['abcdef']\n".into(),
            // Its own example does not match.
            rule_file("bad-01", "high", "qq-beacon-[0-9]+", "no digits here"),
            // An id already in force in another file.
            rule_file("kept-01", "high", "qq-other-[0-9]+", "qq-other-1"),
        ] {
            let why = judge(&lib, &rel, None, Some(&text)).unwrap_or_else(|| panic!("admitted: {text}"));
            assert!(why.contains("validate fails"), "{why}");
            assert!(!why.contains(&lib.dir.display().to_string()), "paths are library-relative: {why}");
        }
        assert!(judge(&lib, &rel, None, Some("\u{0}\u{ff}")).is_some());
        let why = judge_rule_change(&lib, &rel, None, Some(b"\xff\xfe")).unwrap().unwrap();
        assert!(why.contains("not UTF-8"), "{why}");
    }

    #[test]
    fn removing_or_changing_a_rule_in_force_waits() {
        let (_t, lib) = library();
        let rel = format!("{ACTIVE_DIR}/kept.yaml");
        let ours = std::fs::read_to_string(lib.path(&rel)).unwrap();
        let why = judge(&lib, &rel, Some(&ours), None).expect("waits");
        assert!(why.contains("a peer removed the rule(s) in force 'kept-01'") && why.contains(REVIEW), "{why}");
        // Weakened in place: a pattern that never matches is a removal too.
        let weak = rule_file("kept-01", "medium", "zx-exfil-never-[0-9]+", "zx-exfil-never-1");
        let why = judge(&lib, &rel, Some(&ours), Some(&weak)).expect("waits");
        assert!(why.contains("changes the rule(s) in force 'kept-01'"), "{why}");
        // Emptied: the rules go.
        let why = judge(&lib, &rel, Some(&ours), Some("rules: []\n")).expect("waits");
        assert!(why.contains("removes the rule(s) in force 'kept-01'"), "{why}");
        // The same rules with another comment: nothing changes.
        assert_eq!(judge(&lib, &rel, Some(&ours), Some(&format!("# reworded\n{ours}"))), None);
        // Removing a file nothing is in force from: fine.
        let stray = format!("{ACTIVE_DIR}/stray.yaml");
        assert_eq!(judge(&lib, &stray, Some("rules: [ {id: x"), None), None);
    }

    #[test]
    fn a_new_rule_beside_the_kept_ones_is_gated_alone() {
        let (_t, lib) = library();
        let rel = format!("{ACTIVE_DIR}/kept.yaml");
        let ours = std::fs::read_to_string(lib.path(&rel)).unwrap();
        let good = format!(
            "{ours}{}",
            rule_file("new-02", "high", "qq-beacon-[a-f0-9]{8}", "qq-beacon-deadbeef").trim_start_matches("rules:\n")
        );
        assert_eq!(judge(&lib, &rel, Some(&ours), Some(&good)), None);
        let broad = format!(
            "{ours}{}",
            rule_file("new-03", "critical", "\\b(the|and)\\b", "the").trim_start_matches("rules:\n")
        );
        assert!(judge(&lib, &rel, Some(&ours), Some(&broad)).unwrap().contains("rule 'new-03'"));
    }

    #[test]
    fn the_library_core_rule_file_and_unknown_files_wait() {
        let (_t, lib) = library();
        let text = rule_file("core-01", "high", "qq-beacon-[a-f0-9]{8}", "qq-beacon-deadbeef");
        let why = judge(&lib, CORE_FILE, None, Some(&text)).expect("waits");
        assert!(why.contains("library core rule file") && why.contains(REVIEW), "{why}");
        assert!(judge(&lib, CORE_FILE, Some(&text), None).is_some());
        assert_eq!(judge(&lib, CORE_FILE, Some(&text), Some(&text)), None);
        for rel in
            [format!("{ACTIVE_DIR}/sub/x.yaml"), format!("{ACTIVE_DIR}/README.md"), ".evolving-rules/x.sh".into()]
        {
            assert!(judge(&lib, &rel, None, Some("x")).is_some(), "{rel}");
        }
        assert!(judge_rule_change(&lib, "notes/a.md", None, Some(b"x")).is_err());
    }

    fn proposal_text(status: &str, complete: bool) -> String {
        let rest = if complete {
            "category: exfiltration\npattern: 'qq-beacon-[a-f0-9]{8}'\nmatch: ['qq-beacon-deadbeef']\nclean: ['plain']\nrationale: beacons\n"
        } else {
            ""
        };
        format!(
            "---\nid: CORE-007\ntitle: Beacon\nlayer: extended\nrule_id: core-007\nseverity: high\n{rest}status: {status}\nsource: intel-1\ncreated: '2026-03-01T12:00:00Z'\n---\n# CORE-007: Beacon\n"
        )
    }

    #[test]
    fn a_new_proposal_must_arrive_as_propose_writes_it() {
        let (_t, lib) = library();
        let rel = format!("{DIR}/CORE-007.md");
        assert_eq!(judge(&lib, &rel, None, Some(&proposal_text("proposed", true))), None);
        assert_eq!(judge(&lib, &rel, None, Some(&proposal_text("draft", false))), None);
        for (status, complete) in
            [("approved", true), ("integrated", true), ("validated", true), ("proposed", false), ("draft", true)]
        {
            let why =
                judge(&lib, &rel, None, Some(&proposal_text(status, complete))).unwrap_or_else(|| panic!("{status}"));
            assert!(why.contains(&format!("with status '{status}'")) && why.contains(REVIEW), "{why}");
        }
        assert!(judge(&lib, &rel, None, Some("---\nid: CORE-007\n---\n")).unwrap().contains("does not parse"));
    }

    #[test]
    fn a_proposals_status_changes_only_here() {
        let (_t, lib) = library();
        let rel = format!("{DIR}/CORE-007.md");
        let ours = proposal_text("proposed", true);
        let why = judge(&lib, &rel, Some(&ours), Some(&proposal_text("approved", true))).expect("waits");
        assert!(why.contains("from 'proposed' to 'approved'"), "{why}");
        // Other edits, and deletions, are fine.
        let edited = ours.replace("# CORE-007: Beacon\n", "# CORE-007: Beacon\n\nMore context.\n");
        assert_eq!(judge(&lib, &rel, Some(&ours), Some(&edited)), None);
        assert_eq!(judge(&lib, &rel, Some(&ours), None), None);
        // A broken frontmatter hides the status: that waits too.
        assert!(judge(&lib, &rel, Some(&ours), Some("---\nstatus: [\n---\n")).is_some());
    }

    #[test]
    fn stamps_wait_and_the_audit_log_is_a_log() {
        let (_t, lib) = library();
        assert!(judge(&lib, super::super::LAST_SCAN_CORE, Some("1"), Some("9999999999")).is_some());
        assert_eq!(judge(&lib, super::super::audit::FILE, Some("a\n"), Some("a\nb\n")), None);
        assert!(judge(&lib, &format!("{DIR}/notes.txt"), None, Some("x")).is_some());
    }
}
