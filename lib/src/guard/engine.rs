//! Seed 002 `scanFileContent`, rebuilt to be fast and hard to evade: bytes
//! are sniffed and normalised, then every rule runs at once in one
//! linear-time pass over the whole text; only the rules whose head and tail
//! both matched, in that order, are run again one by one on those lines to
//! locate their matches. Base64 payloads are decoded and
//! scanned as well. At most [`PER_RULE`] lines per rule and file are
//! reported; the rest are counted.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use base64::Engine as _;
use rayon::prelude::*;
use regex_automata::meta::Regex;
use regex_automata::Input;
use rustc_hash::{FxHashMap, FxHashSet};

use super::deobfuscate;
use super::finding::{self, doc_kind, line_contexts, Context, DocKind, Finding, LineIndex, Lowered};
use super::intent::{self, Reading};
use super::kept::Kept;
use super::mention;
use super::normalise;
use super::pattern::{self, Candidate, Set};
use super::rules::{self, Rule, Severity};
use super::sniff::{self, Kind};
use super::svg;
use super::table;
use super::typosquat;
use super::work::{self, Step};
use crate::error::{Error, Result};

/// Most lines reported per rule and file; further matches are counted in
/// [`Scanned::omitted`].
pub const PER_RULE: usize = 20;

/// How deep base64 payloads inside base64 payloads are followed.
const MAX_DEPTH: usize = 2;

/// Most payloads (runs that decode to text) scanned per text; runs that
/// do not decode are not counted, so decoys cannot use up the budget
/// cheaply.
const MAX_PAYLOADS: usize = 256;

/// Shortest run of base64 (or hex) characters decoded as a payload: 16
/// characters hold 12 bytes, enough for `rm -rf ~/`.
const BASE64_MIN: usize = 16;

/// Bytes of a line on either side of a match that its context is judged
/// on (warning words, quotes around it): a sentence's reach. A longer
/// window would make each match cost its whole line, and a long line of
/// matches cost its length squared.
const CONTEXT_WINDOW: usize = 512;

/// Words before a match that show prose warns about a command rather than
/// asks for it; such a match in prose is lowered one level.
const CAUTION_WORDS: &str = r"(?i)\b(never|don't|do\s+not|must\s+not|should\s+not|avoid|warning|caution|beware|dangerous|destructive|malicious|attackers?|deletes|wipes|check|detects?)\b";

/// Words after a match that show prose describes a command it does not
/// run: "never changes it", "only reads it".
const CAUTION_AFTER: &str = r"(?i)\b(never|not|doesn't|does\s+not|won't|will\s+not)\s+(change|changes|edit|edits|write|writes|modify|modifies|touch|touches|run|runs|execute|executes|delete|deletes)\b|\bonly\s+reads?\b|\bread-only\b";

/// Categories whose matches may be lowered by cautionary prose: commands
/// and paths. Injections and real secrets never are.
const LOWERABLE: &[&str] = &[
    "destructive",
    "supply_chain",
    "network",
    "persistence",
    "execution",
    "privilege_escalation",
    "crypto_mining",
    "path_traversal",
    "exfiltration",
    "obfuscation",
];

/// A rule match before one-finding-per-match: the finding, the column
/// just past its match, and the rule's own severity (ties go to the
/// stronger rule).
struct Hit {
    finding: Finding,
    end: usize,
    rank: Severity,
    /// The rule's index in the engine (its finding names it by id).
    rule: usize,
}

/// Keeps one finding per match: of findings on one line whose matched
/// columns overlap, only the strongest (severity, then the rule's own
/// severity, then the longer match) is reported.
fn dedupe(hits: &mut Vec<Hit>) {
    hits.sort_by_key(|h| (h.finding.line, h.finding.column));
    let strength = |h: &Hit| (h.finding.severity, h.rank, h.end - h.finding.column);
    let mut kept: Vec<Hit> = Vec::with_capacity(hits.len());
    let mut line_start = 0;
    for h in hits.drain(..) {
        if kept.last().is_some_and(|k| k.finding.line != h.finding.line) {
            line_start = kept.len();
        }
        let clash = kept[line_start..].iter().position(|k| h.finding.column < k.end && k.finding.column < h.end);
        match clash {
            Some(i) if strength(&h) > strength(&kept[line_start + i]) => kept[line_start + i] = h,
            Some(_) => {}
            None => kept.push(h),
        }
    }
    *hits = kept;
}

/// How [`Engine::match_rules`] sees a text's lines: the file's line for a
/// line of the text, and whether a rule (by pattern) already matched a
/// file line as written.
type LineMap<'a> = (&'a dyn Fn(usize) -> usize, &'a dyn Fn(usize, usize) -> bool);

struct Compiled {
    rule: usize,
    /// The rule's regexes: compiled at once when the engine checks its
    /// rules, else the first time the set flags the rule (a
    /// library of 8,000 rules compiles the few a text can match).
    regexes: OnceLock<Option<Regexes>>,
    hir: regex_syntax::hir::Hir,
    reverse: OnceLock<Option<pattern::Reverse>>,
}

/// One rule's own regexes (cheap to clone: each is shared).
#[derive(Clone)]
struct Regexes {
    re: Regex,
    benign: Vec<Regex>,
    harmless: Vec<Regex>,
}

impl Regexes {
    /// Compiles rule `r`'s pattern (parsed: `hir`) and its shapes; an
    /// error names the rule.
    fn compile(r: &Rule, hir: &regex_syntax::hir::Hir) -> Result<Regexes> {
        let fail = |e: Error| rule_error(r, e);
        let re = pattern::single(hir).map_err(fail)?;
        let shapes = |list: &[String], field: &str| -> Result<Vec<Regex>> {
            let mut out = Vec::new();
            for b in list {
                let bh = pattern::parse(b).map_err(|e| fail(Error::msg(format!("{field}: {e}"))))?;
                out.push(pattern::single(&bh).map_err(fail)?);
            }
            Ok(out)
        };
        Ok(Regexes { re, benign: shapes(&r.benign, "benign")?, harmless: shapes(&r.harmless, "harmless")? })
    }
}

/// Longest match, in bytes, that counts as one phrase. A rule
/// with a gap (`.*`) that spans more joins words that do not belong
/// together (a 25 KB line of near matches); the shortest match within the
/// span is looked for instead, and none is a finding.
const MAX_SPAN: usize = 256;

