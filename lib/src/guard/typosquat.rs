//! Typosquatted installs: `pip install reqeusts`, `npm install
//! lodahs`. A package name one edit (insert, delete, replace or swap of
//! neighbours) away from a popular package of the same ecosystem, and not
//! itself a popular package, is the shape of a typosquat; regexes cannot
//! say "one edit away", so this check is code. Lines are looked at only
//! when they hold an install command, so the scan stays linear.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex_automata::meta::Regex;
use regex_automata::Input;

use super::work::{self, Step};

/// Popular PyPI packages (the targets typosquats imitate).
const PYPI: &[&str] = &[
    "requests",
    "urllib3",
    "numpy",
    "pandas",
    "django",
    "flask",
    "python-dateutil",
    "colorama",
    "beautifulsoup4",
    "setuptools",
    "pyyaml",
    "boto3",
    "botocore",
    "scipy",
    "matplotlib",
    "pillow",
    "pytest",
    "click",
    "jinja2",
    "cryptography",
    "certifi",
    "charset-normalizer",
    "packaging",
    "tqdm",
    "scikit-learn",
    "tensorflow",
    "torch",
    "openai",
    "anthropic",
    "httpx",
    "pydantic",
    "fastapi",
    "uvicorn",
    "sqlalchemy",
    "psycopg2",
    "psycopg2-binary",
    "redis",
    "celery",
    "selenium",
    "aiohttp",
    "typer",
    "black",
    "pylint",
    "flake8",
    "docker",
    "kubernetes",
    "paramiko",
    "jsonschema",
    "pyjwt",
    "bcrypt",
    "pymongo",
    "markdown",
    "werkzeug",
    "gunicorn",
    "transformers",
    "keras",
    "seaborn",
    "plotly",
    "openpyxl",
    "lxml",
    "pytz",
    "simplejson",
    "termcolor",
    "tabulate",
    "pygments",
    "virtualenv",
    "wheel",
    "twine",
    "poetry",
    "ansible",
    "langchain",
    "tiktoken",
    "protobuf",
    "grpcio",
];

/// Popular npm packages.
const NPM: &[&str] = &[
    "express",
    "lodash",
    "react",
    "react-dom",
    "axios",
    "chalk",
    "commander",
    "webpack",
    "typescript",
    "moment",
    "request",
    "debug",
    "cross-env",
    "electron",
    "mongoose",
    "next",
    "jquery",
    "dotenv",
    "eslint",
    "prettier",
    "babel-core",
    "underscore",
    "async",
    "yargs",
    "body-parser",
    "nodemon",
    "socket.io",
    "redux",
    "rxjs",
    "minimist",
    "fs-extra",
    "semver",
    "colors",
    "inquirer",
    "puppeteer",
    "discord.js",
    "node-fetch",
    "bcrypt",
    "jsonwebtoken",
    "mysql",
    "sequelize",
    "vue",
    "angular",
    "svelte",
    "vite",
    "rollup",
    "esbuild",
    "tailwindcss",
    "nodemailer",
    "cheerio",
    "dayjs",
    "classnames",
    "bluebird",
    "uglify-js",
    "coffee-script",
    "event-stream",
    "openai",
    "zod",
    "winston",
    "morgan",
    "passport",
    "graphql",
    "apollo-server",
    "ethers",
    "web3",
    "chokidar",
];

/// Words that start an install command (a cheap filter before parsing).
const TOOLS: [&str; 8] = ["pip", "npm", "npx", "yarn", "uv ", "poetry", "pdm", "bun "];

/// One automaton for every tool (`None`: it could not be built).
fn tools() -> Option<&'static Regex> {
    static TOOLS_RE: OnceLock<Option<Regex>> = OnceLock::new();
    TOOLS_RE.get_or_init(|| Regex::new_many(&TOOLS.map(regex_syntax::escape)).ok()).as_ref()
}

/// The lines of `text` that name a tool, with their 0-based numbers: one
/// pass of one automaton over the text for every tool (a substring search
/// per tool and line cost a tenth of a scan; "pip" is in "pipeline").
fn tool_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let re = tools();
    let hay = text.as_bytes();
    let (mut from, mut line, mut counted) = (0, 0, 0);
    std::iter::from_fn(move || {
        let m = re?.search(&Input::new(hay).span(from..hay.len()))?;
        let start = memchr::memrchr(b'\n', &hay[from..m.start()]).map_or(from, |p| from + p + 1);
        let end = memchr::memchr(b'\n', &hay[m.start()..]).map_or(hay.len(), |p| m.start() + p);
        line += memchr::memchr_iter(b'\n', &hay[counted..start]).count();
        counted = start;
        from = (end + 1).min(hay.len());
        Some((line, text.get(start..end).unwrap_or("")))
    })
}

