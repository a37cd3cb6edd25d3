//! The one write-ahead journal, for the four groups of file changes that
//! keep one: the library's batch (`write::journal`), an integrate run
//! (`write::integrate`), kb-lastword's apply (`lastword::journal`)
//! and kb-memgate's apply (`memgate::journal`). Each keeps its own JSON
//! format and its own records (changelog and git, audit lines, INDEX.md,
//! a report) and describes itself as a [`Kind`]; this module owns the
//! rest, once for all four: the durable write of the intent record and
//! the renames in order ([`land`]), reading it back with its version
//! ([`read`]), checking every path it names before anything is touched
//! ([`inside`], [`check_files`], [`refused`]), the roll forward ([`Fate`],
//! [`RollForward`], [`roll_forward`]: a file landed, is still to be put,
//! or meets a change someone else made, which stops the rest), the lines
//! a group owes a log ([`log_end`], [`missing_lines`]), the journal's
//! removal ([`end`]), one [`recover`] and the one `recovered` record.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::atomic;
use crate::error::{Context, Error, Result};

/// A path read back from a journal, made absolute under `root` once it is
/// checked, or why recovery must not act on it. A journal is a
/// file on disk: a peer can commit one, anyone who can write the
/// workspace can plant one, and recovery renames, removes and reads what
/// it names. So a journaled path is taken only as a writer writes it:
/// relative to the journal's own root (the library, the memory directory,
/// a last-word directory), in plain parts with no symlink on the way
/// ([`super::nofollow::inside`]).
pub fn inside(root: &Path, rel: &str) -> std::result::Result<PathBuf, String> {
    super::nofollow::inside(root, rel)
}

/// Whether the journaled temp `tmp` (relative to the same root as
/// `target`) is one [`super::atomic::stage`] makes for `target`: in the
/// same directory and named `.<target's name>.tmp.<pid>.<n>.<nanos>`. A
/// writer journals no other temp, so recovery removes or renames no
/// other file (a document, a directory, a file outside).
pub fn temp_beside(target: &str, tmp: &str) -> bool {
    let (dir, name) = target.rsplit_once('/').map_or(("", target), |(d, n)| (d, n));
    let (tmp_dir, tmp_name) = tmp.rsplit_once('/').map_or(("", tmp), |(d, n)| (d, n));
    dir == tmp_dir && super::atomic::is_temp_of(tmp_name, name)
}

/// Checks every file a journal names, as `(path, temp)` pairs relative to
/// `root`, before recovery acts on any: each path [`inside`] the root,
/// each temp inside it too and the writer's own for its path
/// ([`temp_beside`]), and `allowed` says why a path is none its writer
/// journals (its layout: notes, rule files, …), or `None`. The first bad
/// one is the error ([`refused`], naming `journal`).
pub fn check_files<'a>(
    root: &Path,
    journal: &Path,
    files: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    allowed: impl Fn(&str) -> Option<String>,
) -> Result<()> {
    for (i, (path, tmp)) in files.into_iter().enumerate() {
        let field = format!("files[{i}].path");
        inside(root, path).map_err(|why| refused(journal, &field, path, &why))?;
        if let Some(why) = allowed(path) {
            return Err(refused(journal, &field, path, &why));
        }
        let Some(tmp) = tmp else { continue };
        let field = format!("files[{i}].tmp");
        inside(root, tmp).map_err(|why| refused(journal, &field, tmp, &why))?;
        if !temp_beside(path, tmp) {
            return Err(refused(journal, &field, tmp, &format!("is not a temp written for '{path}'")));
        }
    }
    Ok(())
}

/// The error of a journal recovery refuses to act on: it names the
/// journal, the field and the bad value, says that nothing was changed,
/// and what to do. The journal is left where it is on purpose: it is the
/// evidence of a planted file (or of a bug), every writer stops at it
/// until a person has looked, and moving it aside would need a name the
/// file-kind table does not know and would let the next writer go on as
/// if the interrupted batch it may describe never happened.
pub fn refused(journal: &Path, field: &str, value: &str, why: &str) -> Error {
    Error::msg(format!(
        "{}: not recovered: {field} '{}' {why}; a kb-tools writer never journals such a path, so nothing was \
         changed. Inspect the journal (it may have been planted, e.g. committed by a peer) and remove it to go on",
        journal.display(),
        crate::out::printable(value, false)
    ))
}