/// Shorter matches looked for after a too-long one, per line and rule.
const MAX_SHRINK: usize = 16;

/// Harmless matches (a rule's `harmless` shapes) passed over on one line
/// before the next match is reported whatever it looks like: a line cannot
/// hide a real secret behind a run of placeholders, and each line is
/// searched at most this many times more.
const MAX_HARMLESS: usize = 8;

/// Mentions (matches read as talk about a threat) passed over on one line
/// before the next match is reported whatever it looks like.
const MAX_MENTIONS: usize = 8;

impl Compiled {
    /// The rule's regexes, compiled now if they were not. Only rules
    /// whose regexes compiled when they were checked (the core, a
    /// validated or kept file) are compiled late, with the same build and
    /// text, so `None` (the rule never matches) cannot happen in use.
    fn regexes(&self, rules: &[Rule]) -> Option<&Regexes> {
        self.regexes.get_or_init(|| Regexes::compile(&rules[self.rule], &self.hir).ok()).as_ref()
    }

    /// The first match in the candidate's span that no `harmless` shape
    /// covers (after [`MAX_HARMLESS`] harmless ones, the next match).
    fn first_threat(&self, rx: &Regexes, hay: &[u8], cand: &Candidate, le: usize) -> Option<regex_automata::Match> {
        let mut from = cand.from;
        for passed in 0..=MAX_HARMLESS {
            work::add(Step::RuleSearch, cand.to - from);
            let m = rx.re.search(&Input::new(hay).span(from..cand.to))?;
            let harmless = rx.harmless.iter().any(|h| pattern::matches_at(h, hay, m.start(), le));
            if !harmless || passed == MAX_HARMLESS {
                return if m.len() > MAX_SPAN { self.shortest(rx, hay, m.start(), cand.to) } else { Some(m) };
            }
            from = m.end().max(m.start() + 1);
            if from >= cand.to {
                return None;
            }
        }
        None
    }
}

impl Compiled {
    /// The first match in `from..to` at most [`MAX_SPAN`] long: matches
    /// by earliest end, each taken from its nearest start.
    fn shortest(&self, rx: &Regexes, hay: &[u8], mut from: usize, to: usize) -> Option<regex_automata::Match> {
        let reverse = self.reverse.get_or_init(|| pattern::Reverse::new(&self.hir)).as_ref()?;
        for _ in 0..MAX_SHRINK {
            let end = rx.re.search_half(&Input::new(hay).span(from..to).earliest(true))?.offset();
            work::add(Step::RuleSearch, end - from);
            let start = reverse.nearest_start(hay, from, end)?;
            if end - start <= MAX_SPAN {
                return Some(regex_automata::Match::must(0, start..end));
            }
            from = start + 1;
            if from >= to {
                break;
            }
        }
        None
    }
}

/// The compiled rule set; build once, share across threads.
pub struct Engine {
    rules: Vec<Rule>,
    /// Each rule's index by id (looked up for every finding: a fast
    /// hash, not the standard one).
    by_id: FxHashMap<String, usize>,
    set: Set,
    pats: Vec<Compiled>,
    caution: Regex,
    mention_words: Regex,
    caution_after: Regex,
}

/// What scanning one file or text found.
#[derive(Debug, Default, Clone)]
pub struct Scanned {
    /// The findings, sorted by line and column.
    pub findings: Vec<Finding>,
    /// Matches not reported because of [`PER_RULE`].
    pub omitted: usize,
}

/// A rule file or rule that could not be loaded, and why.
#[derive(Debug, Clone)]
pub struct LoadError {
    /// The file (or `core`).
    pub source: String,
    /// What is wrong.
    pub message: String,
}

/// What the `error` record of a [`LoadError`] is about.
#[derive(Debug, serde::Serialize)]
pub struct RuleFile<'a> {
    /// The file (or `core`).
    pub rule_file: &'a str,
}

impl LoadError {
    /// The fields its `error` record carries after the message.
    pub fn about(&self) -> RuleFile<'_> {
        RuleFile { rule_file: &self.source }
    }
}

/// An error in rule `r`, named by its file and id.
fn rule_error(r: &Rule, e: Error) -> Error {
    Error::msg(format!("{}: rule {}: {e}", r.source, r.id))
}

impl Engine {
    /// Compiles `rules`; the first bad pattern is an error naming its rule.
    /// The combined set and the rules' own regexes compile in parallel
    /// (rayon): compiling is a fixed cost of every scan, which one core
    /// would otherwise spend while the other waits. The core rules' own
    /// regexes compile on first use ([`Compiled::regexes`]).
    pub fn new(rules: Vec<Rule>) -> Result<Engine> {
        Engine::build(rules, true)
    }

    /// An engine of rules already checked by [`Engine::new`] with this
    /// build (the core, validated or kept rule files): each rule's own
    /// regexes are compiled the first time the set flags it, so loading
    /// costs the set alone, not a compile per rule.
    pub fn of_checked(rules: Vec<Rule>) -> Result<Engine> {
        Engine::build(rules, false)
    }

    fn build(rules: Vec<Rule>, eager: bool) -> Result<Engine> {
        let mut by_id = FxHashMap::default();
        let mut hirs = Vec::new();
        let mut with_pattern = Vec::new();
        // Patterns parse in parallel (a fixed cost of every scan); the
        // errors are then read in file order, as a serial loop would.
        let parsed: Vec<Option<Result<regex_syntax::hir::Hir>>> =
            rules.par_iter().map(|r| r.pattern.as_deref().map(pattern::parse)).collect();
        for ((i, r), parsed) in rules.iter().enumerate().zip(parsed) {
            if by_id.insert(r.id.clone(), i).is_some() {
                return Err(Error::msg(format!("{}: rule id {} is already defined", r.source, r.id)));
            }
            let Some(hir) = parsed else { continue };
            hirs.push(hir.map_err(|e| rule_error(r, e))?);
            with_pattern.push(i);
        }
        // The regexes alone: each pattern is moved into its `Compiled`
        // once the set is built, not cloned.
        let compile_one = |(&i, hir): (&usize, &regex_syntax::hir::Hir)| -> Result<OnceLock<Option<Regexes>>> {
            let regexes = OnceLock::new();
            if eager {
                let _ = regexes.set(Some(Regexes::compile(&rules[i], hir)?));
            }
            Ok(regexes)
        };
        let words = |w: &str| pattern::parse(w).and_then(|h| pattern::single(&h));
        let (set, (pats, extra)) = rayon::join(
            || Set::new(&hirs),
            || {
                rayon::join(
                    || {
                        // Collected whole first, so the error reported is the first
                        // bad rule in file order, not whichever thread failed first.
                        let each: Vec<Result<OnceLock<Option<Regexes>>>> =
                            with_pattern.par_iter().zip(hirs.par_iter()).map(compile_one).collect();
                        each.into_iter().collect::<Result<Vec<_>>>()
                    },
                    || (words(CAUTION_WORDS), words(mention::WORDS), words(CAUTION_AFTER)),
                )
            },
        );
        let pats = (pats?.into_iter().zip(with_pattern).zip(hirs))
            .map(|((regexes, rule), hir)| Compiled { rule, regexes, hir, reverse: OnceLock::new() })
            .collect();
        let (caution, mention_words, caution_after) = (extra.0?, extra.1?, extra.2?);
        Ok(Engine { rules, by_id, set, pats, caution, mention_words, caution_after })
    }

