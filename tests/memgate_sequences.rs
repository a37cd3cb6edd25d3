//! kb-memgate governance over sequences a user says one after another
//!: a restatement merges, a reversal replaces every note it
//! contradicts (in English, Chinese or mixed), a narrower scope is a rule
//! of its own, and the notes in force at the end say the latest
//! conclusion. Each sequence runs decide and apply on a real temp store,
//! confirming every gated question, and asserts the one-liners in force.

use serde_json::Value;

use crate::memgate::{answered, apply, decide, mem, notes, said};
use crate::util::Lib;

/// Decides one statement and applies it, confirming a gated question
/// (the user says yes to what kb-memgate proposes). Returns the decision.
fn say(lib: &Lib, text: &str) -> Value {
    let d = decide(lib, &[said("remember", text)]);
    let d0 = if d[0]["gate"] == "question" { answered(&d[0], "confirm") } else { d[0].clone() };
    if d0["action"] != "veto" {
        assert_eq!(apply(lib, std::slice::from_ref(&d0))[0]["status"], "applied", "{text}: {d0}");
    }
    d0
}

/// Writes a statement as a note of its own whatever governance proposes
/// (the user answers "new_instead"): how two notes that say one thing
/// came to be in force before governance weighed stance.
fn apart(lib: &Lib, text: &str) {
    let d = decide(lib, &[said("remember", text)]);
    let d0 = match (d[0]["action"].as_str(), d[0]["gate"].as_str()) {
        (_, Some("silent")) => d[0].clone(),
        (Some("new"), _) => answered(&d[0], "confirm"),
        _ => answered(&d[0], "new_instead"),
    };
    assert_eq!(apply(lib, &[d0])[0]["status"], "applied", "{text}");
}

/// The one-liners of the notes in force, sorted.
pub(crate) fn in_force(lib: &Lib) -> Vec<String> {
    let mut out: Vec<String> = notes(lib)
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(mem(lib, &format!("notes/{f}"))).unwrap_or_default();
            let mut lines = text.lines().skip_while(|l| !l.starts_with("## One-liner"));
            lines.next();
            lines.find(|l| !l.trim().is_empty()).unwrap_or_default().to_string()
        })
        .collect();
    out.sort();
    out
}

#[track_caller]
fn run(texts: &[&str]) -> (Lib, Vec<Value>) {
    let lib = Lib::project();
    let ds = texts.iter().map(|t| say(&lib, t)).collect();
    (lib, ds)
}

fn actions(ds: &[Value]) -> Vec<&str> {
    ds.iter().map(|d| d["action"].as_str().unwrap_or_default()).collect()
}

/// Once two wordings of one preference were two notes, and the Chinese
/// reversal replaced only one of them.
#[test]
fn pnpm_restated_then_reversed_in_chinese_ends_with_one_note() {
    let (lib, ds) = run(&[
        "I prefer pnpm over npm for every JavaScript project",
        "Use pnpm, not npm, in JS projects.",
        "从现在开始不用 pnpm 了，改用 yarn",
    ]);
    assert_eq!(actions(&ds), ["new", "merge", "replace"], "{ds:?}");
    assert_eq!(in_force(&lib), ["从现在开始不用 pnpm 了，改用 yarn"]);
}

/// The story in the other order: the Chinese note first, restated in
/// English with its place in a clause of its own ("in JS projects"), then
/// reversed in English with "switch from pnpm to yarn".
#[test]
fn chinese_first_then_english_restatement_and_reversal_ends_with_one_note() {
    for first in ["以后 JavaScript 项目都用 pnpm", "JS 项目统一用 pnpm，不用 npm"] {
        let (lib, ds) = run(&[
            first,
            "Use pnpm, not npm, in JS projects.",
            "I prefer pnpm over npm for every JavaScript project",
            "From now on switch from pnpm to yarn.",
        ]);
        assert_eq!(actions(&ds), ["new", "merge", "merge", "replace"], "{first}: {ds:?}");
        assert_eq!(in_force(&lib), ["From now on switch from pnpm to yarn."], "{first}");
    }
}

/// Two notes that say the same thing (kept apart by the user) are both
/// contradicted by a reversal: replace lists both and apply supersedes both.
#[test]
fn a_reversal_replaces_every_note_it_contradicts() {
    let lib = Lib::project();
    apart(&lib, "I prefer pnpm over npm for every JavaScript project");
    apart(&lib, "Use pnpm, not npm, in JS projects.");
    apart(&lib, "Write commit messages in English.");
    assert_eq!(notes(&lib).len(), 3);
    let d = say(&lib, "From now on use yarn instead of pnpm.");
    assert_eq!(d["action"], "replace", "{d}");
    assert_eq!(d["targets"].as_array().map(Vec::len), Some(2), "{d}");
    assert_eq!(d["archive"].as_array().map(Vec::len), Some(2), "{d}");
    assert_eq!(in_force(&lib), ["From now on use yarn instead of pnpm.", "Write commit messages in English."]);
    let index = std::fs::read_to_string(mem(&lib, "INDEX.md")).unwrap();
    for t in d["targets"].as_array().unwrap() {
        assert!(!index.contains(&format!("\n| {} |", t.as_str().unwrap())), "{t} left INDEX.md: {index}");
    }
}

/// "From now on" is a time, not a reversal: a restatement that ends in it
/// agrees with the note and merges.
#[test]
fn a_restatement_ending_in_from_now_on_merges() {
    let (lib, ds) =
        run(&["I prefer pnpm over npm for every JavaScript project", "Use pnpm for JavaScript projects from now on."]);
    assert_eq!(actions(&ds), ["new", "merge"], "{ds:?}");
    assert_eq!(in_force(&lib).len(), 1);
    assert!(in_force(&lib)[0].contains("pnpm"));
}

