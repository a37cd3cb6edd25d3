//! Rule patterns as finite automata: each pattern is
//! parsed by regex-syntax, made to match within one line (every class loses
//! `\n`, as the seed matched `lines[i]`), word boundaries made ASCII, and the
//! whole rule set compiled once into one multi-pattern meta regex. There is
//! no backtracking engine: every search is linear in the text.

use std::collections::HashMap;
use std::sync::Arc;

use regex_automata::hybrid::dfa::{Cache, OverlappingState, DFA};
use regex_automata::meta::{self, Regex};
use regex_automata::nfa::thompson;
use regex_automata::util::pool::Pool;
use regex_automata::util::prefilter::Prefilter;
use regex_automata::{Anchored, Input, MatchKind, PatternID, PatternSet};
use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{
    self, Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look,
};

use super::finding::LineIndex;
use super::literal::{self, Finder};
use crate::error::{Error, Result};

/// Parses one pattern into the line-bounded form the guard matches with.
/// Refuses patterns that could match the empty string or a newline.
pub fn parse(pattern: &str) -> Result<Hir> {
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .multi_line(true)
        .build()
        .parse(pattern)
        .map_err(|e| Error::msg(format!("pattern does not compile: {}", one_line(&e.to_string()))))?;
    let hir = line_bounded(hir);
    if hir.properties().minimum_len().unwrap_or(0) == 0 {
        return Err(Error::msg("pattern can match the empty string"));
    }
    if has_newline_literal(&hir) {
        return Err(Error::msg("pattern contains a newline (rules match within one line)"));
    }
    Ok(hir)
}

fn one_line(s: &str) -> String {
    s.lines().map(str::trim_end).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Rebuilds `hir` with `\n` removed from every class and Unicode word
/// boundaries replaced by ASCII ones (the DFA stays small and fast).
fn line_bounded(hir: Hir) -> Hir {
    match hir.into_kind() {
        HirKind::Class(Class::Bytes(mut c)) => {
            c.difference(&ClassBytes::new([ClassBytesRange::new(b'\n', b'\n')]));
            Hir::class(Class::Bytes(c))
        }
        HirKind::Class(Class::Unicode(mut c)) => {
            c.difference(&ClassUnicode::new([ClassUnicodeRange::new('\n', '\n')]));
            Hir::class(Class::Unicode(c))
        }
        HirKind::Look(l) => Hir::look(ascii_look(l)),
        HirKind::Repetition(r) => Hir::repetition(hir::Repetition { sub: Box::new(line_bounded(*r.sub)), ..r }),
        HirKind::Capture(c) => Hir::capture(hir::Capture { sub: Box::new(line_bounded(*c.sub)), ..c }),
        HirKind::Concat(subs) => Hir::concat(subs.into_iter().map(line_bounded).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.into_iter().map(line_bounded).collect()),
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(l) => Hir::literal(l.0),
    }
}

/// The set's forms of a pattern: its head, and its tail when the head
/// stops short of the end.
struct Forms {
    /// The head: the pattern up to its first repetition of a broad class
    /// (`.*`, `[^|]*`, ...), counted repetitions relaxed; the whole
    /// pattern relaxed when that head is shorter than 2 bytes. Every match
    /// of the pattern starts with a match of its head, so the set never
    /// misses; it only says "maybe" more often, and the exact rule regex
    /// then decides. Without this, many `.*` middles and counters multiply
    /// into a DFA that adversarial text keeps rebuilding.
    head: Hir,
    /// The tail, when the head was cut: the pattern's end back to its
    /// last broad repetition (the head of the reversed pattern). Every
    /// match ends with a match of its tail, after its head's end: a line
    /// of near matches holds heads without tails, and the rule need not
    /// read it at all.
    tail: Option<Hir>,
    /// Whether the head is the whole pattern (relaxed): then every match
    /// of the pattern is a match of its head, ending at the same byte.
    whole: bool,
}

fn forms(hir: &Hir) -> Forms {
    let (h, cut) = head(hir.clone(), End::Start);
    if h.properties().minimum_len().unwrap_or(0) < 2 {
        return Forms { head: relax(hir.clone()), tail: None, whole: true };
    }
    let tail = if cut {
        let (t, _) = head(hir.clone(), End::Finish);
        Some(t).filter(|t| t.properties().minimum_len().unwrap_or(0) >= 1)
    } else {
        None
    };
    Forms { head: h, tail, whole: !cut }
}

/// `hir` read backwards: it matches the reverse of every text `hir`
/// matches (concatenations and literals reversed, look-arounds mirrored).
/// The tests' definition of a tail: the reversed head of the reversed
/// pattern.
#[cfg(test)]
fn reverse(hir: Hir) -> Hir {
    match hir.into_kind() {
        HirKind::Literal(l) => {
            let mut b = l.0.into_vec();
            b.reverse();
            Hir::literal(b)
        }
        HirKind::Look(l) => Hir::look(mirror(l)),
        HirKind::Repetition(r) => Hir::repetition(hir::Repetition { sub: Box::new(reverse(*r.sub)), ..r }),
        HirKind::Capture(c) => Hir::capture(hir::Capture { sub: Box::new(reverse(*c.sub)), ..c }),
        HirKind::Concat(subs) => Hir::concat(subs.into_iter().rev().map(reverse).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.into_iter().map(reverse).collect()),
        HirKind::Class(c) => Hir::class(c),
        HirKind::Empty => Hir::empty(),
    }
}

/// A look-around as seen by a reversed search.
#[cfg(test)]
fn mirror(l: Look) -> Look {
    match l {
        Look::Start => Look::End,
        Look::End => Look::Start,
        Look::StartLF => Look::EndLF,
        Look::EndLF => Look::StartLF,
        Look::StartCRLF => Look::EndCRLF,
        Look::EndCRLF => Look::StartCRLF,
        Look::WordStartAscii => Look::WordEndAscii,
        Look::WordEndAscii => Look::WordStartAscii,
        Look::WordStartUnicode => Look::WordEndUnicode,
        Look::WordEndUnicode => Look::WordStartUnicode,
        Look::WordStartHalfAscii => Look::WordEndHalfAscii,
        Look::WordEndHalfAscii => Look::WordStartHalfAscii,
        Look::WordStartHalfUnicode => Look::WordEndHalfUnicode,
        Look::WordEndHalfUnicode => Look::WordStartHalfUnicode,
        other => other,
    }
}

fn broad(h: &Hir) -> bool {
    match h.kind() {
        HirKind::Class(Class::Bytes(c)) => c.ranges().iter().map(|r| r.len()).sum::<usize>() > 64,
        HirKind::Class(Class::Unicode(c)) => c.ranges().iter().map(|r| r.len()).sum::<usize>() > 64,
        _ => false,
    }
}

/// Which end of a pattern [`head`] keeps.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// Its start: the head.
    Start,
    /// Its end: the tail, read from the end without reversing the
    /// pattern (reversing it and back was a sixth of the start-up).
    Finish,
}