    /// Builds now what the first scan would build (see [`Set::warm`]).
    pub fn warm(&self) {
        self.set.warm();
    }

    /// The core rules, compiled once per process (checked by the test
    /// suite, so each rule's regexes are compiled when first needed).
    pub fn core() -> Result<&'static Engine> {
        static CORE: OnceLock<std::result::Result<Engine, String>> = OnceLock::new();
        CORE.get_or_init(|| rules::core().and_then(Engine::of_checked).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| Error::msg(format!("core rules: {e}")))
    }

    /// Core rules, the library's evolved core rules (`core.yaml` next to
    /// `dir`), then every valid extended rule file in `dir` (when given). Each file is checked on its own (fields, patterns, ids, its
    /// own examples); a broken file is left out and returned as an error so
    /// the caller reports it: the scan is never silently weaker.
    pub fn load(dir: Option<&Path>) -> Result<(Engine, Vec<LoadError>)> {
        Engine::load_with(dir, &HashMap::new())
    }

    /// [`Engine::load`] as if each file of `planned` (the library core
    /// file, or a `*.yaml` file in `dir`) held the given text: how
    /// `kb-guard rules integrate` checks a rule set before a byte of it is
    /// written, so a kill can never leave a rule file that was to be
    /// taken back.
    pub fn load_with(dir: Option<&Path>, planned: &HashMap<PathBuf, String>) -> Result<(Engine, Vec<LoadError>)> {
        let mut all = rules::core()?;
        let core_len = all.len();
        let mut errors = Vec::new();
        let Some(dir) = dir else { return Ok((Engine::of_checked(all)?, errors)) };
        // Each file's text as planned, else as on disk (`None`: not
        // there), never read through a link nor from a FIFO or device.
        let library_core = dir.parent().map(|p| p.join(rules::LIBRARY_CORE_FILE));
        let core_file = library_core.and_then(|p| {
            let text = planned.get(&p).map(|t| Ok(t.clone())).or_else(|| rules::read_library(&p).transpose());
            text.map(|t| (p.display().to_string(), t))
        });
        let mut extended = rules::extended_files(dir);
        for (name, text) in extended.iter_mut() {
            if let Some(t) = planned.get(Path::new(name.as_str())) {
                *text = Ok(t.clone());
            }
        }
        for (p, t) in planned.iter().filter(|(p, _)| p.parent() == Some(dir)) {
            let name = p.display().to_string();
            if !extended.iter().any(|(n, _)| *n == name) {
                extended.push((name, Ok(t.clone())));
            }
        }
        extended.sort_by(|a, b| a.0.cmp(&b.0));
        // A planned text is being judged: checked in full, never kept,
        // never stood in for by a kept one.
        let kept = if planned.is_empty() { Kept::for_rules(dir) } else { None };
        for (source, text) in core_file.into_iter().chain(extended) {
            let room = rules::MAX_RULES.saturating_sub(all.len() - core_len);
            let fits = |rs: Vec<Rule>| {
                if rs.len() > room {
                    return Err(Error::msg(format!(
                        "{source}: its {} rules take the library's rule files over the limit of {} rules together",
                        rs.len(),
                        rules::MAX_RULES
                    )));
                }
                Ok(rs)
            };
            let checked = text.and_then(|t| match kept.as_ref().and_then(|k| k.rules(&source, Some(&t))) {
                Some(rs) => Ok((None, check_ids(&all, fits(rs)?)?)),
                None => {
                    let rs = validate_extended(&all, fits(rules::parse(&t, &source)?)?)?;
                    Ok((Some(t), rs))
                }
            });
            match checked {
                Ok((validated, rs)) => {
                    if let (Some(k), Some(t)) = (&kept, validated) {
                        k.keep(&source, &t, &rs);
                    }
                    all.extend(rs);
                }
                Err(e) => {
                    let good = kept
                        .as_ref()
                        .and_then(|k| k.rules(&source, None))
                        .and_then(|rs| fits(rs).ok())
                        .and_then(|rs| check_ids(&all, rs).ok());
                    let message = match good {
                        Some(_) => format!("{e}; its last good version stays in force"),
                        None => e.to_string(),
                    };
                    errors.push(LoadError { source, message });
                    all.extend(good.into_iter().flatten());
                }
            }
        }
        // Every rule in `all` was checked: the core by the test suite,
        // each file by validate now or when it was kept.
        Ok((Engine::of_checked(all)?, errors))
    }

    /// [`Engine::load`], compiled once per rule set and shared: for
    /// long-lived processes (kb-mcp answers many `guard_scan` calls) that
    /// would otherwise compile every rule per call. The rule files are read
    /// on every call (they are small) and the engine is rebuilt only when
    /// their names or bytes changed, so hot-loaded rules apply at once.
    pub fn shared(dir: Option<&Path>) -> Result<(Arc<Engine>, Vec<LoadError>)> {
        type Cached = (Option<PathBuf>, String, Arc<Engine>, Vec<LoadError>);
        static CACHE: Mutex<Vec<Cached>> = Mutex::new(Vec::new());
        let key = rule_files_digest(dir);
        let dir_key = dir.map(Path::to_path_buf);
        let hit = |c: &Cached| c.0 == dir_key && c.1 == key;
        if let Some(c) = CACHE.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|c| hit(c)) {
            return Ok((c.2.clone(), c.3.clone()));
        }
        let (engine, errors) = Engine::load(dir)?;
        let engine = Arc::new(engine);
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        cache.retain(|c| c.0 != dir_key);
        cache.push((dir_key, key, engine.clone(), errors.clone()));
        Ok((engine, errors))
    }

    /// Every rule, core first, in file order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// A rule by id.
    pub fn rule(&self, id: &str) -> Option<&Rule> {
        self.by_id.get(id).map(|&i| &self.rules[i])
    }

    /// A finding of builtin rule `id` (structure, encoding, binary).
    pub fn builtin(
        &self,
        id: &str,
        path: &str,
        line: usize,
        column: usize,
        matched: &str,
        context: Context,
    ) -> Finding {
        let (category, severity, description) = match self.rule(id) {
            Some(r) => (r.category.clone(), r.severity, r.description.clone()),
            None => ("structure".to_string(), Severity::High, id.to_string()),
        };
        Finding {
            path: path.to_string(),
            line,
            column,
            rule: id.to_string(),
            category,
            severity,
            description,
            matched: finding::truncate(matched),
            context,
            lowered: None,
            decoded: None,
            normalised: false,
            suppressed: None,
            expired_suppression: None,
        }
    }

    /// Scans a file's bytes: sniffing, normalisation, all rules.
    pub fn scan_bytes(&self, path: &str, bytes: &[u8]) -> Scanned {
        self.scan_bytes_with(path, bytes, true)
    }

    /// [`Engine::scan_bytes`], with or without one finding per match.
    fn scan_bytes_with(&self, path: &str, bytes: &[u8], one_per_match: bool) -> Scanned {
        let mut out = Scanned::default();
        match sniff::sniff(bytes) {
            Kind::Binary(name) => out.findings.push(self.builtin("binary_content", path, 1, 1, name, Context::File)),
            Kind::Data => out.findings.push(self.builtin("binary_data", path, 1, 1, "NUL bytes", Context::File)),
            Kind::Asset(_) => return out,
            Kind::Text => {}
        }
        let norm = normalise::normalise(bytes);
        if svg::is_svg(path, &norm.text) {
            for a in svg::find(&norm.text) {
                let before = &norm.text[..a.at];
                let line = before.matches('\n').count() + 1;
                let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                out.findings.push(self.builtin("svg_active_content", path, line, column, &a.matched, Context::File));
            }
        }
        self.scan_normalised(path, &norm.text, &norm.changed_lines, norm.notes, (0, one_per_match), &mut out);
        out
    }

    /// Scans text already in memory (kb-append's content, write requests).
    pub fn scan_text(&self, path: &str, text: &str) -> Scanned {
        self.scan_bytes(path, text.as_bytes())
    }

    fn scan_normalised(
        &self,
        path: &str,
        text: &str,
        changed: &[usize],
        notes: Vec<normalise::Note>,
        (depth, one_per_match): (usize, bool),
        out: &mut Scanned,
    ) {
        let hay = text.as_bytes();
        work::add(Step::RuleSet, hay.len());
        let lines = LineIndex::new(hay);
        let ids = self.set.line_hits(hay, &lines, &|_, _| false);
        let payloads = if depth < MAX_DEPTH { base64_runs(hay) } else { Vec::new() };
        let kind = doc_kind(path);
        // Lines with an evasion undone (quotes, concatenation, variables,
        // Windows paths, comment bodies), matched as well: they can only
        // add findings, never hide one.
        let view = if depth == 0 { deobfuscate::view(text, kind == DocKind::Markdown) } else { Vec::new() };
        // Markdown tables read row by row and column by column (a phrase
        // cut by cell borders), and those readings deobfuscated.
        let tables = if depth == 0 && kind == DocKind::Markdown { table::readings(text) } else { Default::default() };
        let squats = typosquat::find(text);
        if ids.is_empty()
            && notes.is_empty()
            && payloads.is_empty()
            && view.is_empty()
            && tables.texts.is_empty()
            && squats.is_empty()
        {
            return;
        }
        let contexts = line_contexts(kind, text);
        let ctx = |line: usize| contexts.get(line - 1).copied().unwrap_or(Context::Prose);
        let start = out.findings.len();
        // A line of installs can hold thousands of squats: their room is
        // taken once, not grown (and copied) a doubling at a time.
        out.findings.reserve(notes.len() + squats.len());
        for n in notes {
            let c = ctx(n.line);
            out.findings.push(self.builtin(n.rule, path, n.line, n.column, &n.matched, c));
        }
        for t in squats {
            out.findings.push(self.builtin("typosquat", path, t.line, t.column, &t.matched, ctx(t.line)));
        }
        self.scan_payloads(path, hay, &payloads, &lines, &ctx, depth, out);
        let mut hits = Vec::new();
        let is_changed = |line: usize| changed.binary_search(&line).is_ok();
        let mut matched = Vec::new();
        self.match_rules(
            path,
            (hay, &lines),
            &ids,
            (&|l| l, &|_, _| false),
            &ctx,
            &is_changed,
            &mut hits,
            &mut matched,
            out,
        );
        // A table's readings may give a line several texts: one finding
        // per line and rule is taken from them.
        for (view, once) in [(&view, false), (&tables.texts, true)] {
            if view.is_empty() {
                continue;
            }
            let vtext: Vec<&str> = view.iter().map(|(_, l)| l.as_str()).collect();
            let vtext = vtext.join("\n");
            let vhay = vtext.as_bytes();
            work::add(Step::RuleSet, vhay.len());
            let vlines = LineIndex::new(vhay);
            let line_of = |local: usize| view.get(local - 1).map_or(1, |(l, _)| *l);
            // A rule that matched a line as written has its finding there:
            // the rewritten line is not searched for it again.
            matched.sort_unstable();
            let known = |pid: usize, line: usize| matched.binary_search(&(pid, line)).is_ok();
            let vids = self.set.line_hits(vhay, &vlines, &|pid, local| known(pid, line_of(local)));
            let mut vhits = Vec::new();
            let scan: LineMap = (&line_of, &known);
            self.match_rules(path, (vhay, &vlines), &vids, scan, &ctx, &|_| true, &mut vhits, &mut Vec::new(), out);
            // (line, rule) pairs found, rules by index: no id copied or
            // hashed per finding (a line of near matches has thousands).
            let mut seen: FxHashSet<(usize, usize)> = hits.iter().map(|h: &Hit| (h.finding.line, h.rule)).collect();
            if once {
                // A reading that runs on into the next row also holds what
                // that row says alone: a rule found at the next row is
                // that row's finding, not this one's.
                let found: FxHashSet<(usize, usize)> =
                    seen.iter().copied().chain(vhits.iter().map(|h| (h.finding.line, h.rule))).collect();
                vhits.retain(|h| tables.next_row(h.finding.line).is_none_or(|n| !found.contains(&(n, h.rule))));
            }
            hits.extend(vhits.into_iter().filter(|h| {
                let key = (h.finding.line, h.rule);
                !seen.contains(&key) && (!once || seen.insert(key))
            }));
        }
        if one_per_match {
            dedupe(&mut hits);
        }
        out.findings.extend(hits.into_iter().map(|h| h.finding));
        out.findings[start..].sort_by_key(|f| (f.line, f.column));
    }

    /// Runs the rules `ids` (from the set, with the lines where each may
    /// match) over those lines of `hay`, one match per line and rule;
    /// `line_of` maps a line of `hay` to the file's line.
    #[allow(clippy::too_many_arguments)] // the scan state of one text, passed down once
    fn match_rules(
        &self,
        path: &str,
        (hay, lines): (&[u8], &LineIndex),
        ids: &[(usize, Vec<Candidate>)],
        (line_of, known): LineMap,
        ctx: &dyn Fn(usize) -> Context,
        changed: &dyn Fn(usize) -> bool,
        hits: &mut Vec<Hit>,
        matched: &mut Vec<(usize, usize)>,
        out: &mut Scanned,
    ) {
        for (pid, candidates) in ids {
            let c = &self.pats[*pid];
            let rule = &self.rules[c.rule];
            let Some(rx) = c.regexes(&self.rules) else { continue };
            // One match per line is all a finding needs, and only the
            // lines the set flagged can hold one, within the span it gave
            // (from the rule's first head to its last tail): each is
            // searched once (an iterator over every match can be quadratic
            // on long lines).
            let mut reported = 0;
            for cand in candidates {
                let line = line_of(cand.line);
                if known(*pid, line) {
                    continue;
                }
                let (ls, le) = lines.span(cand.line);
                let context = ctx(line);
                // A match read as a mention (negated, warned against,
                // quoted, documented) is no finding, and the line is read
                // on: a mention cannot hide an order after it.
                let mut from = cand.from;
                let mut judged = None;
                for passed in 0..=MAX_MENTIONS {
                    let Some(m) = c.first_threat(rx, hay, &Candidate { from, ..*cand }, le) else { break };
                    let j = self.judge(rule, &rx.benign, hay, (ls, le), (m.start(), m.end()), context);
                    if let Some(j) = j.or((passed == MAX_MENTIONS).then_some((rule.severity, None))) {
                        judged = Some((m, j));
                        break;
                    }
                    from = m.end().max(m.start() + 1);
                    if from >= cand.to {
                        break;
                    }
                }
                let Some((m, (severity, lowered))) = judged else { continue };
                matched.push((*pid, line));
                if reported == PER_RULE {
                    out.omitted += 1;
                    continue;
                }
                reported += 1;
                work::add(Step::RuleSearch, m.start() - ls);
                let column = String::from_utf8_lossy(&hay[ls..m.start()]).chars().count() + 1;
                let matched = String::from_utf8_lossy(&hay[m.range()]);
                let mut f = self.builtin(&rule.id, path, line, column, &matched, context);
                f.severity = severity;
                f.lowered = lowered.filter(|l| l.from != severity);
                f.normalised = changed(line);
                hits.push(Hit { end: column + matched.chars().count(), rank: rule.severity, rule: c.rule, finding: f });
            }
        }
    }

    /// Whether prose around a match warns about it: a warning word before
    /// it (not inside a quoted string, which is what the line quotes, not
    /// what it says), or a "never changes it" / "only reads it" after it.
    fn cautioned(&self, before: &[u8], after: &[u8]) -> bool {
        let warned = self
            .caution
            .find(before)
            .is_some_and(|m| before[..m.start()].iter().filter(|&&b| b == b'"').count().is_multiple_of(2));
        warned || self.caution_after.is_match(after)
    }

    /// The severity a match counts with: a rule's benign shape lowers it
    /// to medium; a command or path that cautionary prose warns about (on
    /// either side of the match), or a phrase quoted as a mention (a
    /// detector's list, a tutorial's example), is lowered one level.
    /// Secrets are never lowered by context: a real key is leaked however
    /// it is quoted.
    ///
    /// a prose match is read in its clause ([`intent::read`]):
    /// a mention (negated, warned against, quoted as a phrase, a path
    /// described) is no finding at all (`None`), an instruction keeps its
    /// rule's severity however it is framed, and only real doubt (warning
    /// words nearby, nothing clear) is lowered one level. A code line's
    /// quoted mention (a detector's deny-list, a membership test) is no
    /// finding either.
    fn judge(
        &self,
        rule: &Rule,
        benign: &[Regex],
        hay: &[u8],
        (ls, le): (usize, usize),
        (s, e): (usize, usize),
        context: Context,
    ) -> Option<(Severity, Option<Lowered>)> {
        let severity = rule.severity;
        // The context is a window of the line around the match.
        let (ls, le) = (ls.max(s.saturating_sub(CONTEXT_WINDOW)), le.min(e + CONTEXT_WINDOW));
        work::add(Step::Judge, le - ls);
        if benign.iter().any(|b| pattern::matches_at(b, hay, s, le)) {
            return Some((Severity::Medium, Some(Lowered { from: severity, why: "benign use" })));
        }
        let cat = rule.category.as_str();
        if cat == "credential_exposure" {
            return Some((severity, None));
        }
        let quoted = mention::quoted(&hay[ls..le], s - ls, e - ls, context, &self.mention_words);
        match context {
            Context::Prose => match intent::read(&hay[ls..le], s - ls, e - ls, quoted) {
                Reading::Instruction => Some((severity, None)),
                Reading::Mention(_) => None,
                Reading::Doubt if LOWERABLE.contains(&cat) && self.cautioned(&hay[ls..s], &hay[e..le]) => {
                    Some((severity.lower(), Some(Lowered { from: severity, why: "cautionary prose" })))
                }
                Reading::Doubt => Some((severity, None)),
            },
            Context::Code if quoted => None,
            _ => Some((severity, None)),
        }
    }

    /// Decodes base64 runs that decode to text and scans that text; a
    /// payload that raises anything is an `encoded_payload` finding, and
    /// each inner finding is reported at the payload's place.
    #[allow(clippy::too_many_arguments)] // the scan state of one text, passed down once
    fn scan_payloads(
        &self,
        path: &str,
        hay: &[u8],
        payloads: &[std::ops::Range<usize>],
        lines: &LineIndex,
        ctx: &dyn Fn(usize) -> Context,
        depth: usize,
        out: &mut Scanned,
    ) {
        let mut decoded = 0;
        // Payloads come in text order: columns are counted on from the
        // previous payload of the same line, so a line of many payloads is
        // read once, not once per payload.
        let mut cursor = (usize::MAX, 0, 0);
        for m in payloads {
            if decoded == MAX_PAYLOADS {
                break;
            }
            let m = Match { start: m.start, end: m.end };
            let Some((how, text)) = decode_payload(&hay[m.range()]) else { continue };
            decoded += 1;
            let mut inner = Scanned::default();
            let norm = normalise::normalise(text.as_bytes());
            self.scan_normalised(path, &norm.text, &[], norm.notes, (depth + 1, true), &mut inner);
            if inner.findings.is_empty() {
                continue;
            }
            let (line, ls, _) = lines.locate(m.start());
            let (from, col) = if cursor.0 == ls { (cursor.1, cursor.2) } else { (ls, 1) };
            work::add(Step::Payloads, m.start() - from);
            let column = col + String::from_utf8_lossy(&hay[from..m.start()]).chars().count();
            cursor = (ls, m.start(), column);
            let context = ctx(line);
            let shown = format!("{how}: {}", text.replace('\n', " "));
            out.findings.push(self.builtin("encoded_payload", path, line, column, &shown, context));
            for f in inner.findings {
                out.findings.push(Finding { line, column, context, decoded: Some(how), path: path.to_string(), ..f });
            }
        }
    }

    /// Spans of one normalised line that `sanitize` neutralises: matches of
    /// rules with an `inject` category, and base64 runs whose decoded text
    /// raises a finding. Returns `(start, end, rule id, inject category)`.
    pub fn inject_spans(&self, line: &str) -> Vec<(usize, usize, String, String)> {
        let hay = line.as_bytes();
        let mut out = Vec::new();
        for m in base64_runs(hay) {
            let raises =
                decode_base64(&hay[m.clone()]).is_some_and(|t| !self.scan_text("payload.txt", &t).findings.is_empty());
            if raises {
                out.push((m.start, m.end, "encoded_payload".into(), "encoded_payload".into()));
            }
        }
        for pid in self.set.matches(hay) {
            let c = &self.pats[pid];
            let rule = &self.rules[c.rule];
            let Some(inject) = &rule.inject else { continue };
            let Some(rx) = c.regexes(&self.rules) else { continue };
            for m in rx.re.find_iter(hay) {
                if rx.harmless.iter().any(|h| pattern::matches_at(h, hay, m.start(), hay.len())) {
                    continue;
                }
                out.push((m.start(), m.end(), rule.id.clone(), inject.clone()));
            }
        }
        out.sort();
        out
    }

    /// Runs each rule's own examples through the whole pipeline; returns
    /// one message per example that does not behave.
    pub fn check_examples(&self, rule: &Rule) -> Vec<String> {
        self.check_examples_in(rule, None)
    }

    /// [`Engine::check_examples`], each example without a base64 payload
    /// run through `alone` (an engine of `rule` alone) when given.
    fn check_examples_in(&self, rule: &Rule, alone: Option<&Engine>) -> Vec<String> {
        let mut bad = Vec::new();
        // Examples are checked without one-finding-per-match, so a rule
        // keeps proving itself even where a stronger rule overlaps it.
        let raised = |ex: &str| {
            let engine = alone.filter(|_| !has_payload(ex)).unwrap_or(self);
            engine.scan_bytes_with("example.txt", ex.as_bytes(), false).findings.iter().any(|f| f.rule == rule.id)
        };
        for ex in &rule.matches {
            if !raised(ex) {
                bad.push(format!("rule {}: match example does not match: {ex:?}", rule.id));
            }
        }
        for ex in &rule.clean {
            if raised(ex) {
                bad.push(format!("rule {}: clean example matches: {ex:?}", rule.id));
            }
        }
        bad
    }

    /// [`Engine::check_examples`] for every rule, in rule order, in time
    /// linear in the rules (the whole set over every example
    /// took 45 s at 8,000 rules). Whether a rule raises a finding on a
    /// text depends on its own pattern and shapes alone (the set reports
    /// every pattern's matches, and examples are checked without
    /// one-finding-per-match), so each rule's examples run through an
    /// engine of that rule alone. Except inside a decoded payload, where
    /// one finding per match is kept and a stronger rule of the set can
    /// shadow it: an example with a payload runs through the whole set,
    /// as before. A builtin rule's findings come from code, not from the
    /// set: its examples run through this engine.
    pub fn bad_examples(&self) -> Vec<String> {
        let mut pid_of = vec![None; self.rules.len()];
        for (pid, c) in self.pats.iter().enumerate() {
            pid_of[c.rule] = Some(pid);
        }
        let each: Vec<Vec<String>> = self
            .rules
            .par_iter()
            .zip(pid_of.par_iter())
            .map(|(rule, pid)| match pid.map(|pid| self.alone(pid)) {
                Some(alone) => self.check_examples_in(rule, Some(&alone)),
                None => self.check_examples(rule),
            })
            .collect();
        each.into_iter().flatten().collect()
    }

    /// An engine of the one rule with pattern `pid`, sharing its compiled
    /// regexes and the prose words with this one.
    fn alone(&self, pid: usize) -> Engine {
        let c = &self.pats[pid];
        let rule = self.rules[c.rule].clone();
        let regexes = OnceLock::new();
        if let Some(rx) = c.regexes.get() {
            let _ = regexes.set(rx.clone());
        }
        let reverse = OnceLock::new();
        Engine {
            by_id: FxHashMap::from_iter([(rule.id.clone(), 0)]),
            rules: vec![rule],
            set: Set::new(std::slice::from_ref(&c.hir)),
            pats: vec![Compiled { rule: 0, regexes, hir: c.hir.clone(), reverse }],
            caution: self.caution.clone(),
            mention_words: self.mention_words.clone(),
            caution_after: self.caution_after.clone(),
        }
    }
}

