//! The manual is README.md and the reference pages under `docs/`: their
//! set-up commands, links, agent-hook snippets and every example are
//! checked here against the real thing.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::recipes::bin_dir;
use crate::util::{isolate, Lib};

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

/// Every page of the manual as (path relative to the repository, text):
/// README.md first, then `docs/` and `docs/design/` in name order.
pub fn manual() -> Vec<(String, String)> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![("README.md".to_string(), readme())];
    for dir in ["docs", "docs/design"] {
        let mut names: Vec<PathBuf> = std::fs::read_dir(repo.join(dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        names.sort();
        for p in names {
            let rel = p.strip_prefix(repo).unwrap().to_string_lossy().into_owned();
            pages.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
    pages
}

/// The fenced blocks of every page of the manual, as [`blocks`] gives them.
pub fn manual_blocks() -> Vec<(String, String)> {
    manual().iter().flat_map(|(_, text)| blocks(text)).collect()
}

/// The fenced blocks of `text` as (info string, body), outermost only.
pub fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String, String)> = None; // fence, info, body
    for line in text.lines() {
        match &mut open {
            None => {
                let fence: String = line.chars().take_while(|c| *c == '`').collect();
                if fence.len() >= 3 {
                    open = Some((fence.clone(), line[fence.len()..].trim().to_string(), String::new()));
                }
            }
            Some((fence, info, body)) => {
                if line.trim_end() == fence.as_str() {
                    out.push((info.clone(), std::mem::take(body)));
                    open = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    out
}

/// The fenced blocks of `text` as (line number, info string, body, the
/// last non-empty line before the fence), outermost only.
fn marked_blocks(text: &str) -> Vec<(usize, String, String, String)> {
    let mut out = Vec::new();
    let mut last = "";
    let mut open: Option<(usize, String, String, String, String)> = None; // line, fence, info, body, marker
    for (n, line) in text.lines().enumerate() {
        match &mut open {
            None => {
                let fence: String = line.chars().take_while(|c| *c == '`').collect();
                if fence.len() >= 3 {
                    let info = line[fence.len()..].trim().to_string();
                    open = Some((n + 1, fence, info, String::new(), last.to_string()));
                } else if !line.trim().is_empty() {
                    last = line;
                }
            }
            Some((at, fence, info, body, marker)) => {
                if line.trim_end() == fence.as_str() {
                    out.push((*at, std::mem::take(info), std::mem::take(body), std::mem::take(marker)));
                    open = None;
                    last = line;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    out
}

/// Whether a line is a typed command: `$ cmd`, or `host$ cmd` in a session
/// between machines.
fn prompt(line: &str) -> bool {
    line.split_once("$ ").is_some_and(|(host, _)| host.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
}

/// Every block of commands a user would type (a `sh` block, or
/// lines with a `$ ` prompt) is either a `console` example the test below
/// runs (`<!-- readme-test: NAME -->` before it), or run by a named test
/// (`<!-- readme-test: by TEST -->`), or says why it is not run
/// (`<!-- readme-test: skip (REASON) -->`), so no example is silently
/// left to drift.
#[test]
fn every_manual_command_block_is_run_or_says_why_not() {
    let mut unmarked = Vec::new();
    let (mut run, mut skipped, mut elsewhere) = (0, 0, 0);
    for (page, line, info, body, marker) in manual()
        .iter()
        .flat_map(|(page, text)| marked_blocks(text).into_iter().map(move |b| (page.clone(), b.0, b.1, b.2, b.3)))
    {
        if info != "sh" && !body.lines().any(prompt) {
            continue;
        }
        let name = marker.strip_prefix("<!-- readme-test: ").and_then(|r| r.strip_suffix(" -->"));
        match name {
            Some(reason) if reason.starts_with("skip (") && reason.ends_with(')') && reason.len() > 20 => skipped += 1,
            Some(by) if by.starts_with("by ") => {
                let test = &by[3..];
                assert!(tests_source().contains(&format!("fn {test}()")), "{page}:{line}: no test named {test}");
                elsewhere += 1;
            }
            Some(n) if info == "console" && !n.starts_with("skip") => run += 1,
            _ => unmarked.push(format!("{page}:{line}: ```{info} {}", body.lines().next().unwrap_or(""))),
        }
    }
    eprintln!("manual command blocks: {run} run here, {elsewhere} run by a named test, {skipped} not runnable");
    assert!(unmarked.is_empty(), "command blocks neither run nor marked skip (REASON):\n{}", unmarked.join("\n"));
}

/// The integration tests' source, to check a `by TEST` marker names one.
fn tests_source() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut all = String::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "rs") {
            all.push_str(&std::fs::read_to_string(p).unwrap());
        }
    }
    all
}

/// The one block of the manual whose info string is `info`.
#[track_caller]
fn block(info: &str) -> String {
    let found: Vec<String> = manual_blocks().into_iter().filter(|(i, _)| i == info).map(|(_, b)| b).collect();
    assert_eq!(found.len(), 1, "the manual has one ```{info} block");
    found[0].clone()
}

/// The README's first command installs the binaries and runs the
/// main job; the second runs the tests; `just install` is cargo install.
#[test]
fn the_readme_first_two_commands_install_and_test() {
    let sh: Vec<String> = blocks(&readme()).into_iter().filter(|(i, _)| i == "sh").map(|(_, b)| b).take(2).collect();
    assert_eq!(sh[0], "cargo install --locked just && just install && just demo\n");
    assert_eq!(sh[1], "cargo install --locked just && just ci\n");
    let justfile = Path::new(env!("CARGO_MANIFEST_DIR")).join("justfile");
    let show = |recipe: &str| {
        let out = Command::new("just").arg("-f").arg(&justfile).args(["--show", recipe]).output().expect("just");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // Progress shown, the stripped `dist` profile, the place named.
    let install = show("install");
    assert!(
        install.contains("cargo install --locked --profile dist --path") && !install.contains("--quiet"),
        "{install}"
    );
    assert!(install.contains("echo \"installed kb-append "), "{install}");
    let cargo = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    assert!(cargo.contains("[profile.dist]\ninherits = \"release\"\ndebug = false\nstrip = true\n"), "{cargo}");
    assert!(cargo.contains("[profile.release]\ndebug = 1\n"), "benchmarks keep their symbols");
    let ci = show("ci");
    assert!(ci.contains("cargo clippy") && ci.contains("cargo fmt") && ci.contains(" test"), "{ci}");
    assert!(show("test").contains("cargo nextest run"));
    // `ci` sets up what the tests need before running them.
    assert!(ci.contains(" setup\n") && ci.find(" setup\n") < ci.rfind(" test"), "{ci}");
    // No recipe builds at run time: the binaries come from PATH.
    let text = std::fs::read_to_string(&justfile).unwrap();
    for (n, l) in text.lines().enumerate() {
        let in_dev_recipe =
            ["cargo install", "cargo nextest", "cargo test", "cargo fmt", "cargo clippy", "cargo build --release"];
        assert!(!l.contains("cargo ") || in_dev_recipe.iter().any(|d| l.contains(d)), "justfile:{}: {l}", n + 1);
    }
}

/// Every link of the manual leads somewhere: a relative Markdown link
/// from the page's own folder, a repository path in prose or code from the
/// repository's root, and every reference page is linked from the README.
/// The licenses Cargo.toml names are there.
#[test]
fn the_manual_has_no_dead_links_and_the_readme_reaches_every_page() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dead = Vec::new();
    let mut linked = std::collections::BTreeSet::new();
    for (page, text) in manual() {
        let dir = repo.join(&page).parent().unwrap().to_path_buf();
        // Markdown links to relative targets.
        for part in text.split("](").skip(1) {
            let target = part.split(')').next().unwrap_or_default();
            if target.contains("://") || target.starts_with('#') || target.contains(' ') || target.is_empty() {
                continue;
            }
            let file = dir.join(target.split('#').next().unwrap());
            match file.canonicalize() {
                Ok(f) => {
                    if page == "README.md" {
                        linked.insert(f);
                    }
                }
                Err(_) => dead.push(format!("{page}: {target}")),
            }
        }
        // Paths in prose or code: folders of this repository.
        for word in text.split(|c: char| c.is_whitespace() || "`()[],;:'\"".contains(c)) {
            let word = word.split('#').next().unwrap().trim_end_matches('.');
            let ours = ["docs/", "bench/", "schemas/", "examples/", "tests/", "bins/", "lib/src/"];
            let plain = !word.contains('*') && !word.contains('<') && !word.contains('{');
            if ours.iter().any(|d| word.starts_with(d)) && plain && !repo.join(word).exists() {
                dead.push(format!("{page}: {word}"));
            }
        }
    }
    assert!(dead.is_empty(), "dead links in the manual: {dead:?}");
    // Every reference page is one link from the README.
    for (page, _) in manual().iter().skip(1) {
        let f = repo.join(page).canonicalize().unwrap();
        assert!(linked.contains(&f), "README.md links no {page}");
    }
    for f in ["LICENSE-MIT", "LICENSE-APACHE"] {
        assert!(repo.join(f).is_file(), "{f}");
    }
}

/// The README is a manual a user reads in one sitting: the reference
/// pages hold the rest.
#[test]
fn the_readme_stays_short() {
    let lines = readme().lines().count();
    assert!(lines <= 600, "README.md has {lines} lines; move reference text to docs/");
}

/// A project directory with an initialised library, an AGENTS.md and a
/// session buffer of one last-word delta.
fn hook_project() -> (Lib, PathBuf) {
    let lib = Lib::new();
    let home = lib.root().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(lib.root().join("AGENTS.md"), "# Project\n\n## Build\n\nmake\n").unwrap();
    buffer(&lib, "cargo build");
    (lib, home)
}

fn buffer(lib: &Lib, build: &str) {
    std::fs::create_dir_all(lib.root().join(".agents")).unwrap();
    std::fs::write(
        lib.root().join(".agents/last-word.session.jsonl"),
        format!(
            "{{\"path\":\"./AGENTS.md\",\"heading\":\"Build\",\"content\":\"{build}\\n\",\"operation\":\"update\"}}\n"
        ),
    )
    .unwrap();
}

/// Runs a snippet's command as the agent would: a shell in the project,
/// the installed binaries on PATH.
#[track_caller]
fn run_hook(lib: &Lib, home: &Path, command: &str, stdin: &str) -> String {
    let mut c = Command::new("sh");
    isolate(&mut c, lib.root());
    let path = format!("{}:{}", bin_dir().display(), std::env::var("PATH").unwrap_or_default());
    c.env("PATH", path).env("KB_LASTWORD_HOME", home).env("CLAUDE_PROJECT_DIR", lib.root()).args(["-c", command]);
    let out = assert_cmd::Command::from_std(c).write_stdin(stdin.to_string()).output().unwrap();
    assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn agents_md(lib: &Lib) -> String {
    std::fs::read_to_string(lib.root().join("AGENTS.md")).unwrap()
}

/// The Claude Code settings snippet's commands work from a
/// project: SessionEnd and PreCompact apply the last word, Stop nudges.
#[test]
fn claude_code_hooks_run_from_a_project() {
    let settings: serde_json::Value = serde_json::from_str(&block("json claude-settings")).expect("valid JSON");
    let command = |event: &str| settings["hooks"][event][0]["hooks"][0]["command"].as_str().unwrap().to_string();
    let (lib, home) = hook_project();
    run_hook(&lib, &home, &command("SessionEnd"), "{}");
    assert_eq!(agents_md(&lib), "# Project\n\n## Build\n\ncargo build\n");
    assert!(!lib.root().join(".agents/last-word.session.jsonl").exists());
    buffer(&lib, "cargo build --release");
    run_hook(&lib, &home, &command("PreCompact"), "{}");
    assert_eq!(agents_md(&lib), "# Project\n\n## Build\n\ncargo build --release\n");
    let out = run_hook(&lib, &home, &command("Stop"), "{}");
    assert!(out.contains("\"record\":\"nudge\""), "{out}");
}

/// The README's stop-hook script, run as it stands from a
/// project, plans the session buffer, applies it and removes the buffer.
#[test]
fn the_stop_hook_script_applies_the_session_buffer() {
    let script = manual_blocks()
        .into_iter()
        .find(|(i, b)| i == "sh" && b.starts_with("f=.agents/last-word.session.jsonl"))
        .expect("the README's stop-hook script")
        .1;
    let (lib, home) = hook_project();
    run_hook(&lib, &home, &format!("SESSION_ID=s-42\n{script}"), "");
    assert_eq!(agents_md(&lib), "# Project\n\n## Build\n\ncargo build\n");
    assert!(!lib.root().join(".agents/last-word.session.jsonl").exists());
    // With nothing buffered the script still succeeds and changes nothing.
    run_hook(&lib, &home, &format!("SESSION_ID=s-43\n{script}"), "");
    assert_eq!(agents_md(&lib), "# Project\n\n## Build\n\ncargo build\n");
}

/// The command lines of the ```sh blocks inside a snippet.
fn commands(snippet: &str) -> Vec<String> {
    blocks(snippet)
        .into_iter()
        .filter(|(i, _)| i == "sh")
        .flat_map(|(_, b)| b.lines().map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// The Codex AGENTS.md section's end-of-task commands work.
#[test]
fn codex_agents_md_commands_run_from_a_project() {
    let cmds = commands(&block("markdown codex-agents"));
    assert_eq!(cmds.len(), 2, "{cmds:?}");
    let (lib, home) = hook_project();
    run_hook(&lib, &home, &cmds[0], "");
    assert_eq!(agents_md(&lib), "# Project\n\n## Build\n\ncargo build\n");
    assert!(run_hook(&lib, &home, &cmds[1], "").contains("\"record\":\"nudge\""));
}

/// The Cursor rule's commands work, with kb-memgate's notes in
/// `.cursor/.lingxi` once the user's config says `store: cursor` as the
/// README shows.
#[test]
fn cursor_rule_commands_run_from_a_project() {
    let rule = block("markdown cursor-rule");
    assert!(rule.starts_with("---\ndescription: "), "an .mdc rule with frontmatter");
    let cmds = commands(&rule);
    assert_eq!(cmds.len(), 2, "{cmds:?}");
    let (lib, home) = hook_project();
    // The test's HOME is the project (util::isolate).
    let config = lib.root().join(".config/kb-tools/config.yaml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, block("yaml kb-tools-config")).unwrap();
    let said = "{\"mode\":\"remember\",\"input\":{\"user_input\":{\"text\":\"Never use var here\",\"evidence_spans\":[{\"start\":0,\"end\":18}]}}}\n";
    let out = run_hook(&lib, &home, &cmds[0], said);
    assert!(out.contains("\"status\":"), "{out}");
    assert!(lib.root().join(".cursor/.lingxi/memory/INDEX.md").is_file());
    run_hook(&lib, &home, &cmds[1], "");
    assert_eq!(agents_md(&lib), "# Project\n\n## Build\n\ncargo build\n");
}

/// A `console` block: the `<!-- readme-test: NAME -->` comment before it
/// and its text.
fn console_blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut last = "";
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line == "```console" {
            let name = last.strip_prefix("<!-- readme-test: ").and_then(|r| r.strip_suffix(" -->")).unwrap_or("");
            let mut body = String::new();
            for l in lines.by_ref().take_while(|l| *l != "```") {
                body.push_str(l);
                body.push('\n');
            }
            out.push((name.to_string(), body));
        }
        if !line.trim().is_empty() {
            last = line;
        }
    }
    out
}

/// (command, expected output lines) steps of a console block; `\`
/// continues a command on the next line.
fn steps(body: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut cont = false;
    for line in body.lines() {
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.push((cmd.to_string(), Vec::new()));
            cont = cmd.ends_with('\\');
        } else if cont {
            let last = out.last_mut().expect("a command first");
            last.0.push('\n');
            last.0.push_str(line);
            cont = line.ends_with('\\');
        } else {
            out.last_mut().expect("a command first").1.push(line.to_string());
        }
    }
    // A blank line between steps is for the reader, not output.
    for (_, want) in &mut out {
        while want.last().is_some_and(|l| l.is_empty()) {
            want.pop();
        }
    }
    out
}

/// Whether `actual` is `want`, where `...` in `want` stands for any text.
fn matches(want: &str, actual: &str) -> bool {
    let parts: Vec<&str> = want.split("...").collect();
    if parts.len() == 1 {
        return want == actual;
    }
    let Some(mut rest) = actual.strip_prefix(parts[0]) else { return false };
    for (i, p) in parts.iter().enumerate().skip(1) {
        if i == parts.len() - 1 {
            return rest.ends_with(p);
        }
        match rest.find(p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    true
}

/// The state each named README example starts from. `same` goes on in
/// the previous example's project.
fn setup(name: &str, dir: &Path, home: &Path) {
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    match name {
        "same" => {}
        "library" => {
            let mut c = Command::new(assert_cmd::cargo::cargo_bin("kb-append"));
            isolate(&mut c, dir);
            assert!(c.arg("init").output().unwrap().status.success());
        }
        "git-project" => {
            crate::util::git(dir, &["init", "-q"]);
            crate::util::git(dir, &["config", "user.name", "Test"]);
            crate::util::git(dir, &["config", "user.email", "test@example.invalid"]);
            write("jwt.md", "---\ntopic: jwt-auth\ntype: security\nkeywords: [jwt, auth]\n---\n# JWT auth\n\nVerify the signature before reading any claim.\n");
        }
        "old-changelog" => {
            let old = "{\"ts\":\"2025-10-15T09:00:00Z\",\"event\":\"referenced\",\"path\":\"team-notes/a.md\",\"notebook\":\"nb-1\"}\n\
                       {\"ts\":\"2025-11-15T09:00:00Z\",\"event\":\"referenced\",\"path\":\"team-notes/a.md\",\"notebook\":\"nb-1\"}\n";
            let log = dir.join(".library/.changelog");
            let now = std::fs::read_to_string(&log).unwrap();
            std::fs::write(&log, format!("{old}{now}")).unwrap();
            crate::util::git(dir, &["commit", "-qam", "older history"]);
        }
        "lastword" => {
            let agents = home.join(".config/agents");
            std::fs::create_dir_all(&agents).unwrap();
            std::fs::write(
                agents.join("USER.md"),
                "# USER\n\n## Research Interests\n\n- Compilers\n\n## Temporary Notes\n\nscratch\n",
            )
            .unwrap();
            std::fs::write(agents.join("SOUL.md"), "# SOUL\n\n## Values\n\nHonesty.\n").unwrap();
            let yaml = manual_blocks().into_iter().find(|(i, b)| i == "yaml" && b.starts_with("version: \"1.0.0\""));
            write("session.yaml", &yaml.expect("the README's session.yaml").1);
        }
        "dup" => write(
            "dup.yaml",
            "version: \"1.0.0\"\nentries:\n  - key: {path: \"~/.config/agents/USER.md\", heading: \"Projects\", level: 2}\n    operation: update\n    content: \"- kb-tools\\n\"\n  - key: {path: \"~/.config/agents/USER.md\", heading: \"Projects\"}\n    operation: update\n    content: \"- other\\n\"\n",
        ),
        // The library the kb-index and kb-relate sections describe.
        "walkthrough" => {
            crate::util::git(dir, &["init", "-q"]);
            crate::util::git(dir, &["config", "user.name", "Test"]);
            crate::util::git(dir, &["config", "user.email", "test@example.invalid"]);
            let mut c = Command::new(assert_cmd::cargo::cargo_bin("kb-append"));
            isolate(&mut c, dir);
            assert!(c.arg("init").output().unwrap().status.success());
            let refs = ".library/.memory/.references";
            write(&format!("{refs}/jwt-auth-v1.md"), "---\ntopic: jwt-auth\nkeywords: [jwt, auth]\nlast_verified_at: 2025-10-01\nstaleness_threshold_days: 60\neffectiveness_mark: true\n---\n# JWT auth\n\nSee https://datatracker.ietf.org/doc/rfc7519.\n");
            write(&format!("{refs}/jwt-auth-v2.md"), "---\ntopic: jwt-auth\nkeywords: [jwt]\nlast_verified_at: 2026-02-20\neffectiveness_mark: true\nrelated: [oauth-flow]\n---\n# JWT auth\n\nSee https://datatracker.ietf.org/doc/rfc7519.\n");
            write(&format!("{refs}/oauth-flow-v1.md"), "---\ntopic: oauth-flow\nlast_verified_at: 2026-02-01\nrelated: [session]\n---\n# OAuth flow\n\nSee https://datatracker.ietf.org/doc/rfc6749.\n");
            write(".library/.memory/.experiences/software/session-impl.md", "---\ntype: software\nlast_verified_at: 2025-09-01\n---\n# Session handling\n");
            write(".library/.memory/.thinking/patterns/divide.md", "---\ntopic: divide\n---\n# Divide and conquer\n");
            write(".library/.skills/.active/pdf-tools/SKILL.md", "---\nname: pdf-tools\ndescription: Extract text from PDFs.\ntrust_tier: T3\n---\n# pdf-tools\n");
            let mut log = std::fs::read_to_string(dir.join(".library/.changelog")).unwrap();
            for (i, nb) in ["nb1", "nb2", "nb3"].iter().enumerate() {
                for (h, event, path) in [
                    (10, "referenced", ".memory/.thinking/patterns/divide.md"),
                    (10, "referenced", ".skills/.active/pdf-tools/SKILL.md"),
                    (18, "accept", ".memory/.thinking/patterns/divide.md"),
                ] {
                    log.push_str(&format!("{{\"ts\":\"2026-02-0{}T{h}:00:00Z\",\"event\":\"{event}\",\"path\":\"{path}\",\"notebook\":\"{nb}\"}}\n", i + 1));
                }
            }
            write(".library/.changelog", &log);
            crate::util::git(dir, &["add", "-A"]);
            crate::util::git(dir, &["commit", "-qm", "walkthrough library"]);
        }
        "rebuilt" => {
            let mut c = Command::new(assert_cmd::cargo::cargo_bin("kb-index"));
            isolate(&mut c, dir);
            assert!(c.arg("rebuild").output().unwrap().status.success());
        }
        // The kb-index check example's state: a row naming a gone file, logged.
        "gone-row" => {
            let index = dir.join(".library/.memory/.references/.index.md");
            let mut text = std::fs::read_to_string(&index).unwrap();
            text.push_str("| gone-v9.md | gone |\n");
            std::fs::write(&index, text).unwrap();
            let mut c = Command::new(assert_cmd::cargo::cargo_bin("kb-index"));
            isolate(&mut c, dir);
            assert_eq!(c.arg("check").output().unwrap().status.code(), Some(1));
        }
        // A project that imports the kb-tools justfile, as the README's
        // installation section shows.
        "import" => {
            let kb = Path::new(env!("CARGO_MANIFEST_DIR")).join("justfile");
            write("justfile", &format!("import '{}'\n", kb.display()));
        }
        // The seed's example library of the kb-score section.
        "seed-library" => crate::util::copy_dir(crate::score::seed_library().root(), dir),
        // The rule files of this checkout, for `rules validate rules/core.yaml`.
        "rules" => crate::util::copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("rules"), &dir.join("rules")),
        other => panic!("README example with unknown setup '{other}'"),
    }
}

/// Every `console` example of the manual runs, in a temporary project,
/// and prints what the page shows (`...` stands for text that varies); the
/// project path prints as `/work/proj`. A page's examples run in its order:
/// `same` goes on in the previous example's project.
#[test]
fn the_manual_console_examples_print_what_they_show() {
    let mut failures = Vec::new();
    let mut total = 0;
    for (page, text) in manual() {
        let examples = console_blocks(&text);
        total += examples.len();
        let mut tmp = tempfile::tempdir().unwrap();
        for (n, (name, body)) in examples.iter().enumerate() {
            assert!(
                !name.is_empty(),
                "{page}: console example {n} has no <!-- readme-test: NAME --> before it:\n{body}"
            );
            assert!(n > 0 || !name.starts_with("same"), "{page}: its first example cannot go on from another page's");
            if !name.starts_with("same") {
                tmp = tempfile::tempdir().unwrap();
                std::fs::create_dir_all(tmp.path().join("proj")).unwrap();
                std::fs::create_dir_all(tmp.path().join("home")).unwrap();
            }
            let (dir, home) = (tmp.path().join("proj"), tmp.path().join("home"));
            for part in name.split('+') {
                setup(part, &dir, &home);
            }
            for (cmd, want) in steps(body) {
                let mut c = Command::new("sh");
                isolate(&mut c, &dir);
                let path = format!("{}:{}", bin_dir().display(), std::env::var("PATH").unwrap_or_default());
                c.env("PATH", path).env("KB_LASTWORD_HOME", &home).env("COLUMNS", "200").args(["-c", &cmd]);
                let out = c.output().unwrap();
                let actual =
                    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
                let actual = actual.replace(&dir.display().to_string(), "/work/proj");
                let got: Vec<&str> = actual.lines().collect();
                let ok = got.len() == want.len() && want.iter().zip(&got).all(|(w, g)| matches(w, g));
                if !ok {
                    failures.push(format!(
                        "{page} example {n} ({name}): $ {cmd}\n--- the page\n{}\n--- actual\n{actual}",
                        want.join("\n")
                    ));
                }
            }
        }
    }
    assert!(total >= 20, "{total} console examples in the manual");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
