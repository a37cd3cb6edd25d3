//! The word lists behind seed 003's judgements, in English and Chinese:
//! hedges ("可能", "也许", "先别记" make a new note low-reliability),
//! prohibitions ("不要 X", "别用 Y", "这里不能用 Z" yield constraint
//! candidates), explicit choices of a new conclusion (what turns a
//! conflict into replace instead of veto), and strength/scope words.

use std::sync::OnceLock;

use regex::Regex;

/// English hedges, matched as whole words on normalised text.
const HEDGES_EN: &[&str] = &[
    "maybe",
    "perhaps",
    "probably",
    "possibly",
    "might",
    "not sure",
    "unsure",
    "i think",
    "i guess",
    "i suppose",
    "kind of",
    "sort of",
    "not certain",
    "it depends",
    "depending on",
    "for now",
    "tentatively",
    "don't remember this",
    "do not remember this",
    "don't save this",
    "do not save this",
    "not yet",
];

/// Chinese hedges and "do not record yet" phrases, matched as substrings.
const HEDGES_ZH: &[&str] = &[
    "可能",
    "也许",
    "大概",
    "或许",
    "好像",
    "似乎",
    "不确定",
    "不一定",
    "说不定",
    "看情况",
    "暂时",
    "先别记",
    "别记",
    "不要记",
    "先不记",
    "再说",
];

/// English prohibition and refusal markers (whole words).
const PROHIBIT_EN: &[&str] = &[
    "don't",
    "dont",
    "do not",
    "never",
    "avoid",
    "stop using",
    "no longer",
    "must not",
    "mustn't",
    "shouldn't",
    "should not",
    "can't use",
    "cannot use",
    "not allowed",
    "forbidden",
    "prohibited",
    "refuse",
    "instead of",
    "rather than",
    "not use",
];

/// Chinese prohibition, refusal and exclusion markers (substrings).
const PROHIBIT_ZH: &[&str] = &[
    "不要",
    "不能",
    "不用",
    "禁止",
    "不准",
    "不许",
    "不可以",
    "避免",
    "勿",
    "不得",
    "拒绝",
    "不再",
    "别",
    "而不是",
    "不使用",
];

/// Characters before `别` that make it part of another word (区别, 特别, 分别…).
const BIE_BEFORE: &str = "区特分识类级告性个派差离辨鉴甄";
/// Characters after `别` that make it "other" rather than "don't" (别人, 别的…).
const BIE_AFTER: &str = "人的处名称致墅";

/// Cues that the user explicitly picks a new conclusion over an old one.
const REPLACE_EN: &[&str] = &[
    "instead",
    "from now on",
    "no longer",
    "switch to",
    "switched to",
    "changed my mind",
    "not anymore",
    "anymore",
    "replace",
    "going forward",
    "rather than",
];
/// Chinese replacement cues.
const REPLACE_ZH: &[&str] =
    &["改用", "改为", "改成", "换成", "以后", "从现在起", "今后", "不再", "而不是", "替换", "更正", "纠正"];

/// Cues for a hard requirement (strength `must`).
const MUST_EN: &[&str] = &["must", "always", "never", "required", "mandatory", "have to", "need to", "do not", "don't"];
/// Chinese hard-requirement cues.
const MUST_ZH: &[&str] = &["必须", "一定", "务必", "总是", "始终", "永远", "禁止", "不准", "不许", "不得"];

/// Cues for a global (cross-project) scope.
const GLOBAL_EN: &[&str] = &["all projects", "every project", "any project", "everywhere", "globally", "in general"];
/// Chinese global-scope cues.
const GLOBAL_ZH: &[&str] = &["所有项目", "全局", "任何项目", "每个项目", "通用"];

/// Cues for a decision (kind `decision`).
const DECISION_EN: &[&str] = &["decided", "we decided", "let's go with", "go with", "chose", "choose", "settled on"];
/// Chinese decision cues.
const DECISION_ZH: &[&str] = &["决定", "选择", "选用", "定了", "采用"];

/// Cues for a preference (kind `preference`).
const PREFER_EN: &[&str] = &["prefer", "i like", "i want", "please use", "use", "favour", "favor"];
/// Chinese preference cues.
const PREFER_ZH: &[&str] = &["喜欢", "偏好", "倾向", "希望", "习惯", "用"];

fn words_regex(list: &[&str]) -> Regex {
    let alts: Vec<String> = list.iter().map(|w| regex::escape(w)).collect();
    Regex::new(&format!(r"(?:^|[^\p{{Alphabetic}}\p{{N}}'_])({})(?:$|[^\p{{Alphabetic}}\p{{N}}'_])", alts.join("|")))
        .unwrap_or_else(|e| panic!("built-in cue list does not compile: {e}"))
}

fn first_word(list: &'static [&'static str], cell: &'static OnceLock<Regex>, norm: &str) -> Option<String> {
    cell.get_or_init(|| words_regex(list)).captures(norm).and_then(|c| c.get(1)).map(|m| m.as_str().to_string())
}

fn first_sub(list: &[&str], norm: &str) -> Option<String> {
    list.iter().filter_map(|w| norm.find(w).map(|i| (i, *w))).min().map(|(_, w)| w.to_string())
}

