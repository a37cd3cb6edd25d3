//! Skill stages and trust tiers (seed 000), and what a peer may change of
//! them. A skill earns trust locally: it enters
//! `.skills/.candidates` (T1), is promoted to `.skills/.drafts` (T2) and
//! `.skills/.active` (T3) by `kb-append skill promote`, and reaches T4 by
//! use (`kb::maintain::raise_trust`). T1 is the lowest trust and T4 the
//! highest. A peer's commit is data, so a skill it places straight in the
//! active stage, or a `trust_tier` it raises, is not trusted until
//! someone here reviews it.
//!
//! This lives in `library` (not `skills`) because sync, which judges each
//! path of a peer's change before anything is merged, sits below the
//! skills layer.

use crate::doc::frontmatter;

/// The trust tiers, lowest first: `trust_tier` holds one of them.
pub const TIERS: [&str; 4] = ["T1", "T2", "T3", "T4"];

/// The skill stages' directories, in promotion order, with the tier a
/// skill gets on entering each.
pub const STAGES: [(&str, &str); 3] =
    [(".skills/.candidates", "T1"), (".skills/.drafts", "T2"), (".skills/.active", "T3")];

/// The active stage: the skills agents use.
pub const ACTIVE: &str = ".skills/.active";

/// The command a user reviews what waits with (sync's quarantine).
pub const REVIEW: &str = "kb-append quarantine list";

/// A file inside a skill directory: `<stage dir>/<name>/<rest>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkillFile<'a> {
    /// The stage's directory (`.skills/.active`).
    pub stage_dir: &'static str,
    /// The skill's directory name.
    pub name: &'a str,
    /// The path inside the skill directory (`SKILL.md`, `scripts/x.sh`).
    pub rest: &'a str,
}

/// Where a normalised library-relative path sits in a skill, if it does.
pub fn skill_file(rel: &str) -> Option<SkillFile<'_>> {
    STAGES.iter().find_map(|(dir, _)| {
        let (name, rest) = rel.strip_prefix(dir)?.strip_prefix('/')?.split_once('/')?;
        (!name.is_empty() && !rest.is_empty()).then_some(SkillFile { stage_dir: dir, name, rest })
    })
}

/// The rank of a tier (T1 = 1 … T4 = 4), read as `raise_trust` reads it
/// (case-insensitive, trimmed); `None` for anything else.
pub fn rank(tier: &str) -> Option<usize> {
    TIERS.iter().position(|t| t.eq_ignore_ascii_case(tier.trim())).map(|i| i + 1)
}

/// A document's `trust_tier` as its frontmatter says (no frontmatter, a
/// broken one or no field: `None`). Bytes that are not UTF-8 are read
/// lossily, so no byte can hide a tier a lenient reader would see.
fn tier_of(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    frontmatter::text(&frontmatter::parse(&text).fields, "trust_tier")
}