/// `(prefix approximation, truncated)` of `hir`, or of its suffix when
/// `end` is [`End::Finish`].
fn head(hir: Hir, end: End) -> (Hir, bool) {
    match hir.into_kind() {
        HirKind::Concat(mut subs) => {
            if end == End::Finish {
                subs.reverse();
            }
            let mut kept = Vec::new();
            let mut cut = false;
            for s in subs {
                let (h, c) = head(s, end);
                kept.push(h);
                if c {
                    cut = true;
                    break;
                }
            }
            if end == End::Finish {
                kept.reverse();
            }
            (Hir::concat(kept), cut)
        }
        HirKind::Alternation(subs) => {
            let mut cut = false;
            let alts = subs
                .into_iter()
                .map(|s| {
                    let (h, c) = head(s, end);
                    cut |= c;
                    h
                })
                .collect();
            (Hir::alternation(alts), cut)
        }
        HirKind::Capture(c) => {
            let (h, cut) = head(*c.sub, end);
            (Hir::capture(hir::Capture { sub: Box::new(h), ..c }), cut)
        }
        HirKind::Repetition(r) if r.max == Some(1) => {
            let (h, cut) = head(*r.sub, end);
            (Hir::repetition(hir::Repetition { sub: Box::new(h), ..r }), cut)
        }
        HirKind::Repetition(r) if broad(&r.sub) => (Hir::empty(), true),
        HirKind::Repetition(r) => match head(*r.sub, end) {
            (_, true) if r.min == 0 => (Hir::empty(), true),
            (h, true) => (h, true),
            (h, false) => (relax(Hir::repetition(hir::Repetition { sub: Box::new(h), ..r })), false),
        },
        HirKind::Class(c) => (Hir::class(c), false),
        HirKind::Look(l) => (Hir::look(l), false),
        HirKind::Empty => (Hir::empty(), false),
        HirKind::Literal(l) => (Hir::literal(l.0), false),
    }
}

/// Over-approximates counted repetitions: `{0,m}` becomes `*`, `{n,m}`
/// with n ≥ 1 becomes `+` (the set may say "maybe"; the rule decides).
fn relax(hir: Hir) -> Hir {
    match hir.into_kind() {
        HirKind::Repetition(r) => {
            let sub = Box::new(relax(*r.sub));
            let counted = r.min > 1 || r.max.is_some_and(|m| m > 1);
            let (min, max) = if counted { (r.min.min(1), None) } else { (r.min, r.max) };
            Hir::repetition(hir::Repetition { min, max, greedy: r.greedy, sub })
        }
        HirKind::Capture(c) => Hir::capture(hir::Capture { sub: Box::new(relax(*c.sub)), ..c }),
        HirKind::Concat(subs) => Hir::concat(subs.into_iter().map(relax).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.into_iter().map(relax).collect()),
        HirKind::Class(c) => Hir::class(c),
        HirKind::Look(l) => Hir::look(l),
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(l) => Hir::literal(l.0),
    }
}

fn ascii_look(l: Look) -> Look {
    match l {
        Look::WordUnicode => Look::WordAscii,
        Look::WordUnicodeNegate => Look::WordAsciiNegate,
        Look::WordStartUnicode => Look::WordStartAscii,
        Look::WordEndUnicode => Look::WordEndAscii,
        Look::WordStartHalfUnicode => Look::WordStartHalfAscii,
        Look::WordEndHalfUnicode => Look::WordEndHalfAscii,
        other => other,
    }
}

fn has_newline_literal(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Literal(l) => l.0.contains(&b'\n'),
        HirKind::Repetition(r) => has_newline_literal(&r.sub),
        HirKind::Capture(c) => has_newline_literal(&c.sub),
        HirKind::Concat(s) | HirKind::Alternation(s) => s.iter().any(has_newline_literal),
        _ => false,
    }
}

/// Meta regexes without the bounded backtracker: only automata run.
fn config() -> meta::Config {
    meta::Config::new().utf8_empty(false).backtrack(false)
}

/// One compiled pattern: leftmost-first search over bytes.
pub fn single(hir: &Hir) -> Result<Regex> {
    meta::Builder::new()
        .configure(config())
        .build_from_hir(hir)
        .map_err(|e| Error::msg(format!("pattern does not compile: {e}")))
}

type CachePool = Pool<Cache, Box<dyn Fn() -> Cache + Send + Sync + std::panic::RefUnwindSafe + std::panic::UnwindSafe>>;

/// The rule set's patterns, found line by line: rule by rule where each
/// can match ([`ByRule`]), or every head and tail in one lazy DFA that
/// reports which match anywhere in a text in a single pass. The DFAs never
/// give up on a busy cache (they rebuild states instead), so adversarial
/// text cannot push the search onto a slower engine; a PikeVM (still
/// linear) is kept only for the error path.
pub struct Set {
    /// Every head and tail in one lazy DFA, built the first time it is
    /// needed: by [`Set::matches`] (`sanitize`) and when the rule-by-rule
    /// read cannot be built. A scan never needs it, and compiling it was
    /// a fifteenth of every scan's start-up. `None`: it could not be built.
    every: std::sync::OnceLock<Option<(DFA, CachePool)>>,
    /// The search for the strings each rule needs ([`ByRule`]), built
    /// beside the set: it is the biggest automaton of a scan's start-up
    /// and depends on the patterns alone (`None`: it could not be built).
    needed: Option<Needed>,
    /// The set read rule by rule on the lines each can match
    /// ([`Set::line_hits`]), built the first time it is needed.
    by_rule: std::sync::OnceLock<Option<ByRule>>,
    /// The PikeVM for the error path, built the first time it is needed
    /// (it never is in practice: building it for 10,000 rules costs more
    /// than the scan). `None`: it could not be built; every rule is then
    /// a candidate on every line and its own regex decides.
    fallback: std::sync::OnceLock<Option<Regex>>,
    all: Vec<Hir>,
    /// Number of patterns (their heads are set ids `0..patterns`).
    patterns: usize,
    /// For each tail's set id past `patterns`, the pattern it ends.
    owner: Vec<usize>,
    /// Whether a pattern has a tail in the set.
    has_tail: Vec<bool>,
    /// Whether a pattern's head is the whole pattern.
    whole: Vec<bool>,
    /// The longest match of a pattern's head, when it is bounded.
    head_max: Vec<Option<usize>>,
}

