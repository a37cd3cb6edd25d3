//! What two rules fill differently. Two statements that share a verb and
//! a place can still be about different things: "Never commit secrets to
//! git" / "Never commit node_modules to git", "不要把密钥提交到仓库里" /
//! "打包产物不要提交到仓库". A rewording or a refinement adds words on one
//! side, or swaps a function word; two rules each keep content of their
//! own where the rule names what it acts on. Without word classes (a
//! dictionary segmenter such as jieba loads its dictionary in about 245 ms
//! at every start, against a `decide` of about 10 ms) the slot is found
//! from the statements themselves:
//! - English: each side's own word follows the same shared word (the verb
//!   that governs it: "print passwords" / "print access tokens");
//! - Chinese: each side keeps a run of at least two content characters the
//!   other lacks (打包产物 / 密钥), unless it is a short verb right after a
//!   modal (不能出现 / 不能打印: a reworded verb, not another object).
//!
//! When what each side keeps is what it chooses (after "use", 用, 改用,
//! 设为) or a number, the two are alternatives for one slot (pnpm / yarn,
//! 两个 / 四个空格, Node 18 / 20): governance may find them in conflict.

use super::cue;
use crate::text;
use crate::text::terms;

/// How two statements' own content relates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// At most one side keeps content of its own (a rewording or a
    /// refinement), or what they keep is not in one slot.
    Same,
    /// Each side keeps content of its own where the rule names what it
    /// acts on: two rules about different things.
    Objects,
    /// Each side keeps only what it chooses or a value: alternatives for
    /// one slot.
    Choice,
    /// Each side keeps one of two opposite actions on the same thing
    /// ("关闭调试日志" / "打开调试日志", "enable" / "disable"): a conflict
    /// as a refusal is.
    Opposed,
    /// Chinese only: neither side keeps a word of its own, only function
    /// or single characters outside any choice ("密钥别提交进仓库" /
    /// "不要把密钥提交到仓库里"): the same statement in other particles.
    Reworded,
}

/// English words after which a rule names its choice.
const CHOICE_EN: &[&str] = &["use", "using", "uses", "prefer", "choose", "pick", "adopt", "via"];
/// English words that end a choice ("use pnpm | for installs").
const CHOICE_END_EN: &[&str] =
    &["in", "for", "on", "when", "whenever", "inside", "within", "during", "before", "after", "while", "over", "than"];
/// Chinese markers after which a rule names its choice or value, longest
/// first.
const CHOICE_ZH: &[&str] = &["使用", "采用", "改用", "选用", "换成", "改成", "改为", "设为", "设成", "定为", "用"];
/// Chinese modals and negations: a short run right after one is the
/// rule's verb, which a rewording may swap for a synonym.
const MODAL_ZH: &[&str] =
    &["不要", "不能", "不许", "不准", "不得", "别", "禁止", "必须", "需要", "应该", "要", "能", "先"];
/// Characters that carry no subject in a rule, beyond
/// `cue::is_function_char`: quantifiers and modals (统一, 所有, 每个, 必须,
/// 需要, 应该, 可以, 之前).
pub const FILLER_ZH: &str = "统所每必须需应可之得";
/// English words that say how often or how firmly, not what: "nightly" /
/// "every night".
const FILLER_EN: &[&str] = &["every", "each", "always", "ever", "first"];
/// Opposite actions: one side keeping the one and the other the other
/// say opposite things, as a refusal and a rule do. Chinese entries match
/// inside a run of own characters.
const OPPOSITES_ZH: &[(&str, &str)] = &[
    ("打开", "关闭"),
    ("开启", "关闭"),
    ("启用", "禁用"),
    ("启用", "停用"),
    ("开", "关"),
    ("加", "去掉"),
    ("加上", "去掉"),
    ("添加", "删除"),
    ("增加", "删除"),
    ("增加", "减少"),
    ("保留", "删除"),
    ("允许", "禁止"),
    ("显示", "隐藏"),
];
const OPPOSITES_EN: &[(&str, &str)] = &[
    ("enable", "disable"),
    ("add", "remove"),
    ("allow", "forbid"),
    ("allow", "block"),
    ("allow", "deny"),
    ("show", "hide"),
    ("include", "exclude"),
    ("keep", "drop"),
    ("keep", "delete"),
    ("increase", "decrease"),
];