/// An English reversal of an English note, then back again: one note in
/// force each time, the latest.
#[test]
fn back_and_forth_keeps_only_the_latest() {
    let (lib, ds) = run(&[
        "Use pnpm for installs.",
        "Switch to yarn for installs, not pnpm.",
        "From now on use pnpm instead of yarn for installs.",
    ]);
    assert_eq!(actions(&ds), ["new", "replace", "replace"], "{ds:?}");
    assert_eq!(in_force(&lib), ["From now on use pnpm instead of yarn for installs."]);
}

/// A narrower scope is an exception beside the rule, not its reversal.
#[test]
fn a_narrower_scope_is_a_rule_of_its_own() {
    let (lib, ds) = run(&["Use pnpm in JavaScript projects.", "Use yarn only in the legacy repo."]);
    assert_eq!(actions(&ds), ["new", "new"], "{ds:?}");
    assert_eq!(in_force(&lib), ["Use pnpm in JavaScript projects.", "Use yarn only in the legacy repo."]);
}

/// The Chinese sequence: a rewording merges, the reversal replaces.
#[test]
fn chinese_restatement_then_reversal() {
    let (lib, ds) =
        run(&["JavaScript 项目统一用 pnpm，不用 npm", "JS 项目都用 pnpm 而不是 npm", "以后改用 yarn，不再用 pnpm"]);
    assert_eq!(actions(&ds), ["new", "merge", "replace"], "{ds:?}");
    assert_eq!(in_force(&lib), ["以后改用 yarn，不再用 pnpm"]);
}

/// Mixed: a Chinese note, reversed in English.
#[test]
fn chinese_note_reversed_in_english() {
    let (lib, ds) =
        run(&["前端项目用 pnpm 安装依赖", "Write commit messages in English.", "From now on use yarn, not pnpm."]);
    assert_eq!(actions(&ds), ["new", "new", "replace"], "{ds:?}");
    assert_eq!(in_force(&lib), ["From now on use yarn, not pnpm.", "Write commit messages in English."]);
}

/// A rule about something else that merely names the tool is no conflict.
#[test]
fn unrelated_rules_survive_a_reversal() {
    let (lib, ds) = run(&[
        "Use pnpm for installs.",
        "Never commit secrets to the repository.",
        "Use tabs in Go files.",
        "Switch to yarn instead of pnpm for installs.",
    ]);
    assert_eq!(actions(&ds), ["new", "new", "new", "replace"], "{ds:?}");
    assert_eq!(in_force(&lib).len(), 3, "{:?}", in_force(&lib));
}

/// Tags are the note's salient terms: the tools first, no stop words, and
/// whole Chinese words rather than fragments across two of them.
#[test]
fn tags_are_salient_terms() {
    let tags = |text: &str| -> Vec<String> {
        let lib = Lib::project();
        let d = decide(&lib, &[said("remember", text)]);
        d[0]["candidate"]["tags"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect()
    };
    let en = tags("I prefer pnpm over npm for every JavaScript project");
    assert_eq!(en[..2], ["pnpm", "npm"], "{en:?}");
    for stop in ["over", "every", "for", "prefer"] {
        assert!(!en.iter().any(|t| t == stop), "{stop} in {en:?}");
    }
    let zh = tags("提交前必须运行单元测试");
    assert!(!zh.iter().any(|t| t == "交前"), "{zh:?}");
    assert!(zh.iter().any(|t| t == "提交"), "{zh:?}");
    let mixed = tags("从现在开始不用 pnpm 了，改用 yarn");
    assert_eq!(mixed[..2], ["pnpm", "yarn"], "{mixed:?}");
}

/// What a statement picks and turns down, by name, in either language
/// (`kb::memgate::stance`): the judgement the sequences above rest on.
#[test]
fn stance_reads_picks_and_refusals_by_name() {
    use kb::memgate::stance::of;
    let st = |t: &str| {
        let s = of(t);
        (s.chosen, s.rejected)
    };
    let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(st("I prefer pnpm over npm for every JavaScript project"), (v(&["pnpm"]), v(&["npm"])));
    assert_eq!(st("Use pnpm, not npm, in JS projects."), (v(&["pnpm"]), v(&["npm"])));
    assert_eq!(st("从现在开始不用 pnpm 了，改用 yarn"), (v(&["yarn"]), v(&["pnpm"])));
    assert_eq!(st("From now on use yarn instead of pnpm."), (v(&["yarn"]), v(&["pnpm"])));
    assert_eq!(st("Switch to yarn for installs, not pnpm."), (v(&["yarn"]), v(&["pnpm"])));
    assert_eq!(st("From now on switch from pnpm to yarn."), (v(&["yarn"]), v(&["pnpm"])));
    assert_eq!(st("We moved from webpack to vite."), (v(&["vite"]), v(&["webpack"])));
    assert_eq!(st("Never use var in JavaScript."), (v(&[]), v(&["var"])));
    assert_eq!(st("Do not commit secrets."), (v(&[]), v(&[])));
    assert_eq!(st("Delete dead code instead of commenting it out."), (v(&[]), v(&["comment"])));
    assert_eq!(st("JS 项目都用 pnpm 而不是 npm"), (v(&["pnpm"]), v(&["npm"])));
    assert!(of("Use pnpm.").agrees(&of("我们用 pnpm")));
    assert!(of("以后改用 yarn，不再用 pnpm").contradicts(&of("Use pnpm for installs.")));
    assert!(!of("Use yarn only in the legacy repo.").contradicts(&of("Use pnpm in JavaScript projects.")));
}