/// The strings the rules need, and which rules need none.
struct Needed {
    /// `None`: no rule needs a string.
    finder: Option<Finder>,
    needs_none: Vec<bool>,
}

impl Needed {
    fn of(hirs: &[Hir]) -> Option<Needed> {
        use rayon::prelude::*;
        let needs: Vec<Vec<literal::Group>> =
            hirs.par_iter().map(|h| literal::selective(h, MIN_LITERAL, MAX_GROUPS)).collect();
        let needs_none = needs.iter().map(Vec::is_empty).collect();
        Finder::new(needs).ok().map(|finder| Needed { finder, needs_none })
    }
}

/// Where one rule may match on one line: the 1-based line, and the byte
/// span its search must cover (every match of the rule lies inside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The 1-based line.
    pub line: usize,
    /// First byte a match can start at.
    pub from: usize,
    /// Byte a match must end by.
    pub to: usize,
}

impl Set {
    /// Compiles the set (pattern ids are the indexes of `hirs`). The set is
    /// a prefilter: each pattern's head and tail (see [`Forms`]), counted
    /// repetitions relaxed (`x{20,}` → `x+`) so their counters do not
    /// multiply DFA states; each rule's exact regex then confirms and
    /// locates its matches.
    pub fn new(hirs: &[Hir]) -> Set {
        let (set, needed) = rayon::join(|| Set::of_forms(hirs), || Needed::of(hirs));
        Set { needed, ..set }
    }

    fn of_forms(hirs: &[Hir]) -> Set {
        use rayon::prelude::*;
        let forms: Vec<Forms> = hirs.par_iter().map(forms).collect();
        let head_max = forms.iter().map(|f| f.head.properties().maximum_len()).collect();
        let has_tail = forms.iter().map(|f| f.tail.is_some()).collect();
        let whole = forms.iter().map(|f| f.whole).collect();
        // Heads first (set ids `0..patterns`), then the tails: moved, not
        // cloned (a pattern's classes can hold thousands of ranges).
        let (mut all, mut tails, mut owner) = (Vec::with_capacity(forms.len()), Vec::new(), Vec::new());
        for (i, f) in forms.into_iter().enumerate() {
            all.push(f.head);
            if let Some(t) = f.tail {
                tails.push(t);
                owner.push(i);
            }
        }
        all.append(&mut tails);
        let patterns = hirs.len();
        let (every, by_rule, fallback) =
            (std::sync::OnceLock::new(), std::sync::OnceLock::new(), std::sync::OnceLock::new());
        Set { every, needed: None, by_rule, fallback, all, patterns, owner, has_tail, whole, head_max }
    }

    /// Which set ids match anywhere in `hay`, by the PikeVM: the answer
    /// when the DFA failed (all of them when the PikeVM cannot be built).
    fn fallback_matches(&self, hay: &[u8], found: &mut PatternSet) {
        let fallback = self.fallback.get_or_init(|| {
            meta::Builder::new().configure(config().match_kind(MatchKind::All)).build_many_from_hir(&self.all).ok()
        });
        match fallback {
            Some(re) => re.which_overlapping_matches(&Input::new(hay), found),
            None => (0..self.all.len()).for_each(|id| {
                found.insert(PatternID::must(id));
            }),
        }
    }

    /// Each set match in `hay` as `(set id, end offset)`, in text order
    /// (at one offset, heads before tails); `None` when the DFA failed or
    /// could not be built, and only the PikeVM's answer (which ids match
    /// at all) is known.
    ///
    /// most lines hold no set match at all, and the overlapping
    /// search that reports every match is the slow one. So a plain search
    /// for the earliest match end finds the next line with any match
    /// (every match lies within one line: patterns never match `\n`), and
    /// only that line is searched for all of its matches; the search for
    /// the next one goes on after it.
    fn each_match(&self, hay: &[u8], f: impl FnMut(usize, usize)) -> Option<()> {
        let (dfa, caches) = self.every.get_or_init(|| lazy(&self.all, None).ok()).as_ref()?;
        each_match_in(None, (dfa, caches), hay, f)
    }

    /// The ids of the patterns that may match somewhere in `hay`: their
    /// head matches, and their tail (if they have one) too.
    pub fn matches(&self, hay: &[u8]) -> Vec<usize> {
        let mut found = PatternSet::new(self.all.len());
        let mark = |id: usize, _| {
            found.insert(PatternID::must(id));
        };
        if self.each_match(hay, mark).is_none() {
            self.fallback_matches(hay, &mut found);
        }
        let hit = |id: usize| found.contains(PatternID::must(id));
        let mut tail_hit = vec![false; self.patterns];
        for (k, &p) in self.owner.iter().enumerate() {
            tail_hit[p] = hit(self.patterns + k);
        }
        (0..self.patterns).filter(|&p| hit(p) && (!self.has_tail[p] || tail_hit[p])).collect()
    }
}

