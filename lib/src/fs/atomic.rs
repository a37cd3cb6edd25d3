//! Crash-safe file writes (DESIGN.md "Writing safely"): a document is
//! replaced by rename so a kill -9 leaves the old or the new bytes; a log is
//! appended whole lines at a time and a torn tail is cut by the next writer.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Context, Error, Result};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces `path` with `bytes`: unique temp file in the same directory,
/// write, fsync, rename over the target, fsync the directory (the fsyncs
/// left to the caller inside [`deferring`]). The parent directory is
/// created when missing. An existing file keeps its mode.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    let defer = deferred(path);
    let staged = stage(path, bytes, !defer)?;
    let result = if defer {
        rename_in(std::slice::from_ref(&staged), || {})
    } else {
        put_in_place(std::slice::from_ref(&staged), || {})
    };
    if result.is_err() {
        let _ = fs::remove_file(&staged.tmp);
    }
    result
}

thread_local! {
    /// The files whose fsyncs [`deferring`] holds back on this thread.
    static DEFERRED: std::cell::RefCell<Option<Vec<PathBuf>>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with the fsyncs of [`write`] and [`append_lines`] on this
/// thread held back, and returns the files they would have synced: for a
/// journaled batch, whose journal already holds what recovery needs to
/// redo them (its changelog lines; the indexes and relations it
/// rebuilds), so they need only be durable before the journal goes
/// ([`checkpoint`] them then, all at once) instead of one by one.
pub fn deferring<R>(f: impl FnOnce() -> R) -> (R, Vec<PathBuf>) {
    let outer = DEFERRED.with(|d| d.replace(Some(Vec::new())));
    let r = f();
    let files = DEFERRED.with(|d| d.replace(outer)).unwrap_or_default();
    (r, files)
}

/// Whether `path`'s fsync is held back by [`deferring`] (it is noted there).
fn deferred(path: &Path) -> bool {
    DEFERRED.with(|d| match d.borrow_mut().as_mut() {
        Some(files) => {
            if !files.iter().any(|f| f == path) {
                files.push(path.to_path_buf());
            }
            true
        }
        None => false,
    })
}

/// A file written under a unique temp name beside its target, waiting to be
/// synced and renamed into place (a batch's group commit stages every file
/// first, then makes them durable with one barrier).
#[derive(Debug)]
pub struct Staged {
    /// The temp file holding the new bytes.
    pub tmp: PathBuf,
    /// The file it replaces.
    pub target: PathBuf,
}

impl Staged {
    /// Flushes the temp file's bytes to disk.
    pub fn sync(&self) -> Result<()> {
        File::open(&self.tmp).and_then(|f| f.sync_all()).ctx(|| format!("syncing {}", self.tmp.display()))
    }
}

/// Writes `bytes` into a new temp file beside `path` (creating the parent
/// directory, copying an existing target's mode), fsynced when `sync`
/// (else [`barrier`] makes it durable).
pub fn stage(path: &Path, bytes: &[u8], sync: bool) -> Result<Staged> {
    stage_as(path, bytes, sync, fs::metadata(path).ok().map(|m| m.permissions()))
}

/// [`stage`] for a caller that already read the target's permissions
/// (`mode`; `None`: there is no target): a batch looked at each of its
/// files once already, and a stat less per file counts in thousands.
pub fn stage_as(path: &Path, bytes: &[u8], sync: bool, mode: Option<fs::Permissions>) -> Result<Staged> {
    let dir = path.parent().ok_or_else(|| Error::msg(format!("{} has no parent directory", path.display())))?;
    let tmp = temp_path(path);
    let create = || OpenOptions::new().write(true).create_new(true).open(&tmp);
    // The directory is made only when missing (a batch stages thousands
    // of files into a few directories).
    let file = match create() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(dir).ctx(|| format!("creating {}", dir.display()))?;
            create()
        }
        other => other,
    };
    let result = (|| {
        let mut f = file.ctx(|| format!("creating {}", tmp.display()))?;
        if let Some(mode) = mode {
            f.set_permissions(mode).ctx(|| format!("setting mode of {}", tmp.display()))?;
        }
        f.write_all(bytes).ctx(|| format!("writing {}", tmp.display()))?;
        if sync {
            f.sync_all().ctx(|| format!("syncing {}", tmp.display()))?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(Staged { tmp, target: path.to_path_buf() }),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Whether a group of `n` files is best synced while staging
/// (`stage(.., true)`): a single file, where no barrier has company.
pub fn sync_each(n: usize) -> bool {
    n < 2
}

/// How many fsyncs run at once. An fsync waits on the disk, not the CPU,
/// and ext4 folds concurrent ones into one journal commit; measured on the
/// shared machine, 2,000 files: `syncfs` 0.25-1.1 s (it also waits for
/// every other process's dirty data), 16 parallel `fdatasync` 0.3 s.
const SYNC_THREADS: usize = 16;

/// The one durability barrier of a group commit: after it, every staged
/// temp file's bytes are on disk. Each file is fsynced, [`SYNC_THREADS`]
/// at a time (only our own bytes, unlike `syncfs`); `synced` says they
/// were synced when staged (see [`sync_each`]).
pub fn barrier(staged: &[Staged], synced: bool) -> Result<()> {
    if synced {
        return Ok(());
    }
    in_parallel(staged, Staged::sync)
}

/// Runs `f` on every item, [`SYNC_THREADS`] threads at a time (plain
/// threads: rayon's pool has one per core, and these wait on the disk).
/// The first error wins.
fn in_parallel<T: Sync>(items: &[T], f: impl Fn(&T) -> Result<()> + Sync) -> Result<()> {
    if items.len() < 2 {
        return items.iter().try_for_each(f);
    }
    let chunk = items.len().div_ceil(SYNC_THREADS);
    std::thread::scope(|s| {
        let running: Vec<_> = items.chunks(chunk).map(|c| s.spawn(|| c.iter().try_for_each(&f))).collect();
        running.into_iter().try_for_each(|t| t.join().unwrap_or_else(|_| Err(Error::msg("a sync thread panicked"))))
    })
}

/// Renames synced staged files into place in order (calling `each` after
/// every rename), then fsyncs each parent directory once (in parallel).
/// Each target has its old or its new bytes at every instant.
pub fn put_in_place(staged: &[Staged], each: impl FnMut()) -> Result<()> {
    rename_in(staged, each)?;
    sync_parents(staged.iter().map(|s| s.target.as_path()))
}

/// Renames staged files into place in order (calling `each` after every
/// rename), with no fsync: for a group whose journal holds its bytes, so
/// that a power cut before [`checkpoint`] is undone by replaying it. Each
/// target has its old or its new bytes at every instant a process sees.
pub fn rename_in(staged: &[Staged], mut each: impl FnMut()) -> Result<()> {
    for s in staged {
        rename_onto(&s.tmp, &s.target, false).ctx(|| format!("replacing {}", s.target.display()))?;
        each();
    }
    Ok(())
}

/// Makes files renamed in by [`rename_in`] durable, bytes and names.
/// Until it returns, the journal that holds their bytes must stay. A few
/// files are each fdatasynced and each parent directory fsynced once,
/// [`SYNC_THREADS`] at a time; a larger group gets one `syncfs` per file
/// system it is on, which writes every dirty block there in one pass: on
/// the shared machine, 1,637 files of a 2,000-request batch took 0.4-1.1 s
/// fsynced one by one (as the barrier before the journal did) and about
/// as long as no sync at all with `syncfs` (it also waits for other
/// processes' dirty data there, so a small group is not worth it).
pub fn checkpoint(files: &[&Path]) -> Result<()> {
    if files.len() < SYNCFS_FROM {
        in_parallel(files, |p| File::open(p).and_then(|f| f.sync_data()).ctx(|| format!("syncing {}", p.display())))?;
        return sync_parents(files.iter().copied());
    }
    let mut devices = Vec::new();
    for dir in parents(files.iter().copied()) {
        let d = File::open(dir).ctx(|| format!("opening {}", dir.display()))?;
        let dev = d.metadata().ctx(|| format!("reading {}", dir.display()))?.dev();
        if !devices.contains(&dev) {
            devices.push(dev);
            rustix::fs::syncfs(&d).map_err(std::io::Error::from).ctx(|| format!("syncing {}", dir.display()))?;
        }
    }
    Ok(())
}

/// From how many files [`checkpoint`] syncs their file system at once.
const SYNCFS_FROM: usize = 64;

/// This boot's identity (Linux's random `boot_id`), `None` where there is
/// none: a journal records it, so recovery knows when a power cut or a
/// reboot came between the journal and its checkpoint.
pub fn boot_id() -> Option<String> {
    fs::read_to_string("/proc/sys/kernel/random/boot_id").ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Fsyncs the parent directory of each of `files` once (in parallel),
/// after a group of renames or removals in them.
pub fn sync_parents<'a>(files: impl IntoIterator<Item = &'a Path>) -> Result<()> {
    in_parallel(&parents(files), |d| sync_dir(d))
}

/// The parent directories of `files`, each once, in order.
fn parents<'a>(files: impl IntoIterator<Item = &'a Path>) -> Vec<&'a Path> {
    let mut dirs: Vec<&Path> = Vec::new();
    for d in files.into_iter().filter_map(Path::parent) {
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

/// Removes from `dir` the temp files of ours ([`temp_owner`]) whose
/// writer is dead (`alive` says which pids live), only those of the file
/// named `only` when given (a directory that is the user's, not ours).
/// A directory that cannot be read has none.
pub fn remove_dead_temps(dir: &Path, only: Option<&str>, alive: impl Fn(u32) -> bool) -> Result<()> {
    let Ok(rd) = fs::read_dir(dir) else { return Ok(()) };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if only.is_some_and(|n| !name.starts_with(&format!(".{n}.tmp."))) {
            continue;
        }
        let dead = temp_owner(&name).is_some_and(|pid| !alive(pid));
        if dead && e.file_type().is_ok_and(|t| t.is_file()) {
            fs::remove_file(e.path()).ctx(|| format!("removing {}", e.path().display()))?;
        }
    }
    Ok(())
}

/// Writes only when the bytes differ, so an unchanged derived file keeps
/// its mtime and costs no fsync. Returns whether it wrote. A FIFO or link
/// in the file's place is an error naming it (read without blocking).
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool> {
    match super::read::optional(path)? {
        Some(old) if old == bytes => Ok(false),
        _ => write(path, bytes).map(|()| true),
    }
}

/// Appends whole lines to a log. A torn last line left by a killed writer
/// (no final newline) is cut off first, so the log stays line-parseable.
/// Callers hold the library lock.
pub fn append_lines(path: &Path, text: &str) -> Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    debug_assert!(text.ends_with('\n'));
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).ctx(|| format!("creating {}", dir.display()))?;
    }
    // A log replaced by a symlink (planted by hand or by a peer) must not
    // send lines outside the library; a FIFO must not hang the writer.
    let mut f = crate::fs::nofollow::open_rw(path, true).ctx(|| format!("opening {}", path.display()))?;
    repair_tail(&mut f).ctx(|| format!("repairing the last line of {}", path.display()))?;
    f.write_all(text.as_bytes()).ctx(|| format!("appending to {}", path.display()))?;
    if deferred(path) {
        return Ok(());
    }
    f.sync_data().ctx(|| format!("syncing {}", path.display()))
}

