//! Where last-word keeps its files (seed 004 §2, §5): the knowledge bases
//! in `~/.config/agents/`, pending deltas in `last-word/<NAME>.md.yaml`,
//! project deltas in `./.agents/AGENTS.md.yaml`, failures in
//! `last-word/staging/`. `KB_LASTWORD_HOME` stands in for `~` so tests and
//! experiments never touch the real home.

use std::path::{Component, Path, PathBuf};

use serde_json::{json, Value};

use super::delta::Target;
use crate::error::{Context, Error, Result};

/// The variable that overrides the home directory for kb-lastword.
pub const HOME_VAR: &str = "KB_LASTWORD_HOME";

/// The resolved locations of one run.
#[derive(Debug, Clone)]
pub struct Home {
    /// What `~` expands to.
    pub home: PathBuf,
    /// `~/.config/agents`.
    pub agents: PathBuf,
    /// `~/.config/agents/last-word`.
    pub lastword: PathBuf,
    /// The working directory: relative paths and the project live here.
    pub cwd: PathBuf,
    /// The knowledge bases and project settings of `config.yaml`.
    pub config: Config,
}

/// `config.yaml` (seed 004 §5).
#[derive(Debug, Clone)]
pub struct Config {
    /// `(id, file, description)` of the default knowledge bases.
    pub bases: Vec<(String, String, String)>,
    /// Whether project knowledge is used.
    pub project_enabled: bool,
    /// Project knowledge files, relative to the working directory.
    pub auto_detect: Vec<String>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            bases: vec![
                ("global-agents".into(), "~/.config/agents/AGENTS.md".into(), "跨项目最佳实践与工具约定".into()),
                ("soul".into(), "~/.config/agents/SOUL.md".into(), "自我人格、价值观、思考框架".into()),
                ("user".into(), "~/.config/agents/USER.md".into(), "用户身份、偏好、背景".into()),
            ],
            project_enabled: true,
            auto_detect: vec!["./AGENTS.md".into(), "./.agents/AGENTS.md".into()],
        }
    }
}

impl Config {
    /// The seed's default `config.yaml` as a value.
    pub fn to_value(&self) -> Value {
        json!({
            "default_knowledge_bases": self.bases.iter()
                .map(|(id, file, d)| json!({"id": id, "file": file, "description": d}))
                .collect::<Vec<_>>(),
            "project_knowledge": {"enabled": self.project_enabled, "auto_detect": self.auto_detect},
            "session_bootstrap": ["global-agents", "soul", "user", "project"],
        })
    }

    fn from_value(v: &Value) -> Result<Config> {
        let mut c = Config::default();
        if let Some(list) = v.get("default_knowledge_bases") {
            let list = list.as_array().ok_or_else(|| Error::msg("default_knowledge_bases must be a list"))?;
            c.bases = list
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    let f = |k: &str| b.get(k).and_then(Value::as_str).map(str::to_string);
                    let file =
                        f("file").ok_or_else(|| Error::msg(format!("default_knowledge_bases[{i}].file is missing")))?;
                    Ok((f("id").unwrap_or_else(|| format!("kb-{i}")), file, f("description").unwrap_or_default()))
                })
                .collect::<Result<_>>()?;
        }
        if let Some(p) = v.get("project_knowledge") {
            // The list decides what kb-lastword may write: a value of the
            // wrong type is an error, never silently a default.
            c.project_enabled = match p.get("enabled") {
                None | Some(Value::Null) => true,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(Error::msg("project_knowledge.enabled must be true or false")),
            };
            if let Some(a) = p.get("auto_detect").filter(|a| !a.is_null()) {
                let a = a.as_array().ok_or_else(|| Error::msg("project_knowledge.auto_detect must be a list"))?;
                c.auto_detect = a
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        f.as_str().map(str::to_string).ok_or_else(|| {
                            Error::msg(format!("project_knowledge.auto_detect[{i}] must be a path (a string)"))
                        })
                    })
                    .collect::<Result<_>>()?;
            }
        }
        Ok(c)
    }
}

