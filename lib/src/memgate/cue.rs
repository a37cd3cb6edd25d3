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
    "presumably",
    "likely",
    "might",
    "could",
    "not sure",
    "unsure",
    "i think",
    "i guess",
    "i suppose",
    "i believe",
    "i feel",
    "i'd say",
    "i reckon",
    "kind of",
    "sort of",
    "not certain",
    "it depends",
    "depending on",
    "for now",
    "tentatively",
    "not yet",
    "how about",
    "what about",
    "let's try",
    "try using",
    "worth trying",
    "seems",
    "should be fine",
    "or so",
    "if possible",
    "ideally",
];

/// Chinese hedges, suggestions and questions, matched as substrings.
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
    "再说",
    "我觉得",
    "我感觉",
    "感觉",
    "估计",
    "应该是",
    "貌似",
    "要不",
    "试试",
    "试一下",
    "是不是",
    "要不要",
    "能不能",
    "可不可以",
    "好不好",
    "行不行",
    "怎么样",
    "差不多",
    "大约",
    "先这样",
];

/// "Do not remember this": the user asks that nothing be recorded, so
/// nothing is (English, whole words).
const NO_RECORD_EN: &[&str] = &[
    "don't remember this",
    "do not remember this",
    "don't remember that",
    "no need to remember",
    "no need to record",
    "no need to save",
    "no need to note",
    "don't save this",
    "do not save this",
    "don't save that",
    "don't record this",
    "do not record this",
    "don't record that",
    "don't write this down",
    "do not write this down",
    "don't write that down",
    "don't note this",
    "don't store this",
    "do not store this",
    "don't memorize this",
    "don't memorise this",
    "not worth remembering",
    "off the record",
    "forget i said",
    "forget it",
    "just this once",
    "only this time",
];

/// Chinese "do not record this" phrases (substrings).
const NO_RECORD_ZH: &[&str] = &[
    "先别记",
    "别记",
    "不要记",
    "先不记",
    "不用记",
    "不必记",
    "无需记",
    "不需要记",
    "别存",
    "不要存",
    "不用存",
    "先不存",
    "别保存",
    "不要保存",
    "不用保存",
    "别写进",
    "不要写进",
    "不用写进",
    "别写下",
    "不要写下",
    "别录",
    "就这一次",
    "只是这次",
    "仅此一次",
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
    "not permitted",
    "disallowed",
    "forbidden",
    "prohibited",
    "banned",
    "avoided",
    "stay away from",
    "steer clear of",
    "refrain from",
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
    "严禁",
    "杜绝",
    "切忌",
    "不应",
    "不该",
    "拒绝",
    "不再",
    "别",
    "而不是",
    "不使用",
];

/// "Keep X out of Y", "leave X out of Y", "keep X away from Y": a refusal
/// with no negation word. The verb and the particle are whole words with
/// at most six words between them in one clause, so "keep outputs in
/// dist" and "the checkout of submodules" refuse nothing.
fn kept_out(norm: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?:^|[^\p{Alphabetic}\p{N}'_])(keep|keeps|keeping|leave|leaves|leaving)(?:\s+[^\s.;,:!?]+){0,6}?\s+(out\s+of|away\s+from)(?:$|[^\p{Alphabetic}\p{N}'_])",
        )
        .unwrap_or_else(|e| panic!("built-in keep-out pattern does not compile: {e}"))
    })
    .captures(norm)
    .and_then(|c| Some(format!("{} … {}", c.get(1)?.as_str(), c.get(2)?.as_str())))
}

/// Characters before `别` that make it part of another word (区别, 特别, 分别…).
pub const BIE_BEFORE: &str = "区特分识类级告性个派差离辨鉴甄";
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
const MUST_ZH: &[&str] =
    &["必须", "一定", "务必", "总是", "始终", "永远", "禁止", "严禁", "不准", "不许", "不得", "杜绝", "切勿", "切忌"];

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
    first_word(HEDGES_EN, &RE, &norm).or_else(|| first_sub(HEDGES_ZH, &norm)).or_else(|| asks(text))
}