/// Whether one side's own units hold one of two opposite actions and the
/// other side's the other.
fn opposed(own_a: &[String], own_b: &[String], zh: bool) -> bool {
    let holds = |own: &[String], w: &str| {
        if zh {
            own.iter().any(|k| k.contains(w))
        } else {
            let w = terms::stem(w);
            own.contains(&w)
        }
    };
    let list = if zh { OPPOSITES_ZH } else { OPPOSITES_EN };
    list.iter().any(|(x, y)| (holds(own_a, x) && holds(own_b, y)) || (holds(own_a, y) && holds(own_b, x)))
}

/// Number words: a swap of them is a swap of values.
/// Written out, they meet their digits ("ninety days" / "90 days").
const NUMBER_EN: &[(&str, u32)] = &[
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("fifteen", 15),
    ("twenty", 20),
    ("thirty", 30),
    ("forty", 40),
    ("fifty", 50),
    ("sixty", 60),
    ("seventy", 70),
    ("eighty", 80),
    ("ninety", 90),
    ("hundred", 100),
    ("thousand", 1000),
];
const NUMBER_ZH: &str = "零一二两三四五六七八九十百千万";

/// One unit of content a statement keeps: its text (a stemmed word, a
/// Latin name or a run of Chinese characters), its clause, whether it lies
/// in the rule's choice ("use pnpm", "用 yup") and whether it is a number.
#[derive(Debug, Clone)]
struct Unit {
    key: String,
    clause: usize,
    choice: bool,
    value: bool,
}

/// How the two statements' own content relates (see [`Slot`]).
pub fn compare(a: &str, b: &str) -> Slot {
    // "搜索用 Elasticsearch" is Chinese however long the name.
    if a.chars().any(text::is_cjk) && b.chars().any(text::is_cjk) {
        compare_zh(a, b)
    } else {
        compare_en(a, b)
    }
}

/// Whether the character at `i` ends a clause: a full stop only before a
/// space or the end ("Chart.js" is one name).
fn ends_clause(t: &str, i: usize, c: char) -> bool {
    match c {
        '.' => t[i + 1..].chars().next().is_none_or(char::is_whitespace),
        _ => ";,:!?。；，：！？、".contains(c),
    }
}

/// The clauses of a statement, normalised: split at commas, semicolons,
/// colons, enumeration commas and sentence ends, in either script. The
/// one splitter of kb-memgate's judgements (`govern` asks which clause a
/// refusal or a scope is in).
pub fn clauses(t: &str) -> Vec<String> {
    let t = text::normalise(t);
    let mut out = Vec::new();
    let mut from = 0;
    for (i, c) in t.char_indices() {
        if ends_clause(&t, i, c) {
            out.push(t[from..i].to_string());
            from = i + c.len_utf8();
        }
    }
    out.push(t[from..].to_string());
    out.retain(|c| !c.trim().is_empty());
    out
}

/// The content words of an English statement, in order.
fn units_en(t: &str) -> Vec<Unit> {
    let mut out = Vec::new();
    for (i, clause) in clauses(t).iter().enumerate() {
        let mut choice = false;
        for w in text::tokens(clause) {
            if CHOICE_EN.contains(&w.as_str()) {
                choice = true;
                continue;
            }
            if CHOICE_END_EN.contains(&w.as_str()) {
                choice = false;
            }
            let digits = w.chars().all(|c| c.is_ascii_digit());
            if cue::is_function_word(&w)
                || terms::is_stop(&w)
                || FILLER_EN.contains(&w.as_str())
                || (w.len() < 2 && !digits)
            {
                continue;
            }
            let number = NUMBER_EN.iter().find(|(n, _)| *n == w).map(|(_, v)| v.to_string());
            let value = digits || number.is_some();
            out.push(Unit {
                key: number.unwrap_or_else(|| terms::stem(super::lemma::base(&w))),
                clause: i,
                choice,
                value,
            });
        }
    }
    out
}