/// Most arguments of one install command that are checked.
const MAX_ARGS: usize = 64;

/// One suspect install.
#[derive(Debug, PartialEq, Eq)]
pub struct Squat {
    /// 1-based line.
    pub line: usize,
    /// 1-based character column of the package name.
    pub column: usize,
    /// `name (looks like popular)`.
    pub matched: String,
}

/// Suspect installs in `text`.
pub fn find(text: &str) -> Vec<Squat> {
    let mut out = Vec::new();
    // Install lines repeat their names: each argument is judged once per
    // text, and every repeat costs a lookup.
    let mut judged: HashMap<(&str, Eco), Option<String>> = HashMap::new();
    work::add(Step::Typosquat, text.len());
    for (i, line) in tool_lines(text) {
        work::add(Step::Typosquat, line.len());
        // Columns are counted forward from the last squat of the line,
        // never from its start: a line of many installs stays linear.
        let (mut at, mut col) = (0, 1);
        // Where tools start on the line, in one pass: no tool holds a
        // separator, so each lies inside one command, and a command names
        // a tool when the next of these starts inside it.
        let mut starts = tools().into_iter().flat_map(|re| re.find_iter(line.as_bytes())).map(|m| m.start()).peekable();
        for seg in line.split(['&', ';', '|', '`']) {
            let (from, to) = (offset(line, seg), offset(line, seg) + seg.len());
            while starts.next_if(|&s| s < from).is_some() {}
            if starts.peek().is_none_or(|&s| s >= to) {
                continue;
            }
            let words: Vec<&str> = seg.split_whitespace().collect();
            let Some((eco, from)) = install_args(&words) else { continue };
            let mut skip_next = false;
            // Installs name a handful of packages; a bounded number of
            // arguments keeps a line of thousands of words linear.
            for w in words[from.min(words.len())..].iter().take(MAX_ARGS) {
                if skip_next {
                    skip_next = false;
                    continue;
                }
                if w.starts_with('-') {
                    skip_next = matches!(
                        *w,
                        "-r" | "-c"
                            | "-e"
                            | "-i"
                            | "--index-url"
                            | "--extra-index-url"
                            | "--registry"
                            | "--prefix"
                            | "-t"
                            | "--target"
                    );
                    continue;
                }
                let squat = judged.entry((w, eco)).or_insert_with(|| squat(w, eco)).clone();
                if let Some(matched) = squat {
                    // `w` is a slice of `line`: its offset is exact, even
                    // when the same word appears earlier on the line.
                    let off = offset(line, w);
                    col += line.get(at..off).map_or(0, |s| s.chars().count());
                    work::add(Step::Typosquat, off.saturating_sub(at));
                    at = off;
                    out.push(Squat { line: i + 1, column: col, matched });
                }
            }
        }
    }
    out
}

/// What install argument `w` of ecosystem `eco` imitates, as a finding
/// shows it: `name (looks like popular)`; `None` when it imitates nothing.
fn squat(w: &str, eco: Eco) -> Option<String> {
    let popular = if eco == Eco::Pypi { PYPI } else { NPM };
    match vcs_source(w, eco == Eco::Npm) {
        Some(src) => vcs_squat(&src, popular),
        None => {
            let name = package_name(w);
            let near = || popular.iter().find(|p| p.len() >= 5 && one_edit(&name, p));
            if name.len() < 5 || popular.contains(&name.as_str()) {
                None
            } else {
                near().map(|p| format!("{name} (looks like {p})"))
            }
        }
    }
}

/// The byte offset of `part`, a slice of `line`, in `line`.
fn offset(line: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(line.as_ptr() as usize).min(line.len())
}