/// [`Set::each_match`] with the automaton `dfa` (and its caches), on the
/// lines where `find` (fewer patterns; `None`: `dfa` itself) matches.
fn each_match_in(
    find: Option<(&DFA, &CachePool)>,
    (dfa, caches): (&DFA, &CachePool),
    hay: &[u8],
    mut f: impl FnMut(usize, usize),
) -> Option<()> {
    let mut cache = caches.get();
    let mut find_cache = find.map(|(_, c)| c.get());
    let mut at = 0;
    while at < hay.len() {
        let probe = Input::new(hay).span(at..hay.len()).earliest(true);
        let first = match (find, &mut find_cache) {
            (Some((finder, _)), Some(c)) => finder.try_search_fwd(c, &probe),
            _ => dfa.try_search_fwd(&mut cache, &probe),
        };
        let Some(first) = first.ok()? else { return Some(()) };
        // The line of the match's last byte (matches are never empty).
        let last = first.offset().saturating_sub(1).max(at);
        let line_start = memchr::memrchr(b'\n', &hay[at..last]).map_or(at, |i| at + i + 1);
        let line_end = memchr::memchr(b'\n', &hay[last..]).map_or(hay.len(), |i| last + i);
        let input = Input::new(hay).span(line_start..line_end);
        let mut state = OverlappingState::start();
        loop {
            dfa.try_search_overlapping_fwd(&mut cache, &input, &mut state).ok()?;
            let Some(m) = state.get_match() else { break };
            f(m.pattern().as_usize(), m.offset());
        }
        at = line_end + 1;
    }
    Some(())
}

/// A lazy DFA of `hirs` (set ids are their indexes) that reports every
/// pattern matching, and a pool of its caches (one per thread). It never
/// gives up on a busy cache (it rebuilds states instead). `prefixes`, when
/// given, finds where a match can start.
fn lazy(hirs: &[Hir], prefixes: Option<Prefilter>) -> Result<(DFA, CachePool)> {
    lazy_with(hirs, thompson::Config::new(), DFA::config().match_kind(MatchKind::All).prefilter(prefixes))
}

/// A lazy DFA of `hir` read backwards, leftmost-first and unanchored:
/// searched from the end of a span, it finds the start of the match that
/// ends last.
fn lazy_reverse(hir: &Hir) -> Result<(DFA, CachePool)> {
    lazy_with(std::slice::from_ref(hir), thompson::Config::new().reverse(true), DFA::config())
}

/// The one way the set builds a lazy DFA, with `nfa`'s and `dfa`'s own
/// settings: bytes rather than UTF-8, no captures, and a 32 MB cache that
/// is cleared as often as it fills rather than given up on.
fn lazy_with(
    hirs: &[Hir],
    nfa: thompson::Config,
    dfa: regex_automata::hybrid::dfa::Config,
) -> Result<(DFA, CachePool)> {
    let fail = |e: &dyn std::fmt::Display| Error::msg(format!("rule set does not compile: {e}"));
    let nfa = thompson::Compiler::new()
        .configure(nfa.utf8(false).which_captures(thompson::WhichCaptures::None))
        .build_many_from_hir(hirs)
        .map_err(|e| fail(&e))?;
    let dfa = DFA::builder()
        .configure(dfa.cache_capacity(32 << 20).minimum_cache_clear_count(None).skip_cache_capacity_check(true))
        .build_from_nfa(nfa)
        .map_err(|e| fail(&e))?;
    let for_pool = dfa.clone();
    let caches: CachePool = Pool::new(Box::new(move || for_pool.create_cache()));
    Ok((dfa, caches))
}

/// One pattern's set matches on its current line.
#[derive(Clone, Copy)]
struct Seen {
    line: usize,
    line_start: usize,
    first_head_end: usize,
    last_head_end: usize,
    last_tail_end: Option<usize>,
}

impl Set {
    /// Each pattern that may match in `hay`, with where on which lines
    /// (ascending). Rules match within a line; every match of a rule
    /// starts with a match of its head and ends with one of its tail, at
    /// or after that head's end. So a rule is searched only on lines where
    /// its tail ends at or after its first head end, and only from the
    /// earliest start of that head to the last end of its tail (or of its
    /// head, when the head is the whole pattern): a line of near matches
    /// (heads without tails) costs the set's single pass, not a pass per
    /// rule.
    ///
    /// The set is read rule by rule ([`ByRule`]) where it can be, else
    /// whole: the candidates on the lines where a rule can match are the
    /// same either way.
    ///
    /// `skip(rule, line)` says a rule's candidate on a line is not wanted
    /// (the caller found that rule there already); the set may leave it
    /// out.
    pub fn line_hits(
        &self,
        hay: &[u8],
        lines: &LineIndex,
        skip: &dyn Fn(usize, usize) -> bool,
    ) -> Vec<(usize, Vec<Candidate>)> {
        let mut per: Vec<Vec<Seen>> = vec![Vec::new(); self.patterns];
        let by_rule = self.by_rule();
        let mut done = by_rule.and_then(|b| b.hits(self, hay, lines, skip, &mut per));
        if done.is_none() {
            per.iter_mut().for_each(Vec::clear);
            let (mut line, mut line_start, mut line_end) = (0, 0, 0);
            done = self.each_match(hay, |id, at| {
                // Matches come in text order: the line is looked up again
                // only when a match ends past the current one.
                if line == 0 || at > line_end {
                    (line, line_start, line_end) = lines.locate(at);
                }
                let (p, tail) = if id < self.patterns { (id, false) } else { (self.owner[id - self.patterns], true) };
                seen(&mut per[p], tail, (line, line_start), at);
            });
        }
        if done.is_none() {
            let mut found = PatternSet::new(self.all.len());
            self.fallback_matches(hay, &mut found);
            let all = |_| {
                (1..=lines.lines())
                    .map(|l| {
                        let (from, to) = lines.span(l);
                        Candidate { line: l, from, to }
                    })
                    .collect()
            };
            return found.iter().map(|p| p.as_usize()).filter(|&p| p < self.patterns).map(|p| (p, all(p))).collect();
        }
        per.into_iter()
            .enumerate()
            .map(|(p, seen)| {
                let cands = seen
                    .into_iter()
                    .filter_map(|s| {
                        let to = if self.has_tail[p] {
                            s.last_tail_end?
                        } else if self.whole[p] {
                            s.last_head_end
                        } else {
                            lines.span(s.line).1
                        };
                        let from = self.head_max[p]
                            .map_or(s.line_start, |m| s.first_head_end.saturating_sub(m).max(s.line_start));
                        Some(Candidate { line: s.line, from, to })
                    })
                    .collect::<Vec<_>>();
                (p, cands)
            })
            .filter(|(_, c)| !c.is_empty())
            .collect()
    }
}