/// Cuts a log back to its last newline when a writer died mid-line.
fn repair_tail(f: &mut File) -> std::io::Result<()> {
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    let mut last = [0u8; 1];
    f.seek(SeekFrom::Start(len - 1))?;
    f.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(());
    }
    let window = len.min(1 << 20);
    let mut buf = vec![0u8; window as usize];
    f.seek(SeekFrom::Start(len - window))?;
    f.read_exact(&mut buf)?;
    let keep = match buf.iter().rposition(|&b| b == b'\n') {
        Some(i) => len - window + i as u64 + 1,
        None if window == len => 0,
        None => return Ok(()),
    };
    f.set_len(keep)?;
    f.sync_data()
}

/// The complete lines of a log: a torn last line is dropped.
pub fn complete_lines(text: &str) -> impl Iterator<Item = &str> {
    let end = text.rfind('\n').map_or(0, |i| i + 1);
    text[..end].lines()
}

/// Flushes a directory entry change (rename, create) to disk.
pub fn sync_dir(dir: &Path) -> Result<()> {
    match File::open(dir) {
        Ok(d) => sync_open_dir(&d).ctx(|| format!("syncing {}", dir.display())),
        Err(e) => Err(Error::io(format!("opening {}", dir.display()), e)),
    }
}

/// Fsyncs an open directory; a file system that cannot sync directories
/// (`InvalidInput`) has nothing to flush.
fn sync_open_dir(d: &File) -> std::io::Result<()> {
    d.sync_all().or_else(|e| if e.kind() == std::io::ErrorKind::InvalidInput { Ok(()) } else { Err(e) })
}