/// The digest (`hash`, a SHA-256 in hex) of a file's bytes, at most
/// `limit` of them; `None` when it does not exist. Never through a link:
/// the caller checked the path, and a link planted since is an error.
pub fn digest(path: &Path, limit: u64, hash: fn(&[u8]) -> String) -> Result<Option<String>> {
    match super::nofollow::read(path, limit) {
        Ok(b) => Ok(Some(hash(&b))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!("reading {}", path.display()), e)),
    }
}

/// Removes a file; `false` when it was not there. Used for a journal
/// whose group is wholly recorded, a leftover temp and a planned removal.
pub fn remove(path: &Path) -> Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(format!("removing {}", path.display()), e)),
    }
}

/// Puts one planned change in place: renames the synced temp `tmp` onto
/// `path`, or, without a temp, removes `path` (already gone is fine).
pub fn put(path: &Path, tmp: Option<&Path>) -> Result<()> {
    match tmp {
        Some(tmp) => atomic::rename_onto(tmp, path, false).ctx(|| format!("replacing {}", path.display())),
        None => remove(path).map(|_| ()),
    }
}

/// Removes the journal at `path` once its group is wholly recorded; when
/// `durable`, its directory is fsynced too (a journal that came back after
/// a power cut would be finished again, which a journal whose recovery
/// rebuilds and commits avoids; one whose files all landed changes
/// nothing when finished twice and skips the fsync).
pub fn end(path: &Path, durable: bool) -> Result<()> {
    if remove(path)? && durable {
        if let Some(dir) = path.parent() {
            atomic::sync_dir(dir)?;
        }
    }
    Ok(())
}

/// Journals a group and puts it in place: makes `record` durable at
/// `journal` (when that fails, every temp is removed and the error
/// returned: nothing happened), calls `journaled`, then puts each
/// `(target, temp)` in order ([`put`]: a rename, or a removal without a
/// temp), calling `each` with its index after each, and fsyncs their
/// directories once. From the journal on, a failure leaves the journal
/// for the next recovery. Callers hold the journal's lock.
pub fn land<T: Serialize>(
    journal: &Path,
    record: &T,
    files: &[(PathBuf, Option<PathBuf>)],
    journaled: impl FnOnce(),
    mut each: impl FnMut(usize),
) -> Result<()> {
    if let Err(e) = write(journal, record) {
        discard(files.iter().filter_map(|(_, t)| t.as_deref()));
        return Err(e);
    }
    journaled();
    for (i, (target, tmp)) in files.iter().enumerate() {
        put(target, tmp.as_deref())?;
        each(i);
    }
    atomic::sync_parents(files.iter().map(|(t, _)| t.as_path()))
}

/// Removes staged temps of a group that will not land (a dry run, an
/// error before its journal); one already gone is fine.
pub fn discard<'a>(temps: impl IntoIterator<Item = &'a Path>) {
    for t in temps {
        let _ = std::fs::remove_file(t);
    }
}

/// One planned change as recovery sees it, whatever its journal's
/// format: the target and its temp made absolute (after the journal was
/// checked), its digests before and after (`None`: missing, or removed),
/// and the planned bytes when the journal carries them (a temp may be
/// gone: `kb-lock sweep` removes a dead writer's temps).
#[derive(Debug)]
pub struct Change<'a> {
    /// The target.
    pub path: PathBuf,
    /// The synced temp renamed onto it, if any.
    pub tmp: Option<PathBuf>,
    /// Its digest before the group.
    pub before: Option<String>,
    /// Its planned digest.
    pub after: Option<String>,
    /// Its planned bytes, when journaled.
    pub bytes: Option<&'a [u8]>,
    /// The target holds what a power cut leaves of this change's own
    /// unsynced rename ([`cut_short`]): it is put from `bytes` even after
    /// a foreign change stopped the roll forward, so no file stays torn.
    pub damaged: bool,
}

/// Whether `now` is what a power cut can leave of a file renamed in
/// unsynced with the bytes `planned`: empty, cut short, or with blocks
/// that never reached the disk read back as zeros. Any other bytes are
/// someone's (a person's edit made after the kill) and are kept.
pub fn cut_short(now: &[u8], planned: &[u8]) -> bool {
    now.len() <= planned.len() && now.iter().zip(planned).all(|(a, b)| a == b || *a == 0)
}