fn compare_en(a: &str, b: &str) -> Slot {
    let (ua, ub) = (units_en(a), units_en(b));
    let has = |u: &[Unit], k: &str| u.iter().any(|x| x.key == k);
    let own_a: Vec<&Unit> = ua.iter().filter(|u| !has(&ub, &u.key)).collect();
    let own_b: Vec<&Unit> = ub.iter().filter(|u| !has(&ua, &u.key)).collect();
    if own_a.is_empty() || own_b.is_empty() {
        return Slot::Same;
    }
    let keys = |own: &[&Unit]| -> Vec<String> { own.iter().map(|u| u.key.clone()).collect() };
    if own_a.len() == 1 && own_b.len() == 1 && opposed(&keys(&own_a), &keys(&own_b), false) {
        return Slot::Opposed;
    }
    let chosen = |own: &[&Unit]| own.iter().all(|u| u.choice || u.value);
    if chosen(&own_a) && chosen(&own_b) {
        return Slot::Choice;
    }
    // The words both rules open with (the verb: "never print", "back
    // up"), then each its own word: what the shared verb acts on. Only at
    // the opening: a shared word further on is as often a noun before a
    // reworded verb ("a family and give / provide a home").
    let first = |u: &[Unit]| -> Vec<String> { u.iter().filter(|x| x.clause == 0).map(|x| x.key.clone()).collect() };
    let (fa, fb) = (first(&ua), first(&ub));
    let lead = fa.iter().zip(&fb).take_while(|(x, y)| x == y).count();
    let governed =
        lead > 0 && matches!((fa.get(lead), fb.get(lead)), (Some(x), Some(y)) if !has(&ub, x) && !has(&ua, y));
    if governed {
        Slot::Objects
    } else {
        Slot::Same
    }
}

/// A Chinese statement's own content against `other`: runs of content
/// characters `other` lacks, and Latin words it lacks. `counted` says
/// whether a unit names something (a run of two or more characters that
/// is not a verb right after a modal, or a Latin word).
fn own_zh(t: &str, other: &str) -> Vec<(Unit, bool)> {
    let (t, other) = (text::normalise(t), text::normalise(other));
    let content = |c: char| text::is_cjk(c) && !cue::is_function_char(c) && !FILLER_ZH.contains(c);
    let latin = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty() && !cue::is_function_word(w))
            .map(terms::stem)
            .collect()
    };
    let other_latin = latin(&other);
    // The characters of choice markers ("换成 Prisma" / "用 Sequelize"):
    // how a rule words its choice, not what it is about.
    let marker: Vec<usize> = CHOICE_ZH
        .iter()
        .flat_map(|m| t.match_indices(m).flat_map(|(at, m)| m.char_indices().map(move |(j, _)| at + j)))
        .collect();
    let mut out: Vec<(Unit, bool)> = Vec::new();
    let mut clause = 0;
    let mut slot_from: Option<usize> = None;
    let mut run = String::new();
    let mut run_at = 0;
    let mut word = String::new();
    let mut word_at = 0;
    let flush_run = |run: &mut String, at: usize, clause: usize, slot: Option<usize>, out: &mut Vec<(Unit, bool)>| {
        if run.is_empty() {
            return;
        }
        let verb = run.chars().count() <= 2 && MODAL_ZH.iter().any(|m| t[..at].ends_with(m));
        let counted = run.chars().count() >= 2 && !verb;
        let value = run.chars().all(|c| NUMBER_ZH.contains(c));
        out.push((Unit { key: std::mem::take(run), clause, choice: slot.is_some_and(|s| at >= s), value }, counted));
    };
    // A line feed after the end flushes the last word and run.
    for (i, c) in t.char_indices().chain(std::iter::once((t.len(), '\n'))) {
        if !c.is_ascii_alphanumeric() && !word.is_empty() {
            let key = terms::stem(&word);
            if !cue::is_function_word(&word) && !other_latin.contains(&key) {
                let value = word.chars().all(|c| c.is_ascii_digit());
                out.push((Unit { key, clause, choice: slot_from.is_some_and(|s| word_at >= s), value }, true));
            }
            word.clear();
        }
        if c.is_ascii_alphanumeric() {
            if word.is_empty() {
                word_at = i;
            }
            word.push(c);
        }
        if content(c) && !other.contains(c) && !marker.contains(&i) {
            if run.is_empty() {
                run_at = i;
            }
            run.push(c);
        } else {
            flush_run(&mut run, run_at, clause, slot_from, &mut out);
        }
        if c == '\n' || ends_clause(&t, i, c) {
            clause += 1;
            slot_from = None;
            continue;
        }
        let end = i + c.len_utf8();
        if CHOICE_ZH.iter().any(|m| t[..end].ends_with(m)) {
            slot_from = Some(end);
        }
    }
    out
}