/// Whether the scan of `text` decodes a base64 payload (and scans it
/// with one finding per match).
fn has_payload(text: &str) -> bool {
    let norm = normalise::normalise(text.as_bytes());
    let hay = norm.text.as_bytes();
    base64_runs(hay).into_iter().any(|r| decode_payload(&hay[r]).is_some())
}

/// A digest of the names and bytes of every rule file [`Engine::load`]
/// reads for `dir` (the library's core file beside it, its YAML files).
fn rule_files_digest(dir: Option<&Path>) -> String {
    let Some(dir) = dir else { return String::new() };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files.extend(dir.parent().map(|p| p.join(rules::LIBRARY_CORE_FILE)));
    let mut all = Vec::new();
    for f in files {
        all.extend(f.display().to_string().as_bytes());
        all.push(0);
        // As the rules are read: a FIFO or a link to a device is an error
        // kept in the digest, never a hang of a long-lived server.
        match crate::fs::nofollow::read(&f, crate::fs::read::LIMIT) {
            Ok(b) => all.extend(format!("{}:", b.len()).as_bytes().iter().chain(&b)),
            Err(e) => all.extend(format!("error {:?}", e.kind()).as_bytes()),
        }
        all.push(0);
    }
    crate::doc::digest::sha256_hex(&all)
}

