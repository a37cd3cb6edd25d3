//! The command line of every binary, described by one table per binary
//! (lexopt underneath): each subcommand names the flags it uses, so a flag
//! of another subcommand is an error with a hint instead of being silently
//! ignored, `--help` works per subcommand, and the shell completions are
//! generated from the same table (STYLE.md §4).

use std::collections::BTreeMap;
use std::ffi::OsString;

use lexopt::prelude::*;

use crate::error::{Error, Result};
use crate::out::jsonl::Format;
use crate::text::closest;

/// One flag a binary accepts somewhere.
pub struct Flag {
    /// The long name, without `--`.
    pub name: &'static str,
    /// The value's placeholder (`DIR`, `N`), or `None` for a switch.
    pub value: Option<&'static str>,
    /// One line of help.
    pub help: &'static str,
}

/// One subcommand (or the binary itself when `name` is empty).
pub struct Cmd {
    /// The words that select it (`"rules validate"`), empty for none.
    pub name: &'static str,
    /// The positional arguments' synopsis (`"PATH..."`, `"[FILE|-]"`); it
    /// also sets how many the command takes (see [`Cmd::arity`]).
    pub args: &'static str,
    /// What it does, one line.
    pub about: &'static str,
    /// The flags it uses.
    pub flags: &'static [&'static str],
}

impl Cmd {
    /// A subcommand: its words, positional synopsis, flags and one line
    /// of help (in the order a table reads best).
    pub const fn new(
        name: &'static str,
        args: &'static str,
        flags: &'static [&'static str],
        about: &'static str,
    ) -> Cmd {
        Cmd { name, args, about, flags }
    }

    /// How many positional arguments the synopsis allows, at least and at
    /// most: a bare word is one required, `[...]` is optional, `...` is
    /// repeatable, `--` is punctuation. Read from the synopsis so the help
    /// and the check cannot disagree.
    pub fn arity(&self) -> (usize, usize) {
        let (mut min, mut max, mut depth) = (0usize, 0usize, 0usize);
        for w in self.args.split_whitespace().filter(|w| *w != "--") {
            let optional = depth > 0 || w.starts_with('[');
            depth = (depth + w.matches('[').count()).saturating_sub(w.matches(']').count());
            if !optional {
                min += 1;
            }
            max = if w.contains("...") || max == MANY { MANY } else { max + 1 };
        }
        (min, max)
    }
}

/// A binary's whole command line.
pub struct Spec {
    /// The binary's name.
    pub bin: &'static str,
    /// The overview printed by `BIN --help`.
    pub usage: &'static str,
    /// The flags its typed struct reads, by name.
    pub flags: &'static [&'static str],
    /// The subcommands; the one named `""` runs when no word names another.
    pub cmds: &'static [Cmd],
    /// When set, the first positional of the unnamed command starts the
    /// command to run: it and everything after it are taken as they are
    /// (kb-lock's `-- CMD ARGS...`).
    pub trailing: bool,
    /// Words a person may try that are not commands, each with what to
    /// run instead (kb-memgate's `remember`: `decide | apply`).
    pub hints: &'static [(&'static str, &'static str)],
    /// When set, a `-word` after the first positional is a positional
    /// too, not a cluster of short flags (kb-score's `memory -openclaw`
    /// excludes a word); long flags and `-h`/`-V` keep their meaning.
    pub dash_words: bool,
}