fn compare_zh(a: &str, b: &str) -> Slot {
    let (own_a, own_b) = (own_zh(a, b), own_zh(b, a));
    let keys = |own: &[(Unit, bool)]| -> Vec<String> { own.iter().map(|(u, _)| u.key.clone()).collect() };
    // Opposite actions and nothing else of their own: "生产环境关闭调试日志"
    // / "测试环境打开调试日志" are two environments' rules.
    let action = |k: &str| OPPOSITES_ZH.iter().any(|(x, y)| k.contains(x) || k.contains(y));
    let only_action = |own: &[(Unit, bool)]| own.iter().all(|(u, n)| !n || action(&u.key));
    if opposed(&keys(&own_a), &keys(&own_b), true) && only_action(&own_a) && only_action(&own_b) {
        return Slot::Opposed;
    }
    let counted = |own: &[(Unit, bool)]| own.iter().any(|(_, n)| *n);
    if !counted(&own_a) && !counted(&own_b) && !own_a.iter().chain(&own_b).any(|(u, _)| u.choice || u.value) {
        return Slot::Reworded;
    }
    if own_a.is_empty() || own_b.is_empty() {
        return Slot::Same;
    }
    let chosen = |own: &[(Unit, bool)]| own.iter().all(|(u, _)| u.choice || u.value);
    if chosen(&own_a) && chosen(&own_b) {
        return Slot::Choice;
    }
    if counted(&own_a) && counted(&own_b) {
        Slot::Objects
    } else {
        Slot::Same
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_choices_and_rewordings() {
        assert_eq!(compare("不要把密钥提交到仓库里。", "打包产物不要提交到仓库。"), Slot::Objects);
        assert_eq!(compare("不要把密钥提交到仓库里。", "密钥别提交进仓库。"), Slot::Reworded);
        assert_eq!(compare("日志里不能出现用户手机号。", "日志中不能打印用户的手机号。"), Slot::Reworded);
        assert_eq!(compare("缩进用两个空格。", "缩进用四个空格。"), Slot::Choice);
        assert_eq!(compare("生产环境关闭调试日志。", "生产环境打开调试日志。"), Slot::Opposed);
        assert_eq!(compare("Enable strict mode in CI.", "Disable strict mode in CI."), Slot::Opposed);
        assert_eq!(compare("表单校验用 yup。", "表单校验用 zod。"), Slot::Choice);
        assert_eq!(compare("搜索用 Meilisearch。", "搜索用 Elasticsearch。"), Slot::Choice);
        assert_eq!(compare("ORM 换成 Prisma。", "ORM 用 Sequelize。"), Slot::Choice);
        assert_eq!(compare("图表库以后改用 Chart.js。", "图表库用 ECharts。"), Slot::Choice);
        assert_eq!(compare("缓存的过期时间设成十分钟。", "缓存过期时间设为十分钟，避免数据太旧。"), Slot::Same);
        assert_eq!(
            compare("Never print passwords in debug output.", "Never print access tokens in debug output."),
            Slot::Objects
        );
        assert_eq!(compare("Use pnpm for installs.", "Use yarn for installs."), Slot::Choice);
        assert_eq!(compare("Use Node 18 for the runtime.", "Use Node 20 for the runtime."), Slot::Choice);
        assert_eq!(
            compare("Back up the production database nightly.", "Back up the production database every night."),
            Slot::Same
        );
    }
}