/// Where popular packages' repositories live: the owner each is
/// published from, so a repository of the same name under a look-alike
/// owner is caught (a fork under any other owner is not flagged).
const OWNERS: &[(&str, &str)] = &[
    ("requests", "psf"),
    ("black", "psf"),
    ("flask", "pallets"),
    ("click", "pallets"),
    ("jinja", "pallets"),
    ("werkzeug", "pallets"),
    ("django", "django"),
    ("numpy", "numpy"),
    ("pandas", "pandas-dev"),
    ("urllib3", "urllib3"),
    ("pytest", "pytest-dev"),
    ("httpx", "encode"),
    ("pydantic", "pydantic"),
    ("scipy", "scipy"),
    ("matplotlib", "matplotlib"),
    ("pillow", "python-pillow"),
    ("boto3", "boto"),
    ("transformers", "huggingface"),
    ("express", "expressjs"),
    ("lodash", "lodash"),
    ("react", "facebook"),
    ("axios", "axios"),
    ("chalk", "chalk"),
    ("webpack", "webpack"),
    ("typescript", "microsoft"),
    ("electron", "electron"),
    ("mongoose", "automattic"),
    ("jquery", "jquery"),
    ("dotenv", "motdotla"),
    ("eslint", "eslint"),
    ("prettier", "prettier"),
    ("vite", "vitejs"),
];

/// An install argument that names a repository rather than a package
///: `git+https://host/owner/repo.git@ref#egg=name`, `git+ssh://`,
/// `hg+`/`svn+`/`bzr+` URLs, `github:owner/repo`, an archive URL of a
/// repository, or (npm) the `owner/repo` shorthand. Returns
/// `(owner, repo, egg)`, lowercased.
fn vcs_source(w: &str, npm: bool) -> Option<(String, String, Option<String>)> {
    // Each shape names its repository after a `/` or a `:`: most
    // arguments are bare names, and need no lowercased copy to tell.
    if !w.contains(['/', ':']) {
        return None;
    }
    let w = w.trim_matches(|c| c == '"' || c == '\'');
    let lower = w.to_ascii_lowercase();
    let (egg, url) = match lower.split_once("#egg=") {
        Some((u, e)) => (Some(e.split(['&', '[']).next().unwrap_or("").to_string()), u.to_string()),
        None => (None, lower.split('#').next().unwrap_or("").to_string()),
    };
    let path = if let Some(rest) = ["git+", "hg+", "svn+", "bzr+"].iter().find_map(|p| url.strip_prefix(p)) {
        let after = rest.split_once("://").map_or(rest, |(_, a)| a);
        // `git@host:owner/repo` or `host/owner/repo`
        let after = after.split_once('@').filter(|(u, _)| !u.contains('/')).map_or(after, |(_, a)| a);
        after.split_once(['/', ':']).map(|(_, p)| p.to_string())?
    } else if let Some(rest) = ["github:", "gitlab:", "bitbucket:"].iter().find_map(|p| url.strip_prefix(p)) {
        rest.to_string()
    } else if let Some(rest) = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://")) {
        let (host, p) = rest.split_once('/')?;
        if !host.contains("git") {
            return None;
        }
        p.to_string()
    } else if npm && !url.starts_with('@') && url.matches('/').count() == 1 && !url.starts_with('.') {
        url.clone()
    } else {
        return None;
    };
    let mut parts = path.split('/').filter(|p| !p.is_empty());
    let owner = parts.next()?.to_string();
    let repo = parts.next()?;
    let repo = repo.split('@').next().unwrap_or(repo);
    let repo = repo.strip_suffix(".git").unwrap_or(repo).replace('_', "-");
    Some((owner, repo, egg))
}

/// A repository install that imitates a popular package: its name (or
/// its `#egg=` name) one edit away from a popular one, or a popular name
/// under an owner one edit away from the one it is published from.
fn vcs_squat((owner, repo, egg): &(String, String, Option<String>), popular: &[&str]) -> Option<String> {
    for name in std::iter::once(repo).chain(egg.as_ref()) {
        let name = name.trim_start_matches("python-").to_string();
        if name.len() >= 5 && !popular.contains(&name.as_str()) {
            if let Some(p) = popular.iter().find(|p| p.len() >= 5 && one_edit(&name, p)) {
                return Some(format!("{owner}/{repo} (looks like {p})"));
            }
        }
        if let Some((_, canon)) = OWNERS.iter().find(|(n, _)| *n == name) {
            if owner != canon && one_edit(owner, canon) {
                return Some(format!("{owner}/{repo} (looks like {canon}/{repo})"));
            }
        }
    }
    None
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Eco {
    Pypi,
    Npm,
}

/// The ecosystem and the index of the first argument of an install
/// command in `words`, if they hold one.
fn install_args(words: &[&str]) -> Option<(Eco, usize)> {
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).copied();
        let tool = w.rsplit('/').next().unwrap_or(w);
        let eco = match (tool, next) {
            ("pip" | "pip3" | "pipx" | "easy_install", Some("install")) => Eco::Pypi,
            ("uv" | "poetry" | "pdm" | "pipenv", Some("add" | "install")) => Eco::Pypi,
            ("npm" | "pnpm" | "cnpm", Some("install" | "i" | "add")) => Eco::Npm,
            ("yarn" | "bun", Some("add" | "install")) => Eco::Npm,
            ("npx", _) => return Some((Eco::Npm, i + 1)),
            _ => continue,
        };
        // `uv pip install`, `python -m pip install`.
        return Some((eco, i + 2));
    }
    None
}