impl Spec {
    /// A binary's table; see [`Spec::trailing`] for kb-lock's form.
    /// `flags` are the names its typed struct reads ([`typed_flags!`]);
    /// every flag a subcommand names must be one of them, and the tables
    /// are statics, so a misspelt name fails to compile.
    pub const fn new(
        bin: &'static str,
        usage: &'static str,
        flags: &'static [&'static str],
        cmds: &'static [Cmd],
    ) -> Spec {
        let mut i = 0;
        while i < cmds.len() {
            let mut j = 0;
            while j < cmds[i].flags.len() {
                assert!(listed(flags, cmds[i].flags[j]), "a subcommand names a flag its binary's typed flags lack");
                j += 1;
            }
            i += 1;
        }
        Spec { bin, usage, flags, cmds, trailing: false, hints: &[], dash_words: false }
    }

    /// The same table, with what to run instead of words that are not
    /// commands.
    pub const fn hints(self, hints: &'static [(&'static str, &'static str)]) -> Spec {
        Spec { hints, ..self }
    }

    /// The flags, read from the Options section of the usage text: each
    /// line `  --name [VALUE]  help` (an all-capitals word after the name
    /// is the value's placeholder). The overview a person reads is the
    /// table, so the two cannot drift.
    pub fn options(&self) -> Vec<Flag> {
        let section = self.usage.split_once("\nOptions:\n").map_or("", |(_, s)| s);
        let section = section.split_once("\n\n").map_or(section, |(s, _)| s);
        let placeholder =
            |w: &str| w.chars().any(|c| c.is_ascii_uppercase()) && !w.chars().any(|c| c.is_ascii_lowercase());
        section
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("--"))
            .map(|l| {
                let (name, rest) = l.split_once(' ').unwrap_or((l, ""));
                let rest = rest.trim_start();
                let (first, after) = rest.split_once(' ').unwrap_or((rest, ""));
                match placeholder(first) {
                    true => Flag { name, value: Some(first), help: after.trim_start() },
                    false => Flag { name, value: None, help: rest },
                }
            })
            .collect()
    }

    /// The same table, with `-word` after the first positional taken as
    /// a positional ([`Spec::dash_words`]).
    pub const fn dash_words(self) -> Spec {
        Spec { dash_words: true, ..self }
    }

    /// The same table, with the unnamed command's positionals taken as a
    /// command line to run.
    pub const fn trailing(self) -> Spec {
        Spec { trailing: true, ..self }
    }
}

/// Unbounded arity.
pub const MANY: usize = usize::MAX;

/// What the user typed, checked against the chosen subcommand. Handlers
/// read flags through their binary's typed struct ([`typed_flags!`]), never
/// by name: a flag the code reads is then a field, and a field whose flag
/// the usage text does not declare fails to compile.
#[derive(Debug, Default)]
pub struct Args {
    /// The subcommand's name (`""` for the unnamed one).
    pub cmd: &'static str,
    /// Flag values by name (a switch holds one empty string per use),
    /// read only by [`FromFlag`].
    pub(crate) flags: BTreeMap<&'static str, Vec<String>>,
    /// Positional arguments after the subcommand's words.
    pub positional: Vec<String>,
}

impl Args {
    /// The last value of a flag.
    fn last(&self, name: &str) -> Option<&str> {
        self.flags.get(name).and_then(|v| v.last()).map(String::as_str)
    }
}

/// How one flag of a parsed command line becomes a field of a binary's
/// typed struct; the field's type says how (a switch, a value, a repeated
/// value, a number, a path, a format).
pub trait FromFlag: Sized {
    /// The field for `--name` in `args`.
    fn from_flag(args: &Args, name: &str) -> Result<Self>;
}

impl FromFlag for bool {
    fn from_flag(args: &Args, name: &str) -> Result<bool> {
        Ok(args.flags.contains_key(name))
    }
}

impl FromFlag for Option<String> {
    fn from_flag(args: &Args, name: &str) -> Result<Option<String>> {
        Ok(args.last(name).map(str::to_string))
    }
}

impl FromFlag for Vec<String> {
    fn from_flag(args: &Args, name: &str) -> Result<Vec<String>> {
        Ok(args.flags.get(name).cloned().unwrap_or_default())
    }
}

impl FromFlag for Option<std::path::PathBuf> {
    fn from_flag(args: &Args, name: &str) -> Result<Option<std::path::PathBuf>> {
        Ok(args.last(name).map(std::path::PathBuf::from))
    }
}

impl FromFlag for Option<Format> {
    fn from_flag(args: &Args, name: &str) -> Result<Option<Format>> {
        args.last(name).map(Format::parse).transpose()
    }
}