/// Checks an extended file's rules against the rules already loaded:
/// no builtins, no id clashes, patterns compile, examples behave.
fn validate_extended(loaded: &[Rule], rules: Vec<Rule>) -> Result<Vec<Rule>> {
    let rules = check_ids(loaded, rules)?;
    let bad = Engine::new(rules.clone())?.bad_examples();
    if !bad.is_empty() {
        return Err(Error::msg(bad.join("; ")));
    }
    Ok(rules)
}

/// The checks of [`validate_extended`] that do not compile anything: no
/// builtins, no id already loaded. All a kept (validated) file needs.
fn check_ids(loaded: &[Rule], rules: Vec<Rule>) -> Result<Vec<Rule>> {
    let ids: HashMap<&str, &str> = loaded.iter().map(|o| (o.id.as_str(), o.source.as_str())).collect();
    for r in &rules {
        if r.builtin {
            return Err(Error::msg(format!("rule {}: extended rules cannot be builtin", r.id)));
        }
        if let Some(source) = ids.get(r.id.as_str()) {
            return Err(Error::msg(format!("rule {}: id already defined in {source}", r.id)));
        }
    }
    Ok(rules)
}

/// The `validation` record of `kb-guard rules validate FILE`.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "record", rename = "validation")]
pub struct Validation {
    /// The file checked.
    pub file: String,
    /// Whether every check passed.
    pub valid: bool,
    /// Rules in the file.
    pub rules: usize,
    /// Examples run.
    pub examples: usize,
    /// What is wrong, one line each.
    pub problems: Vec<String>,
}

