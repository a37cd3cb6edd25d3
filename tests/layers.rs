//! The layer check: `lib/src` has one top-level module per layer
//! and a module may use only its own layer or the layers below it, so the
//! crate has no import cycles and "what does X depend on" has a short answer.
//! This test reads every `crate::…` path in `lib/src` (imports, qualified
//! calls, grouped `use crate::{a, b}`), maps it to its top-level module and
//! fails on an import of a higher layer or on a cycle between top-level
//! modules. `LAYERS` is the one table of the order; docs/design/layout.md
//! mirrors it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Top-level modules from the bottom up; a module may use modules of its
/// own rank or lower. Modules of one rank may use each other as long as
/// that makes no cycle.
const LAYERS: &[(&str, u8)] = &[
    ("error", 0),
    ("clock", 0),
    ("out", 1),
    ("fs", 2),
    ("lock", 3),
    ("text", 4),
    ("doc", 5),
    ("library", 6),
    // The user's own configuration file (outside every library).
    ("config", 6),
    ("derived", 7),
    // The writer scans every write with the guard, so the guard sits below it.
    ("guard", 8),
    ("write", 9),
    // The rules' evolution loop writes proposals and rule files through
    // the writer (its integrate runs are `write::integrate` groups), and
    // sync asks its peer gates about a peer's rule changes.
    ("evolve", 10),
    // `report::status` lists sync's kept conflicts; `sync::init` writes the layout.
    ("sync", 10),
    ("report", 11),
    ("maintain", 12),
    ("score", 13),
    ("memgate", 13),
    ("lastword", 13),
    ("skills", 13),
    // Each binary's command line and what its subcommands run.
    ("mcp", 14),
    // Finishes every kind of interrupted group, the library's and those
    // of the stores outside it (memory, last word): above every writer.
    ("recover", 14),
    ("cli", 15),
];

/// Names `lib.rs` re-exports at the crate root, and the module they come from.
const REEXPORTS: &[(&str, &str)] =
    &[("Error", "error"), ("Exit", "error"), ("Result", "error"), ("Library", "library")];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("lib/src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("reading lib/src") {
        let path = entry.expect("reading lib/src").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`lib.rs` itself: none).
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    match first.strip_suffix(".rs") {
        Some("lib") => None,
        Some(stem) => Some(stem.to_string()),
        None => Some(first.to_string()),
    }
}

/// The code of a line without its `//` comment (doc comments included);
/// a `//` inside a string literal ends the line early, which only hides
/// paths, never invents them.
fn code(line: &str) -> &str {
    line.find("//").map_or(line, |i| &line[..i])
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The first path segment after each `crate::` in `text`; for a group
/// `crate::{a, b::c}` each member's first segment.
fn crate_refs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(is_ident) {
            continue; // e.g. `kb_crate::`, not a path into this crate
        }
        if let Some(group) = rest.strip_prefix('{') {
            // Members at brace depth 0; `lock::{self, Options}` counts as `lock`.
            let (mut depth, mut member_start) = (0usize, true);
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => member_start = true,
                    c if member_start && is_ident(c) => {
                        out.push(group[j..].chars().take_while(|c| is_ident(*c)).collect());
                        member_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

/// Edges `from -> to` between top-level modules, each with the first place
/// that makes it.
fn graph() -> BTreeMap<(String, String), String> {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    let mut edges = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&root).expect("under lib/src");
        let Some(from) = module_of(rel) else { continue };
        let text = fs::read_to_string(&file).expect("reading a source file");
        for (n, line) in text.lines().enumerate() {
            for name in crate_refs(code(line)) {
                let to = REEXPORTS.iter().find(|(r, _)| *r == name).map_or(name.clone(), |(_, m)| (*m).to_string());
                if to != from {
                    edges.entry((from.clone(), to)).or_insert_with(|| format!("lib/src/{}:{}", rel.display(), n + 1));
                }
            }
        }
    }
    edges
}

fn rank(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, r)| *r)
}

#[test]
fn every_top_level_module_has_a_layer() {
    let mut missing = Vec::new();
    for entry in fs::read_dir(src()).expect("reading lib/src") {
        let path = entry.expect("reading lib/src").path();
        let rel = path.strip_prefix(src()).expect("under lib/src");
        if let Some(m) = module_of(rel).filter(|_| path.is_dir() || rel.extension().is_some_and(|e| e == "rs")) {
            if rank(&m).is_none() {
                missing.push(m);
            }
        }
    }
    assert!(missing.is_empty(), "top-level modules missing from LAYERS in tests/layers.rs: {missing:?}");
}