/// A whole number, naming the flag when it is not one.
macro_rules! number_flag {
    ($($t:ty),*) => {$(
        impl FromFlag for Option<$t> {
            fn from_flag(args: &Args, name: &str) -> Result<Option<$t>> {
                args.last(name)
                    .map(|v| v.trim().parse().map_err(|_| Error::usage(format!("--{name} wants a whole number, got '{v}'"))))
                    .transpose()
            }
        }
    )*};
}
number_flag!(u32, u64, usize, i64);

/// `--format`, or the default for where stdout goes (a table on a
/// terminal, JSON Lines into a pipe).
pub fn format_or_default(format: Option<Format>) -> Format {
    format.unwrap_or_else(Format::default_for_stdout)
}

/// Whether `--format table` was asked of a command whose records have no
/// table of their own (`own` lists the commands that do): then [`Out`]
/// prints them as tables ([`Out::as_tables`]).
///
/// [`Out`]: crate::out::jsonl::Out
/// [`Out::as_tables`]: crate::out::jsonl::Out::as_tables
pub fn generic_table(format: Option<Format>, cmd: &str, own: &[&str]) -> bool {
    format == Some(Format::Table) && !own.contains(&cmd)
}

/// The lock options `--timeout` sets.
pub fn lock_options(timeout: Option<&str>) -> Result<crate::lock::Options> {
    let mut opts = crate::lock::Options::default();
    if let Some(t) = timeout {
        opts.timeout = crate::clock::parse_duration(t)?;
    }
    Ok(opts)
}

/// Whether `names` holds `name` (a `const fn` for [`Spec::new`]).
const fn listed(names: &[&str], name: &str) -> bool {
    let mut i = 0;
    while i < names.len() {
        let (a, b) = (names[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() && starts(a, 0, b) {
            return true;
        }
        i += 1;
    }
    false
}

/// Whether the Options section of `usage` declares `--name` (see
/// [`undeclared`]).
pub const fn declares(usage: &str, name: &str) -> bool {
    undeclared(usage, &[name]).is_none()
}

/// The first of `names` the Options section of `usage` does not declare:
/// a flag is declared by a line `  --name` followed by a space or the
/// line's end, between `Options:` and the next blank line, the section
/// [`Spec::options`] reads. A `const fn` that reads the section once, so
/// [`typed_flags!`] checks a binary's fields against its help text when
/// the crate compiles.
pub const fn undeclared<'a>(usage: &str, names: &[&'a str]) -> Option<&'a str> {
    const MAX: usize = 128;
    assert!(names.len() <= MAX, "more typed flags than undeclared() checks");
    let u = usage.as_bytes();
    let mut found = [false; MAX];
    if let Some(mut at) = find(u, b"\nOptions:", 0) {
        // `at` is the '\n' before each line of the section in turn.
        while let Some(nl) = find(u, b"\n", at + 1) {
            let line = nl + 1;
            if line >= u.len() || u[line] == b'\n' {
                break;
            }
            if starts(u, line, b"  --") {
                let (s, mut e) = (line + 4, line + 4);
                while e < u.len() && u[e] != b' ' && u[e] != b'\n' {
                    e += 1;
                }
                let mut k = 0;
                while k < names.len() {
                    if names[k].len() == e - s && starts(u, s, names[k].as_bytes()) {
                        found[k] = true;
                    }
                    k += 1;
                }
            }
            at = nl;
        }
    }
    let mut k = 0;
    while k < names.len() {
        if !found[k] {
            return Some(names[k]);
        }
        k += 1;
    }
    None
}

/// Whether `missing` (what [`undeclared`] found) is `name`.
pub const fn is_missing(missing: Option<&str>, name: &str) -> bool {
    match missing {
        Some(m) => m.len() == name.len() && starts(m.as_bytes(), 0, name.as_bytes()),
        None => false,
    }
}