/// Rolls a group forward (the [`RollForward`] rule) and returns each
/// change's fate: a landed change is left; one still old gets its planned
/// bytes (from the journal when it carries them and they match `after`,
/// else its temp when that holds them, or its removal); the first that is
/// neither stops the rest. Every temp is removed and the targets'
/// directories synced, so running it again changes nothing. Digests are
/// `hash` of at most `limit` bytes, never through a link.
pub fn roll_forward(changes: &[Change], limit: u64, hash: fn(&[u8]) -> String) -> Result<Vec<Fate>> {
    let mut roll = RollForward::default();
    let mut fates = Vec::with_capacity(changes.len());
    for c in changes {
        let now = digest(&c.path, limit, hash)?;
        let bytes = c.bytes.filter(|b| c.after.as_deref() == Some(hash(b).as_str()));
        let ready = bytes.is_some()
            || match &c.tmp {
                Some(t) => c.after.is_some() && digest(t, limit, hash)? == c.after,
                None => c.after.is_none(),
            };
        let fate = match bytes {
            Some(_) if c.damaged && now != c.after => Fate::Put,
            _ => roll.next(&now, &c.before, &c.after, ready),
        };
        if fate == Fate::Put {
            match bytes {
                Some(b) => atomic::write(&c.path, b)?,
                None => put(&c.path, c.tmp.as_deref())?,
            }
        }
        if let Some(t) = &c.tmp {
            remove(t)?;
        }
        fates.push(fate);
    }
    // A directory a removal emptied may be gone with it (a skill's).
    atomic::sync_parents(changes.iter().map(|c| c.path.as_path()).filter(|p| p.parent().is_some_and(Path::is_dir)))?;
    Ok(fates)
}

/// The length of the log at `path` up to its last newline: where the
/// lines a group owes will start, recorded in its journal.
pub fn log_end(path: &Path) -> Result<u64> {
    let b = super::read::optional(path)?.unwrap_or_default();
    Ok(b.iter().rposition(|&c| c == b'\n').map_or(0, |i| i as u64 + 1))
}

/// Which of `lines` (each without its newline) the log at `path` lacks
/// among its complete lines after `offset` ([`log_end`] when the group
/// was journaled), by index: a recovery appends just those. A multiset:
/// two identical lines both count. A log shorter than `offset` was
/// rewritten (compacted), so every line is missing.
pub fn missing_lines<S: AsRef<str>>(path: &Path, offset: u64, lines: &[S]) -> Result<Vec<usize>> {
    let bytes = super::read::optional(path)?.unwrap_or_default();
    let text = String::from_utf8_lossy(bytes.get(offset as usize..).unwrap_or_default()).into_owned();
    let mut present: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for l in atomic::complete_lines(&text) {
        *present.entry(l).or_default() += 1;
    }
    let mut missing = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        match present.get_mut(line.as_ref()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => missing.push(i),
        }
    }
    Ok(missing)
}

/// How a kind's journal reads and how its files are digested.
#[derive(Debug, Clone, Copy)]
pub struct Format {
    /// The tool named when a journal does not parse.
    pub tool: &'static str,
    /// The record's format version this build reads.
    pub version: u32,
    /// The digest of a file's bytes, as the record's digests are.
    pub hash: fn(&[u8]) -> String,
    /// The most bytes of a file its digests cover.
    pub limit: u64,
    /// Whether the journal's removal is fsynced (see [`end`]).
    pub durable_end: bool,
}

/// A kind of journaled group, as its subsystem describes it to
/// [`recover`]: where its journal is and how its record reads, which
/// paths its writer may journal, the planned changes, and what the group
/// owes once its files are settled (log lines, indexes, a commit, a
/// report). The journal module does the rest, the same for every kind.
pub trait Kind {
    /// The journal's record, as its writer serialised it (with a
    /// `version` field, see [`read`]).
    type Record: DeserializeOwned;
    /// What finishing a group did (the subsystem's report).
    type Done;
    /// How its journal reads.
    const FORMAT: Format;
    /// The journal's path.
    fn path(&self) -> PathBuf;
    /// Refuses a record naming anything its writer never journals
    /// ([`check_files`], [`refused`]); nothing is touched before.
    fn check(&mut self, record: &Self::Record) -> Result<()>;
    /// What must happen before the roll forward (a batch finishes its
    /// directory moves and removes its temps); nothing by default.
    fn prepare(&mut self, _record: &Self::Record) -> Result<()> {
        Ok(())
    }
    /// The planned changes in the order they land, paths made absolute.
    fn changes<'a>(&self, record: &'a Self::Record) -> Result<Vec<Change<'a>>>;
    /// What the group owes, given each change's [`Fate`].
    fn finish(&mut self, record: &Self::Record, fates: &[Fate]) -> Result<Self::Done>;
}