#[test]
fn no_module_imports_a_higher_layer() {
    let upward: Vec<String> = graph()
        .into_iter()
        .filter(|((from, to), _)| matches!((rank(from), rank(to)), (Some(f), Some(t)) if t > f))
        .map(|((from, to), at)| format!("{from} -> {to} at {at}"))
        .collect();
    assert!(upward.is_empty(), "imports of a higher layer:\n{}", upward.join("\n"));
}

#[test]
fn no_cycle_between_top_level_modules() {
    let edges = graph();
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().insert(to);
    }
    // Depth-first search; a node met again while on the stack closes a cycle.
    fn visit<'a>(
        node: &'a str,
        next: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(i) = stack.iter().position(|n| *n == node) {
            let mut cycle = stack[i..].to_vec();
            cycle.push(node);
            return Some(cycle);
        }
        if !done.insert(node) {
            return None;
        }
        stack.push(node);
        for to in next.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(to, next, stack, done) {
                return Some(cycle);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    for node in next.keys() {
        if let Some(cycle) = visit(node, &next, &mut Vec::new(), &mut done) {
            let places: Vec<String> = cycle
                .windows(2)
                .map(|w| format!("{} -> {} at {}", w[0], w[1], edges[&(w[0].to_string(), w[1].to_string())]))
                .collect();
            panic!("import cycle {}:\n{}", cycle.join(" -> "), places.join("\n"));
        }
    }
}

/// Every module opens with a `//!` comment saying what it is for and why.
/// This replaces `#![warn(missing_docs)]`, which asked for a doc on every
/// field and function and so got docs that restate the code; item docs
/// are written where they say why (STYLE.md), not because a lint asks.
#[test]
fn every_module_says_what_it_is_for() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let undocumented: Vec<String> = files
        .iter()
        .filter(|f| !fs::read_to_string(f).expect("reading a source file").starts_with("//!"))
        .map(|f| f.display().to_string())
        .collect();
    assert!(undocumented.is_empty(), "modules without a //! comment first: {undocumented:?}");
}

#[test]
fn the_check_sees_grouped_and_reexported_paths() {
    assert_eq!(crate_refs("use crate::{clock, lock::{self, Options}, Library};"), ["clock", "lock", "Library"]);
    assert_eq!(crate_refs("x = crate::sync::conflicts::list(lib); my_crate::no"), ["sync"]);
    assert_eq!(code("let a = 1; // crate::sync"), "let a = 1; ");
}

/// The longest a binary's command-line layer may be: parse,
/// hand over to the subsystem, exit. Usage text counts, so long help lives
/// in `<bin>.txt` beside the module.
const CLI_MAX_LINES: usize = 120;

/// Each `lib/src/cli/<bin>.rs`, and each file of a binary's folder
/// `lib/src/cli/<bin>/`, stays within [`CLI_MAX_LINES`]: logic that is not
/// parsing belongs in its subsystem. `args.rs` is exempt: it is the one
/// flag parser shared by all nine binaries (plus man pages and
/// completions), not a binary's layer; so is a binary's declaration of its
/// typed flags (a `typed_flags!` block, one line per flag).
#[test]
fn each_binary_cli_layer_is_short() {
    let cli = src().join("cli");
    let mut files = Vec::new();
    rust_files(&cli, &mut files);
    let mut long = Vec::new();
    for path in files {
        let rel = path.strip_prefix(&cli).expect("under cli").to_path_buf();
        if rel == Path::new("args.rs") {
            continue;
        }
        let text = fs::read_to_string(&path).expect("reading a cli module");
        let (mut in_flags, mut lines) = (false, 0);
        for l in text.lines() {
            in_flags |= l.starts_with("typed_flags! {");
            if !in_flags {
                lines += 1;
            }
            in_flags &= l != "}";
        }
        if lines > CLI_MAX_LINES {
            long.push(format!("{} has {lines} lines", rel.display()));
        }
    }
    assert!(long.is_empty(), "cli layers over {CLI_MAX_LINES} lines (move non-parsing logic down): {long:?}");
}
