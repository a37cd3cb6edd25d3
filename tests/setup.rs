//! `just setup` installs what the tests need, pinned and inside
//! the build's target folder, using no tool but the ones the README names
//! (just, bash, cargo, git, python3; node and npm when present). The
//! tests here run its `--check` mode, which finds and checks everything
//! the installing run does, so they never build cargo-nextest themselves
//! (`--nextest`; without it `just test` runs cargo test).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::recipes::bin_dir;

/// The MCP Python SDK version `just setup` installs.
pub const SDK: &str = "2.3.0";

/// The folder `just setup` installs into: `tools/` in the build's target
/// folder (the one holding the binaries under test).
pub fn tools_dir() -> PathBuf {
    bin_dir().parent().expect("the target folder").join("tools")
}

/// The venv's Python with the MCP SDK; a missing venv is a failure that
/// names `just setup`, never a skipped test.
pub fn python_with_sdk() -> PathBuf {
    let python = tools_dir().join("py/bin/python3");
    let probe = Command::new(&python)
        .args(["-c", "import importlib.metadata as m; print(m.version('mcp'))"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    assert_eq!(
        probe.as_deref().ok(),
        Some(SDK),
        "the MCP Python SDK {SDK} is not in {}: run `just setup` (just ci does)",
        python.display()
    );
    python
}

/// The MCP TypeScript SDK version `just setup` installs.
pub const TS_SDK: &str = "1.32.2";

/// The installed TypeScript SDK package folder; missing is a failure that
/// names `just setup`, never a skipped test.
pub fn typescript_sdk() -> PathBuf {
    let dir = tools_dir().join("npm/node_modules/@modelcontextprotocol/sdk");
    let manifest = std::fs::read_to_string(dir.join("package.json")).unwrap_or_default();
    let version = serde_json::from_str::<serde_json::Value>(&manifest)
        .ok()
        .and_then(|v| v["version"].as_str().map(str::to_string));
    assert_eq!(
        version.as_deref(),
        Some(TS_SDK),
        "the MCP TypeScript SDK {TS_SDK} is not in {}: run `just setup` (just ci does; it needs node and npm)",
        dir.display()
    );
    dir
}

/// Where `name` is on the caller's PATH.
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// The real python3 (not a version manager's shim, which needs its manager on PATH).
fn real_python() -> PathBuf {
    let out = Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output().expect("python3");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// A folder holding only the tools the README declares, as links.
fn declared_tools(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["just", "bash", "cargo", "git", "node", "npm"] {
        match which(name) {
            Some(p) => std::os::unix::fs::symlink(p, bin.join(name)).unwrap(),
            None => assert!(["node", "npm"].contains(&name), "{name} is needed on PATH"),
        }
    }
    std::os::unix::fs::symlink(real_python(), bin.join("python3")).unwrap();
    bin
}

/// `just setup ARGS` on this checkout with only `bin` on PATH and a bare
/// environment; the build's target folder is `target`.
fn setup(bin: &Path, target: &Path, args: &[&str]) -> std::process::Output {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let home = std::env::var_os("HOME").unwrap_or_default();
    let mut c = Command::new(bin.join("just"));
    c.env_clear().env("PATH", bin).env("HOME", &home).env("CARGO_TARGET_DIR", target);
    for var in ["RUSTUP_HOME", "CARGO_HOME", "RUSTUP_TOOLCHAIN"] {
        if let Some(v) = std::env::var_os(var) {
            c.env(var, v);
        }
    }
    c.arg("--justfile").arg(repo.join("justfile")).arg("setup").args(args).current_dir(target);
    c.output().expect("running just setup")
}

/// `just setup --check` on this build's target folder runs with
/// nothing but the declared tools and reports each tool as there or to
/// be installed, naming its pinned version.
#[test]
fn setup_uses_only_the_declared_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = declared_tools(tmp.path());
    let target = bin_dir().parent().unwrap().to_path_buf();
    let out = setup(&bin, &target, &["--check"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(!stderr.contains("not found"), "an undeclared tool was used: {stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let tools = target.join("tools");
    let nextest = format!("ok cargo-nextest 0.9.143 ({}/bin)", tools.display());
    let without = "ok without cargo-nextest: just test runs cargo test (just setup --nextest installs 0.9.143)";
    assert!(lines.iter().any(|l| *l == nextest || *l == without), "{stdout}");
    let sdk = format!("ok MCP Python SDK {SDK} ({}/py)", tools.display());
    let venv = format!("would install a venv: python3 -m venv --clear {}/py", tools.display());
    assert!(lines.contains(&sdk.as_str()) || lines.contains(&venv.as_str()), "{stdout}");
    let ts = format!("ok MCP TypeScript SDK {TS_SDK} ({}/npm)", tools.display());
    let npm = format!("would install MCP TypeScript SDK {TS_SDK}: npm install --prefix {}/npm", tools.display());
    assert!(
        lines.contains(&ts.as_str()) || lines.iter().any(|l| l.starts_with(&npm)) || which("npm").is_none(),
        "{stdout}"
    );
    assert!(lines.iter().all(|l| l.starts_with("ok ") || l.starts_with("would install ")), "{stdout}");
}

/// where python3 cannot make a venv (Debian without
/// python3-venv), setup says which package to install, and installs
/// nothing, not even the tools it could.
#[test]
fn setup_names_python3_venv_when_it_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = declared_tools(tmp.path());
    std::fs::remove_file(bin.join("python3")).unwrap();
    let fake = format!(
        "#!/bin/sh\ncase \"$*\" in *ensurepip*) echo \"No module named 'ensurepip'\" >&2; exit 1;; esac\nexec '{}' \"$@\"\n",
        real_python().display()
    );
    std::fs::write(bin.join("python3"), fake).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("python3"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let target = tmp.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    for args in [&["--check"][..], &[]] {
        let out = setup(&bin, &target, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "just setup: python3 cannot make a virtual environment (no ensurepip module): install the python3-venv \
             package (Debian, Ubuntu: apt-get install python3-venv), then run just setup again\n\
             error: recipe `setup` failed with exit code 1\n"
        );
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "{args:?}: nothing installed");
    }
    let out = setup(&bin, &target, &["--all"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .starts_with("just setup: unknown flag '--all' (the flags are --check and --nextest)\n"));
}

/// `--nextest` adds the pinned cargo-nextest, built into the
/// target folder without its self-update; `--check` only says so.
#[test]
fn setup_nextest_is_pinned_and_local() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = declared_tools(tmp.path());
    let target = tmp.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    let out = setup(&bin, &target, &["--check", "--nextest"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let tools = target.join("tools");
    // Without node and npm the detection says so first, before any install line.
    let (before, after) = match (which("npm"), which("node")) {
        (Some(_), Some(_)) => (
            String::new(),
            format!(
                "would install MCP TypeScript SDK {TS_SDK}: npm install --prefix {}/npm --no-audit --no-fund \
                 @modelcontextprotocol/sdk@{TS_SDK}\n",
                tools.display()
            ),
        ),
        _ => (
            "ok without node and npm: the TypeScript SDK test fails until they are installed (Debian, Ubuntu: \
             apt-get install nodejs npm)\n"
                .to_string(),
            String::new(),
        ),
    };
    assert_eq!(
        stdout,
        format!(
            "{before}would install cargo-nextest 0.9.143: cargo install --locked cargo-nextest --version 0.9.143 \
             --no-default-features --features default-no-update --root {t}\n\
             would install a venv: python3 -m venv --clear {t}/py\n\
             would install MCP Python SDK {SDK}: {t}/py/bin/python3 -m pip install --disable-pip-version-check \
             --progress-bar off mcp=={SDK}\n{after}",
            t = tools.display(),
        )
    );
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "--check installs nothing");
}