impl Set {
    /// The set read rule by rule, built the first time it is needed (by
    /// [`Set::warm`] or the first scan).
    fn by_rule(&self) -> Option<&ByRule> {
        self.by_rule.get_or_init(|| ByRule::new(self).ok()).as_ref()
    }

    /// Builds now what the first scan would: the automata of the rules
    /// that need no string (the needed-strings search is built with the
    /// set). A scan of many files calls it while it
    /// walks them; otherwise the first file's thread builds it while the
    /// others wait.
    pub fn warm(&self) {
        self.by_rule();
    }
}

/// Records a set match of one pattern, in text order: a head's end
/// (`tail` false) or a tail's, on line `line` (starting at `line_start`).
fn seen(seen: &mut Vec<Seen>, tail: bool, (line, line_start): (usize, usize), at: usize) {
    if !tail {
        match seen.last_mut() {
            Some(s) if s.line == line => s.last_head_end = at,
            _ => seen.push(Seen { line, line_start, first_head_end: at, last_head_end: at, last_tail_end: None }),
        }
    } else if let Some(s) = seen.last_mut().filter(|s| s.line == line) {
        // A tail before the line's first head ends no match.
        s.last_tail_end = Some(at);
    }
}

/// Shortest needed string worth searching for: shorter ones (`|`, `sh`)
/// are on most lines.
const MIN_LITERAL: usize = 3;

/// Most groups of needed strings a line must hold one of each of.
const MAX_GROUPS: usize = 2;

/// The set read rule by rule. Each match of a rule holds a string of each
/// of its needed groups ([`literal::needed`]), so one search for all those
/// strings ([`Finder`]) names, per line, the few rules that can match
/// there, and only their own heads and tails (an automaton of one rule,
/// whose states are few) read that line. Rules that need no string are a
/// small set read whole. The one big automaton of every rule at once
/// would build states for every mix of rules the text brings, once per
/// thread: most of a scan's time on a skill corpus. A line where a rule
/// cannot match gets no candidate for it; every other line gets the same
/// as from the whole set (a rule's matches do not depend on the others).
struct ByRule {
    rest: Option<Rest>,
    /// Each rule's own automata, built on first use.
    alone: Vec<std::sync::OnceLock<Option<Alone>>>,
    /// Each rule's tail, by set id.
    tail: Vec<Option<usize>>,
    /// The heads of the rules a long line may match, in one automaton
    /// each set of rules ([`ByRule::first_ends`]), built on first use.
    together: std::sync::Mutex<Together>,
}

/// The heads of sets of rules, each set's in one automaton (`None`: it
/// could not be built).
type Together = HashMap<Vec<usize>, Option<Arc<(DFA, CachePool)>>>;

/// Shortest line whose rules' heads are searched together.
const LONG_LINE: usize = 1024;

/// Fewest rules on a line searched together.
const TOGETHER_MIN: usize = 4;

/// Most sets of rules whose heads are kept together (a text that brings
/// more gets its rules searched one by one).
const MAX_TOGETHER: usize = 1024;

/// The rules that need no string: their heads and tails in one set, for
/// each of its ids the rule and whether it is a tail; and their heads
/// alone, which find the lines to read (a tail counts only after its head
/// on its line, and a short tail can be on every line).
struct Rest {
    set: (DFA, CachePool),
    ids: Vec<(usize, bool)>,
    heads: (DFA, CachePool),
}

impl Rest {
    /// The automata of `rules` (those that need no string; `None` when
    /// there are none), each rule's tail by set id in `tail`.
    fn of(set: &Set, rules: &[usize], tail: &[Option<usize>]) -> Result<Option<Rest>> {
        if rules.is_empty() {
            return Ok(None);
        }
        let mut ids: Vec<(usize, bool)> = rules.iter().map(|&p| (p, false)).collect();
        ids.extend(rules.iter().filter(|&&p| tail[p].is_some()).map(|&p| (p, true)));
        let hirs: Vec<Hir> =
            ids.iter().map(|&(p, is_tail)| set.all[if is_tail { tail[p].unwrap_or(p) } else { p }].clone()).collect();
        // The heads alone read every byte: when each has a finite set
        // of prefixes (`rm`, `nc`, `mkfifo`), a SIMD search for them
        // skips the text between.
        let heads = &hirs[..rules.len()];
        let prefixes = Prefilter::from_hirs_prefix(MatchKind::All, heads);
        let (all, heads) = rayon::join(|| lazy(&hirs, None), || lazy(heads, prefixes));
        Ok(Some(Rest { set: all?, heads: heads?, ids }))
    }
}

impl ByRule {
    fn new(set: &Set) -> Result<ByRule> {
        let needed = set.needed.as_ref().ok_or_else(|| Error::msg("the rules' needed strings did not compile"))?;
        let mut tail = vec![None; set.patterns];
        for (k, &p) in set.owner.iter().enumerate() {
            tail[p] = Some(set.patterns + k);
        }
        let rest_rules: Vec<usize> = (0..set.patterns).filter(|&p| needed.needs_none[p]).collect();
        let rest = Rest::of(set, &rest_rules, &tail)?;
        let alone = (0..set.patterns).map(|_| std::sync::OnceLock::new()).collect();
        let together = std::sync::Mutex::new(HashMap::new());
        Ok(ByRule { rest, alone, tail, together })
    }

    /// Rule `p`'s own automata.
    fn alone(&self, set: &Set, p: usize) -> Option<&Alone> {
        self.alone[p].get_or_init(|| Alone::new(set, p, self.tail[p]).ok()).as_ref()
    }