/// The prohibition marker of a text ("don't", "never", "不要", "别"…), if
/// the text refuses, forbids or excludes something. A "do not record this
/// yet" phrase is a hedge, not a prohibition.
pub fn prohibition(text: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let mut norm = prepare(text);
    for meta in NO_RECORD_EN.iter().chain(NO_RECORD_ZH) {
        norm = norm.replace(meta, " ");
    }
    if let Some(w) = first_word(PROHIBIT_EN, &RE, &norm).or_else(|| kept_out(&norm)) {
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
        .find(|w| zh_word_at(&norm, w))
        .map(|w| w.to_string())
        .or_else(|| bie.then(|| "别".to_string()))
}

/// Characters before a 不… marker that make it part of another word:
/// 要不用 (how about using), 能不能, 要不要, 可不可以 — a suggestion or a
/// question, not a refusal.
const NOT_BEFORE: &str = "要能可行好是用";
/// Characters after 不用 that make it "no need to …" rather than "do not use".
const BUYONG_AFTER: &str = "谢担客管急怕说";

/// Comparatives after 不要 / 不能 that make a bound, not a refusal:
/// 不要超过五十行 says what 不超过五十行 says.
const BOUNDS: &[&str] = &["超过", "低于", "小于", "大于", "少于", "多于", "高于", "短于", "长于"];

/// Whether a Chinese marker occurs as a word somewhere in the text, not
/// as a piece of a longer one (要不用 is "how about using").
fn zh_word_at(norm: &str, w: &str) -> bool {
    norm.match_indices(w).any(|(i, _)| {
        let before = norm[..i].chars().next_back();
        let after = norm[i + w.len()..].chars().next();
        let negated = w.starts_with('不') && before.is_some_and(|c| NOT_BEFORE.contains(c));
        let no_need = w == "不用" && after.is_some_and(|c| BUYONG_AFTER.contains(c));
        let bound = BOUNDS.iter().any(|b| norm[i + w.len()..].trim_start().starts_with(b));
        !negated && !no_need && !bound
    })
}

/// The "do not remember this" phrase of a text ("别存这个", "No need to
/// remember this"), if any: the user asks that nothing be recorded.
pub fn no_record(text: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let norm = prepare(text);
    first_word(NO_RECORD_EN, &RE, &norm).or_else(|| first_sub(NO_RECORD_ZH, &norm))
}

/// Whether a text asks rather than states: it ends in a question mark, or
/// in 吗 / 呢 / 吧 (吧 softens a statement into a suggestion).
pub fn asks(text: &str) -> Option<String> {
    let t = prepare(text);
    let t = t.trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '.' | '。' | '!' | '！' | '~' | '～'));
    let last = t.chars().next_back()?;
    matches!(last, '?' | '？' | '吗' | '呢' | '吧').then(|| last.to_string())
}

/// The cue by which the user explicitly chooses a new conclusion ("from
/// now on", "instead", "改用"…), if any.
pub fn replacement(text: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let norm = prepare(text);
    first_word(REPLACE_EN, &RE, &norm).or_else(|| first_sub(REPLACE_ZH, &norm))
}

/// Phrases that say when a rule starts, not what it is about or where it
/// applies: "from now on" opens no scope, and by itself reverses nothing.
const TIME: &[&str] =
    &["from now on", "from here on", "going forward", "从现在开始", "从现在起", "从今以后", "今后", "往后", "以后"];

/// The text normalised, with its time phrases out.
pub fn without_time(text: &str) -> String {
    let mut norm = prepare(text);
    for t in TIME {
        norm = norm.replace(t, " ");
    }
    norm
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
        "want", "need", "have", "has", "was", "were", "been", "anymore", "switch", "into", "about", "不要", "不能",
        "不用", "要用", "用的", "这里", "我们", "项目", "以后", "现在", "一下", "的", "了", "是", "在", "用", "别",
        "要", "不", "请", "改用",
    ];
    STOP.contains(&token)
}

/// Interjections ("Wow, hey, …"), left out of a query with [`PRAISE`]
/// (`similarity::query_features`).
pub const INTERJECTIONS: &[&str] = &["wow", "hey", "hi", "yeah", "yep", "yup", "oh"];

/// Praise ("sounds awesome", "great"): it says how the speaker feels
/// about what they say, while a note keeps what it is, so it only matched
/// notes that use the same praise in passing ("… her store is doing
/// great"). Left out of a query's words, n-grams and word pairs, like a
/// question's date; LoCoMo 1–5, Task A .883 / .958 → .888 / .959 with the
/// interjections (.886 / .959 out of the word half only), Task B
/// unchanged.
pub const PRAISE: &[&str] = &["awesome", "cool", "great", "amazing", "nice", "sounds", "totally", "super"];

/// How many names [`addressed`] returns at most.
const MAX_ADDRESSED: usize = 8;

/// The names a text addresses: "Thanks, Nate!", "Hey Mel,", "Way to go,
/// John!". Whoever is addressed is not the one speaking, so a note whose
/// subject is that name is about someone else (`govern` ranks it lower).
/// Only a capitalised word after a greeting or thanks, or set off by a
/// comma after a lower-case word at a sentence's end, counts: a
/// sentence-initial "Never, ever …" names nobody.
pub fn addressed(text: &str) -> Vec<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(
            r"(?x)
            (?:\b(?i:hey|hi|hiya|hello|thanks|thank\ you|thx|wow|whoa|woah|woohoo|yeah|yes|yep|yup|sure|oh|congrats|congratulations|cheers|sorry|aw+|ah|haha|ok|okay|dear|bye|good\ luck|no\ worries|welcome|morning|night|yo|gotcha)[,!]?\s+
              | \b[a-z][a-z']*,\s+
              | (?:^|[.!?]\s+)[A-Za-z']+,\s+)
            ([A-Z][a-z]+)\s*(?:[,!?.;:]|\s-|$)
            | (?:^|[.!?]\s+)([A-Z][a-z]+),\s+(?:you|your|you're|you've|you'll|you'd)\b",
        )
        .expect("addressee pattern")
    });
    let text = text.replace(['\u{2019}', '\u{2018}'], "'");
    let mut names: Vec<String> = Vec::new();
    for c in re.captures_iter(&text) {
        let Some(name) = c.get(1).or_else(|| c.get(2)) else { continue };
        let name = name.as_str().to_string();
        if !names.contains(&name) {
            names.push(name);
        }
        // A conversation turn names one or two people; a hostile text of
        // a million greetings must not make this, or the ranking that
        // checks each name against each neighbour, quadratic.
        if names.len() == MAX_ADDRESSED {
            break;
        }
    }
    names
}