/// Whether a peer's change of one path may take effect now (`None`) or
/// waits for local review (`Some(why)`, naming what to do). `rel` is the
/// normalised library-relative path; `ours` its bytes here (`None`: we do
/// not have it), `theirs` the peer's (`None`: the peer deletes it).
/// A rename arrives as a deletion and an addition, each judged alone.
///
/// What waits:
/// - any file the peer adds under `.skills/.active/`: a skill placed
///   straight in the active stage, moved there, or a file added to an
///   active skill (skills reach that stage by a local promote);
/// - a Markdown document whose `trust_tier` the peer raises (a missing
///   tier counts as the lowest, T1), or sets to a value that is not a
///   tier while ours differs;
/// - a new Markdown document whose tier is above what kb-tools gives a new
///   file there: T1 outside the skill stages and in candidates, T2 in
///   drafts (a local promote keeps a higher tier, so a T4 planted in
///   drafts would reach the active stage at T4).
///
/// Deletions never wait here (sync reports them).
pub fn judge_skill_change(rel: &str, ours: Option<&[u8]>, theirs: Option<&[u8]>) -> Option<String> {
    let theirs = theirs?;
    if ours.is_none() && rel.strip_prefix(ACTIVE).is_some_and(|r| r.starts_with('/')) {
        return Some(format!(
            "a peer placed '{rel}' straight into {ACTIVE}/ (skills reach the active stage by a local `kb-append skill promote`); review with `{REVIEW}`"
        ));
    }
    if !rel.to_ascii_lowercase().ends_with(".md") {
        return None;
    }
    let new_tier = tier_of(theirs)?;
    let Some(new_rank) = rank(&new_tier) else {
        let old = ours.and_then(tier_of);
        return (old.as_deref() != Some(new_tier.as_str())).then(|| {
            format!(
                "a peer set trust_tier of '{rel}' to {new_tier:?}, which is not one of {}; review with `{REVIEW}`",
                TIERS.join(", ")
            )
        });
    };
    match ours {
        Some(ours) => {
            let old = tier_of(ours);
            let old_rank = old.as_deref().and_then(rank).unwrap_or(1);
            (new_rank > old_rank).then(|| {
                format!(
                    "a peer raised trust_tier of '{rel}' from {} to {new_tier} (trust is raised by a local promote or by use); review with `{REVIEW}`",
                    old.unwrap_or_else(|| "none".into())
                )
            })
        }
        None => {
            let entry =
                skill_file(rel).map_or("T1", |f| STAGES.iter().find(|(d, _)| *d == f.stage_dir).map_or("T1", |s| s.1));
            let allowed = rank(entry).unwrap_or(1);
            (new_rank > allowed).then(|| {
                format!(
                    "a peer added '{rel}' with trust_tier {new_tier}, above the {entry} a new file there gets; review with `{REVIEW}`"
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(tier: Option<&str>) -> Vec<u8> {
        match tier {
            Some(t) => format!("---\nname: x\ndescription: d\ntrust_tier: {t}\n---\n# X\n").into_bytes(),
            None => b"---\nname: x\ndescription: d\n---\n# X\n".to_vec(),
        }
    }

    #[test]
    fn skill_files_are_found_in_their_stage() {
        let f = skill_file(".skills/.active/pdf/scripts/a.sh").unwrap();
        assert_eq!((f.stage_dir, f.name, f.rest), (".skills/.active", "pdf", "scripts/a.sh"));
        assert_eq!(skill_file(".skills/.drafts/pdf/SKILL.md").map(|f| f.rest), Some("SKILL.md"));
        for not in [".skills/.active/loose.md", ".skills/.activex/a/b.md", "notes/a.md", ".skills/.active//b.md"] {
            assert_eq!(skill_file(not), None, "{not}");
        }
    }

    #[test]
    fn tiers_rank_t1_lowest_t4_highest() {
        assert_eq!(rank("T1"), Some(1));
        assert_eq!(rank(" t4 "), Some(4));
        assert!(rank("T3") < rank("T4"));
        assert_eq!(rank("T5"), None);
        assert_eq!(rank("admin"), None);
    }

    #[test]
    fn a_file_added_to_the_active_stage_waits() {
        let skill = md(Some("T3"));
        for rel in [".skills/.active/new/SKILL.md", ".skills/.active/old/scripts/run.sh", ".skills/.active/x.md"] {
            let why = judge_skill_change(rel, None, Some(&skill)).unwrap_or_else(|| panic!("{rel} admitted"));
            assert!(why.contains("straight into .skills/.active/") && why.contains(REVIEW), "{why}");
        }
        // Changing a file an active skill already has is not a stage move.
        assert_eq!(judge_skill_change(".skills/.active/old/SKILL.md", Some(&skill), Some(&md(Some("T3")))), None);
        // Deleting never waits here.
        assert_eq!(judge_skill_change(".skills/.active/old/SKILL.md", Some(&skill), None), None);
        // Candidates and drafts are where new skills arrive.
        assert_eq!(judge_skill_change(".skills/.candidates/new/SKILL.md", None, Some(&md(Some("T1")))), None);
        assert_eq!(judge_skill_change(".skills/.drafts/new/SKILL.md", None, Some(&md(Some("T2")))), None);
        assert_eq!(judge_skill_change(".skills/.drafts/new/scripts/a.sh", None, Some(b"echo hi\n")), None);
    }

    #[test]
    fn a_raised_trust_tier_waits_anywhere() {
        let rel = ".skills/.drafts/x/SKILL.md";
        let why = judge_skill_change(rel, Some(&md(Some("T2"))), Some(&md(Some("T4")))).unwrap();
        assert!(why.contains("raised trust_tier") && why.contains("from T2 to T4"), "{why}");
        let why =
            judge_skill_change(".skills/.active/x/SKILL.md", Some(&md(Some("T3"))), Some(&md(Some("t4")))).unwrap();
        assert!(why.contains("to t4"), "{why}");
        // From none: none counts as the lowest.
        assert!(judge_skill_change("notes/a.md", Some(&md(None)), Some(&md(Some("T2")))).is_some());
        assert_eq!(judge_skill_change("notes/a.md", Some(&md(None)), Some(&md(Some("T1")))), None);
        // Lowered, kept, removed: fine.
        assert_eq!(judge_skill_change(rel, Some(&md(Some("T4"))), Some(&md(Some("T2")))), None);
        assert_eq!(judge_skill_change(rel, Some(&md(Some("T2"))), Some(&md(Some("T2")))), None);
        assert_eq!(judge_skill_change(rel, Some(&md(Some("T2"))), Some(&md(None))), None);
        // A value that is not a tier, set by the peer, waits; kept, it does not.
        assert!(judge_skill_change(rel, Some(&md(Some("T2"))), Some(&md(Some("T9")))).unwrap().contains("not one of"));
        assert_eq!(judge_skill_change(rel, Some(&md(Some("T9"))), Some(&md(Some("T9")))), None);
        // Only Markdown has frontmatter.
        assert_eq!(judge_skill_change("notes/a.txt", Some(b"x"), Some(&md(Some("T4")))), None);
    }

    #[test]
    fn a_new_file_with_a_tier_above_its_places_entry_tier_waits() {
        for (rel, tier) in [
            ("notes/a.md", "T2"),
            (".memory/.references/r-v1.md", "T4"),
            (".skills/.candidates/x/SKILL.md", "T2"),
            (".skills/.drafts/x/SKILL.md", "T3"),
            (".skills/.drafts/x/SKILL.md", "T4"),
        ] {
            let why = judge_skill_change(rel, None, Some(&md(Some(tier)))).unwrap_or_else(|| panic!("{rel} {tier}"));
            assert!(why.contains(&format!("with trust_tier {tier}")), "{why}");
        }
        for (rel, tier) in
            [("notes/a.md", Some("T1")), ("notes/a.md", None), (".skills/.drafts/x/SKILL.md", Some("T2"))]
        {
            assert_eq!(judge_skill_change(rel, None, Some(&md(tier))), None, "{rel} {tier:?}");
        }
        assert!(judge_skill_change("notes/a.md", None, Some(&md(Some("root")))).is_some());
    }
}