    /// Every rule's set matches in `hay` on the lines where it can match,
    /// into `per`; `None` when an automaton failed.
    fn hits(
        &self,
        set: &Set,
        hay: &[u8],
        lines: &LineIndex,
        skip: &dyn Fn(usize, usize) -> bool,
        per: &mut [Vec<Seen>],
    ) -> Option<()> {
        if let Some(Rest { set: (dfa, caches), ids, heads }) = &self.rest {
            let (mut line, mut line_start, mut line_end) = (0, 0, 0);
            each_match_in(Some((&heads.0, &heads.1)), (dfa, caches), hay, |id, at| {
                if line == 0 || at > line_end {
                    (line, line_start, line_end) = lines.locate(at);
                }
                let (p, tail) = ids[id];
                seen(&mut per[p], tail, (line, line_start), at);
            })?;
        }
        let Some(finder) = set.needed.as_ref().and_then(|n| n.finder.as_ref()) else { return Some(()) };
        let mut ok = true;
        finder.each_line(hay, |start, end, rules| {
            let (line, _, _) = lines.locate(start);
            let long = end - start >= LONG_LINE && rules.len() >= TOGETHER_MIN;
            let firsts = if long { self.first_ends(set, hay, start..end, rules) } else { None };
            for (i, &p) in rules.iter().enumerate().filter(|&(_, &p)| !skip(p, line)) {
                let found = self.alone(set, p).filter(|_| ok).and_then(|a| match &firsts {
                    Some(f) => f[i].map_or(Some(None), |first| a.seen_from(hay, (line, start, end), first)),
                    None => a.seen(hay, (line, start, end)),
                });
                match found {
                    Some(Some(s)) => per[p].push(s),
                    Some(None) => {}
                    None => {
                        ok = false;
                        return;
                    }
                }
            }
        });
        ok.then_some(())
    }
}

impl ByRule {
    /// The first end of each of `rules`' heads in `hay[span]` (`None`
    /// for a head that does not match), by one overlapping search of all
    /// of them: a long line of near matches is flagged for many rules,
    /// and one pass over it for each costs more than one for all. `None`
    /// when the automaton failed or too many sets were built.
    fn first_ends(
        &self,
        set: &Set,
        hay: &[u8],
        span: std::ops::Range<usize>,
        rules: &[usize],
    ) -> Option<Vec<Option<usize>>> {
        let mut key = rules.to_vec();
        key.sort_unstable();
        let heads = {
            let mut built = self.together.lock().unwrap_or_else(|e| e.into_inner());
            if !built.contains_key(&key) && built.len() >= MAX_TOGETHER {
                return None;
            }
            let build = || {
                let hirs: Vec<Hir> = key.iter().map(|&p| set.all[p].clone()).collect();
                lazy(&hirs, None).ok().map(Arc::new)
            };
            built.entry(key.clone()).or_insert_with(build).clone()?
        };
        let (dfa, caches) = &*heads;
        let input = Input::new(hay).span(span);
        let (mut state, mut cache) = (OverlappingState::start(), caches.get());
        let (mut first, mut left) = (vec![None; key.len()], key.len());
        while left > 0 {
            dfa.try_search_overlapping_fwd(&mut cache, &input, &mut state).ok()?;
            let Some(m) = state.get_match() else { break };
            let slot = &mut first[m.pattern().as_usize()];
            if slot.is_none() {
                *slot = Some(m.offset());
                left -= 1;
            }
        }
        Some(rules.iter().map(|p| key.binary_search(p).ok().and_then(|k| first[k])).collect())
    }
}

/// One rule's head and tail, each an automaton of its own (whose states
/// are few). What the set needs of a line is the first end of the head,
/// and the last end of the tail (or of the head, when the head is the
/// whole pattern): the head's forward search stops at the first, and a
/// backward search from the line's end at the last. An overlapping
/// search for every end reads each line the rule may match to its end,
/// and a long line of near matches is flagged for many rules.
struct Alone {
    /// The head.
    head: Forward,
    /// The pattern whose last end the span runs to: the tail, or the
    /// head when it is the whole pattern (`None`: the span runs to the
    /// line's end).
    last_of: Option<(Hir, bool)>,
    /// Its automata, built the first time the head matches.
    last: std::sync::OnceLock<Option<Last>>,
    /// Head (id 0) and tail (id 1) in one automaton, built on first use:
    /// whether a tail ending where the first head ends counts depends on
    /// the order the overlapping search reports them in, so that rare
    /// line is read by that search.
    both: std::sync::OnceLock<Option<(DFA, CachePool)>>,
    /// The head and tail, for `both`.
    hirs: Vec<Hir>,
}

/// The pattern whose last match end a rule's span runs to.
struct Last {
    /// The pattern read backwards: where its last-ending match starts.
    reverse: (DFA, CachePool),
    /// The pattern forwards: from that start, its longest match, which
    /// ends last. On a long span it first says whether a match lies
    /// there at all: on a line of near matches the tail is mostly
    /// missing, and the backward search would read back to the head.
    forward: Forward,
    /// Its longest match, when bounded: a match ending at or after the
    /// head's first end starts no earlier than this before it.
    max: Option<usize>,
    /// Whether it is the tail (else the whole head).
    tail: bool,
}

/// One pattern forwards, every match kind; on a long span (a line of
/// [`LONG_SPAN`] bytes or more) an automaton that skips to its
/// [`prefixes`], built on first use. Asking for prefixes costs more than
/// it skips on a short line.
struct Forward {
    hir: Hir,
    plain: (DFA, CachePool),
    skipping: std::sync::OnceLock<Option<(DFA, CachePool)>>,
}

/// Shortest span searched with a pattern's prefixes.
const LONG_SPAN: usize = 256;

impl Forward {
    fn new(hir: &Hir) -> Result<Forward> {
        let plain = lazy(std::slice::from_ref(hir), None)?;
        Ok(Forward { hir: hir.clone(), plain, skipping: std::sync::OnceLock::new() })
    }

    /// The automaton to search `span` with.
    fn of(&self, span: std::ops::Range<usize>) -> &(DFA, CachePool) {
        if span.len() < LONG_SPAN {
            return &self.plain;
        }
        let build = || prefixes(&self.hir).and_then(|pre| lazy(std::slice::from_ref(&self.hir), Some(pre)).ok());
        self.skipping.get_or_init(build).as_ref().unwrap_or(&self.plain)
    }

    /// The first end of a match in `hay[span]` (`None`: the automaton
    /// failed).
    fn first_end(&self, hay: &[u8], span: std::ops::Range<usize>) -> Option<Option<usize>> {
        let (dfa, caches) = self.of(span.clone());
        let input = Input::new(hay).span(span).earliest(true);
        Some(dfa.try_search_fwd(&mut caches.get(), &input).ok()?.map(|m| m.offset()))
    }
}

