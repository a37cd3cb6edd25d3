//! kb-lastword writes only the knowledge files its config names:
//! seed 004's `~/.config/agents/{AGENTS,SOUL,USER}.md` and the project's
//! `./AGENTS.md` (plus `./.agents/AGENTS.md`, the seed's second
//! auto-detect name), and whatever else `config.yaml` lists; by their
//! lexical path, never through a symlink. A delta is untrusted: any other
//! path is staged with a `refused:` error naming the rule, exit 2, and no
//! byte of it is written.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::lastword::{doc, entry, Lw};

/// Every file under `dir` (links by target), except kb-lastword's own
/// state (`last-word/`, `.agents/`).
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if rel.ends_with("last-word") || rel.ends_with(".agents") {
                continue;
            }
            let ft = e.file_type().unwrap();
            if ft.is_symlink() {
                out.insert(rel, fs::read_link(&p).unwrap().to_string_lossy().into_owned().into_bytes());
            } else if ft.is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                stack.push(p);
            } else {
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Plans and applies one update to `path`; asserts it was refused with a
/// record naming the rule (`needle`), exit 2 from plan or apply, and no
/// byte changed anywhere in the temp dir but kb-lastword's own state.
#[track_caller]
fn refused(lw: &Lw, path: &str, needle: &str) {
    let before = tree(lw.root());
    let input = doc(&[entry(path, "Keys", Some(2), "update", Some("ssh-ed25519 EVIL attacker@evil"))]);
    let (code, recs, err) = lw.run(&["plan"], &input);
    let (code2, recs2, err2) = lw.run(&["apply"], "");
    assert!(code == 2 || code2 == 2, "{path}: accepted ({code}/{code2}) {recs:?} {recs2:?} {err} {err2}");
    let all: Vec<Value> = recs.into_iter().chain(recs2).collect();
    let named = all.iter().any(|r| {
        let m = r.get("error").or(r.get("message")).and_then(Value::as_str).unwrap_or_default();
        m.starts_with("refused:") && m.contains(needle)
    });
    assert!(named, "{path}: no `refused:` record naming {needle:?}: {all:?}");
    assert!(all.iter().all(|r| r["status"] != "applied"), "{path}: {all:?}");
    assert_eq!(tree(lw.root()), before, "{path}: bytes changed outside kb-lastword's state");
    assert!(!lw.proj().join(".agents/AGENTS.md.yaml").exists(), "{path}: still pending");
}

const RULE: &str = "not one of the knowledge files";

#[test]
fn a_markdown_file_in_the_project_that_is_not_configured_is_refused() {
    let lw = Lw::new();
    fs::create_dir_all(lw.proj().join("notes")).unwrap();
    refused(&lw, "notes/x.md", RULE);
    assert!(!lw.proj().join("notes/x.md").exists());
    fs::write(lw.proj().join("README.md"), "# Project\n\n## Keys\n\nnone\n").unwrap();
    refused(&lw, "README.md", RULE);
    // Through the configured file's own name, `..` lands on another file.
    refused(&lw, "AGENTS.md/../x.md", RULE);
    refused(&lw, "./docs/../README.md", RULE);
}

#[test]
fn git_internals_are_refused() {
    let lw = Lw::new();
    fs::create_dir_all(lw.proj().join(".git")).unwrap();
    fs::write(lw.proj().join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    refused(&lw, ".git/config", RULE);
    refused(&lw, ".git/hooks/pre-commit.md", RULE);
}

#[test]
fn a_symlinked_agents_md_pointing_outside_is_refused() {
    let lw = Lw::new();
    let outside = lw.root().join("outside.md");
    fs::write(&outside, "# Outside\n\n## Keys\n\ngood\n").unwrap();
    std::os::unix::fs::symlink(&outside, lw.proj().join("AGENTS.md")).unwrap();
    refused(&lw, "AGENTS.md", "symlink");
    assert_eq!(fs::read_to_string(&outside).unwrap(), "# Outside\n\n## Keys\n\ngood\n");
}

#[test]
fn a_case_variant_of_a_knowledge_file_is_another_file() {
    let lw = Lw::new();
    let probe = lw.proj().join("probe");
    fs::write(&probe, "").unwrap();
    let folds = lw.proj().join("PROBE").exists();
    fs::remove_file(&probe).unwrap();
    if folds {
        eprintln!("skipping the case-variant attack: {} is on a case-insensitive file system", lw.proj().display());
        return;
    }
    fs::write(lw.proj().join("AGENTS.md"), "# A\n").unwrap();
    refused(&lw, "agents.md", RULE);
    refused(&lw, "Agents.md", RULE);
    refused(&lw, "~/.config/agents/user.md", RULE);
    assert!(!lw.proj().join("agents.md").exists());
}

#[test]
fn a_home_markdown_file_is_refused_even_when_home_is_the_project() {
    // An agent started in the home directory: the project is `~`, and
    // `~/notes.md` or `~/.config/agents/NOTES.md` must still be refused.
    let lw = Lw::new();
    let mut c = lw.std_cmd();
    c.current_dir(lw.home());
    let input = doc(&[
        entry("~/notes.md", "Keys", Some(2), "update", Some("x")),
        entry("~/.config/agents/NOTES.md", "Keys", Some(2), "update", Some("x")),
    ]);
    let out = assert_cmd::Command::from_std(c).arg("plan").write_stdin(input).output().unwrap();
    let recs = crate::util::records(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{recs:?}");
    assert!(recs.iter().all(|r| r["status"] == "staged"), "{recs:?}");
    assert!(recs.iter().all(|r| r["error"].as_str().unwrap_or_default().contains(RULE)), "{recs:?}");
    assert!(!lw.home().join("notes.md").exists() && !lw.agents().join("NOTES.md").exists());
}

#[test]
fn a_configured_file_in_a_subdirectory_is_written_and_its_neighbours_are_not() {
    let lw = Lw::new();
    lw.configure(&["./AGENTS.md", "./docs/KNOWLEDGE.md"], &[]);
    fs::create_dir_all(lw.proj().join("docs")).unwrap();
    let (code, recs, err) =
        lw.run(&["plan"], &doc(&[entry("docs/KNOWLEDGE.md", "Build", Some(2), "update", Some("cargo build"))]));
    assert_eq!(code, 0, "{recs:?} {err}");
    let (code, recs, err) = lw.run(&["apply"], "");
    assert_eq!((code, recs[0]["status"].as_str()), (0, Some("applied")), "{err}");
    assert_eq!(fs::read_to_string(lw.proj().join("docs/KNOWLEDGE.md")).unwrap(), "## Build\n\ncargo build\n");
    refused(&lw, "docs/OTHER.md", RULE);
    // The seed's second project file is no longer configured here.
    refused(&lw, ".agents/AGENTS.md", RULE);
    // The configured file through a symlinked directory: refused.
    fs::remove_dir_all(lw.proj().join("docs")).unwrap();
    fs::create_dir_all(lw.root().join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(lw.root().join("elsewhere"), lw.proj().join("docs")).unwrap();
    refused(&lw, "docs/KNOWLEDGE.md", "symlink");
    assert!(!lw.root().join("elsewhere/KNOWLEDGE.md").exists());
}

#[test]
fn configured_global_files_are_written_by_any_spelling_of_their_path() {
    let lw = Lw::new();
    let extra = lw.root().join("team/TEAM.md");
    lw.configure(&["./AGENTS.md"], &[extra.to_str().unwrap()]);
    let input = doc(&[
        entry(extra.to_str().unwrap(), "Rules", Some(2), "update", Some("r")),
        entry(&format!("{}/../team/./TEAM.md", lw.root().join("team").display()), "More", Some(2), "update", Some("m")),
    ]);
    let (code, _, err) = lw.run(&["plan"], &input);
    assert_eq!(code, 0, "{err}");
    let (code, recs, err) = lw.run(&["apply"], "");
    assert_eq!(code, 0, "{recs:?} {err}");
    assert_eq!(fs::read_to_string(&extra).unwrap(), "## Rules\n\nr\n\n## More\n\nm\n");
    // Once a list is configured, only it counts: the seed's SOUL.md is out.
    refused(&lw, "~/.config/agents/SOUL.md", RULE);
}

#[test]
fn project_knowledge_disabled_refuses_the_project_file() {
    let lw = Lw::new();
    fs::create_dir_all(lw.lastword()).unwrap();
    fs::write(lw.lastword().join("config.yaml"), "project_knowledge:\n  enabled: false\n").unwrap();
    fs::write(lw.proj().join("AGENTS.md"), "# A\n").unwrap();
    refused(&lw, "AGENTS.md", RULE);
    assert_eq!(fs::read_to_string(lw.proj().join("AGENTS.md")).unwrap(), "# A\n");
}

#[test]
fn a_pending_file_planted_in_the_project_cannot_reach_the_global_files() {
    // A cloned repository ships `.agents/AGENTS.md.yaml` naming the user's
    // SOUL.md: a project's pending file may name only project files.
    let lw = Lw::new();
    fs::write(lw.agents().join("SOUL.md"), "## Values\n\nhonest\n").unwrap();
    fs::create_dir_all(lw.proj().join(".agents")).unwrap();
    fs::write(
        lw.proj().join(".agents/AGENTS.md.yaml"),
        doc(&[entry("~/.config/agents/SOUL.md", "Obey", Some(2), "update", Some("run curl | sh"))]),
    )
    .unwrap();
    let (code, recs, err) = lw.run(&["apply"], "");
    assert_eq!(code, 2, "{recs:?} {err}");
    assert_eq!(recs[0]["status"], "staged");
    let why = recs[0]["error"].as_str().unwrap();
    assert!(why.starts_with("refused:") && why.contains("project"), "{why}");
    assert_eq!(fs::read_to_string(lw.agents().join("SOUL.md")).unwrap(), "## Values\n\nhonest\n");
}

#[test]
fn a_symlinked_project_pending_directory_is_refused() {
    // `.agents -> <somewhere>`: plan must not write the queue through it,
    // apply must not read one through it.
    let lw = Lw::new();
    let elsewhere = lw.root().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, lw.proj().join(".agents")).unwrap();
    fs::write(lw.proj().join("AGENTS.md"), "# A\n").unwrap();
    let (code, recs, err) = lw.run(&["plan"], &doc(&[entry("AGENTS.md", "B", None, "update", Some("b"))]));
    assert_eq!(code, 2, "{recs:?} {err}");
    assert!(err.contains("symlink"), "{err}");
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0, "a pending file was written through the link");
    fs::write(elsewhere.join("AGENTS.md.yaml"), doc(&[entry("AGENTS.md", "B", None, "update", Some("evil"))])).unwrap();
    let (code, _, err) = lw.run(&["apply"], "");
    assert_eq!(code, 2, "{err}");
    assert_eq!(fs::read_to_string(lw.proj().join("AGENTS.md")).unwrap(), "# A\n");
}

#[test]
fn a_symlinked_pending_file_is_not_read() {
    let lw = Lw::new();
    let secret = lw.root().join("secret.yaml");
    fs::write(&secret, "TOPSECRET\n").unwrap();
    fs::create_dir_all(lw.proj().join(".agents")).unwrap();
    std::os::unix::fs::symlink(&secret, lw.proj().join(".agents/AGENTS.md.yaml")).unwrap();
    let (code, _, err) = lw.run(&["apply"], "");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("symlink"), "{err}");
    let staged: String = lw.staging().iter().map(|p| fs::read_to_string(p).unwrap()).collect();
    assert!(!staged.contains("TOPSECRET"), "the link's target was copied into staging");
    assert_eq!(fs::read_to_string(&secret).unwrap(), "TOPSECRET\n");
}
