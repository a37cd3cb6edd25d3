//! What a statement picks and what it turns down, by name: "I prefer pnpm
//! over npm" picks pnpm and turns down npm; "从现在开始不用 pnpm 了，改用
//! yarn" picks yarn and turns down pnpm. Tools, languages and versions are
//! written in Latin letters in Chinese text too, so a Chinese reversal
//! meets the English notes it contradicts through their names, with no
//! lexicon between the languages. Two statements that pick the same name
//! agree however they are worded; one that turns down what the other
//! picks contradicts it (`govern::judge`).

use super::cue;
use crate::text;
use crate::text::terms;

/// What a statement picks and turns down: stemmed names, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stance {
    /// Names the statement chooses ("use pnpm", "改用 yarn").
    pub chosen: Vec<String>,
    /// Names it turns down ("not npm", "instead of yarn", "不用 pnpm").
    pub rejected: Vec<String>,
}

impl Stance {
    /// One side turns down a name the other picks.
    pub fn contradicts(&self, other: &Stance) -> bool {
        let meets = |a: &[String], b: &[String]| a.iter().any(|k| b.contains(k));
        meets(&self.rejected, &other.chosen) || meets(&self.chosen, &other.rejected)
    }

    /// Both pick the same names and neither turns down what the other
    /// picks: one choice, said twice. "Node 18" and "Node 20" share a name
    /// and are two choices.
    pub fn agrees(&self, other: &Stance) -> bool {
        let within = |a: &[String], b: &[String]| a.iter().all(|k| b.contains(k));
        !self.chosen.is_empty()
            && within(&self.chosen, &other.chosen)
            && within(&other.chosen, &self.chosen)
            && !self.contradicts(other)
    }
}

/// English words that open a choice ("use pnpm", "switch to yarn").
const CHOOSE_EN: &[&str] = &["use", "using", "uses", "prefer", "choose", "pick", "adopt", "via", "to", "with"];
/// The words before "to" / "with" that make them open a choice ("switch
/// to", "go with"); alone they open nothing.
const CHOOSE_LEAD_EN: &[&str] = &["switch", "switched", "move", "moved", "go", "stick", "migrate", "change"];
/// English words after which a statement names what it turns down.
const REJECT_EN: &[&str] = &["over", "not", "than", "of", "avoid", "without"];
/// The words before "of" / "than" that make them turn something down
/// ("instead of", "rather than"); "not" after one of these negates a verb
/// ("do not commit"), not a name.
const REJECT_LEAD_EN: &[&str] = &["instead", "rather"];
/// Auxiliaries: "not" after one negates the verb that follows.
const AUX_EN: &[&str] = &["do", "does", "did", "must", "should", "can", "could", "will", "would", "is", "are", "may"];
/// Words that end a named choice ("use pnpm | for installs").
const END_EN: &[&str] =
    &["in", "for", "on", "when", "whenever", "inside", "within", "during", "before", "after", "while", "only", "and"];
/// Negations that turn a following choice verb into a refusal ("never use
/// X", "don't use X", "stop using X", "no longer use X").
const NEGATE_EN: &[&str] = &["never", "don't", "dont", "stop", "longer", "not"];

/// Chinese markers that turn down what follows, longest first.
const REJECT_ZH: &[&str] =
    &["不要再用", "不再使用", "而不是", "不使用", "不再用", "不要用", "别再用", "不用", "别用", "弃用", "放弃"];
/// Chinese markers that pick what follows, longest first.
const CHOOSE_ZH: &[&str] = &["使用", "采用", "改用", "选用", "换成", "改成", "改为", "切换到", "用"];

/// The stance of one statement.
pub fn of(statement: &str) -> Stance {
    let mut s = Stance::default();
    for clause in super::slot::clauses(statement) {
        if clause.chars().any(text::is_cjk) {
            clause_zh(&clause, &mut s);
        } else {
            clause_en(&clause, &mut s);
        }
    }
    s
}

fn push(list: &mut Vec<String>, key: String) {
    if !list.contains(&key) {
        list.push(key);
    }
}

