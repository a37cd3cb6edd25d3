//! The literals a pattern needs: a few strings, one of which every match
//! of the pattern contains (ASCII case folded). The rule set looks for
//! them first with one multi-literal search, so its automaton reads only
//! the lines where a rule can match: on a skill corpus most lines hold
//! none, and the automaton's states, built as the text needs them, cost
//! more than the search itself.

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::Anchored;
use regex_syntax::hir::{Class, Hir, HirKind};

use crate::error::{Error, Result};

/// Most strings one piece of a pattern stands for; beyond that it counts
/// as unknown (a class of 26 letters times another is no prefilter).
const MAX_STRINGS: usize = 64;

/// Longest string kept: the rest of a longer literal adds no selectivity.
const MAX_LEN: usize = 24;

/// Most bytes of a class still read as a few strings (`[Ii]`, `[-_.]`).
const MAX_CLASS: usize = 8;

/// A set of strings, one of which occurs in every match (folded).
pub type Group = Vec<Vec<u8>>;

/// What a piece of a pattern says about the text it matches.
struct Facts {
    /// Every string it can match (folded), when they are few.
    exact: Option<Group>,
    /// Groups every match holds a string of each of, in pattern order.
    needs: Vec<Group>,
}

/// The groups of strings every match of `hir` holds one of each (ASCII
/// letters in lower case: to be searched ignoring ASCII case), at most
/// `most` of them, the most selective first, each string at least
/// `min_len` bytes long. Empty when the pattern has none.
pub fn needed(hir: &Hir, min_len: usize, most: usize) -> Vec<Group> {
    groups(hir, min_len, most, Rank::Length)
}

/// What makes one group of strings more selective than another.
#[derive(Clone, Copy)]
enum Rank {
    /// A longer shortest string, then fewer strings.
    Length,
    /// Strings prose seldom holds ([`rare`]), then as [`Rank::Length`].
    Rarity,
}

fn groups(hir: &Hir, min_len: usize, most: usize, rank: Rank) -> Vec<Group> {
    let mut needs: Vec<Group> =
        facts(hir, rank).needs.into_iter().filter(|g| g.iter().all(|s| s.len() >= min_len)).collect();
    needs.sort_by_key(|g| std::cmp::Reverse(score(g, rank)));
    needs.dedup();
    needs.truncate(most);
    needs
}

/// [`needed`], or for a pattern with no such group (`\\x..` escapes, a
/// port after an address, `${` with a backtick, `nc … -e`) its groups of
/// shorter strings that prose seldom holds ([`rare`]: `\\x`, ` -`, `:`).
/// Such a rule then finds its lines by the one literal search like the
/// others, instead of by its own pass over every byte.
pub fn selective(hir: &Hir, min_len: usize, most: usize) -> Vec<Group> {
    let long = needed(hir, min_len, most);
    if !long.is_empty() {
        return long;
    }
    let mut short = groups(hir, 1, usize::MAX, Rank::Rarity);
    short.retain(|g| rare(g));
    short.truncate(most);
    short
}

/// Whether prose seldom holds any string of `group`: each is at least 3
/// bytes long or holds a byte other than a letter, digit, space, `.` or
/// `,`.
fn rare(group: &[Vec<u8>]) -> bool {
    group.iter().all(|s| s.len() >= 3 || s.iter().any(|&b| odd(b)))
}

/// Whether prose seldom holds byte `b`: other than a letter, digit, space,
/// `.` or `,`.
pub fn odd(b: u8) -> bool {
    !(b.is_ascii_alphanumeric() || b.is_ascii_whitespace() || b",.".contains(&b))
}

