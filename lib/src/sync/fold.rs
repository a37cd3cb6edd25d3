//! Many heads merged at once: the tree of HEAD with every new
//! tip folded in, computed from git's objects in one pass, without a `git
//! merge` (and its work-tree checkout, merge drivers and derived rebuild)
//! per head. A fleet's sync typically brings in dozens of machine refs,
//! each a few documents and a few changelog lines on a common base; a
//! merge per ref cost ~0.2 s, so the per-ref cost here is a few git
//! plumbing calls (one diff, one lookup, a blob or two through one
//! `cat-file --batch`).
//!
//! For each tip, the change it brings (merge base → tip, no rename
//! detection) is applied path by path to the folded state, starting from
//! HEAD's tree:
//! - a path the folded state still holds as at the base takes the tip's
//!   version (or is deleted), one it already holds as the tip does stays;
//! - a path both changed: a log takes the union of lines (the same
//!   function as the `kb-log` driver), a derived file keeps this side (it
//!   is rebuilt afterwards), a document appended on both sides takes the
//!   union of the appends and otherwise git's line merge (`git
//!   merge-file`, the text merge `git merge` itself does) when it is clean.
//!
//! A tip with an overlap that needs a person (an edit against an edit, an
//! edit against a deletion) is not folded: the caller merges it the
//! ordinary way afterwards, which keeps both sides (`sync::conflicts`).
//! The result is the same as merging the tips one after the other with
//! git, whatever their order, for every tip that folds.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::error::{Error, Result};
use crate::library::kind::{self, Kind};
use crate::sync::gitcmd::{stderr_of, Blobs, Repo};
use crate::sync::{append_union, merge_log};

/// A tree entry: mode and object.
type Entry = Option<(String, String)>;

const ZERO: &str = "0000000000000000000000000000000000000000";

/// What folding found.
#[derive(Debug, Default)]
pub struct Plan {
    /// The folded tree.
    pub tree: String,
    /// Indices of the tips folded into it.
    pub folded: Vec<usize>,
    /// Indices of the tips left for an ordinary merge (an overlap).
    pub left: Vec<usize>,
    /// Top-relative paths the folded tips changed.
    pub changed: BTreeSet<String>,
}

/// Folds `tips` (each with its merge base with `head`) into `head`'s tree.
pub fn plan(repo: &Repo, head: &str, tips: &[(String, String)]) -> Result<Plan> {
    let mut blobs = Blobs::open(repo)?;
    let diffs = diffs(repo, tips)?;
    let mut state: HashMap<String, Entry> = HashMap::new();
    let paths: BTreeSet<&str> = diffs.iter().flatten().map(|c| c.path.as_str()).collect();
    lookup(repo, head, &paths.into_iter().collect::<Vec<_>>(), &mut state)?;
    // Merged blobs not written yet (a log every tip appends to is written
    // once, at the end, not once per tip).
    let mut fresh: Fresh = HashMap::new();
    let mut dirty: BTreeSet<String> = BTreeSet::new();
    let mut plan = Plan::default();
    for (i, changes) in diffs.into_iter().enumerate() {
        let mut edits: Vec<(String, Entry)> = Vec::new();
        let mut overlap = false;
        for c in &changes {
            // A peer's bytes for a derived file never stay: this side's
            // stay in the tree, and the rebuild brings them in step.
            if repo.in_library(&c.path).is_some_and(|rel| kind::kind(rel) == Kind::Derived) {
                continue;
            }
            let cur = state.get(&c.path).cloned().flatten();
            if same(&cur, &c.new) {
                continue;
            }
            if same(&cur, &c.old) {
                edits.push((c.path.clone(), c.new.clone()));
                continue;
            }
            match both_changed(repo, &mut blobs, &mut fresh, &c.path, &c.old, &cur, &c.new)? {
                Some(entry) => edits.push((c.path.clone(), entry)),
                None => {
                    overlap = true;
                    break;
                }
            }
        }
        if overlap {
            plan.left.push(i);
            continue;
        }
        for (path, entry) in edits {
            state.insert(path.clone(), entry);
            dirty.insert(path);
        }
        plan.changed.extend(changes.into_iter().map(|c| c.path));
        plan.folded.push(i);
    }
    let mut written: BTreeMap<String, Entry> = BTreeMap::new();
    for path in dirty {
        let entry = match state.get(&path).cloned().flatten() {
            Some((mode, sha)) => match fresh.get(&sha) {
                Some(bytes) => Some((mode, hash(repo, bytes)?)),
                None => Some((mode, sha)),
            },
            None => None,
        };
        written.insert(path, entry);
    }
    plan.tree = write_tree(repo, head, &written)?;
    Ok(plan)
}