/// A content word as a name key: stemmed base form, or `None` for a
/// function, stop or filler word.
fn name(w: &str) -> Option<String> {
    // Width words and the particles of phrasal verbs ("commenting it out").
    let filler = ["every", "each", "all", "always", "only", "also", "just", "out", "up", "off", "away", "down", "back"];
    if cue::is_function_word(w) || terms::is_stop(w) || filler.contains(&w) || w.chars().count() < 2 {
        return None;
    }
    Some(terms::stem(super::lemma::base(w)))
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Off,
    Choose,
    Reject,
}

fn clause_en(clause: &str, s: &mut Stance) {
    let toks = text::tokens(clause);
    let mut mode = Mode::Off;
    let mut negated = false;
    // "switch from pnpm to yarn": what follows "from" is left, and the
    // "to" after it opens the choice.
    let mut leaving = false;
    for (i, w) in toks.iter().enumerate() {
        let w = w.as_str();
        let prev = i.checked_sub(1).map(|p| toks[p].as_str());
        let lead = |list: &[&str]| prev.is_some_and(|p| list.contains(&p));
        if w == "not" && lead(AUX_EN) {
            negated = true;
            mode = Mode::Off;
            continue;
        }
        if NEGATE_EN.contains(&w) && w != "not" {
            negated = true;
            mode = Mode::Off;
            continue;
        }
        if w == "from" && lead(CHOOSE_LEAD_EN) {
            leaving = true;
            mode = Mode::Reject;
            continue;
        }
        let rejects = match w {
            "of" | "than" => lead(REJECT_LEAD_EN),
            "over" => mode == Mode::Choose || !s.chosen.is_empty(),
            _ => REJECT_EN.contains(&w),
        };
        if rejects {
            mode = Mode::Reject;
            continue;
        }
        let chooses = match w {
            "to" | "with" => lead(CHOOSE_LEAD_EN) || (w == "to" && std::mem::take(&mut leaving)),
            "on" => lead(&["settled", "decided", "standardised", "standardized"]),
            _ => CHOOSE_EN.contains(&w),
        };
        if chooses {
            mode = if negated { Mode::Reject } else { Mode::Choose };
            continue;
        }
        if END_EN.contains(&w) {
            mode = Mode::Off;
            continue;
        }
        let Some(key) = name(w) else { continue };
        match mode {
            Mode::Choose => push(&mut s.chosen, key),
            Mode::Reject => push(&mut s.rejected, key),
            Mode::Off => {}
        }
    }
}

/// A Chinese clause: the Latin names after a marker, up to the next one
/// ("改用 yarn", "不用 pnpm 了"). Chinese words are left to `slot`, which
/// compares Chinese statements as they are written.
fn clause_zh(clause: &str, s: &mut Stance) {
    let mut mode = Mode::Off;
    let mut rest = clause;
    let mut prev: Option<char> = None;
    while let Some(c) = rest.chars().next() {
        // 别 closing another word (级别用 info: "the level uses info").
        let of_a_word = c == '别' && prev.is_some_and(|p| cue::BIE_BEFORE.contains(p));
        if let Some(m) = REJECT_ZH.iter().find(|m| rest.starts_with(**m)).filter(|_| !of_a_word) {
            mode = Mode::Reject;
            rest = &rest[m.len()..];
            continue;
        }
        // 用 after 不 / 别 is a refusal the list above already read; 用户
        // and 用于 ("user", "for") choose nothing.
        let word_of_its_own = rest.starts_with("用户") || rest.starts_with("用于");
        if let Some(m) = CHOOSE_ZH.iter().find(|m| rest.starts_with(**m)).filter(|_| !word_of_its_own) {
            mode = Mode::Choose;
            rest = &rest[m.len()..];
            continue;
        }
        if c.is_ascii_alphanumeric() {
            let end = rest.find(|x: char| !(x.is_ascii_alphanumeric() || x == '.' || x == '-')).unwrap_or(rest.len());
            let word = rest[..end].trim_end_matches(['.', '-']).to_string();
            rest = &rest[end..];
            if let Some(key) = text::tokens(&word).first().and_then(|w| name(w)) {
                match mode {
                    Mode::Choose => push(&mut s.chosen, key),
                    Mode::Reject => push(&mut s.rejected, key),
                    Mode::Off => {}
                }
            }
            continue;
        }
        prev = Some(c);
        rest = &rest[c.len_utf8()..];
    }
}