/// Checks a rules file the way the hot loader does: fields, patterns, ids
/// (against the core rules, unless the file is the core file), examples.
pub fn validate(text: &str, file: &str) -> Validation {
    let mut v = Validation { file: file.into(), valid: false, rules: 0, examples: 0, problems: vec![] };
    let parsed = match rules::parse(text, file) {
        Ok(r) => r,
        Err(e) => {
            v.problems.push(e.to_string());
            return v;
        }
    };
    v.rules = parsed.len();
    v.examples = parsed.iter().map(|r| r.matches.len() + r.clean.len()).sum();
    let result = if text == rules::CORE_YAML {
        Engine::new(parsed.clone()).map(|e| e.bad_examples())
    } else {
        rules::core().and_then(|core| validate_extended(&core, parsed.clone())).map(|_| Vec::new())
    };
    match result {
        Ok(bad) => v.problems = bad,
        Err(e) => v.problems.extend(e.to_string().split("; ").map(String::from)),
    }
    v.valid = v.problems.is_empty();
    v
}

struct Match {
    start: usize,
    end: usize,
}

impl Match {
    fn start(&self) -> usize {
        self.start
    }

    fn range(&self) -> std::ops::Range<usize> {
        self.start..self.end
    }
}

/// Runs of at least [`BASE64_MIN`] base64 characters (plus `=` padding).
/// A run that long holds the byte [`BASE64_MIN`] − 1 past its start, so
/// the search looks there first: in prose that byte is often a space and
/// the whole stretch is skipped, and otherwise only the bytes back to the
/// last one that is not base64 are read. Each byte is read at most twice
/// (once by a probe, once going back or forward), and most not at all:
/// the pass that read every byte was a tenth of a library scan's
/// instructions.
fn base64_runs(hay: &[u8]) -> Vec<std::ops::Range<usize>> {
    /// Which bytes are base64 characters (`A-Z a-z 0-9 + /`).
    const B64: [bool; 256] = {
        let mut t = [false; 256];
        let mut b = 0;
        while b < 256 {
            let c = b as u8;
            t[b] = c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
            b += 1;
        }
        t
    };
    let b64 = |c: u8| B64[usize::from(c)];
    work::add(Step::Payloads, hay.len());
    let mut out = Vec::new();
    // A run can start at `start` (the byte before it is not base64); the
    // bytes `start..known` are known to be base64.
    let (mut start, mut known) = (0, 0);
    while start + BASE64_MIN <= hay.len() {
        let probe = start + BASE64_MIN - 1;
        if !b64(hay[probe]) {
            (start, known) = (probe + 1, probe + 1);
            continue;
        }
        let from = known.max(start);
        if let Some(k) = hay[from..probe].iter().rposition(|&c| !b64(c)) {
            (start, known) = (from + k + 1, probe + 1);
            continue;
        }
        let end = probe + 1 + hay[probe + 1..].iter().position(|&c| !b64(c)).unwrap_or(hay.len() - probe - 1);
        let padded = end + hay[end..].iter().take(2).take_while(|&&c| c == b'=').count();
        out.push(start..padded);
        (start, known) = (end + 1, end + 1);
    }
    out
}