impl Alone {
    fn new(set: &Set, p: usize, tail: Option<usize>) -> Result<Alone> {
        let last_of = match tail {
            Some(t) => Some((set.all[t].clone(), true)),
            None if set.whole[p] => Some((set.all[p].clone(), false)),
            None => None,
        };
        let hirs = std::iter::once(p).chain(tail).map(|id| set.all[id].clone()).collect();
        let (last, both) = (std::sync::OnceLock::new(), std::sync::OnceLock::new());
        Ok(Alone { head: Forward::new(&set.all[p])?, last_of, last, both, hirs })
    }

    /// What the set records of the rule on one line (its number, start
    /// and end): `Some(None)` when no match of the rule can lie there,
    /// `None` when an automaton failed.
    fn seen(&self, hay: &[u8], (line, start, end): (usize, usize, usize)) -> Option<Option<Seen>> {
        let Some(first) = self.head.first_end(hay, start..end)? else { return Some(None) };
        self.seen_from(hay, (line, start, end), first)
    }

    /// [`Alone::seen`] once the head's first end on the line is known.
    fn seen_from(&self, hay: &[u8], (line, start, end): (usize, usize, usize), first: usize) -> Option<Option<Seen>> {
        let mut s = Seen { line, line_start: start, first_head_end: first, last_head_end: first, last_tail_end: None };
        let Some((hir, tail)) = &self.last_of else { return Some(Some(s)) };
        let build = || -> Result<Last> {
            let max = hir.properties().maximum_len();
            Ok(Last { reverse: lazy_reverse(hir)?, forward: Forward::new(hir)?, max, tail: *tail })
        };
        let last = self.last.get_or_init(|| build().ok()).as_ref()?;
        let from = last.max.map_or(start, |m| first.saturating_sub(m).max(start));
        if last.tail && end - from >= LONG_SPAN && last.forward.first_end(hay, from..end)?.is_none() {
            return Some(None);
        }
        let end_at = last_end(last, hay, from, end)?;
        if !last.tail {
            s.last_head_end = end_at.unwrap_or(first).max(first);
            return Some(Some(s));
        }
        match end_at {
            Some(e) if e > first => s.last_tail_end = Some(e),
            Some(e) if e == first => return self.overlapping(hay, (line, start, end)),
            _ => return Some(None),
        }
        Some(Some(s))
    }

    /// [`Alone::seen`] by one overlapping search of the head and tail.
    fn overlapping(&self, hay: &[u8], (line, start, end): (usize, usize, usize)) -> Option<Option<Seen>> {
        let (dfa, caches) = self.both.get_or_init(|| lazy(&self.hirs, None).ok()).as_ref()?;
        let input = Input::new(hay).span(start..end);
        let (mut state, mut cache) = (OverlappingState::start(), caches.get());
        let mut out = Vec::new();
        loop {
            dfa.try_search_overlapping_fwd(&mut cache, &input, &mut state).ok()?;
            let Some(m) = state.get_match() else { break };
            seen(&mut out, m.pattern().as_usize() == 1, (line, start), m.offset());
        }
        Some(out.pop())
    }
}

/// A search for the strings every match of `hir` starts with, cut to
/// their first [`PREFIX_LEN`] bytes with ASCII case spelt out (`(?i)iex`
/// is 8 strings), when they are few and none is a single byte (unless
/// they are at most 3 bytes prose seldom holds: `|`, `:`): a lazy DFA
/// given it skips the text between them. regex's own choice of prefixes
/// keeps only what it can search for fast, which for a pattern ignoring
/// case is often one letter, found on every few bytes.
fn prefixes(hir: &Hir) -> Option<Prefilter> {
    let mut seq =
        Extractor::new().kind(ExtractKind::Prefix).limit_literal_len(PREFIX_LEN).limit_total(MAX_PREFIXES).extract(hir);
    seq.dedup();
    let strings = seq.literals()?;
    let odd = |s: &regex_syntax::hir::literal::Literal| s.as_bytes().first().is_some_and(|&b| literal::odd(b));
    let bytes = strings.len() <= 3 && strings.iter().all(odd);
    if strings.len() > MAX_PREFIXES || (seq.min_literal_len()? < 2 && !bytes) {
        return None;
    }
    Prefilter::new(MatchKind::LeftmostFirst, strings)
}

/// Longest prefix [`prefixes`] searches for.
const PREFIX_LEN: usize = 3;

/// Most prefixes [`prefixes`] searches for (a SIMD search takes a few
/// dozen).
const MAX_PREFIXES: usize = 64;

/// The last end of a match of `last`'s pattern in `hay[from..to]`:
/// the backward search finds the start of the match that ends last, and
/// the longest match from there ends there. `None` when an automaton
/// failed.
fn last_end(last: &Last, hay: &[u8], from: usize, to: usize) -> Option<Option<usize>> {
    let back = Input::new(hay).span(from..to);
    let Some(start) = last.reverse.0.try_search_rev(&mut last.reverse.1.get(), &back).ok()? else {
        return Some(None);
    };
    let fwd = Input::new(hay).span(start.offset()..to).anchored(Anchored::Yes);
    let (dfa, caches) = &last.forward.plain;
    let end = dfa.try_search_fwd(&mut caches.get(), &fwd).ok()?;
    Some(end.map(|m| m.offset()))
}

/// A pattern read backwards: from where a match ends, the
/// nearest byte where one starts. A rule with a gap (`.*`) matches from
/// the first of its heads on a line to a tail far away; the phrase it
/// means is the shortest of those, which this finds in one backward pass.
pub struct Reverse {
    dfa: DFA,
}

impl Reverse {
    /// The reversed automaton of `hir` (`None` if it cannot be built).
    pub fn new(hir: &Hir) -> Option<Reverse> {
        let nfa = thompson::Compiler::new()
            .configure(thompson::Config::new().reverse(true).utf8(false).which_captures(thompson::WhichCaptures::None))
            .build_from_hir(hir)
            .ok()?;
        let dfa = DFA::builder().configure(DFA::config().match_kind(MatchKind::All)).build_from_nfa(nfa).ok()?;
        Some(Reverse { dfa })
    }