/// Whether a note's one-liner is about `name`: its first word, a
/// possessive's "'s" dropped, is the name or a longer form of it
/// ("Mel" / "Melanie").
pub fn about(one_liner: &str, name: &str) -> bool {
    let first = one_liner.split_whitespace().next().unwrap_or("");
    let first = first.trim_end_matches(|c: char| !c.is_alphanumeric());
    let first = super::lemma::base(first);
    let (short, long) = if first.len() <= name.len() { (first, name) } else { (name, first) };
    short == long || (short.len() >= 3 && long.starts_with(short))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cues_in_both_languages() {
        assert_eq!(hedge("Maybe use pnpm"), Some("maybe".into()));
        assert_eq!(no_record("先别记这个"), Some("先别记".into()));
        assert_eq!(hedge("Use pnpm?"), Some("?".into()));
        assert_eq!(prohibition("要不用 pnpm 试试"), None);
        assert_eq!(hedge("use pnpm"), None);
        assert_eq!(prohibition("Don’t use var here"), Some("don't".into()));
        assert_eq!(prohibition("这里别用 var"), Some("别".into()));
        assert_eq!(prohibition("这里不能用 Z"), Some("不能".into()));
        assert_eq!(prohibition("区别很大，别人也这么做"), None);
        assert_eq!(prohibition("先别记这个"), None);
        assert_eq!(prohibition("Keep secrets out of container images."), Some("keep … out of".into()));
        assert_eq!(prohibition("Leave the vendor folder out of code review."), Some("leave … out of".into()));
        assert_eq!(prohibition("Steer clear of global singletons."), Some("steer clear of".into()));
        assert_eq!(prohibition("Eval is banned here."), Some("banned".into()));
        assert_eq!(prohibition("Keep outputs of the build in dist."), None);
        assert_eq!(prohibition("Keep the checkout of submodules shallow."), None);
        assert_eq!(prohibition("Keep an eye out for flaky tests."), None);
        assert_eq!(prohibition("Document the avoidance of retries."), None);
        assert_eq!(prohibition("严禁硬编码密钥"), Some("严禁".into()));
        assert_eq!(prohibition("代码里不应该出现魔法数字"), Some("不应".into()));
        assert_eq!(replacement("From now on use pnpm"), Some("from now on".into()));
        assert_eq!(replacement("以后改用 pnpm"), Some("以后".into()));
        assert!(must("You must run tests"));
        assert!(global("in all projects"));
    }

    #[test]
    fn addressed_names_are_greeted_or_set_off_by_a_comma() {
        assert_eq!(addressed("Thanks, Nate! Your support really means a lot."), ["Nate"]);
        assert_eq!(addressed("Hey Mel, long time no chat!"), ["Mel"]);
        assert_eq!(addressed("Way to go, John! Let's help those in need."), ["John"]);
        assert_eq!(addressed("Wow, John, that sounds like the perfect job."), ["John"]);
        assert_eq!(addressed("Definitely, Mel! Finding those moments is key."), ["Mel"]);
        assert_eq!(addressed("Thanks, Gina - really appreciate it."), ["Gina"]);
        assert_eq!(addressed("Great job. Maria, your support means a lot!"), ["Maria"]);
        assert!(addressed("Yesterday, I moved to Berlin.").is_empty());
        // Twenty thousand different names, each greeted.
        let name = |i: u32| -> String {
            let letters: String = (0..4).map(|k| char::from(b'a' + ((i / 26u32.pow(k)) % 26) as u8)).collect();
            format!("N{letters}")
        };
        let many: String = (0..20_000).map(|i| format!("Hi {}! ", name(i))).collect();
        assert_eq!(addressed(&many).len(), MAX_ADDRESSED);
        assert!(addressed("Never, ever commit secrets to Git.").is_empty());
        assert!(addressed("I moved to Paris, France. It rains.").is_empty());
        assert!(addressed("Use pnpm in this repo.").is_empty());
    }

    #[test]
    fn a_note_is_about_its_first_word() {
        assert!(about("Nate supports Joanna in her journey.", "Nate"));
        assert!(about("Melanie's kids love nature.", "Mel"));
        assert!(!about("Joanna values Nate's support.", "Nate"));
        assert!(!about("Jo likes tea.", "Joanna"));
    }
}
