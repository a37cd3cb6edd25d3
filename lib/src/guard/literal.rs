//! The literals a pattern needs: a few strings, one of which every match
//! of the pattern contains (ASCII case folded). The rule set looks for
//! them first with one multi-literal search, so its automaton reads only
//! the lines where a rule can match: on a skill corpus most lines hold
//! none, and the automaton's states, built as the text needs them, cost
//! more than the search itself.

use regex_syntax::hir::{Class, Hir, HirKind};

/// Most strings one piece of a pattern stands for; beyond that it counts
/// as unknown (a class of 26 letters times another is no prefilter).
const MAX_STRINGS: usize = 64;

/// Longest string kept: the rest of a longer literal adds no selectivity.
const MAX_LEN: usize = 24;

/// Most bytes of a class still read as a few strings (`[Ii]`, `[-_.]`).
const MAX_CLASS: usize = 8;

/// What a piece of a pattern says about the text it matches.
struct Facts {
    /// Every string it can match (folded), when they are few.
    exact: Option<Vec<Vec<u8>>>,
    /// Strings, one of which every match contains (folded).
    needed: Option<Vec<Vec<u8>>>,
}

/// Strings one of which every match of `hir` contains, ASCII letters in
/// lower case (so they are to be searched ignoring ASCII case); `None`
/// when the pattern has no such set with every string at least `min_len`
/// bytes long.
pub fn needed(hir: &Hir, min_len: usize) -> Option<Vec<Vec<u8>>> {
    facts(hir).needed.filter(|set| set.iter().all(|s| s.len() >= min_len))
}

fn facts(hir: &Hir) -> Facts {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => exact(vec![Vec::new()]),
        HirKind::Literal(l) => exact(vec![l.0.to_ascii_lowercase()]),
        HirKind::Class(c) => match class_bytes(c) {
            Some(bytes) => exact(bytes.into_iter().map(|b| vec![b]).collect()),
            None => Facts { exact: None, needed: None },
        },
        HirKind::Capture(c) => facts(&c.sub),
        HirKind::Repetition(r) if r.min == 0 => Facts { exact: None, needed: None },
        HirKind::Repetition(r) => {
            let sub = facts(&r.sub);
            Facts { exact: if r.max == Some(1) { sub.exact } else { None }, needed: sub.needed }
        }
        HirKind::Alternation(subs) => {
            let each: Vec<Facts> = subs.iter().map(facts).collect();
            let union = |sets: Vec<Option<&Vec<Vec<u8>>>>| -> Option<Vec<Vec<u8>>> {
                let mut all = Vec::new();
                for s in sets {
                    all.extend(s?.iter().cloned());
                }
                tidy(all)
            };
            Facts {
                exact: union(each.iter().map(|f| f.exact.as_ref()).collect()),
                needed: union(each.iter().map(|f| f.needed.as_ref()).collect()),
            }
        }
        HirKind::Concat(subs) => concat(subs),
    }
}

/// Facts of a piece that matches exactly `set`.
fn exact(set: Vec<Vec<u8>>) -> Facts {
    let needed = Some(set.clone()).filter(|s| s.iter().all(|x| !x.is_empty()));
    Facts { exact: Some(set), needed }
}

/// A concatenation: runs of exact pieces multiply into longer strings;
/// the best of those runs and of the other pieces' needs is the need.
fn concat(subs: &[Hir]) -> Facts {
    let mut best: Option<Vec<Vec<u8>>> = None;
    let mut consider = |set: Option<Vec<Vec<u8>>>| {
        if let Some(set) = set.filter(|s| s.iter().all(|x| !x.is_empty())) {
            if best.as_ref().is_none_or(|b| score(&set) > score(b)) {
                best = Some(set);
            }
        }
    };
    let mut run: Vec<Vec<u8>> = vec![Vec::new()];
    let mut whole = true;
    for sub in subs {
        let f = facts(sub);
        let product = f.exact.as_ref().and_then(|e| product(&run, e));
        match (product, f.exact) {
            (Some(p), _) => run = p,
            (None, exact) => {
                whole = false;
                consider(Some(std::mem::replace(&mut run, vec![Vec::new()])));
                if let Some(e) = exact {
                    run = e;
                }
                consider(f.needed);
            }
        }
    }
    let exact = whole.then(|| run.clone());
    consider(Some(run));
    Facts { exact, needed: best }
}

/// Every string of `a` followed by one of `b`, when they stay few and
/// short.
fn product(a: &[Vec<u8>], b: &[Vec<u8>]) -> Option<Vec<Vec<u8>>> {
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
fn tidy(mut set: Vec<Vec<u8>>) -> Option<Vec<Vec<u8>>> {
    set.sort();
    set.dedup();
    (set.len() <= MAX_STRINGS).then_some(set)
}

/// How selective a set of needed strings is: its shortest string first
/// (a short one occurs everywhere), then fewer strings.
fn score(set: &[Vec<u8>]) -> (usize, std::cmp::Reverse<usize>) {
    (set.iter().map(Vec::len).min().unwrap_or(0), std::cmp::Reverse(set.len()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::pattern;

    fn of(p: &str) -> Option<Vec<String>> {
        let hir = pattern::parse(p).unwrap();
        needed(&hir, 1).map(|set| set.into_iter().map(|s| String::from_utf8(s).unwrap()).collect())
    }

    #[test]
    fn the_longest_needed_run_is_chosen() {
        assert_eq!(of(r"\bcurl\b.*\|\s*sh"), Some(vec!["curl".into()]));
        assert_eq!(of(r"(?i)DROP\s+(TABLE|DATABASE)"), Some(vec!["database".into(), "table".into()]));
        assert_eq!(of(r"\.(aws|gcloud|azure)/"), Some(vec![".aws/".into(), ".azure/".into(), ".gcloud/".into()]));
        assert_eq!(of(r"(?i)keychain|keyring"), Some(vec!["keychain".into(), "keyring".into()]));
    }

    #[test]
    fn an_optional_or_broad_piece_needs_nothing() {
        assert_eq!(of(r"[a-z]+x?"), None);
        assert_eq!(of(r"abc|[0-9]+"), None);
        assert_eq!(of(r"(abc)?"), None);
    }

    /// Wherever a core rule matches, one of its needed strings occurs in
    /// the match (ignoring ASCII case).
    #[test]
    fn every_core_match_holds_a_needed_string() {
        let mut checked = 0;
        for r in crate::guard::rules::core().unwrap() {
            let Some(p) = &r.pattern else { continue };
            let hir = pattern::parse(p).unwrap();
            let Some(set) = needed(&hir, 1) else { continue };
            let re = pattern::single(&hir).unwrap();
            for ex in r.matches.iter().chain(&r.clean) {
                for m in re.find_iter(ex.as_bytes()) {
                    let hay = ex.as_bytes()[m.range()].to_ascii_lowercase();
                    let found = set.iter().any(|s| hay.windows(s.len()).any(|w| w == s.as_slice()));
                    assert!(found, "rule {}: match {:?} holds none of {set:?}", r.id, &ex[m.range()]);
                    checked += 1;
                }
            }
        }
        assert!(checked > 200, "only {checked} matches checked");
    }
}