/// The bare package name of an install argument: quotes, extras and
/// version specifiers removed, lowercased (`"Requests[socks]>=2"` →
/// `requests`, `lodash@4` → `lodash`, `@scope/x@1` → `@scope/x`).
fn package_name(w: &str) -> String {
    let w = w.trim_matches(|c| c == '"' || c == '\'');
    let (scope, rest) = if let Some(r) = w.strip_prefix('@') { ("@", r) } else { ("", w) };
    let end = rest.find(|c: char| "[=<>~!@;, ".contains(c)).unwrap_or(rest.len());
    let mut name = String::with_capacity(scope.len() + end);
    name.push_str(scope);
    name.extend(rest[..end].chars().map(|c| if c == '_' { '-' } else { c.to_ascii_lowercase() }));
    name
}

/// Optimal string alignment distance of exactly one (package names are
/// ASCII; compared as bytes, without allocating).
fn one_edit(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a == b || a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    let p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (ra, rb) = (&a[p..], &b[p..]);
    if ra.len() == rb.len() {
        ra[1..] == rb[1..] || (ra.len() >= 2 && ra[0] == rb[1] && ra[1] == rb[0] && ra[2..] == rb[2..])
    } else if ra.len() > rb.len() {
        ra[1..] == *rb
    } else {
        *ra == rb[1..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_edit_away_from_a_popular_name_is_a_squat() {
        let names = |t: &str| find(t).into_iter().map(|s| s.matched).collect::<Vec<_>>();
        assert_eq!(names("pip install reqeusts"), ["reqeusts (looks like requests)"]);
        assert_eq!(names("npm i lodahs@4 crossenv"), ["lodahs (looks like lodash)", "crossenv (looks like cross-env)"]);
        assert_eq!(
            names("python -m pip install -U python-dateutils==2.8"),
            ["python-dateutils (looks like python-dateutil)"]
        );
        assert!(names("pip install requests python-dateutil 'Flask>=2'").is_empty());
        assert!(names("npm install express colors react-dom && yarn add vite").is_empty());
        assert!(names("pip install -r requirement.txt").is_empty());
        assert!(names("we install reqeusts by hand").is_empty());
    }

    #[test]
    fn repository_installs_from_look_alike_names_are_squats() {
        let names = |t: &str| find(t).into_iter().map(|s| s.matched).collect::<Vec<_>>();
        assert_eq!(
            names("pip install git+https://github.com/psf/reqeusts.git"),
            ["psf/reqeusts (looks like requests)"]
        );
        assert_eq!(
            names("pip install git+https://github.com/pallet/flask@main"),
            ["pallet/flask (looks like pallets/flask)"]
        );
        assert_eq!(names("npm install github:expresjs/express"), ["expresjs/express (looks like expressjs/express)"]);
        assert_eq!(names("npm i lodash/lodahs"), ["lodash/lodahs (looks like lodash)"]);
        assert_eq!(
            names("pip install \"git+ssh://git@gitlab.com/me/tool.git#egg=numpyy\""),
            ["me/tool (looks like numpy)"]
        );
        assert!(names("pip install git+https://github.com/psf/requests.git").is_empty());
        assert!(names("pip install git+https://github.com/me/my-fork-of-requests").is_empty());
        assert!(names("npm install expressjs/express ./local-pkg").is_empty());
    }

    #[test]
    fn one_edit_means_one() {
        assert!(one_edit("flaks", "flask") && one_edit("numpyy", "numpy") && one_edit("urlib3", "urllib3"));
        assert!(!one_edit("flask", "flask") && !one_edit("abcde", "edcba"));
    }
}