/// Finishes the group a killed writer of `kind` left, if its journal is
/// there: read (a journal that does not parse or has another version is
/// an error), checked, prepared, rolled forward ([`roll_forward`]),
/// finished, and removed. Every step is idempotent, so a kill during
/// recovery is finished by the next one. `None` without a journal.
/// Callers hold the kind's lock.
pub fn recover<K: Kind>(kind: &mut K) -> Result<Option<K::Done>> {
    let (path, format) = (kind.path(), K::FORMAT);
    let Some(record) = read::<K::Record>(&path, format.tool, format.version)? else { return Ok(None) };
    kind.check(&record)?;
    kind.prepare(&record)?;
    let fates = roll_forward(&kind.changes(&record)?, format.limit, format.hash)?;
    let done = kind.finish(&record, &fates)?;
    end(&path, format.durable_end)?;
    Ok(Some(done))
}

/// Makes the intent record durable as one JSON line (atomic write: temp,
/// fsync, rename, fsync the directory).
pub fn write<T: Serialize>(path: &Path, journal: &T) -> Result<()> {
    let text = serde_json::to_string(journal).map_err(|e| Error::msg(format!("cannot encode the journal: {e}")))?;
    atomic::write(path, format!("{text}\n").as_bytes())
}

/// Reads the journal at `path`, if any. One that does not parse, or has
/// another `version` than `reads`, is an error naming `tool`: it is
/// written atomically, so it is never torn, and guessing would lose or
/// invent changes.
pub fn read<T: DeserializeOwned>(path: &Path, tool: &str, reads: u32) -> Result<Option<T>> {
    /// Every record's `version` field.
    #[derive(serde::Deserialize)]
    struct Versioned {
        version: u32,
    }
    let Some(bytes) = super::read::optional(path)? else { return Ok(None) };
    let not_one = |e: serde_json::Error| {
        Error::msg(format!("{} is not a {tool} journal ({e}); move it away to go on", path.display()))
    };
    let j: T = serde_json::from_slice(&bytes).map_err(not_one)?;
    let v = serde_json::from_slice::<Versioned>(&bytes).map_err(not_one)?.version;
    if v != reads {
        return Err(Error::msg(format!("{} has version {v}, this {tool} reads {reads}", path.display())));
    }
    Ok(Some(j))
}

/// What recovering an interrupted group did: the `recovered` record of
/// every journal kind (a batch, an apply, an integrate run).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "record", rename = "recovered")]
pub struct Recovered {
    /// When the interrupted batch started.
    pub started: String,
    /// The interrupted writer's process id.
    pub pid: u32,
    /// Files that had landed and were kept (their changelog lines are in).
    pub landed: Vec<String>,
    /// Files that had not landed and keep their old bytes.
    pub rolled_back: Vec<String>,
    /// Log lines the recovery appended (the changelog's; the audit log's
    /// for an integrate run or a kb-memgate apply).
    pub changelog_added: usize,
    /// Derived files the rebuild changed.
    pub rebuilt: Vec<String>,
    /// Whether a git commit was made.
    pub committed: bool,
    /// Why a commit failed (the files stay; the next sync commits them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit_error: Option<String>,
}

impl Recovered {
    /// Tells on stderr that `tool` finished `group` (e.g. "a batch") a
    /// killed writer left, with the `lines` it owed a log (e.g.
    /// "changelog lines"), for commands whose stdout has no place for the
    /// record.
    pub fn tell(&self, tool: &str, group: &str, lines: &str) {
        eprintln!(
            "{tool}: recovered {group} interrupted at {} (pid {}): {} files landed, {} rolled back, {} {lines} added{}",
            self.started,
            self.pid,
            self.landed.len(),
            self.rolled_back.len(),
            self.changelog_added,
            if self.committed { ", committed" } else { "" }
        );
    }

    /// The record of a group whose changes, shown as `shown`, met
    /// `fates`: nothing appended, rebuilt or committed yet.
    pub fn of(started: &str, pid: u32, shown: impl IntoIterator<Item = String>, fates: &[Fate]) -> Recovered {
        let (mut landed, mut rolled_back) = (Vec::new(), Vec::new());
        for (path, fate) in shown.into_iter().zip(fates) {
            match fate {
                Fate::Kept => rolled_back.push(path),
                _ => landed.push(path),
            }
        }
        Recovered {
            started: started.to_string(),
            pid,
            landed,
            rolled_back,
            changelog_added: 0,
            rebuilt: Vec::new(),
            committed: false,
            commit_error: None,
        }
    }
}