/// Renames `from` onto `to` (a file or a whole directory, on one file
/// system): the one rename into place outside a staged group. When
/// `durable`, each parent directory is fsynced after it, so the new name
/// survives a power cut; a derived file or a lock ticket needs no such
/// barrier. The io error is returned as it is (a lock ticket retries on
/// `NotFound`; other callers name what they moved).
pub fn rename_onto(from: &Path, to: &Path, durable: bool) -> std::io::Result<()> {
    fs::rename(from, to)?;
    if durable {
        let (a, b) = (from.parent(), to.parent());
        for dir in [a, b.filter(|b| Some(*b) != a)].into_iter().flatten() {
            sync_open_dir(&File::open(dir)?)?;
        }
    }
    Ok(())
}

/// Replaces the whole content of an open file in place with `bytes` and
/// flushes them (a lock file's holder line: the file is the lock, so it
/// is rewritten, never renamed).
pub fn rewrite(f: &mut File, bytes: &[u8]) -> std::io::Result<()> {
    f.set_len(0)?;
    f.seek(SeekFrom::Start(0))?;
    f.write_all(bytes)?;
    f.sync_data()
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    path.with_file_name(temp_name(name, std::process::id(), n, nanos))
}

/// The one shape of a temp file's name: `.<name>.tmp.<pid>.<n>.<nanos>`
/// (hidden, so readers skip it; the pid for [`temp_owner`]; a counter and
/// the clock's nanoseconds so no two writers ever pick the same name).
fn temp_name(name: &str, pid: u32, n: u64, nanos: u32) -> String {
    format!(".{name}.tmp.{pid}.{n}.{nanos}")
}