    /// The largest start in `from..end` of a match that ends at `end`.
    pub fn nearest_start(&self, hay: &[u8], from: usize, end: usize) -> Option<usize> {
        let mut cache = self.dfa.create_cache();
        let input = Input::new(hay).span(from..end).anchored(Anchored::Yes).earliest(true);
        self.dfa.try_search_rev(&mut cache, &input).ok().flatten().map(|m| m.offset())
    }
}

/// Whether `re` matches `hay` starting exactly at `at` (and before `end`).
pub fn matches_at(re: &Regex, hay: &[u8], at: usize, end: usize) -> bool {
    re.search(&Input::new(hay).span(at..end).anchored(Anchored::Yes)).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::rules;

    /// Lines made of every core rule's examples: whole, cut short, and
    /// pairs joined in both orders (so heads and tails of different rules
    /// meet on one line, in either order).
    fn lines() -> String {
        let ex: Vec<String> =
            rules::core().unwrap().into_iter().flat_map(|r| r.matches.into_iter().chain(r.clean)).collect();
        let mut out = String::new();
        for (i, e) in ex.iter().enumerate() {
            let cut = |n: usize| e.chars().take(e.chars().count() * n / 3).collect::<String>();
            let other = &ex[(i * 7 + 3) % ex.len()];
            for l in
                [e.clone(), cut(1), cut(2), format!("{e} ; {other}"), format!("{other} {e}"), format!("{} {e}", cut(2))]
            {
                out.push_str(&l);
                out.push('\n');
            }
        }
        out
    }

    /// Wherever a rule's exact regex matches a line, the set names that
    /// line with a span that holds the same (first) match: the head and
    /// tail filter never loses a match nor moves one.
    #[test]
    fn candidates_hold_every_first_match_of_every_rule() {
        let hirs: Vec<Hir> =
            rules::core().unwrap().iter().filter_map(|r| r.pattern.as_deref()).map(|p| parse(p).unwrap()).collect();
        let set = Set::new(&hirs);
        let text = lines();
        let hay = text.as_bytes();
        let index = LineIndex::new(hay);
        let hits: std::collections::HashMap<usize, Vec<Candidate>> =
            set.line_hits(hay, &index, &|_, _| false).into_iter().collect();
        let mut checked = 0;
        for (p, hir) in hirs.iter().enumerate() {
            let re = single(hir).unwrap();
            let mut last_line = 0;
            for m in re.find_iter(hay) {
                let (line, _, _) = index.locate(m.start());
                if line == last_line {
                    continue;
                }
                last_line = line;
                let cand = hits.get(&p).and_then(|c| c.iter().find(|c| c.line == line));
                let cand =
                    cand.unwrap_or_else(|| panic!("pattern {p} matches line {line} but is not a candidate there"));
                let again = re.search(&Input::new(hay).span(cand.from..cand.to)).map(|m| m.range());
                assert_eq!(again, Some(m.range()), "pattern {p}, line {line}: the candidate span moves the match");
                checked += 1;
            }
        }
        assert!(checked > 500, "only {checked} matches checked");
    }

    /// A tail read from the end matches what the reversed head of the
    /// reversed pattern matches (the two can differ in form: reversing
    /// lets regex-syntax factor common suffixes out of alternations),
    /// checked for every core rule's pattern on every core example line
    /// and on lines of their pieces: the same ends forwards, the same
    /// starts backwards.
    #[test]
    fn a_tail_matches_as_the_head_of_the_reversed_pattern() {
        let rules = crate::guard::rules::core().unwrap();
        let mut texts: Vec<String> = rules.iter().flat_map(|r| r.matches.iter().chain(&r.clean).cloned()).collect();
        let words: Vec<String> = texts.iter().flat_map(|t| t.split(' ').map(String::from)).collect();
        let words: Vec<&str> = words.iter().map(String::as_str).filter(|w| !w.is_empty()).collect();
        let mut lines = crate::guard::pieces::Pieces::new(7, &words);
        texts.extend((0..400).map(|_| lines.line(12).replace('\n', " ")));
        let ends = |dfa: &DFA, hay: &[u8]| -> Vec<usize> {
            let (mut state, mut cache) = (OverlappingState::start(), dfa.create_cache());
            let mut out = Vec::new();
            loop {
                dfa.try_search_overlapping_fwd(&mut cache, &Input::new(hay), &mut state).unwrap();
                let Some(m) = state.get_match() else { break };
                out.push(m.offset());
            }
            out
        };
        let start = |dfa: &DFA, hay: &[u8]| {
            dfa.try_search_rev(&mut dfa.create_cache(), &Input::new(hay)).unwrap().map(|m| m.offset())
        };
        let mut tails = 0;
        for r in &rules {
            let Some(p) = &r.pattern else { continue };
            let hir = parse(p).unwrap();
            let (tail, cut) = head(hir.clone(), End::Finish);
            let (want, want_cut) = head(reverse(hir), End::Start);
            let want = reverse(want);
            assert_eq!(cut, want_cut, "{}", r.id);
            let fwd = lazy(std::slice::from_ref(&tail), None).unwrap().0;
            let want_fwd = lazy(std::slice::from_ref(&want), None).unwrap().0;
            let (rev, want_rev) = (lazy_reverse(&tail).unwrap().0, lazy_reverse(&want).unwrap().0);
            for t in &texts {
                let hay = t.as_bytes();
                assert_eq!(ends(&fwd, hay), ends(&want_fwd, hay), "{}: {t:?}", r.id);
                assert_eq!(start(&rev, hay), start(&want_rev, hay), "{}: {t:?}", r.id);
            }
            tails += usize::from(cut);
        }
        assert!(tails > 20, "only {tails} patterns have a tail");
    }

    /// Reversing twice gives the pattern back, and a reversed pattern
    /// matches reversed text.
    #[test]
    fn reverse_mirrors_patterns() {
        for p in [r"\bcurl\b.*\|\s*sh$", r"^(ab|cd)+x{2,3}\B"] {
            let hir = parse(p).unwrap();
            assert_eq!(reverse(reverse(hir.clone())), hir);
        }
        let re = single(&reverse(parse(r"\bcurl\s+-s\b").unwrap())).unwrap();
        assert!(re.is_match("x s- lruc".as_bytes()) && !re.is_match("s- lrucx".as_bytes()));
    }
}
