//! Rule patterns as finite automata (issue 6 "Engine"): each pattern is
//! parsed by regex-syntax, made to match within one line (every class loses
//! `\n`, as the seed matched `lines[i]`), word boundaries made ASCII, and the
//! whole rule set compiled once into one multi-pattern meta regex. There is
//! no backtracking engine: every search is linear in the text.

use regex_automata::hybrid::dfa::{Cache, OverlappingState, DFA};
use regex_automata::meta::{self, Regex};
use regex_automata::nfa::thompson;
use regex_automata::util::pool::Pool;
use regex_automata::{Anchored, Input, MatchKind, PatternSet};
use regex_syntax::hir::{
    self, Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look,
};

use super::finding::LineIndex;
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

/// The prefilter form of a pattern: its head up to the first unbounded
/// repetition of a broad class (`.*`, `[^|]*`, ...), with counted
/// repetitions relaxed. Any text the pattern matches contains a match of
/// its head, so the set never misses; it only says "maybe" more often, and
/// the exact rule regex then decides. Without this, many `.*` middles and
/// counters multiply into a DFA that adversarial text keeps rebuilding.
fn prefilter(hir: &Hir) -> Hir {
    let (h, _) = head(hir.clone());
    if h.properties().minimum_len().unwrap_or(0) >= 2 {
        h
    } else {
        relax(hir.clone())
    }
}

fn broad(h: &Hir) -> bool {
    match h.kind() {
        HirKind::Class(Class::Bytes(c)) => c.ranges().iter().map(|r| r.len()).sum::<usize>() > 64,
        HirKind::Class(Class::Unicode(c)) => c.ranges().iter().map(|r| r.len()).sum::<usize>() > 64,
        _ => false,
    }
}

/// `(prefix approximation, truncated)`.
fn head(hir: Hir) -> (Hir, bool) {
    match hir.into_kind() {
        HirKind::Concat(subs) => {
            let mut kept = Vec::new();
            for s in subs {
                let (h, cut) = head(s);
                kept.push(h);
                if cut {
                    return (Hir::concat(kept), true);
                }
            }
            (Hir::concat(kept), false)
        }
        HirKind::Alternation(subs) => {
            let mut cut = false;
            let alts = subs
                .into_iter()
                .map(|s| {
                    let (h, c) = head(s);
                    cut |= c;
                    h
                })
                .collect();
            (Hir::alternation(alts), cut)
        }
        HirKind::Capture(c) => {
            let (h, cut) = head(*c.sub);
            (Hir::capture(hir::Capture { sub: Box::new(h), ..c }), cut)
        }
        HirKind::Repetition(r) if r.max == Some(1) => {
            let (h, cut) = head(*r.sub);
            (Hir::repetition(hir::Repetition { sub: Box::new(h), ..r }), cut)
        }
        HirKind::Repetition(r) if r.min == 0 || broad(&r.sub) => (Hir::empty(), true),
        HirKind::Repetition(r) => {
            let (h, cut) = head(*r.sub);
            if cut {
                (h, true)
            } else {
                (Hir::repetition(hir::Repetition { min: 1, max: None, greedy: r.greedy, sub: Box::new(h) }), false)
            }
        }
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

/// Every pattern in one lazy DFA that reports which of them match anywhere
/// in a text, in a single pass. The DFA never gives up on a busy cache (it
/// rebuilds states instead), so adversarial text cannot push the search onto
/// a slower engine; a PikeVM (still linear) is kept only for the error path.
pub struct Set {
    dfa: DFA,
    caches: CachePool,
    fallback: Regex,
}

impl Set {
    /// Compiles the set (pattern ids are the indexes of `hirs`). The set is
    /// a prefilter: counted repetitions are relaxed (`x{20,}` → `x+`) so
    /// their counters do not multiply DFA states; each rule's exact regex
    /// then confirms and locates its matches.
    pub fn new(hirs: &[Hir]) -> Result<Set> {
        let hirs: Vec<Hir> = hirs.iter().map(prefilter).collect();
        let hirs = &hirs[..];
        let fail = |e: &dyn std::fmt::Display| Error::msg(format!("rule set does not compile: {e}"));
        let nfa = thompson::Compiler::new()
            .configure(thompson::Config::new().utf8(false).which_captures(thompson::WhichCaptures::None))
            .build_many_from_hir(hirs)
            .map_err(|e| fail(&e))?;
        let dfa = DFA::builder()
            .configure(
                DFA::config()
                    .match_kind(MatchKind::All)
                    .cache_capacity(32 << 20)
                    .minimum_cache_clear_count(None)
                    .skip_cache_capacity_check(true),
            )
            .build_from_nfa(nfa)
            .map_err(|e| fail(&e))?;
        let for_pool = dfa.clone();
        let caches: CachePool = Pool::new(Box::new(move || for_pool.create_cache()));
        let fallback = meta::Builder::new()
            .configure(config().match_kind(MatchKind::All))
            .build_many_from_hir(hirs)
            .map_err(|e| fail(&e))?;
        Ok(Set { dfa, caches, fallback })
    }

    /// The ids of the patterns that match somewhere in `hay`.
    pub fn matches(&self, hay: &[u8]) -> Vec<usize> {
        let input = Input::new(hay);
        let mut found = PatternSet::new(self.dfa.pattern_len());
        let mut cache = self.caches.get();
        let mut state = OverlappingState::start();
        loop {
            if self.dfa.try_search_overlapping_fwd(&mut cache, &input, &mut state).is_err() {
                self.fallback.which_overlapping_matches(&input, &mut found);
                break;
            }
            match state.get_match() {
                Some(m) => {
                    found.insert(m.pattern());
                    if found.is_full() {
                        break;
                    }
                }
                None => break,
            }
        }
        found.iter().map(|p| p.as_usize()).collect()
    }
}

impl Set {
    /// Each pattern that may match in `hay`, with the 1-based lines of
    /// `lines` where one of its set matches ends (ascending). Rules match
    /// within a line and the set's form of a rule matches a prefix of
    /// every match of the rule, so the rule can only match on these lines:
    /// each rule then reads only them, not the whole text again.
    pub fn line_hits(&self, hay: &[u8], lines: &LineIndex) -> Vec<(usize, Vec<usize>)> {
        let input = Input::new(hay);
        let mut per: Vec<Vec<usize>> = vec![Vec::new(); self.dfa.pattern_len()];
        let mut cache = self.caches.get();
        let mut state = OverlappingState::start();
        let (mut line, mut line_end) = (0, 0);
        loop {
            if self.dfa.try_search_overlapping_fwd(&mut cache, &input, &mut state).is_err() {
                let mut found = PatternSet::new(self.dfa.pattern_len());
                self.fallback.which_overlapping_matches(&input, &mut found);
                return found.iter().map(|p| (p.as_usize(), (1..=lines.lines()).collect())).collect();
            }
            let Some(m) = state.get_match() else { break };
            // Matches come in text order: the line is looked up again only
            // when a match ends past the current one.
            if line == 0 || m.offset() > line_end {
                let (l, _, e) = lines.locate(m.offset());
                (line, line_end) = (l, e);
            }
            let seen = &mut per[m.pattern().as_usize()];
            if seen.last() != Some(&line) {
                seen.push(line);
            }
        }
        per.into_iter().enumerate().filter(|(_, l)| !l.is_empty()).collect()
    }
}

/// Whether `re` matches `hay` starting exactly at `at` (and before `end`).
pub fn matches_at(re: &Regex, hay: &[u8], at: usize, end: usize) -> bool {
    re.search(&Input::new(hay).span(at..end).anchored(Anchored::Yes)).is_some()
}
