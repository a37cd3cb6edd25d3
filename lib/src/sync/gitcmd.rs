//! The git repository a library lives in, as sync sees it: its
//! top level, its git directory and where the library sits inside it, plus
//! the few git plumbing calls sync needs. Every call goes through
//! [`crate::library::git::git`] with a fixed locale and no credential prompts, so
//! errors are parseable and a dead remote fails instead of hanging.

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::error::{Error, Result};
use crate::library::Library;

/// A git work tree holding a library.
#[derive(Debug, Clone)]
pub struct Repo {
    /// The work tree's top level.
    pub top: PathBuf,
    /// The (per-worktree) git directory, absolute.
    pub git_dir: PathBuf,
    /// The library's path under `top`, `/`-terminated (empty when the
    /// library is the top level itself).
    pub prefix: String,
}

impl Repo {
    /// Opens the repository around a library; a clear error when there is
    /// none.
    pub fn open(lib: &Library) -> Result<Repo> {
        let mut c = crate::library::git::git(&lib.dir);
        c.args(["rev-parse", "--show-toplevel", "--absolute-git-dir", "--show-prefix"]);
        let out = c.output().map_err(|e| Error::io("running git", e))?;
        if !out.status.success() {
            return Err(Error::msg(format!(
                "{} is not in a git repository (run 'git init' or clone the library's remote)",
                lib.dir.display()
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let mut line = || lines.next().ok_or_else(|| Error::msg(format!("git rev-parse printed too little: {text:?}")));
        let top = PathBuf::from(line()?);
        let git_dir = PathBuf::from(line()?);
        // An empty prefix (the library at the top) prints an empty line, or none.
        let prefix = lines.next().unwrap_or_default().to_string();
        Ok(Repo { top, git_dir, prefix })
    }

    /// A git command at the top level: C locale, no prompts, no stdin.
    pub fn cmd(&self) -> Command {
        let mut c = crate::library::git::git(&self.top);
        c.env("LC_ALL", "C").env("GIT_TERMINAL_PROMPT", "0").env("GIT_MERGE_AUTOEDIT", "no");
        c
    }

    /// Runs git and returns its raw output (any exit status).
    pub fn output(&self, args: &[&str]) -> Result<Output> {
        self.cmd().args(args).output().map_err(|e| Error::io(format!("running git {}", args[0]), e))
    }

    /// Runs git; its stdout on success, an error naming `what` and git's
    /// message otherwise.
    pub fn run(&self, args: &[&str], what: &str) -> Result<String> {
        let out = self.output(args)?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(Error::msg(format!("{what} failed: {}", stderr_of(&out))))
        }
    }

    /// Whether a git command succeeds (for yes/no questions).
    pub fn ok(&self, args: &[&str]) -> bool {
        self.output(args).is_ok_and(|o| o.status.success())
    }

    /// The commit a revision names, if it exists. (This and the two
    /// below: git not starting is taken as "no", since this repository
    /// was found by running git moments before.)
    pub fn rev(&self, name: &str) -> Option<String> {
        let out = self.output(&["rev-parse", "--verify", "--quiet", &format!("{name}^{{commit}}")]).ok()?;
        let sha = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !sha.is_empty()).then_some(sha)
    }

    /// Whether `a` is an ancestor of (or equal to) `b`.
    pub fn is_ancestor(&self, a: &str, b: &str) -> bool {
        self.ok(&["merge-base", "--is-ancestor", a, b])
    }

    /// The branch HEAD points at (`None` when detached).
    pub fn current_branch(&self) -> Option<String> {
        let out = self.output(&["symbolic-ref", "--quiet", "--short", "HEAD"]).ok()?;
        let b = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !b.is_empty()).then_some(b)
    }

    /// A config value, if set.
    pub fn config(&self, key: &str) -> Option<String> {
        let out = self.output(&["config", "--get", key]).ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim_end_matches('\n').to_string())
    }

    /// Sets a config value in the clone's own config when it differs.
    pub fn set_config(&self, key: &str, value: &str) -> Result<()> {
        if self.config(key).as_deref() != Some(value) {
            self.run(&["config", "--local", key, value], "git config")?;
        }
        Ok(())
    }

    /// NUL-separated output split into its parts.
    pub fn list(&self, args: &[&str], what: &str) -> Result<Vec<String>> {
        Ok(self.run(args, what)?.split('\0').filter(|s| !s.is_empty()).map(str::to_string).collect())
    }

    /// Paths (top-relative) that differ between two commits, renames as a
    /// delete and an add.
    pub fn changed(&self, from: &str, to: &str) -> Result<Vec<String>> {
        self.list(&["diff", "--name-only", "--no-renames", "-z", from, to, "--"], "git diff")
    }