impl Home {
    /// Resolves the locations from `KB_LASTWORD_HOME` (else `HOME`) and the
    /// working directory, and reads `config.yaml` when there is one.
    pub fn from_env() -> Result<Home> {
        let home = std::env::var_os(HOME_VAR)
            .filter(|v| !v.is_empty())
            .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()))
            .map(PathBuf::from)
            .ok_or_else(|| Error::msg(format!("neither {HOME_VAR} nor HOME is set")))?;
        let cwd = std::env::current_dir().ctx(|| "reading the working directory")?;
        Home::at(&home, &cwd)
    }

    /// Locations for an explicit home and working directory.
    pub fn at(home: &Path, cwd: &Path) -> Result<Home> {
        let home = lexical(&cwd.join(home));
        let agents = home.join(".config/agents");
        let lastword = agents.join("last-word");
        let cfg_path = lastword.join("config.yaml");
        let config = match std::fs::read_to_string(&cfg_path) {
            Ok(text) => Config::from_value(&crate::doc::yaml::to_value(&text)?)
                .map_err(|e| Error::msg(format!("{}: {e}", cfg_path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Config::default(),
            Err(e) => return Err(Error::io(format!("reading {}", cfg_path.display()), e)),
        };
        Ok(Home { home, agents, lastword, cwd: cwd.to_path_buf(), config })
    }

    /// The staging directory.
    pub fn staging(&self) -> PathBuf {
        self.lastword.join("staging")
    }

    /// The project's pending directory (`./.agents`).
    pub fn project_dir(&self) -> PathBuf {
        self.cwd.join(".agents")
    }

    /// The lock every writer of last-word state holds.
    pub fn lock_path(&self) -> PathBuf {
        crate::lock::path(&self.lastword)
    }

    /// Runs `body` holding the last-word lock (seed 004 §6 "并发控制"):
    /// the one library lock (`crate::lock`: OS file lock, fair ticket
    /// queue, backoff with jitter, freed by the kernel when a holder dies)
    /// on the `last-word/` directory, `last-word/.lock`. It waits at most
    /// [`lock_timeout`] without progress, so 16 sessions ending at once
    /// queue in arrival order inside a 1.5 s hook; a caller that still
    /// cannot get it gets [`Error::Busy`] and stages instead of losing
    /// entries.
    pub fn with_lock<T>(&self, body: impl FnOnce() -> Result<T>) -> Result<T> {
        std::fs::create_dir_all(&self.lastword).ctx(|| format!("creating {}", self.lastword.display()))?;
        let timeout = lock_timeout();
        let opts = crate::lock::Options { timeout, ..crate::lock::Options::default() };
        crate::lock::with_lock(&self.lastword, &opts, body).map_err(|e| match e {
            Error::Busy(_) => {
                // On purpose: the holder only decorates the message.
                let who = match crate::lock::status(&self.lastword) {
                    Ok(crate::lock::State::Held(Some(h))) => {
                        format!(" held by pid {} since {} ({})", h.pid, h.since, h.cmd)
                    }
                    _ => String::new(),
                };
                Error::Busy(format!(
                    "last-word is locked ({}{who}); gave up after {} ms without progress",
                    self.show(&self.lock_path()),
                    timeout.as_millis()
                ))
            }
            e => e,
        })
    }

    /// Expands `~` and resolves a relative path against the working directory.
    pub fn resolve(&self, path: &str) -> PathBuf {
        let p = if path == "~" {
            self.home.clone()
        } else if let Some(rest) = path.strip_prefix("~/") {
            self.home.join(rest)
        } else {
            self.cwd.join(path)
        };
        lexical(&p)
    }

    /// The knowledge files kb-lastword may write, as lexical absolute
    /// paths: `default_knowledge_bases` (seed 004's
    /// `~/.config/agents/{AGENTS,SOUL,USER}.md` unless configured) and,
    /// when project knowledge is enabled, the project's `auto_detect` files
    /// (`./AGENTS.md`, `./.agents/AGENTS.md`). The user's own config is
    /// trusted; a delta is not, so this list is the whole of what it may name.
    pub fn knowledge_files(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self.config.bases.iter().map(|(_, f, _)| self.resolve(f)).collect();
        out.extend(self.project_files());
        out
    }

    /// The project's knowledge files (`auto_detect`), none when disabled.
    pub fn project_files(&self) -> Vec<PathBuf> {
        if !self.config.project_enabled {
            return Vec::new();
        }
        self.config.auto_detect.iter().map(|f| self.resolve(f)).collect()
    }

    /// Whether kb-lastword may write `path` (lexical, absolute), or why
    /// not: only a file [`Home::knowledge_files`] names,
    /// compared byte for byte (`agents.md` is not `AGENTS.md` on a
    /// case-sensitive file system, `AGENTS.md/../x.md` is `x.md`), and
    /// never through a symlink below home or the project, nor a symlink
    /// itself. A delta is untrusted: its `path` must not reach `~/.ssh`,
    /// `/etc`, `.git/config`, a neighbouring project or any other Markdown
    /// file of the project.
    pub fn check_writable(&self, path: &Path) -> std::result::Result<(), String> {
        let shown = self.show(path);
        if !self.knowledge_files().iter().any(|f| f == path) {
            return Err(format!(
                "refused: {shown} is not one of the knowledge files kb-lastword writes \
                 (default_knowledge_bases and project_knowledge.auto_detect in {})",
                self.show(&self.lastword.join("config.yaml"))
            ));
        }
        let anchor = [&self.cwd, &self.home].into_iter().find(|a| path.starts_with(a));
        let mut probe = anchor.cloned().unwrap_or_else(|| path.parent().map(Path::to_path_buf).unwrap_or_default());
        let rest = path.strip_prefix(&probe).map(Path::to_path_buf).unwrap_or_default();
        for c in rest.components() {
            probe.push(c);
            if std::fs::symlink_metadata(&probe).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(format!(
                    "refused: {shown} goes through the symlink {}; kb-lastword never writes through links",
                    self.show(&probe)
                ));
            }
        }
        Ok(())
    }

    /// Whether an entry read from the pending file `queue` may write
    /// `path`: a pending file in the project (`./.agents/`) comes with the
    /// project (a cloned repository may ship one), so it may name only the
    /// project's own knowledge files, never the user's global ones.
    pub fn check_queue_target(&self, queue: &Path, path: &Path) -> std::result::Result<(), String> {
        self.check_writable(path)?;
        if queue.starts_with(self.project_dir()) && !self.project_files().iter().any(|f| f == path) {
            return Err(format!(
                "refused: {} names {}, but a pending file in the project may name only the project's \
                 knowledge files (project_knowledge.auto_detect)",
                self.show(queue),
                self.show(path)
            ));
        }
        Ok(())
    }

    /// Refuses a pending-file directory that is a symlink: pending files
    /// are never read or written through a link (a project could ship
    /// `.agents` pointing at the user's `last-word/`).
    pub fn check_queue_dir(&self, dir: &Path) -> Result<()> {
        if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::msg(format!(
                "refused: {} is a symlink; kb-lastword never reads or writes pending files through links",
                self.show(dir)
            )));
        }
        Ok(())
    }

    /// The pending file a target's entries queue in: a project knowledge
    /// file (`auto_detect`) → `./.agents/<name>.yaml`; anything else (a
    /// default knowledge base, or a refused path being staged) →
    /// `last-word/<name>.yaml`; a URL →
    /// `last-word/<last URL segment>.yaml`.
    pub fn queue_for(&self, target: &Target) -> PathBuf {
        let (dir, name) = match target {
            Target::Url(u) => {
                let seg = u.trim_end_matches('/').rsplit('/').next().unwrap_or("remote");
                (self.lastword.clone(), seg.to_string())
            }
            Target::Path(p) => {
                let abs = self.resolve(p);
                let name = abs.file_name().map_or("target".into(), |n| n.to_string_lossy().into_owned());
                let base = self.config.bases.iter().any(|(_, f, _)| self.resolve(f) == abs);
                if !base && self.project_files().contains(&abs) {
                    (self.project_dir(), name)
                } else {
                    (self.lastword.clone(), name)
                }
            }
        };
        let name = if matches!(name.as_str(), "config" | "schema" | "") { format!("{name}.target") } else { name };
        dir.join(format!("{name}.yaml"))
    }

    /// The pending files present now: `last-word/*.yaml` (not config or
    /// schema) and `./.agents/*.yaml`, sorted.
    pub fn queues(&self) -> Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for dir in [self.lastword.clone(), self.project_dir()] {
            self.check_queue_dir(&dir)?;
            let rd = match std::fs::read_dir(&dir) {
                Ok(rd) => rd,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(format!("listing {}", dir.display()), e)),
            };
            let mut found: Vec<PathBuf> =
                rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file() && is_queue_name(p)).collect();
            found.sort();
            out.extend(found);
        }
        Ok(out)
    }

    /// Writes `config.yaml`, `schema.yaml` and `staging/` when missing, so
    /// the layout is the seed's from the first run on.
    pub fn init(&self) -> Result<()> {
        std::fs::create_dir_all(self.staging()).ctx(|| format!("creating {}", self.staging().display()))?;
        let cfg = self.lastword.join("config.yaml");
        if !cfg.exists() {
            let text = format!(
                "# last-word knowledge bases: the files kb-lastword may write\n{}",
                crate::doc::yaml::to_string(&self.config.to_value())?
            );
            crate::fs::atomic::write(&cfg, text.as_bytes())?;
        }
        let schema = self.lastword.join("schema.yaml");
        if !schema.exists() {
            let v: Value = serde_json::from_str(SCHEMA).map_err(|e| Error::msg(format!("built-in schema: {e}")))?;
            let text =
                format!("# last-word delta file schema (JSON Schema, as YAML)\n{}", crate::doc::yaml::to_string(&v)?);
            crate::fs::atomic::write(&schema, text.as_bytes())?;
        }
        Ok(())
    }

    /// A path for messages and records: `~/…` under home, relative under
    /// the working directory, else absolute.
    pub fn show(&self, p: &Path) -> String {
        if let Ok(rel) = p.strip_prefix(&self.cwd) {
            if !rel.as_os_str().is_empty() {
                return rel.to_string_lossy().into_owned();
            }
        }
        if let Ok(rel) = p.strip_prefix(&self.home) {
            return format!("~/{}", rel.to_string_lossy());
        }
        p.to_string_lossy().into_owned()
    }
}

/// How long a last-word writer waits for the lock without progress:
/// `KB_LASTWORD_LOCK_MS`, else 1.2 s (the seed's hook has 1.5 s; its
/// "3 retries with exponential backoff" are the lock's own backoff).
pub fn lock_timeout() -> std::time::Duration {
    let ms = std::env::var("KB_LASTWORD_LOCK_MS").ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(1200);
    std::time::Duration::from_millis(ms)
}

/// The JSON Schema of a delta file, also written as `schema.yaml`.
pub const SCHEMA: &str = include_str!("../../../schemas/lastword-delta-file.schema.json");

fn is_queue_name(p: &Path) -> bool {
    let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.ends_with(".yaml") && name != "config.yaml" && name != "schema.yaml" && !name.starts_with('.')
}

/// Removes `.` and `..` components without touching the file system.
pub fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}