/// What a roll forward does with one planned file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// It has its planned digest: the change landed.
    Landed,
    /// It still has its old digest and its temp is good: put it in place.
    Put,
    /// Neither (changed by someone else since), or an earlier file was:
    /// it keeps its bytes.
    Kept,
}

/// Decides the planned files of a group in order: once one file is
/// neither landed nor still old, it and every later file keep their bytes.
#[derive(Debug, Default)]
pub struct RollForward {
    stopped: bool,
}

impl RollForward {
    /// The fate of the next planned file: `now` its digest, `before` and
    /// `after` the planned ones, `tmp_ok` whether the temp to put (if the
    /// change has one) is there and good.
    pub fn next(
        &mut self,
        now: &Option<String>,
        before: &Option<String>,
        after: &Option<String>,
        tmp_ok: bool,
    ) -> Fate {
        if now == after {
            Fate::Landed
        } else if !self.stopped && now == before && tmp_ok {
            Fate::Put
        } else {
            self.stopped = true;
            Fate::Kept
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(b: &[u8]) -> String {
        format!("{}:{}", b.len(), String::from_utf8_lossy(b))
    }

    /// A file someone else changed keeps its bytes, and so does every
    /// later one; a landed file and a removal before it are finished.
    #[test]
    fn the_first_foreign_change_stops_the_roll_forward() {
        let dir = std::env::temp_dir().join(format!("kb-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |n: &str, b: Option<&str>| {
            let p = dir.join(n);
            if let Some(b) = b {
                std::fs::write(&p, b).unwrap();
            }
            p
        };
        let h = |b: &str| Some(hash(b.as_bytes()));
        let change = |name: &str, now: &str, after: Option<String>, bytes: Option<&'static [u8]>| Change {
            path: file(name, Some(now)),
            tmp: None,
            before: h("old"),
            after,
            bytes,
            damaged: false,
        };
        let changes = [
            change("landed", "new", h("new"), None),
            change("gone", "old", None, None),
            change("put", "old", h("new"), Some(b"new")),
            change("edited", "mine", h("new"), None),
            change("after", "old", h("new"), Some(b"new")),
            // What a power cut left of its rename is written even so.
            Change { damaged: true, ..change("torn", "", h("new"), Some(b"new")) },
        ];
        let fates = roll_forward(&changes, u64::MAX, hash).unwrap();
        assert_eq!(fates, [Fate::Landed, Fate::Put, Fate::Put, Fate::Kept, Fate::Kept, Fate::Put]);
        let read = |n: &str| std::fs::read_to_string(dir.join(n)).ok();
        assert_eq!(
            ["landed", "gone", "put", "edited", "after", "torn"].map(read),
            [Some("new".into()), None, Some("new".into()), Some("mine".into()), Some("old".into()), Some("new".into())]
        );
        // Run again (a kill during recovery): nothing more changes.
        let again = roll_forward(&changes, u64::MAX, hash).unwrap();
        assert_eq!(again, [Fate::Landed, Fate::Landed, Fate::Landed, Fate::Kept, Fate::Kept, Fate::Landed]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// What a power cut leaves of a rename is empty, a prefix, or the
    /// planned bytes with zeroed blocks; a person's edit is none of these.
    #[test]
    fn only_an_empty_short_or_zeroed_file_is_cut_short() {
        let planned = b"# new text\n";
        for now in [&b""[..], b"# new", b"# ne\0\0text\n", b"\0\0\0"] {
            assert!(cut_short(now, planned), "{now:?}");
        }
        for now in [&b"# old text\n"[..], b"# new text\nmore", b"# edited"] {
            assert!(!cut_short(now, planned), "{now:?}");
        }
    }

    /// Owed lines count as a multiset after the offset; a torn tail is no line.
    #[test]
    fn missing_lines_after_the_offset() {
        let dir = std::env::temp_dir().join(format!("kb-journal-lines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("log");
        std::fs::write(&log, "a\nb\nb\nc").unwrap();
        assert_eq!(log_end(&log).unwrap(), 6);
        assert_eq!(missing_lines(&log, 2, &["b", "b", "b", "c", "a"]).unwrap(), [2, 3, 4]);
        assert_eq!(missing_lines(&log, 99, &["a"]).unwrap(), [0]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