/// Normalises text for cue matching (NFKC, lower case, curly quotes straight).
fn prepare(text: &str) -> String {
    crate::text::normalise(text).replace(['\u{2019}', '\u{2018}'], "'")
}

/// The first hedge in a text ("maybe", "可能", "先别记"…), if any.
pub fn hedge(text: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let norm = prepare(text);
    first_word(HEDGES_EN, &RE, &norm).or_else(|| first_sub(HEDGES_ZH, &norm))
}

/// The prohibition marker of a text ("don't", "never", "不要", "别"…), if
/// the text refuses, forbids or excludes something. A "do not record this
/// yet" phrase is a hedge, not a prohibition.
pub fn prohibition(text: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let mut norm = prepare(text);
    for meta in ["先别记", "别记", "不要记", "don't remember this", "do not remember this", "don't save this"] {
        norm = norm.replace(meta, " ");
    }
    if let Some(w) = first_word(PROHIBIT_EN, &RE, &norm) {
        return Some(w);
    }
    let chars: Vec<char> = norm.chars().collect();
    let bie = chars.iter().enumerate().any(|(i, &c)| {
        c == '别'
            && !(i > 0 && BIE_BEFORE.contains(chars[i - 1]))
            && !chars.get(i + 1).is_some_and(|n| BIE_AFTER.contains(*n))
    });
    PROHIBIT_ZH
        .iter()
        .filter(|w| **w != "别")
        .find(|w| norm.contains(*w))
        .map(|w| w.to_string())
        .or_else(|| bie.then(|| "别".to_string()))
}

/// The cue by which the user explicitly chooses a new conclusion ("from
/// now on", "instead", "改用"…), if any.
pub fn replacement(text: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let norm = prepare(text);
    first_word(REPLACE_EN, &RE, &norm).or_else(|| first_sub(REPLACE_ZH, &norm))
}

/// Whether a text states a hard requirement ("must", "always", "必须"…).
pub fn must(text: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let norm = prepare(text);
    first_word(MUST_EN, &RE, &norm).is_some() || first_sub(MUST_ZH, &norm).is_some()
}

/// Whether a text claims a scope beyond this project ("all projects", "全局"…).
pub fn global(text: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let norm = prepare(text);
    first_word(GLOBAL_EN, &RE, &norm).is_some() || first_sub(GLOBAL_ZH, &norm).is_some()
}

/// Whether a text records a decision taken ("we decided", "决定"…).
pub fn decision(text: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let norm = prepare(text);
    first_word(DECISION_EN, &RE, &norm).is_some() || first_sub(DECISION_ZH, &norm).is_some()
}

/// Whether a text states a preference ("prefer", "use", "喜欢"…).
pub fn preference(text: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let norm = prepare(text);
    first_word(PREFER_EN, &RE, &norm).is_some() || first_sub(PREFER_ZH, &norm).is_some()
}

/// CJK characters that are grammar or polarity, not subject: a bigram
/// holding one is no keyword ("里不", "要用").
pub fn is_function_char(c: char) -> bool {
    "这那里不要用别的了是在我们你他她它请把就也都和或吧呢啊吗时能会该再先还很更最被让给对从以后改为着过个一有没"
        .contains(c)
}

/// Words that carry polarity or hedging rather than subject matter; they
/// are left out when two notes' subjects are compared.
pub fn is_function_word(token: &str) -> bool {
    const STOP: &[&str] = &[
        "a", "an", "the", "to", "of", "in", "on", "for", "and", "or", "is", "are", "be", "it", "this", "that", "we",
        "i", "you", "our", "my", "with", "as", "at", "by", "use", "using", "used", "don't", "dont", "do", "not",
        "never", "always", "please", "should", "must", "here", "there", "instead", "rather", "than", "from", "now",
        "on", "no", "longer", "avoid", "prefer", "let's", "lets", "can", "can't", "cannot", "will", "would", "all",
        "any", "when", "then", "so", "but", "also", "just", "only", "us", "me", "your", "project", "code", "like",
        "want", "need", "have", "has", "was", "were", "been", "anymore", "switch", "go", "with", "into", "about",
        "不要", "不能", "不用", "要用", "用的", "这里", "我们", "项目", "以后", "现在", "一下", "的", "了", "是", "在",
        "用", "别", "要", "不", "请", "改用",
    ];
    STOP.contains(&token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cues_in_both_languages() {
        assert_eq!(hedge("Maybe use pnpm"), Some("maybe".into()));
        assert_eq!(hedge("先别记这个"), Some("先别记".into()));
        assert_eq!(hedge("use pnpm"), None);
        assert_eq!(prohibition("Don’t use var here"), Some("don't".into()));
        assert_eq!(prohibition("这里别用 var"), Some("别".into()));
        assert_eq!(prohibition("这里不能用 Z"), Some("不能".into()));
        assert_eq!(prohibition("区别很大，别人也这么做"), None);
        assert_eq!(prohibition("先别记这个"), None);
        assert_eq!(replacement("From now on use pnpm"), Some("from now on".into()));
        assert_eq!(replacement("以后改用 pnpm"), Some("以后".into()));
        assert!(must("You must run tests"));
        assert!(global("in all projects"));
    }
}