    /// The library-relative form of a top-relative path, when it is inside
    /// the library.
    pub fn in_library<'a>(&self, top_rel: &'a str) -> Option<&'a str> {
        top_rel.strip_prefix(self.prefix.as_str())
    }

    /// The top-relative form of a library-relative path.
    pub fn top_path(&self, lib_rel: &str) -> String {
        format!("{}{lib_rel}", self.prefix)
    }

    /// A path inside the git directory (markers that must never be
    /// committed).
    pub fn git_path(&self, name: &str) -> PathBuf {
        self.git_dir.join(name)
    }

    /// The pathspec of the whole library (its `.gitignore` keeps the lock
    /// file and temp files out).
    pub fn library_pathspec(&self) -> String {
        if self.prefix.is_empty() {
            ".".to_string()
        } else {
            self.prefix.clone()
        }
    }

    /// Records the staged merge as a commit with parents HEAD and
    /// `theirs`, by plumbing (no index refresh, no hooks), then forgets
    /// the merge state.
    pub fn commit_merge(&self, theirs: &str, message: &str) -> Result<()> {
        let tree = self.run(&["write-tree"], "git write-tree")?.trim().to_string();
        let head = self.rev("HEAD").ok_or_else(|| Error::msg("HEAD vanished during the merge"))?;
        let mut args: Vec<&str> = crate::library::git::identity_args(&self.top);
        args.extend(["commit-tree", &tree, "-p", &head, "-p", theirs, "-m", message]);
        let commit = self.run(&args, "git commit-tree")?.trim().to_string();
        self.run(&["update-ref", "-m", message, "HEAD", &commit, &head], "git update-ref")?;
        self.run(&["merge", "--quit"], "git merge --quit").map(|_| ())
    }

    /// Commits what is staged.
    pub fn commit(&self, message: &str) -> Result<()> {
        let mut args: Vec<&str> = crate::library::git::identity_args(&self.top);
        args.extend(["commit", "--quiet", "--no-verify", "--allow-empty", "-m", message]);
        self.run(&args, "git commit").map(|_| ())
    }
}

/// Git's own message, trimmed to its meaningful lines.
pub fn stderr_of(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("hint:")).collect();
    if lines.is_empty() {
        format!("git exited with {}", out.status)
    } else {
        lines.join("; ")
    }
}

/// Objects read through one `git cat-file --batch-command` process, so a
/// merge of many heads reads each version (or size) it needs without
/// starting git per object.
pub struct Blobs {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: std::io::BufReader<std::process::ChildStdout>,
}

impl Blobs {
    /// Starts the reader in the repository.
    pub fn open(repo: &Repo) -> Result<Blobs> {
        let mut child = repo
            .cmd()
            .args(["cat-file", "--batch-command"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| Error::io("running git cat-file --batch-command", e))?;
        let input = child.stdin.take().ok_or_else(|| Error::msg("git cat-file has no stdin"))?;
        let output =
            std::io::BufReader::new(child.stdout.take().ok_or_else(|| Error::msg("git cat-file has no stdout"))?);
        Ok(Blobs { child, input, output })
    }

    /// The bytes of an object (`None`: no such object).
    pub fn get(&mut self, sha: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.object(sha)?.map(|(_, _, bytes)| bytes))
    }

    /// The blob a name such as `HEAD:path` resolves to, with its id
    /// (`None`: no such path, or not a file there).
    pub fn blob(&mut self, name: &str) -> Result<Option<(String, Vec<u8>)>> {
        Ok(self.object(name)?.filter(|(_, kind, _)| kind == "blob").map(|(id, _, bytes)| (id, bytes)))
    }

    /// An object's size in bytes (`None`: no such object).
    pub fn size(&mut self, name: &str) -> Result<Option<u64>> {
        Ok(self.header("info", name)?.map(|(_, _, size)| size as u64))
    }

    /// An object's id, type and bytes. A name with a newline is no name
    /// (the protocol is one name a line): `None`.
    pub fn object(&mut self, name: &str) -> Result<Option<(String, String, Vec<u8>)>> {
        use std::io::Read;
        let Some((id, kind, size)) = self.header("contents", name)? else { return Ok(None) };
        let mut bytes = vec![0; size + 1];
        self.output.read_exact(&mut bytes).map_err(|e| Error::io("reading from git cat-file", e))?;
        bytes.pop();
        Ok(Some((id, kind, bytes)))
    }

    /// Sends one command and reads the header of its answer: id, type
    /// and size.
    fn header(&mut self, command: &str, name: &str) -> Result<Option<(String, String, usize)>> {
        use std::io::{BufRead, Write};
        if name.contains('\n') {
            return Ok(None);
        }
        let io = |e| Error::io("reading from git cat-file --batch-command", e);
        writeln!(self.input, "{command} {name}").and_then(|()| self.input.flush()).map_err(io)?;
        let mut header = String::new();
        self.output.read_line(&mut header).map_err(io)?;
        // "<sha> <type> <size>", or "<name> missing" (or "ambiguous").
        let parts: Vec<&str> = header.trim_end().split(' ').collect();
        let [id, kind, size] = parts.as_slice() else { return Ok(None) };
        let Ok(size) = size.parse::<usize>() else { return Ok(None) };
        Ok(Some(((*id).to_string(), (*kind).to_string(), size)))
    }
}

impl Drop for Blobs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