/// Merged contents not yet written as blobs, by placeholder id.
type Fresh = HashMap<String, Vec<u8>>;

/// A placeholder id for merged bytes (never a real object id: not hex).
fn placeholder(fresh: &mut Fresh, bytes: Vec<u8>) -> String {
    let id = format!("fresh-{}", fresh.len());
    fresh.insert(id.clone(), bytes);
    id
}

/// Each tip's change since its base, through one `git diff-tree --stdin`
/// ("<tip> <base>" lines; each diff follows its tip's id).
fn diffs(repo: &Repo, tips: &[(String, String)]) -> Result<Vec<Vec<Change>>> {
    use std::io::Write;
    let mut child = repo
        .cmd()
        .args(["diff-tree", "--stdin", "-r", "-z", "--raw", "--no-renames"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| Error::io("running git diff-tree", e))?;
    let mut stdin = child.stdin.take().ok_or_else(|| Error::msg("git diff-tree takes no input"))?;
    let input: String = tips.iter().map(|(tip, base)| format!("{tip} {base}\n")).collect();
    // From a thread: the diffs fill the output pipe while the list goes in.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().map_err(|e| Error::io("running git diff-tree", e))?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(Error::msg(format!("git diff-tree --stdin failed: {}", stderr_of(&out))));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut by_tip: HashMap<&str, Vec<Change>> = HashMap::new();
    let mut current = "";
    let mut parts = text.split('\0');
    while let Some(field) = parts.next() {
        let Some(meta) = field.strip_prefix(':') else {
            // "<tip> (from <base>)": the next tip's diff.
            current = field.split(' ').next().unwrap_or_default();
            continue;
        };
        let Some(path) = parts.next() else { break };
        let f: Vec<&str> = meta.split(' ').collect();
        if let [old_mode, new_mode, old_sha, new_sha, _status] = f.as_slice() {
            let entry = |mode: &str, sha: &str| (mode != "000000").then(|| (mode.to_string(), sha.to_string()));
            by_tip.entry(current).or_default().push(Change {
                path: path.to_string(),
                old: entry(old_mode, old_sha),
                new: entry(new_mode, new_sha),
            });
        }
    }
    // Every tip is a distinct commit (the caller passes each once).
    Ok(tips.iter().map(|(tip, _)| by_tip.remove(tip.as_str()).unwrap_or_default()).collect())
}

/// A path the folded state and a tip both changed since the tip's base:
/// the entry that settles it, or `None` when a person must.
fn both_changed(
    repo: &Repo,
    blobs: &mut Blobs,
    fresh: &mut Fresh,
    path: &str,
    base: &Entry,
    cur: &Entry,
    new: &Entry,
) -> Result<Option<Entry>> {
    let Some(rel) = repo.in_library(path) else { return Ok(None) };
    let k = kind::kind(rel);
    let mut text = |e: &Entry| -> Result<Vec<u8>> {
        match e {
            Some((_, sha)) => match fresh.get(sha) {
                Some(bytes) => Ok(bytes.clone()),
                None => blobs.get(sha)?.ok_or_else(|| Error::msg(format!("git has no object {sha} ({path})"))),
            },
            None => Ok(Vec::new()),
        }
    };
    if k == Kind::Log {
        // A side without the file has no lines, as in the driver.
        let merged = merge_log::merge(&text(base)?, &text(cur)?, &text(new)?);
        return Ok(Some(Some(("100644".into(), placeholder(fresh, merged)))));
    }
    // An edit against a deletion, or anything but plain files: a person
    // decides (the ordinary merge keeps both sides).
    let plain = |e: &Entry| e.as_ref().is_some_and(|(m, _)| m == "100644");
    if !(plain(cur) && plain(new) && (base.is_none() || plain(base))) {
        return Ok(None);
    }
    let (b, o, t) = (text(base)?, text(cur)?, text(new)?);
    if k == Kind::Document {
        if let Some(merged) = append_union::merge(&b, &o, &t) {
            return Ok(Some(Some(("100644".into(), placeholder(fresh, merged)))));
        }
    }
    Ok(merge_file(repo, &b, &o, &t)?.map(|merged| Some(("100644".into(), placeholder(fresh, merged)))))
}

/// Git's three-way line merge of three texts; `None` when it conflicts.
fn merge_file(repo: &Repo, base: &[u8], ours: &[u8], theirs: &[u8]) -> Result<Option<Vec<u8>>> {
    let dir = tempdir_in(&repo.git_dir)?;
    let names = ["ours", "base", "theirs"];
    for (name, bytes) in names.iter().zip([ours, base, theirs]) {
        std::fs::write(dir.join(name), bytes).map_err(|e| Error::io(format!("writing {}", dir.display()), e))?;
    }
    let paths: Vec<String> = names.iter().map(|n| dir.join(n).to_string_lossy().into_owned()).collect();
    let out = repo.output(&["merge-file", "-p", "-q", &paths[0], &paths[1], &paths[2]]);
    let _ = std::fs::remove_dir_all(&dir);
    let out = out?;
    Ok(match out.status.code() {
        Some(0) => Some(out.stdout),
        // 1..127: that many conflicts; anything else: git failed.
        Some(1..=127) => None,
        _ => return Err(Error::msg(format!("git merge-file failed: {}", stderr_of(&out)))),
    })
}

/// A fresh directory under the git directory for merge-file's inputs.
fn tempdir_in(git_dir: &std::path::Path) -> Result<std::path::PathBuf> {
    for n in 0..100u32 {
        let dir = git_dir.join(format!("kb-fold-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(format!("creating {}", dir.display()), e)),
        }
    }
    Err(Error::msg("no free name for a merge directory in the git directory"))
}

/// Writes a blob; returns its id.
fn hash(repo: &Repo, bytes: &[u8]) -> Result<String> {
    use std::io::Write;
    let mut child = repo
        .cmd()
        .args(["hash-object", "-w", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| Error::io("running git hash-object", e))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(bytes).map_err(|e| Error::io("writing to git hash-object", e))?;
    }
    let out = child.wait_with_output().map_err(|e| Error::io("running git hash-object", e))?;
    if !out.status.success() {
        return Err(Error::msg(format!("git hash-object failed: {}", stderr_of(&out))));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Reads HEAD's entries for `paths` into `state` (absent ones as none).
fn lookup(repo: &Repo, head: &str, paths: &[&str], state: &mut HashMap<String, Entry>) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    let mut c = repo.cmd();
    // Paths are names, never patterns (a peer may name a file `*`).
    c.env("GIT_LITERAL_PATHSPECS", "1").args(["ls-tree", "-z", "--full-tree", head, "--"]).args(paths);
    let out = c.output().map_err(|e| Error::io("running git ls-tree", e))?;
    if !out.status.success() {
        return Err(Error::msg(format!("git ls-tree failed: {}", stderr_of(&out))));
    }
    for p in paths {
        state.insert((*p).to_string(), None);
    }
    for line in String::from_utf8_lossy(&out.stdout).split('\0').filter(|l| !l.is_empty()) {
        // "<mode> <type> <sha>\t<path>"
        let Some((meta, path)) = line.split_once('\t') else { continue };
        let parts: Vec<&str> = meta.split(' ').collect();
        if let [mode, "blob" | "commit", sha] = parts.as_slice() {
            state.insert(path.to_string(), Some(((*mode).to_string(), (*sha).to_string())));
        }
    }
    Ok(())
}

/// HEAD's tree with `dirty` applied, through a temporary index.
fn write_tree(repo: &Repo, head: &str, dirty: &BTreeMap<String, Entry>) -> Result<String> {
    let index = repo.git_path(&format!("kb-fold-index-{}", std::process::id()));
    let _ = std::fs::remove_file(&index);
    let run = |args: &[&str], input: Option<String>| -> Result<String> {
        use std::io::Write;
        let mut c = repo.cmd();
        c.env("GIT_INDEX_FILE", &index).args(args);
        c.stdin(if input.is_some() { std::process::Stdio::piped() } else { std::process::Stdio::null() });
        c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        let mut child = c.spawn().map_err(|e| Error::io(format!("running git {}", args[0]), e))?;
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(text.as_bytes()).map_err(|e| Error::io(format!("writing to git {}", args[0]), e))?;
        }
        let out = child.wait_with_output().map_err(|e| Error::io(format!("running git {}", args[0]), e))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(Error::msg(format!("git {} failed: {}", args[0], stderr_of(&out))))
        }
    };
    let result = (|| {
        run(&["read-tree", head], None)?;
        let info: String = dirty
            .iter()
            .map(|(path, e)| match e {
                Some((mode, sha)) => format!("{mode} {sha}\t{path}\0"),
                None => format!("0 {ZERO}\t{path}\0"),
            })
            .collect();
        if !info.is_empty() {
            run(&["update-index", "-z", "--index-info"], Some(info))?;
        }
        run(&["write-tree"], None)
    })();
    let _ = std::fs::remove_file(&index);
    result
}

/// Two entries name the same content (a missing file equals a missing one).
fn same(a: &Entry, b: &Entry) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some((ma, sa)), Some((mb, sb))) => ma == mb && sa == sb,
        _ => false,
    }
}

/// One path a tip changed.
struct Change {
    path: String,
    old: Entry,
    new: Entry,
}