/// The most bytes [`temp_name`] adds to a file's name: the leading `.`,
/// `.tmp.`, and the widest pid (`u32`), counter (`u64`) and nanoseconds
/// (below 10⁹) with the two dots between them. A name is replaceable by
/// rename only when its temp name fits the file system's name limit too,
/// so the portable-names rule (`library::names`) subtracts this from it.
pub const TEMP_NAME_OVERHEAD: usize = 1 + ".tmp.".len() + digits(u32::MAX as u64) + 1 + digits(u64::MAX) + 1 + 9;

/// Decimal digits of `n`.
const fn digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// Whether `name` is a temp file [`stage`] makes for a file named
/// `target` (`.<target>.tmp.<pid>.<n>.<nanos>`, see `temp_path`): the
/// one shape of temp a journal may name (`fs::journal::temp_beside`).
pub fn is_temp_of(name: &str, target: &str) -> bool {
    let Some(tail) = name.strip_prefix('.').and_then(|n| n.strip_prefix(target)).and_then(|n| n.strip_prefix(".tmp."))
    else {
        return false;
    };
    let parts: Vec<&str> = tail.split('.').collect();
    !target.is_empty()
        && parts.len() == 3
        && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The pid that made a temp file of ours (`.<name>.tmp.<pid>.<n>.<nanos>`),
/// so a sweep can remove the ones whose writer died.
pub fn temp_owner(name: &str) -> Option<u32> {
    if !name.starts_with('.') {
        return None;
    }
    let (_, tail) = name.rsplit_once(".tmp.")?;
    let mut parts = tail.split('.');
    // Not our temp-name shape: not ours to sweep.
    let pid = parts.next()?.parse().ok()?;
    let n_ok = parts.next().is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
    let nanos_ok = parts.next().is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
    (n_ok && nanos_ok && parts.next().is_none()).then_some(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_name_overhead_is_the_widest_temp_name() {
        let widest = temp_name("a.md", u32::MAX, u64::MAX, 999_999_999);
        assert_eq!(widest.len(), "a.md".len() + TEMP_NAME_OVERHEAD);
        assert_eq!(TEMP_NAME_OVERHEAD, 47);
        assert_eq!(temp_owner(&widest), Some(u32::MAX));
    }

    #[test]
    fn torn_tail_is_cut_before_append() {
        let dir = tempfile_dir();
        let log = dir.join("log");
        fs::write(&log, "one\ntw").unwrap();
        append_lines(&log, "three\n").unwrap();
        assert_eq!(fs::read_to_string(&log).unwrap(), "one\nthree\n");
        assert_eq!(complete_lines("a\nb\nc").collect::<Vec<_>>(), vec!["a", "b"]);
        write(&log, b"new").unwrap();
        assert_eq!(fs::read_to_string(&log).unwrap(), "new");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn temps_of_a_target() {
        let t = temp_path(Path::new("/x/notes/a.md"));
        let name = t.file_name().unwrap().to_str().unwrap();
        assert!(is_temp_of(name, "a.md"), "{name}");
        for bad in ["a.md", ".a.md.tmp.1.2", ".a.md.tmp.1.2.x", ".b.md.tmp.1.2.3", "..a.md.tmp.1.2.3", ".a.md.tmp.1..3"]
        {
            assert!(!is_temp_of(bad, "a.md"), "{bad}");
        }
        assert!(!is_temp_of(".tmp.1.2.3", ""));
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "kb-atomic-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&d).unwrap();
        d
    }
}