fn facts(hir: &Hir, rank: Rank) -> Facts {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => exact(vec![Vec::new()]),
        HirKind::Literal(l) => exact(vec![l.0.to_ascii_lowercase()]),
        HirKind::Class(c) => match class_bytes(c) {
            Some(bytes) => exact(bytes.into_iter().map(|b| vec![b]).collect()),
            None => Facts { exact: None, needs: Vec::new() },
        },
        HirKind::Capture(c) => facts(&c.sub, rank),
        HirKind::Repetition(r) if r.min == 0 => Facts { exact: None, needs: Vec::new() },
        HirKind::Repetition(r) => {
            let sub = facts(&r.sub, rank);
            Facts { exact: if r.max == Some(1) { sub.exact } else { None }, needs: sub.needs }
        }
        HirKind::Alternation(subs) => {
            // One group: each branch's most selective group together.
            let each: Vec<Facts> = subs.iter().map(|s| facts(s, rank)).collect();
            let union = |sets: Vec<Option<&Group>>| -> Option<Group> {
                let mut all = Vec::new();
                for s in sets {
                    all.extend(s?.iter().cloned());
                }
                tidy(all)
            };
            let best = |f: &Facts| f.needs.iter().max_by_key(|g| score(g, rank)).cloned();
            let bests: Vec<Option<Group>> = each.iter().map(best).collect();
            Facts {
                exact: union(each.iter().map(|f| f.exact.as_ref()).collect()),
                needs: union(bests.iter().map(Option::as_ref).collect()).into_iter().collect(),
            }
        }
        HirKind::Concat(subs) => concat(subs, rank),
    }
}

/// Facts of a piece that matches exactly `set`.
fn exact(set: Group) -> Facts {
    let needs = if set.iter().all(|x| !x.is_empty()) { vec![set.clone()] } else { Vec::new() };
    Facts { exact: Some(set), needs }
}

/// A concatenation: runs of exact pieces multiply into longer strings,
/// each run a group, and the other pieces' groups are needed as well.
fn concat(subs: &[Hir], rank: Rank) -> Facts {
    let mut needs = Vec::new();
    let close = |run: Group, needs: &mut Vec<Group>| {
        if run.iter().all(|x| !x.is_empty()) {
            needs.push(run);
        }
    };
    let mut run: Group = vec![Vec::new()];
    let mut whole = true;
    for sub in subs {
        let f = facts(sub, rank);
        let product = f.exact.as_ref().and_then(|e| product(&run, e));
        match (product, f.exact) {
            (Some(p), _) => run = p,
            (None, exact) => {
                whole = false;
                close(std::mem::replace(&mut run, vec![Vec::new()]), &mut needs);
                match exact {
                    Some(e) => run = e,
                    None => needs.extend(f.needs),
                }
            }
        }
    }
    let exact = whole.then(|| run.clone());
    close(run, &mut needs);
    Facts { exact, needs }
}

/// Every string of `a` followed by one of `b`, when they stay few and
/// short.
fn product(a: &[Vec<u8>], b: &[Vec<u8>]) -> Option<Group> {
    if a.len() * b.len() > MAX_STRINGS {
        return None;
    }
    let mut out = Vec::with_capacity(a.len() * b.len());
    for x in a {
        for y in b {
            let s: Vec<u8> = x.iter().chain(y).copied().collect();
            if s.len() > MAX_LEN {
                return None;
            }
            out.push(s);
        }
    }
    tidy(out)
}

/// A set sorted, without repeats, if it is small enough.
fn tidy(mut set: Group) -> Option<Group> {
    set.sort();
    set.dedup();
    (set.len() <= MAX_STRINGS).then_some(set)
}

/// How selective a set of needed strings is: by `rank`, whether prose
/// seldom holds it, then its shortest string (a short one occurs
/// everywhere), then fewer strings.
fn score(set: &[Vec<u8>], rank: Rank) -> (bool, usize, std::cmp::Reverse<usize>) {
    let rare = matches!(rank, Rank::Rarity) && rare(set);
    (rare, set.iter().map(Vec::len).min().unwrap_or(0), std::cmp::Reverse(set.len()))
}