/// Decodes a run as hex (when it is all hex digits, of even length) or
/// base64, when the result is mostly printable UTF-8 text.
fn decode_payload(run: &[u8]) -> Option<(&'static str, String)> {
    work::add(Step::Payloads, run.len());
    if run.len().is_multiple_of(2) && run.iter().all(u8::is_ascii_hexdigit) {
        let bytes: Option<Vec<u8>> =
            run.chunks(2).map(|p| std::str::from_utf8(p).ok().and_then(|h| u8::from_str_radix(h, 16).ok())).collect();
        if let Some(t) = bytes.and_then(|b| String::from_utf8(b).ok()).filter(|t| printable(t)) {
            return Some(("hex", t));
        }
    }
    decode_base64(run).map(|t| ("base64", t))
}

/// At least 8 characters, nine in ten of them printable.
fn printable(text: &str) -> bool {
    let n = text.chars().count();
    let ok = text.chars().filter(|c| !c.is_control() || c.is_whitespace()).count();
    n >= 8 && ok * 10 >= n * 9
}

/// Decodes a base64 run when it is mostly printable UTF-8 text.
fn decode_base64(run: &[u8]) -> Option<String> {
    let t = run.strip_suffix(b"==").or_else(|| run.strip_suffix(b"=")).unwrap_or(run);
    let trimmed = if t.len() % 4 == 1 { &t[..t.len() - 1] } else { t };
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    let bytes = engine.decode(trimmed).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    printable(&text).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Base64 runs are the maximal runs of 16 or more base64 bytes, with
    /// up to two `=` after them.
    #[test]
    fn base64_runs_are_the_maximal_long_runs() {
        let reference = regex::bytes::Regex::new(r"[A-Za-z0-9+/]{16,}={0,2}").unwrap();
        let run = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY";
        let texts = [
            String::new(),
            run.to_string(),
            format!("{run}==="),
            format!("x {run}= {run}==y{run}"),
            format!("{}={}", &run[..16], &run[..15]),
            "short words in plain prose, none of them sixteen long.\n".repeat(3),
            format!("{}-{run}\n{}", "a".repeat(40), &run[..17]),
        ];
        // Runs of 14 to 18 bytes at every offset in a block, across block
        // ends, next to each other, padded, at the start and the end.
        let mut texts = texts.to_vec();
        for len in 14..=18 {
            for at in 0..20 {
                let r = &run[..len];
                texts.push(format!("{}{r}", " ".repeat(at)));
                texts.push(format!("{}{r} {r}=={r}.", "-".repeat(at)));
                texts.push(format!("{r}{}{r}", " ".repeat(at)));
            }
        }
        // And seeded random mixes of runs, padding, prose and other bytes.
        let pieces = ["QUJDREVG", "R0hJ", "a", "+/", "=", "==", " ", "-", "\n", "é", "0123456789", "x y"];
        let mut lines = crate::guard::pieces::Pieces::new(9, &pieces);
        texts.extend((0..5000).map(|_| lines.line(24)));
        for t in texts {
            let want: Vec<_> = reference.find_iter(t.as_bytes()).map(|m| m.range()).collect();
            assert_eq!(base64_runs(t.as_bytes()), want, "{t:?}");
        }
    }

    #[test]
    fn the_shared_engine_is_built_once_per_rule_set() {
        let dir = tempfile::tempdir().unwrap();
        let active = dir.path().join("active");
        std::fs::create_dir(&active).unwrap();
        let (a, _) = Engine::shared(Some(&active)).unwrap();
        let (b, _) = Engine::shared(Some(&active)).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "the same rule files share one engine");
        assert!(a.rule("ext-01").is_none());
        let rule = "rules:\n- id: ext-01\n  category: exfiltration\n  severity: critical\n  pattern: 'evil-collector\\.test'\n  description: known collector\n  match: ['post to evil-collector.test']\n";
        std::fs::write(active.join("ext.yaml"), rule).unwrap();
        let (c, errors) = Engine::shared(Some(&active)).unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        assert!(!Arc::ptr_eq(&a, &c) && c.rule("ext-01").is_some(), "a new rule file rebuilds it");
        std::fs::write(active.join("ext.yaml"), rule.replace("critical", "high")).unwrap();
        let (d, _) = Engine::shared(Some(&active)).unwrap();
        assert_eq!(d.rule("ext-01").map(|r| r.severity), Some(Severity::High), "an edited file rebuilds it");
    }

    /// The core rules compile on first use ([`Engine::of_checked`]): each
    /// of them compiles.
    #[test]
    fn every_core_rule_compiles() {
        let engine = Engine::core().unwrap();
        for c in &engine.pats {
            assert!(
                Regexes::compile(&engine.rules[c.rule], &c.hir).is_ok(),
                "core rule {} does not compile",
                engine.rules[c.rule].id
            );
        }
    }

    #[test]
    fn every_core_rule_example_behaves() {
        let engine = Engine::core().unwrap();
        let bad = engine.bad_examples();
        assert!(bad.is_empty(), "{} bad examples:\n{}", bad.len(), bad.join("\n"));
    }

    #[test]
    fn a_rule_alone_finds_what_it_finds_among_all_rules() {
        // What makes checking each rule's examples on its own the same
        // check, but for examples with a payload.
        let engine = Engine::core().unwrap();
        let examples: Vec<&String> = engine
            .rules()
            .iter()
            .flat_map(|r| r.matches.iter().chain(&r.clean))
            .filter(|ex| !has_payload(ex))
            .collect();
        for (pid, c) in engine.pats.iter().enumerate() {
            let alone = engine.alone(pid);
            let id = &engine.rules[c.rule].id;
            for ex in &examples {
                let of = |e: &Engine| -> Vec<(usize, usize, String)> {
                    let found = e.scan_bytes_with("example.txt", ex.as_bytes(), false).findings;
                    found.into_iter().filter(|f| &f.rule == id).map(|f| (f.line, f.column, f.matched)).collect()
                };
                assert_eq!(of(&alone), of(engine), "rule {id} on {ex:?}");
            }
        }
    }
}
