//! Rule patterns as finite automata (issue 6 "Engine"): each pattern is
//! parsed by regex-syntax, made to match within one line (every class loses
//! `\n`, as the seed matched `lines[i]`), word boundaries made ASCII, and the
//! whole rule set compiled once into one multi-pattern meta regex. There is
//! no backtracking engine: every search is linear in the text.

use regex_automata::meta::{self, Regex};
use regex_automata::{Anchored, Input, MatchKind, PatternSet};
use regex_syntax::hir::{self, Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look};

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

fn config() -> meta::Config {
    meta::Config::new().utf8_empty(false)
}

/// One compiled pattern: leftmost-first search over bytes.
pub fn single(hir: &Hir) -> Result<Regex> {
    meta::Builder::new()
        .configure(config())
        .build_from_hir(hir)
        .map_err(|e| Error::msg(format!("pattern does not compile: {e}")))
}

/// Every pattern in one automaton that reports which of them match
/// anywhere in a text, in a single pass.
pub struct Set {
    re: Regex,
}

impl Set {
    /// Compiles the set (pattern ids are the indexes of `hirs`).
    pub fn new(hirs: &[Hir]) -> Result<Set> {
        let re = meta::Builder::new()
            .configure(config().match_kind(MatchKind::All).hybrid_cache_capacity(8 << 20).dfa_size_limit(Some(8 << 20)))
            .build_many_from_hir(hirs)
            .map_err(|e| Error::msg(format!("rule set does not compile: {e}")))?;
        Ok(Set { re })
    }

    /// The ids of the patterns that match somewhere in `hay`.
    pub fn matches(&self, hay: &[u8]) -> Vec<usize> {
        let mut set = PatternSet::new(self.re.pattern_len());
        self.re.which_overlapping_matches(&Input::new(hay), &mut set);
        set.iter().map(|p| p.as_usize()).collect()
    }
}

/// Whether `re` matches `hay` starting exactly at `at` (and before `end`).
pub fn matches_at(re: &Regex, hay: &[u8], at: usize, end: usize) -> bool {
    re.search(&Input::new(hay).span(at..end).anchored(Anchored::Yes)).is_some()
}