/// Where `pat` first stands in `u` at or after `from` (a `const fn` for
/// [`declares`]).
const fn find(u: &[u8], pat: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i + pat.len() <= u.len() {
        if starts(u, i, pat) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Whether `u` holds `pat` at `at`.
const fn starts(u: &[u8], at: usize, pat: &[u8]) -> bool {
    if at + pat.len() > u.len() {
        return false;
    }
    let mut k = 0;
    while k < pat.len() {
        if u[at + k] != pat[k] {
            return false;
        }
        k += 1;
    }
    true
}

/// Declares a binary's flags as a typed struct, after ripgrep's
/// `LowArgs`: one field per flag, its type saying how the value is read
/// ([`FromFlag`]), filled once from the parsed command line. Each field
/// names its flag, and the crate does not compile when the usage text's
/// Options section (which the parser, `--help`, completions and man pages
/// read) does not declare it; `tables_and_usage_agree` checks the other
/// way, that every declared flag is a field.
macro_rules! typed_flags {
    ($usage:expr; $(#[$doc:meta])* pub struct $name:ident { $( $(#[$fdoc:meta])* $field:ident : $ty:ty = $flag:literal, )* }) => {
        $(#[$doc])*
        #[derive(Debug, Default, Clone)]
        pub struct $name { $( $(#[$fdoc])* pub $field: $ty, )* }

        impl $name {
            /// Every flag a field reads, by name.
            pub const NAMES: &'static [&'static str] = &[$($flag),*];

            /// The flags of a parsed command line, each read as its field's type.
            pub fn from_args(a: &$crate::cli::args::Args) -> $crate::error::Result<Self> {
                Ok($name { $( $field: $crate::cli::args::FromFlag::from_flag(a, $flag)?, )* })
            }
        }

        const _: () = {
            let missing = $crate::cli::args::undeclared($usage, $name::NAMES);
            $( assert!(!$crate::cli::args::is_missing(missing, $flag), concat!("--", $flag, " is not in the usage text's Options")); )*
        };
    };
}
pub(crate) use typed_flags;

/// What parsing asks the caller to do.
pub enum Parsed {
    /// Run the subcommand.
    Run(Args),
    /// Print this text on stdout and exit 0 (`--help`, `--version`).
    Print(String),
}

enum Token {
    Flag(&'static str, Option<String>),
    Value(String),
}

/// Parses `args` (without the program name) against `spec`.
pub fn parse(spec: &Spec, args: impl IntoIterator<Item = OsString>) -> Result<Parsed> {
    let options = spec.options();
    let mut p = lexopt::Parser::from_args(args);
    let mut tokens = Vec::new();
    let mut help = false;
    while let Some(arg) = p.next()? {
        match arg {
            Short(c) if spec.dash_words && tokens.iter().any(|t| matches!(t, Token::Value(_))) => {
                let rest = p.optional_value().map(|v| v.string()).transpose()?.unwrap_or_default();
                match (c, rest.is_empty()) {
                    ('h', true) => help = true,
                    ('V', true) => return Ok(Parsed::Print(format!("{} {}\n", spec.bin, env!("CARGO_PKG_VERSION")))),
                    _ => tokens.push(Token::Value(format!("-{c}{rest}"))),
                }
            }
            Short('h') | Long("help") => help = true,
            Short('V') | Long("version") => {
                return Ok(Parsed::Print(format!("{} {}\n", spec.bin, env!("CARGO_PKG_VERSION"))))
            }
            Long(name) => {
                let name = name.to_string();
                let Some(flag) = options.iter().find(|f| f.name == name) else {
                    return Err(unknown(spec, &name));
                };
                let value =
                    match flag.value {
                        Some(_) => Some(p.value().map_err(|_| {
                            Error::usage(format!("--{name} needs a value ({})", flag.value.unwrap_or("")))
                        }))
                        .transpose()?
                        .map(|v| v.string())
                        .transpose()?,
                        None => None,
                    };
                tokens.push(Token::Flag(flag.name, value));
            }
            Short(c) => {
                let after =
                    if spec.dash_words { " (a -word after the first query word is part of the query)" } else { "" };
                return Err(Error::usage(format!(
                    "unknown flag '-{c}'; the flags are long, see '{} --help'{after}",
                    spec.bin
                )));
            }
            Value(v) => {
                let v = v.string()?;
                let named = spec.cmds.iter().any(|c| !c.name.is_empty() && c.name.split(' ').next() == Some(&v));
                let first = !tokens.iter().any(|t| matches!(t, Token::Value(_)));
                if spec.trailing && first && !named {
                    tokens.push(Token::Value(v));
                    for raw in p.raw_args()? {
                        tokens.push(Token::Value(raw.string()?));
                    }
                } else {
                    tokens.push(Token::Value(v));
                }
            }
        }
    }
    let words: Vec<&str> =
        tokens.iter().filter_map(|t| if let Token::Value(v) = t { Some(v.as_str()) } else { None }).collect();
    if help {
        // `BIN --help` (or with words that name no subcommand): the
        // overview; `BIN CMD --help`: that subcommand's own help.
        return Ok(Parsed::Print(match choose(spec, &words) {
            Ok(cmd) if !cmd.name.is_empty() => cmd_help(spec, cmd),
            _ => spec.usage.to_string(),
        }));
    }
    let cmd = choose(spec, &words)?;
    let skip = cmd.name.split(' ').filter(|w| !w.is_empty()).count();
    let mut args = Args { cmd: cmd.name, ..Args::default() };
    let mut seen = 0;
    for t in tokens {
        match t {
            Token::Value(v) => {
                seen += 1;
                if seen > skip {
                    args.positional.push(v);
                }
            }
            Token::Flag(name, value) => {
                if !cmd.flags.contains(&name) {
                    return Err(misplaced(spec, cmd, name));
                }
                args.flags.entry(name).or_default().push(value.unwrap_or_default());
            }
        }
    }
    let (min, max) = cmd.arity();
    let n = args.positional.len();
    let full = if cmd.name.is_empty() { spec.bin } else { cmd.name };
    if n < min {
        let what = if cmd.args.is_empty() { "arguments".to_string() } else { cmd.args.to_string() };
        return Err(Error::usage(format!("{full} needs {what}")));
    }
    if n > max {
        let extra = &args.positional[max];
        let takes = match max {
            0 => "takes no arguments".to_string(),
            _ => format!("takes {}", cmd.args),
        };
        return Err(Error::usage(format!("{full} {takes}; unexpected '{extra}'")));
    }
    Ok(Parsed::Run(args))
}

/// The subcommand the leading words name (longest match first), else the
/// unnamed one.
fn choose<'a>(spec: &'a Spec, words: &[&str]) -> Result<&'a Cmd> {
    let mut best: Option<&Cmd> = None;
    for c in spec.cmds.iter().filter(|c| !c.name.is_empty()) {
        let parts: Vec<&str> = c.name.split(' ').collect();
        if words.len() >= parts.len()
            && words[..parts.len()] == parts[..]
            && best.is_none_or(|b| b.name.split(' ').count() < parts.len())
        {
            best = Some(c);
        }
    }
    if let Some(c) = best {
        return Ok(c);
    }
    // The unnamed command, unless a word that takes no place there was
    // meant as a command.
    if let Some(c) = spec.cmds.iter().find(|c| c.name.is_empty()) {
        if words.is_empty() || c.arity().1 > 0 {
            return Ok(c);
        }
    }
    let names: Vec<&str> = spec.cmds.iter().map(|c| c.name).collect();
    Err(match words.first() {
        None => Error::usage(format!("missing command ({})", list(&names))),
        Some(w) => {
            let firsts: Vec<&str> = names.iter().map(|n| n.split(' ').next().unwrap_or(n)).collect();
            // A group word without its subcommand (`rules`, `cron`).
            let group: Vec<&str> = names.iter().filter(|n| n.split(' ').next() == Some(w)).copied().collect();
            if !group.is_empty() {
                Error::usage(format!("'{w}' needs a subcommand: {}", list(&group)))
            } else {
                let hint = match spec.hints.iter().find(|(word, _)| word == w) {
                    Some((_, instead)) => format!("; {instead}"),
                    None => {
                        closest(w, firsts.iter().copied()).map(|s| format!("; did you mean '{s}'?")).unwrap_or_default()
                    }
                };
                Error::usage(format!("unknown command '{w}'{hint} (commands: {})", list(&names)))
            }
        }
    })
}

fn list(names: &[&str]) -> String {
    let mut v: Vec<&str> = Vec::new();
    for n in names.iter().filter(|n| !n.is_empty()) {
        if !v.contains(n) {
            v.push(n);
        }
    }
    v.join(", ")
}

/// A flag no subcommand has: suggest the nearest one.
fn unknown(spec: &Spec, name: &str) -> Error {
    let hint = closest(name, spec.options().iter().map(|f| f.name))
        .map(|s| format!("; did you mean '--{s}'?"))
        .unwrap_or_default();
    Error::usage(format!("unknown flag '--{name}'{hint}"))
}

/// A flag of another subcommand: name where it belongs.
fn misplaced(spec: &Spec, cmd: &Cmd, name: &str) -> Error {
    let mut owners: Vec<&str> =
        spec.cmds.iter().filter(|c| !c.name.is_empty() && c.flags.contains(&name)).map(|c| c.name).collect();
    if owners.is_empty() {
        owners.push(spec.cmds.iter().find(|c| c.name.is_empty()).map_or(spec.bin, |c| c.args));
    }
    let full = if cmd.name.is_empty() { spec.bin } else { cmd.name };
    let near = closest(name, cmd.flags.iter().copied()).map(|s| format!("; did you mean '--{s}'?")).unwrap_or_default();
    Error::usage(format!("{full} does not take --{name} (it belongs to {}){near}", list(&owners)))
}

/// `BIN CMD --help`: the subcommand's synopsis and its flags.
pub fn cmd_help(spec: &Spec, cmd: &Cmd) -> String {
    let full = if cmd.name.is_empty() { spec.bin.to_string() } else { format!("{} {}", spec.bin, cmd.name) };
    let mut s = format!("{full}: {}\n\nUsage:\n  {full}", cmd.about);
    if !cmd.args.is_empty() {
        s.push(' ');
        s.push_str(cmd.args);
    }
    let options = spec.options();
    let flags: Vec<&Flag> = cmd.flags.iter().filter_map(|n| options.iter().find(|f| f.name == *n)).collect();
    for f in &flags {
        match f.value {
            Some(v) => s.push_str(&format!(" [--{} {v}]", f.name)),
            None => s.push_str(&format!(" [--{}]", f.name)),
        }
    }
    s.push_str("\n\nOptions:\n");
    let left = |f: &Flag| match f.value {
        Some(v) => format!("--{} {v}", f.name),
        None => format!("--{}", f.name),
    };
    let width = flags.iter().map(|f| left(f).len()).max().unwrap_or(0).max("-h, --help".len());
    for f in &flags {
        s.push_str(&format!("  {:width$}  {}\n", left(f), f.help));
    }
    s.push_str(&format!("  {:width$}  show this help\n", "-h, --help"));
    s
}

/// A bash completion script for the binaries' tables: subcommand words,
/// then the flags of the subcommand typed so far.
pub fn bash_completion(specs: &[&Spec]) -> String {
    let mut s = String::from("# bash completion for kb-tools (generated by `kb-append completions bash`)\n");
    for spec in specs {
        let fname = format!("_{}", spec.bin.replace('-', "_"));
        s.push_str(&format!(
            "{fname}() {{\n  local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" line=\" ${{COMP_WORDS[*]:1:COMP_CWORD-1}} \"\n"
        ));
        s.push_str("  local words=\"\"\n  case \"$line\" in\n");
        let mut cmds: Vec<&Cmd> = spec.cmds.iter().collect();
        cmds.sort_by_key(|c| std::cmp::Reverse(c.name.len()));
        for c in &cmds {
            let flags: Vec<String> = c.flags.iter().map(|f| format!("--{f}")).collect();
            let pat = if c.name.is_empty() { "*".to_string() } else { format!("*\" {} \"*", c.name) };
            let subs: Vec<&str> = if c.name.is_empty() {
                spec.cmds.iter().filter(|c| !c.name.is_empty()).filter_map(|c| c.name.split(' ').next()).collect()
            } else {
                spec.cmds.iter().filter_map(|o| o.name.strip_prefix(c.name).and_then(|r| r.strip_prefix(' '))).collect()
            };
            let mut all: Vec<String> = subs.iter().map(|w| w.to_string()).collect();
            all.dedup();
            all.extend(flags);
            all.push("--help".into());
            s.push_str(&format!("    {pat}) words=\"{}\" ;;\n", all.join(" ")));
        }
        s.push_str("  esac\n  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n}\n");
        s.push_str(&format!("complete -o default -F {fname} {}\n", spec.bin));
    }
    s
}

/// A man page (roff, section 1) for one binary, from its table: the
/// overview as the description, each subcommand's synopsis, every flag.
pub fn man_page(spec: &Spec) -> String {
    let esc = |t: &str| t.replace('\\', "\\\\").replace('-', "\\-");
    let about = spec.usage.lines().next().unwrap_or(spec.bin).split_once(": ").map_or("", |(_, a)| a);
    let mut s = format!(
        ".TH {} 1 \"\" \"kb-tools {}\"\n.SH NAME\n{} \\- {}\n.SH SYNOPSIS\n",
        spec.bin.to_uppercase(),
        env!("CARGO_PKG_VERSION"),
        esc(spec.bin),
        esc(about)
    );
    for c in spec.cmds {
        let name = [spec.bin, c.name, c.args].iter().filter(|w| !w.is_empty()).copied().collect::<Vec<_>>().join(" ");
        s.push_str(&format!(".TP\n.B {}\n{}\n", esc(&name), esc(c.about)));
    }
    s.push_str(".SH DESCRIPTION\n.nf\n");
    for line in spec.usage.lines() {
        // A line starting with `.` or `'` would be read as a roff request.
        if line.starts_with(['.', '\'']) {
            s.push_str("\\&");
        }
        s.push_str(&esc(line));
        s.push('\n');
    }
    s.push_str(".fi\n.SH OPTIONS\n");
    for f in spec.options() {
        let left = match f.value {
            Some(v) => format!("--{} {v}", f.name),
            None => format!("--{}", f.name),
        };
        let used: Vec<&str> = spec
            .cmds
            .iter()
            .filter(|c| c.flags.contains(&f.name))
            .map(|c| if c.name.is_empty() { spec.bin } else { c.name })
            .collect();
        s.push_str(&format!(".TP\n.B {}\n{} (with: {})\n", esc(&left), esc(f.help), esc(&used.join(", "))));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a line of the Options section declares a flag: not the usage
    /// line's `[--type T]`, not a continuation line, not a longer name.
    #[test]
    fn declares_reads_the_options_section_only() {
        let usage = "x: y\n\nUsage:\n  x [--type T]\n  --early  not options\n\nOptions:\n  --root DIR  the library\n                    --fake on a continuation\n  --no-commit\n  -h, --help  help\n\nExample:\n  --late  after\n";
        assert!(declares(usage, "root"));
        assert!(declares(usage, "no-commit"));
        for no in ["type", "early", "fake", "late", "roo", "no", "help"] {
            assert!(!declares(usage, no), "{no}");
        }
    }

    #[test]
    fn arity_reads_the_synopsis() {
        let a = |args| Cmd::new("x", args, &[], "").arity();
        assert_eq!(a(""), (0, 0));
        assert_eq!(a("PATH"), (1, 1));
        assert_eq!(a("BASE OURS THEIRS PATH"), (4, 4));
        assert_eq!(a("PATH..."), (1, MANY));
        assert_eq!(a("[FILE...]"), (0, MANY));
        assert_eq!(a("[FILE|-]"), (0, 1));
        assert_eq!(a("[ACTION NAME...]"), (0, MANY));
        assert_eq!(a("-- CMD [ARGS...]"), (1, MANY));
        assert_eq!(a("referenced|replan|accept PATH"), (2, 2));
    }
}