/// The bytes of a small class, folded (`[Kk]` is `k`).
fn class_bytes(c: &Class) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match c {
        Class::Bytes(b) => {
            for r in b.ranges() {
                if usize::from(r.end() - r.start()) >= MAX_CLASS * 2 {
                    return None;
                }
                out.extend((r.start()..=r.end()).map(|x| x.to_ascii_lowercase()));
            }
        }
        Class::Unicode(u) => {
            for r in u.ranges() {
                if !r.end().is_ascii() || (r.end() as u32 - r.start() as u32) as usize >= MAX_CLASS * 2 {
                    return None;
                }
                out.extend((r.start()..=r.end()).map(|x| (x as u8).to_ascii_lowercase()));
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    (out.len() <= MAX_CLASS).then_some(out)
}

/// Every needed string of a rule set in one search (ASCII case ignored):
/// which lines hold a string of each group of a rule, and which rules.
pub struct Finder {
    strings: Strings,
    /// For each string, the (rule, group) pairs that need it.
    owners: Vec<Vec<(usize, u8)>>,
    /// For each rule, one bit per group (0: the rule needs none).
    all_groups: Vec<u8>,
}

/// The strings' automaton: a DFA, the fastest search while it stays
/// small; a rule set of thousands of strings gets a contiguous NFA.
enum Strings {
    Dfa(aho_corasick::dfa::DFA),
    Nfa(aho_corasick::nfa::contiguous::NFA),
}

/// Longest string searched: its first bytes, which every match holds as
/// well. The automaton's states are the strings' prefixes, and past 8
/// bytes they only made it bigger and slower to build (9,200 states for
/// the core rules, 5,700 when cut; the lines found on a library stayed
/// the same).
const SEARCHED_LEN: usize = 8;

/// Most strings searched with a DFA.
const MAX_DFA_STRINGS: usize = 4096;

/// Pieces a text is cut into and searched side by side ([`search`]
/// steps four states by name, so that they stay in registers).
const STREAMS: usize = 4;
const _: () = assert!(STREAMS == 4);

/// Shortest text cut into pieces: each piece's search has its own start.
/// A library's notes are a few KB each: searched in one piece, the
/// search was a fifth of a scan of 12,000 of them, nearly all of it
/// waiting on the table; cut from 1 KB, a sixth.
const STREAM_MIN: usize = 1024;

/// Match states each piece remembers having met on its current line
/// (a power of two).
const RECENT: usize = 64;
const _: () = assert!(RECENT.is_power_of_two());

impl Finder {
    /// The finder of rules whose groups are `needs` (at most 8 each; a
    /// rule with none is never reported); `None` when no rule needs a
    /// string.
    pub fn new(needs: Vec<Vec<Group>>) -> Result<Option<Finder>> {
        let mut ids: std::collections::HashMap<Vec<u8>, usize> = std::collections::HashMap::new();
        let mut owners: Vec<Vec<(usize, u8)>> = Vec::new();
        let mut all_groups = vec![0u8; needs.len()];
        for (rule, groups) in needs.into_iter().enumerate() {
            all_groups[rule] = ((1u16 << groups.len().min(8)) - 1) as u8;
            for (g, group) in groups.into_iter().take(8).enumerate() {
                for mut s in group {
                    s.truncate(SEARCHED_LEN);
                    let fresh = ids.len();
                    let id = *ids.entry(s).or_insert(fresh);
                    if id == owners.len() {
                        owners.push(Vec::new());
                    }
                    owners[id].push((rule, g as u8));
                }
            }
        }
        if ids.is_empty() {
            return Ok(None);
        }
        let mut strings: Vec<(Vec<u8>, usize)> = ids.into_iter().collect();
        strings.sort_by_key(|(_, id)| *id);
        let strings = strings.iter().map(|(s, _)| s);
        let fail = |e: aho_corasick::BuildError| Error::msg(format!("rule set does not compile: {e}"));
        // No prefilter: the search below reads every byte itself (and a
        // start state that is not special is what it expects).
        let strings = if owners.len() <= MAX_DFA_STRINGS {
            let mut b = aho_corasick::dfa::DFA::builder();
            Strings::Dfa(b.ascii_case_insensitive(true).prefilter(false).build(strings).map_err(fail)?)
        } else {
            let mut b = aho_corasick::nfa::contiguous::NFA::builder();
            Strings::Nfa(b.ascii_case_insensitive(true).prefilter(false).build(strings).map_err(fail)?)
        };
        Ok(Some(Finder { strings, owners, all_groups }))
    }

    /// Calls `f(start, end, rules)` for each line of `hay` (its span
    /// without the newline) that holds a string of each group of some
    /// rules, in text order, with those rules.
    pub fn each_line(&self, hay: &[u8], f: impl FnMut(usize, usize, &[usize])) {
        match &self.strings {
            Strings::Dfa(a) => self.lines_with(a, hay, f),
            Strings::Nfa(a) => self.lines_with(a, hay, f),
        }
    }

    /// [`Finder::each_line`] with the automaton `aut`: generic, so the
    /// search's loop is compiled for each kind of automaton and its
    /// steps are inlined.
    fn lines_with<A: Automaton>(&self, aut: &A, hay: &[u8], mut f: impl FnMut(usize, usize, &[usize])) {
        let mut pieces: [Lines; STREAMS] = std::array::from_fn(|_| Lines::new(self));
        search(aut, hay, |k, sid, end| pieces[k].state(aut, hay, sid, end));
        for lines in &mut pieces {
            lines.close();
            let mut from = 0;
            for &(start, end, to) in &lines.flagged {
                f(start, end, &lines.rules[from..to]);
                from = to;
            }
        }
    }

    /// Calls `on(piece, start, string)` for every string found in `hay`,
    /// overlapping ones too; each piece's (see [`search`]) in text order
    /// of their ends (at one end, in the automaton's order). The tests'
    /// view of the search: [`Finder::each_line`] reads each match state's
    /// strings only once a line.
    #[cfg(test)]
    fn search(&self, hay: &[u8], mut on: impl FnMut(usize, usize, usize)) {
        match &self.strings {
            Strings::Dfa(a) => search(a, hay, |k, sid, end| strings_at(a, sid, end, |start, s| on(k, start, s))),
            Strings::Nfa(a) => search(a, hay, |k, sid, end| strings_at(a, sid, end, |start, s| on(k, start, s))),
        }
    }
}

/// The lines of one piece of a text that the rules can match on, found
/// string by string as the search goes (no list of every string found: on
/// a line of near matches that list was most of the search's memory).
struct Lines<'f> {
    finder: &'f Finder,
    /// For each rule, the groups found on the current line (allocated
    /// at the piece's first match state: a short text has one piece).
    found: Vec<u8>,
    /// The rules with a group found on the current line.
    touched: Vec<usize>,
    /// The rules with every group found on the current line.
    complete: Vec<usize>,
    /// The current line's span, once a string is found.
    line: Option<(usize, usize)>,
    /// Match states met lately, each with the start of the line it was
    /// met on (see [`Lines::state`]; allocated with `found`).
    recent: Vec<(StateID, usize)>,
    /// Each line found: its span and the end of its rules in `rules`.
    flagged: Vec<(usize, usize, usize)>,
    rules: Vec<usize>,
}

impl<'f> Lines<'f> {
    fn new(finder: &'f Finder) -> Lines<'f> {
        let (found, touched, complete, flagged, rules) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        Lines { finder, found, touched, complete, line: None, recent: Vec::new(), flagged, rules }
    }

    /// The search is in match state `sid` at `end`. The strings a state
    /// matches are the same wherever it is met, so a state met again on
    /// the same line adds nothing to the line and is passed over: a line
    /// of near matches meets a few states thousands of times (on the
    /// adversarial corpus their strings were a seventh of a scan). A
    /// state forgotten (the table is small and keyed by a hash) is only
    /// read again.
    fn state<A: Automaton>(&mut self, aut: &A, hay: &[u8], sid: StateID, end: usize) {
        if self.found.is_empty() {
            self.found = vec![0; self.finder.all_groups.len()];
            self.recent = vec![(StateID::ZERO, usize::MAX); RECENT];
        }
        // No string holds a newline: one ending by the current line's
        // end lies on it.
        let slot = (sid.as_u64().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - RECENT.trailing_zeros())) as usize;
        match self.line {
            Some((start, line_end)) if end <= line_end && self.recent[slot] == (sid, start) => return,
            _ => {}
        }
        strings_at(aut, sid, end, |start, string| self.hit(hay, start, string));
        if let Some((start, _)) = self.line {
            self.recent[slot] = (sid, start);
        }
    }

    /// String `string` found at `start`: strings come by their end, and
    /// none holds a newline, so one that starts past the line's end
    /// starts the next line.
    fn hit(&mut self, hay: &[u8], start: usize, string: usize) {
        if self.line.is_none_or(|(_, end)| start >= end) {
            self.close();
            let line_start = memchr::memrchr(b'\n', &hay[..start]).map_or(0, |i| i + 1);
            let line_end = memchr::memchr(b'\n', &hay[start..]).map_or(hay.len(), |i| start + i);
            self.line = Some((line_start, line_end));
        }
        let all = &self.finder.all_groups;
        for &(rule, g) in &self.finder.owners[string] {
            let had = self.found[rule];
            if had == 0 {
                self.touched.push(rule);
            }
            self.found[rule] |= 1 << g;
            if had != all[rule] && self.found[rule] == all[rule] {
                self.complete.push(rule);
            }
        }
    }

    /// Ends the current line: kept if a rule can match on it.
    fn close(&mut self) {
        if let (Some((start, end)), false) = (self.line, self.complete.is_empty()) {
            self.rules.append(&mut self.complete);
            self.flagged.push((start, end, self.rules.len()));
        }
        for r in self.touched.drain(..) {
            self.found[r] = 0;
        }
    }
}

/// Calls `on(piece, state, end)` at each match state the search of `hay`
/// by `aut` meets, each piece's in text order. A text of
/// [`STREAM_MIN`] bytes or more is cut after newlines into [`STREAMS`]
/// pieces whose searches step together, a byte of each per round: one
/// search waits on each state's load from the automaton's table (too big
/// for the nearest cache), four searches overlap their waits. No string
/// holds a newline, so none spans two pieces. (The core rules' table is
/// 2.9 MB: a row of 128 byte classes for each of 5,700 states.)
fn search<A: Automaton>(aut: &A, hay: &[u8], mut on: impl FnMut(usize, StateID, usize)) {
    let Ok(start) = aut.start_state(Anchored::No) else { return };
    if hay.len() < STREAM_MIN {
        walk(aut, start, hay, 0, &mut |sid, end| on(0, sid, end));
        return;
    }
    let cut = |at: usize| memchr::memchr(b'\n', &hay[at..]).map_or(hay.len(), |i| at + i + 1);
    let mut bounds = [0; STREAMS + 1];
    for k in 1..STREAMS {
        bounds[k] = cut((hay.len() * k / STREAMS).max(bounds[k - 1]));
    }
    bounds[STREAMS] = hay.len();
    let piece = |k: usize| &hay[bounds[k]..bounds[k + 1]];
    let (p0, p1, p2, p3) = (piece(0), piece(1), piece(2), piece(3));
    let common = p0.len().min(p1.len()).min(p2.len()).min(p3.len());
    let (mut s0, mut s1, mut s2, mut s3) = (start, start, start, start);
    for i in 0..common {
        s0 = aut.next_state(Anchored::No, s0, p0[i]);
        s1 = aut.next_state(Anchored::No, s1, p1[i]);
        s2 = aut.next_state(Anchored::No, s2, p2[i]);
        s3 = aut.next_state(Anchored::No, s3, p3[i]);
        if aut.is_special(s0) | aut.is_special(s1) | aut.is_special(s2) | aut.is_special(s3) {
            for (k, s) in [s0, s1, s2, s3].into_iter().enumerate() {
                if aut.is_special(s) {
                    record(aut, s, bounds[k] + i + 1, &mut |sid, end| on(k, sid, end));
                }
            }
        }
    }
    for (k, s) in [s0, s1, s2, s3].into_iter().enumerate() {
        walk(aut, s, &piece(k)[common..], bounds[k] + common, &mut |sid, end| on(k, sid, end));
    }
}

/// Goes on from state `sid` over `hay` (which starts at offset `base`),
/// calling `on(state, end)` at each match state.
fn walk<A: Automaton>(aut: &A, mut sid: StateID, hay: &[u8], base: usize, on: &mut impl FnMut(StateID, usize)) {
    for (i, &b) in hay.iter().enumerate() {
        sid = aut.next_state(Anchored::No, sid, b);
        if aut.is_special(sid) {
            record(aut, sid, base + i + 1, on);
        }
    }
}

/// Calls `on(sid, end)` when `sid` (met at `end`) is a match state.
/// Never inlined: the search's loop stays small enough to keep its four
/// states in registers (inlined with the line bookkeeping, a library scan
/// took 10 % more CPU).
#[inline(never)]
fn record<A: Automaton>(aut: &A, sid: StateID, end: usize, on: &mut impl FnMut(StateID, usize)) {
    if aut.is_match(sid) {
        on(sid, end);
    }
}

/// Calls `on(start, string)` for each string match state `sid` holds at
/// `end`.
fn strings_at<A: Automaton>(aut: &A, sid: StateID, end: usize, mut on: impl FnMut(usize, usize)) {
    for i in 0..aut.match_len(sid) {
        let p = aut.match_pattern(sid, i);
        on(end - aut.pattern_len(p), p.as_usize());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::pattern;

    fn of(p: &str) -> Vec<Vec<String>> {
        let hir = pattern::parse(p).unwrap();
        let text = |g: Group| g.into_iter().map(|s| String::from_utf8(s).unwrap()).collect();
        needed(&hir, 2, 8).into_iter().map(text).collect()
    }

    #[test]
    fn each_needed_run_is_a_group_the_most_selective_first() {
        assert_eq!(of(r"\bcurl\b.*\|\s*sh"), [vec!["curl"], vec!["sh"]]);
        assert_eq!(of(r"(?i)DROP\s+(TABLE|DATABASE)"), [vec!["database", "table"], vec!["drop"]]);
        assert_eq!(of(r"\.(aws|gcloud|azure)/"), [vec![".aws/", ".azure/", ".gcloud/"]]);
        assert_eq!(of(r"(?i)keychain|keyring"), [vec!["keychain", "keyring"]]);
        assert_eq!(of(r"(?i)you\s+are|never\s+\d"), [vec!["are", "never"]]);
    }

    /// A pattern with no string of 3 bytes finds its lines by short
    /// strings of bytes prose seldom holds, never by a bare letter pair.
    #[test]
    fn a_rule_without_long_strings_gets_its_rare_short_ones() {
        let short = |p: &str| -> Vec<Vec<String>> {
            let text = |g: Group| g.into_iter().map(|s| String::from_utf8(s).unwrap()).collect();
            selective(&pattern::parse(p).unwrap(), 3, 2).into_iter().map(text).collect()
        };
        assert_eq!(short(r"(?i)\\x[0-9a-f]{2}\\x[0-9a-f]{2}"), [vec!["\\x"]]);
        assert_eq!(short(r"\bat\s+-f\s+"), [vec!["-f"]]);
        assert_eq!(short(r"\$\{.*`.*`.*\}"), [vec!["${"], vec!["`"]]);
        assert!(short(r"\bat\s+\bno\b").is_empty());
        assert_eq!(short(r"\bcurl\b.*\|\s*sh"), [vec!["curl"]]);
    }

    /// The search in pieces finds what one overlapping search of the
    /// whole text finds, in the same order: short texts, texts cut into
    /// four, one long line (nothing to cut at), with the DFA and with the
    /// NFA a rule set of thousands of strings gets.
    #[test]
    fn the_search_in_pieces_finds_every_string_in_order() {
        use aho_corasick::{AhoCorasick, Input};
        let words = ["curl", "url", "sh", "-", "/", "ENV", "env ", "key", "keys", "\\x", "`", "memory/", "é"];
        let pieces = [
            "curl", "CuRl", "url", "sh", "-", "/", "\n", "\n", "env", " ", "keyS", "\\x", "`", "é", "mem", "ory/", "x",
        ];
        let mut lines = crate::guard::pieces::Pieces::new(3, &pieces);
        let mut many: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        many.extend((0..MAX_DFA_STRINGS).map(|i| format!("w{i}x")));
        for strings in [words.iter().map(|w| w.to_string()).collect::<Vec<_>>(), many] {
            let needs = strings.iter().map(|s| vec![vec![s.as_bytes().to_ascii_lowercase()]]).collect();
            let finder = Finder::new(needs).unwrap().unwrap();
            let reference = AhoCorasick::builder().ascii_case_insensitive(true).build(&strings).unwrap();
            let mut texts: Vec<String> = (0..300).map(|_| lines.line(40)).collect();
            texts.extend((0..20).map(|_| (0..1000).map(|_| lines.line(12)).collect::<String>()));
            texts.push((0..2000).map(|_| lines.line(3).replace('\n', " ")).collect());
            texts.push(format!("{}\n", "curl ".repeat(2000)));
            for text in &texts {
                let mut want = Vec::new();
                let mut state = aho_corasick::automaton::OverlappingState::start();
                loop {
                    reference.find_overlapping(Input::new(text), &mut state);
                    let Some(m) = state.get_match() else { break };
                    want.push((m.start(), m.pattern().as_usize()));
                }
                let mut pieces: [Vec<(usize, usize)>; STREAMS] = Default::default();
                finder.search(text.as_bytes(), |k, start, string| pieces[k].push((start, string)));
                assert_eq!(pieces.concat(), want, "{} bytes", text.len());
                if text.len() >= STREAM_MIN && text.matches('\n').count() > 100 {
                    assert!(pieces.iter().all(|p| !p.is_empty()), "a long text is searched in four pieces");
                }
            }
            assert!(texts.iter().any(|t| t.len() >= STREAM_MIN * 2 && t.matches('\n').count() > 100));
        }
    }

    /// The lines found are exactly those holding a string of each group
    /// of a rule (ASCII case ignored), each with those rules, in text
    /// order: checked line by line against plain substring tests.
    #[test]
    fn each_line_names_the_lines_and_the_rules_that_can_match_there() {
        let words = ["curl", "sh", "-", "env", "key", "\\x", "`", "memory/", "é", "|"];
        let rules: Vec<Vec<Group>> = (0..words.len())
            .map(|i| {
                let w = |k: usize| words[(i + k) % words.len()].as_bytes().to_vec();
                vec![vec![w(0)], vec![w(1), w(2)]]
            })
            .collect();
        let finder = Finder::new(rules.clone()).unwrap().unwrap();
        let pieces = ["curl", "CuRl", "sh", "-", "\n", "\n", "env", " ", "KEY", "\\x", "`", "é", "memory/", "|", "x"];
        let mut lines = crate::guard::pieces::Pieces::new(5, &pieces);
        let mut texts: Vec<String> = (0..300).map(|_| lines.line(30)).collect();
        texts.extend((0..10).map(|_| (0..1500).map(|_| lines.line(8)).collect::<String>()));
        for text in &texts {
            let mut got = Vec::new();
            finder.each_line(text.as_bytes(), |start, end, found| {
                let mut found = found.to_vec();
                found.sort_unstable();
                got.push((start, end, found));
            });
            let mut want = Vec::new();
            let mut start = 0;
            for line in text.split('\n') {
                let lower = line.to_ascii_lowercase();
                let holds = |g: &Group| g.iter().any(|s| lower.contains(std::str::from_utf8(s).unwrap()));
                let found: Vec<usize> = (0..rules.len()).filter(|&r| rules[r].iter().all(holds)).collect();
                if !found.is_empty() {
                    want.push((start, start + line.len(), found));
                }
                start += line.len() + 1;
            }
            assert_eq!(got, want, "{text:?}");
        }
        assert!(texts.iter().any(|t| t.len() >= STREAM_MIN));
    }

    #[test]
    fn an_optional_or_broad_piece_needs_nothing() {
        assert!(of(r"[a-z]+x?").is_empty());
        assert!(of(r"abc|[0-9]+").is_empty());
        assert!(of(r"x(abc)?").is_empty());
    }

    /// Wherever a core rule matches, a string of each of its groups
    /// occurs in the match (ignoring ASCII case).
    #[test]
    fn every_core_match_holds_each_needed_group() {
        let mut checked = 0;
        for r in crate::guard::rules::core().unwrap() {
            let Some(p) = &r.pattern else { continue };
            let hir = pattern::parse(p).unwrap();
            let mut needs = needed(&hir, 1, usize::MAX);
            needs.extend(groups(&hir, 1, usize::MAX, Rank::Rarity));
            let re = pattern::single(&hir).unwrap();
            for ex in r.matches.iter().chain(&r.clean) {
                for m in re.find_iter(ex.as_bytes()) {
                    let hay = ex.as_bytes()[m.range()].to_ascii_lowercase();
                    for g in &needs {
                        let found = g.iter().any(|s| hay.windows(s.len()).any(|w| w == s.as_slice()));
                        assert!(found, "rule {}: match {:?} holds none of {g:?}", r.id, &ex[m.range()]);
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 200, "only {checked} matches checked");
    }
}
