//! Seed 003 "治理逻辑（语义近邻 TopK）": the Top 5 nearest notes, each
//! judged for same_scenario, same_conclusion, conflict and completeness,
//! and the decision:
//! - merge: same_scenario && same_conclusion → fold into the more complete
//!   version, the other leaves notes/ (archived), Supersedes updated;
//! - replace: conflict and the user explicitly chose the new conclusion
//!   (a cue such as "from now on" / "改用", or target_claim naming the note);
//! - veto: conflict without a decisive variable → nothing is written;
//! - new: no neighbour calls for merge or replace.

use serde::Serialize;

use super::candidate::{keywords, Candidate};
use super::cue;
use super::dense::Semantic;
use super::search::{Hit, View};
use super::similarity::{self as sim, Features};
use super::slot::{self, Slot};
use super::stance;
use super::store::{self, Loaded, Paths};
use crate::error::Result;
use crate::text::embed;

/// How many neighbours are judged (the seed's Top 5).
pub const TOP_K: usize = 5;
/// How many notes are read and re-ranked when the order is not the
/// lexical one: a question's lexical hits with the static table (LoCoMo
/// 1–5, Task B R@5: .775 from the top 10, .777 from the top 20 or from
/// every note, which a store-wide read would pay for), a statement that
/// addresses someone, or the encoder's best over every note.
pub const RERANK: usize = 20;
/// The dense half's weight in a question's ranking, `score + w · dense`
/// (LoCoMo 1–5, Task B R@5: .777 at .2, .772 at .3, .773 at .5).
pub const DENSE_WEIGHT: f64 = 0.2;
/// The encoder's weight in a statement's ranking, `score + w · cosine`
/// over every note, with a sentence encoder configured (all-MiniLM-L6-v2;
/// LoCoMo 1–5, Task A R@1 / R@5, questions at .4: .890 / .959 without the
/// encoder, .892 / .961 at .15, .893 / .960 at .2, .888 / .961 at .3,
/// .883 / .959 at .4).
pub const MODEL_STATEMENT_WEIGHT: f64 = 0.15;
/// The encoder's weight in a question's ranking. A question names what it
/// asks in other words than its note, so the encoder counts for more.
/// LoCoMo 1–5, Task B R@1 / R@5: .544 / .777 with the static table, .574 /
/// .805 at .3, .580 / .808 at .4, .590 / .808 at .5; Task A's 181
/// restatements that end in "?" are questions too, and they are held
/// best at .3–.4 (Task A .895 / .962 at .3, .893 / .960 at .4, .890 /
/// .958 at .5, with statements at .2).
pub const MODEL_QUESTION_WEIGHT: f64 = 0.4;
/// The weight of a statement's neighbour whose subject is the one the
/// user addresses ("Thanks, Nate!" is not said by Nate): LoCoMo 1–5,
/// Task A R@1 / R@5 .870 / .954 at 1, .882 / .957 at .4, .883 / .958 at
/// .5, .883 / .956 at .7. A note about someone else is ranked down, not
/// out: the user may restate what the other said.
pub const ADDRESSEE_WEIGHT: f64 = 0.5;
/// Fused score from which two notes may share a scenario.
pub const SCENARIO_MIN: f64 = 0.2;
/// Pair similarity of two one-liners from which, with a shared subject
/// word, they share a scenario (Chinese rewordings: .43–.89 on the pairs
/// of tests/fixtures/memgate/zh_pairs.tsv, unrelated neighbours mostly
/// under .4).
pub const SCENARIO_PAIR: f64 = 0.4;
/// Fused score at which two notes share a scenario whatever their words.
pub const SCENARIO_SURE: f64 = 0.5;
/// Similarity of two one-liners from which they state the same conclusion.
pub const CONCLUSION_MIN: f64 = 0.5;
/// Share of the smaller one-liner's subject words the other must hold for
/// the two to state the same conclusion (same polarity).
pub const SAME_SUBJECT: f64 = 0.8;
/// Below this share, same-polarity one-liners with words of their own
/// name different things for one scenario: a conflict (pnpm vs yarn).
pub const OTHER_SUBJECT: f64 = 0.67;
/// From this share, opposite polarity on the same subject is a conflict.
pub const OPPOSED_SUBJECT: f64 = 0.5;
/// At most this many subject words of its own on each side for two
/// same-polarity statements to be alternatives (pnpm vs yarn).
pub const SWAP_MAX: usize = 2;
/// How far a neighbour's cosine stands above the store's floor (the
/// median cosine of the statement with every note), as a share of the
/// room above it: `(cos − floor) / (1 − floor)`. From this share the note
/// is in the statement's scenario by meaning, whatever its words or
/// language. Each model has its own floor (multilingual-e5-small's
/// unrelated notes sit near .8, all-MiniLM-L6-v2's near .1), so the
/// share, not the cosine, is compared. Set on bench/memgate_sequences.py
/// --train and hand-made pairs (see bench/RESULTS.md).
pub const MEANING_SCENARIO: f64 = 0.3;
/// Share of CJK characters two Chinese statements must have in common for
/// their different names to be alternatives for one slot.
pub const SWAP_FRAME: f64 = 0.7;

/// |a ∩ b| / min(|a|, |b|) of two keyword lists (0 when one is empty).
fn containment(a: &[String], b: &[String]) -> f64 {
    let small = a.len().min(b.len());
    if small == 0 {
        return 0.0;
    }
    a.iter().filter(|k| b.contains(k)).count() as f64 / small as f64
}

/// The seed's four decisions, plus skip (nothing to remember).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Create a note.
    New,
    /// Fold into an existing note (or absorb it).
    Merge,
    /// Supersede a conflicting note.
    Replace,
    /// Conflict without a decisive variable: write nothing.
    Veto,
    /// No candidate: stay silent.
    Skip,
}

impl Action {
    /// The name in records and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::New => "new",
            Action::Merge => "merge",
            Action::Replace => "replace",
            Action::Veto => "veto",
            Action::Skip => "skip",
        }
    }
}

/// One judged neighbour, as reported in the decision record.
#[derive(Debug, Clone, Serialize)]
pub struct Neighbour {
    /// Note id.
    pub id: String,
    /// `memory/notes/MEM-….md`.
    pub file: String,
    /// The note's title.
    pub title: String,
    /// Fused similarity.
    pub score: f64,
    /// Normalised BM25 part.
    pub bm25: f64,
    /// Normalised character n-gram BM25 part.
    pub ngram: f64,
    /// Cosine of the static embedding (`text::embed`) of the note's and
    /// the user's words, only when the input is a question: a question
    /// asks in other words than the note answers in ("What pets…" of "a
    /// dog named Max"). Neighbours are then ranked by `score + w · dense`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense: Option<f64>,
    /// The name the user addresses when this note is about them ("Thanks,
    /// Nate!" and a note opening "Nate …"): the note is then ranked by
    /// `ADDRESSEE_WEIGHT · score`, since whoever is addressed is not the
    /// one speaking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addressee: Option<String>,
    /// Its place in the list, highest first: `score` (times
    /// `ADDRESSEE_WEIGHT` for a note about the addressee), or for a
    /// question `score + w · dense`, and the lexical first kept first.
    #[serde(skip)]
    pub rank: f64,
    /// Same canonical one-liner.
    pub duplicate: bool,
    /// Same scenario.
    pub same_scenario: bool,
    /// Same conclusion.
    pub same_conclusion: bool,
    /// Conflicting conclusion.
    pub conflict: bool,
    /// Share of the template's fields filled, 0–1.
    pub completeness: f64,
    /// Content digest now (apply refuses to act on a note changed since).
    pub digest: String,
    #[serde(skip)]
    /// The note as read.
    pub loaded: Loaded,
}

/// The governance outcome for one candidate.
#[derive(Debug, Clone)]
pub struct Governance {
    /// The decision.
    pub action: Action,
    /// Notes it acts on (merged, replaced or in conflict), best first.
    pub targets: Vec<String>,
    /// Why, in words.
    pub reason: String,
    /// The judged neighbours, best first.
    pub neighbours: Vec<Neighbour>,
}

/// Stemmed subject words of the user's statement (one-liner and
/// decision), never of generated fields: "When the work involves …" and
/// "this constraint must be obeyed" are in every note and made unrelated
/// rules share a subject.
fn subject(c: &Candidate) -> Vec<String> {
    stems(keywords(&format!("{}\n{}", c.one_liner, c.decision), 12))
}

fn stems(words: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words {
        let s = crate::text::terms::stem(super::lemma::base(&w));
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// English words that open the scope of a rule: "use tabs | in Go files".
const SCOPE_EN: &[&str] = &[
    "in", "for", "on", "when", "whenever", "inside", "within", "during", "before", "after", "while", "under", "across",
    "if",
];
/// Chinese markers that open the rule itself: what precedes the first one
/// is its scope ("Go 文件里 | 用 tabs", "前端上线前 | 把…").
const RULE_ZH: &[&str] =
    &["不要", "不能", "不用", "不许", "不准", "别", "禁止", "必须", "一定", "统一", "改用", "使用", "采用", "用", "把"];

/// The stemmed subject words of a one-liner's rule and of its scope.
fn rule_and_scope(one_liner: &str) -> (Vec<String>, Vec<String>) {
    // "从现在开始" / "from now on" says when, not where.
    let one_liner = &cue::without_time(one_liner);
    if crate::text::mostly_cjk(one_liner) {
        let at = RULE_ZH.iter().filter_map(|m| one_liner.find(m)).min().unwrap_or(0);
        return (stems(keywords(&one_liner[at..], 12)), stems(keywords(&one_liner[..at], 12)));
    }
    // The scope of the first clause that names one ("never use var in
    // JavaScript; use let"; "use pnpm, not npm, in JS projects"); the rule
    // is the first clause's.
    let scope_at = |toks: &[String]| toks.iter().skip(1).position(|t| SCOPE_EN.contains(&t.as_str())).map(|i| i + 1);
    let clauses: Vec<Vec<String>> = slot::clauses(one_liner).iter().map(|c| crate::text::tokens(c)).collect();
    let Some(first) = clauses.first() else { return (Vec::new(), Vec::new()) };
    let at = scope_at(first).unwrap_or(first.len());
    let scope = match scope_at(first) {
        Some(at) => first[at..].join(" "),
        // A later clause that opens with its scope word: "in JS projects".
        None => clauses[1..]
            .iter()
            .find(|t| t.first().is_some_and(|w| SCOPE_EN.contains(&w.as_str())))
            .map(|t| t.join(" "))
            .unwrap_or_default(),
    };
    (stems(keywords(&first[..at].join(" "), 12)), stems(keywords(&scope, 12)))
}

/// The words of a Chinese statement written in Latin letters or digits,
/// function words out: the names of tools, languages and versions.
fn names(words: &[String]) -> Vec<String> {
    words.iter().filter(|w| !w.chars().any(crate::text::is_cjk) && !cue::is_function_word(w)).cloned().collect()
}

/// Whether a statement refuses or forbids what the other one is about: a
/// prohibition in a clause that shares a subject word with `other` (or in
/// a statement of one clause). "缓存过期时间设为十分钟，避免数据太旧"
/// does not refuse the cache rule; "以后改用 yarn，不用 pnpm 了" refuses pnpm.
fn negated(one_liner: &str, other: &[String]) -> bool {
    let clauses = slot::clauses(one_liner);
    if clauses.len() <= 1 {
        return cue::prohibition(one_liner).is_some();
    }
    clauses.iter().any(|cl| cue::prohibition(cl).is_some() && stems(keywords(cl, 12)).iter().any(|k| other.contains(k)))
}

/// Whether two Chinese statements say the same around their names: the
/// Dice overlap of their CJK characters (function characters such as 用,
/// 以, 后, 改 left out) is at least [`SWAP_FRAME`]
/// ("表单校验用 yup" / "表单校验用 zod": 1; "构建时压缩 JavaScript" /
/// "构建时生成 source map": .6, two different rules).
fn same_frame(a: &str, b: &str) -> bool {
    use std::collections::BTreeSet;
    let chars = |t: &str| -> BTreeSet<char> {
        t.chars().filter(|c| crate::text::is_cjk(*c) && !cue::is_function_char(*c)).collect()
    };
    let (x, y) = (chars(a), chars(b));
    let n = x.len() + y.len();
    n > 0 && 2.0 * x.intersection(&y).count() as f64 / n as f64 >= SWAP_FRAME
}

/// Words that say how widely a scope reaches, not where: "for every
/// JavaScript project" is "in JS projects".
const WIDTH: &[&str] = &["everi", "every", "each", "all", "ani", "any", "whole"];

/// Whether `short` abbreviates `long`: a prefix of three letters or more
/// ("repo" / "repositori"), or, at two or three letters, its first letter
/// and then letters of it in order ("js" / "javascript", "ts" /
/// "typescript"). No list of abbreviations: how they are made.
fn abbreviates(short: &str, long: &str) -> bool {
    let (s, l) = (short.chars().count(), long.chars().count());
    if s < 2 || s >= l || !short.chars().all(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    if s >= 3 && long.starts_with(short) {
        return true;
    }
    let mut rest = long.chars();
    s <= 3 && long.starts_with(&short[..1]) && short.chars().all(|c| rest.any(|x| x == c))
}

/// A scope's words as the other scope spells them: an abbreviation of
/// one of `other`'s words becomes that word, and width words leave.
fn spelled(scope: &[String], other: &[String]) -> Vec<String> {
    scope
        .iter()
        .filter(|w| !WIDTH.contains(&w.as_str()))
        .map(|w| other.iter().find(|o| abbreviates(w, o)).unwrap_or(w).clone())
        .collect()
}

/// Each side has subject words the other lacks and they share less than
/// [`OTHER_SUBJECT`] of the smaller: they name different things.
fn differ(a: &[String], b: &[String]) -> bool {
    let own = |x: &[String], y: &[String]| x.iter().any(|k| !y.contains(k));
    own(a, b) && own(b, a) && containment(a, b) < OTHER_SUBJECT
}

/// Whether the Chinese side of a mixed pair names (in Latin letters) a
/// tool, language or version the other side's words lack: "JS 项目都用
/// yarn" names yarn, which "Prefer pnpm for JavaScript projects" lacks;
/// "日志里不要打印用户手机号" names nothing, so only meaning relates it to
/// "Never print users' phone numbers in logs.".
fn names_apart(a: &str, b: &str) -> bool {
    let (zh, other) = if crate::text::mostly_cjk(a) { (a, b) } else { (b, a) };
    let words = stems(keywords(other, 24));
    spelled(&stems(names(&crate::text::tokens(zh))), &words).iter().any(|k| !words.contains(k))
}

/// Judges one neighbour against the candidate. `replacing`: the user's
/// words carry a cue that they move from an old choice to a new one
/// ("instead", "以后改用"). `meaning`: the neighbour's cosine over the
/// store's floor ([`MEANING_SCENARIO`]), with a sentence encoder that
/// reads the statement.
fn judge(c: &Candidate, hit: &Hit, l: Loaded, paths: &Paths, replacing: bool, meaning: Option<f64>) -> Neighbour {
    let other = &l.note.body;
    let shared = {
        let a = subject(c);
        subject(other).iter().filter(|k| a.contains(k)).count()
    };
    // Same rule in two different scopes ("tabs in Python files" / "tabs in
    // Go files") is two scenarios, however many words they share.
    let chinese = crate::text::mostly_cjk(&c.one_liner) && crate::text::mostly_cjk(&other.one_liner);
    let ((_, scope_c), (_, scope_o)) = (rule_and_scope(&c.one_liner), rule_and_scope(&other.one_liner));
    // One side in Chinese, the other not: their scopes meet only through
    // the names both write in Latin letters ("JavaScript 项目" / "in JS
    // projects").
    let mixed = !chinese && (crate::text::mostly_cjk(&c.one_liner) || crate::text::mostly_cjk(&other.one_liner));
    let (place_c, place_o) =
        if chinese || mixed { (names(&scope_c), names(&scope_o)) } else { (scope_c.clone(), scope_o.clone()) };
    let (place_c, place_o) = (spelled(&place_c, &place_o), spelled(&place_o, &place_c));
    let other_scope = if chinese {
        place_c.iter().any(|k| !place_o.contains(k)) && place_o.iter().any(|k| !place_c.contains(k))
    } else {
        !place_c.is_empty() && !place_o.is_empty() && differ(&place_c, &place_o)
    };
    // Both name their place, and it is one place ("JavaScript 项目" / "in
    // JS projects").
    let same_place = !place_c.is_empty() && !place_o.is_empty() && !other_scope;
    // What each picks and turns down by name: the same pick is one choice
    // however worded ("prefer pnpm over npm" / "use pnpm, not npm"), and
    // turning down the other's pick contradicts it in any language.
    let (stance_c, stance_o) = (stance::of(&c.one_liner), stance::of(&other.one_liner));
    let reverses = stance_c.contradicts(&stance_o);
    // One pick is one scenario when both turn down the same alternative
    // too ("pnpm over npm" / "pnpm, not npm"), or both name one place: UTC
    // in log lines and UTC in API responses are two rules.
    let agrees =
        stance_c.agrees(&stance_o) && (same_place || stance_c.rejected.iter().any(|k| stance_o.rejected.contains(k)));
    // The index's BM25 is relative to the store (in a store of one note
    // every shared word is common); the pair similarity of the two
    // statements is not, and says the same thing reworded.
    let conclusion = sim::pair(&c.one_liner, &other.one_liner);
    let (ka, kb) = (stems(keywords(&c.one_liner, 12)), stems(keywords(&other.one_liner, 12)));
    let neg_c = negated(&c.one_liner, &kb);
    let neg_o = negated(&other.one_liner, &ka);
    let overlap = containment(&ka, &kb);
    // In Chinese, word order reshuffles the character bigrams ("依赖升级" /
    // "升级依赖"), so only the names written in Latin letters or digits
    // (tools, versions: yup / zod, Node 18 / 20) tell two choices apart.
    let (na, nb) = if chinese {
        (names(&crate::text::tokens(&c.one_liner)), names(&crate::text::tokens(&other.one_liner)))
    } else {
        (ka.clone(), kb.clone())
    };
    let own_a = na.iter().filter(|k| !nb.contains(k)).count();
    let own_b = nb.iter().filter(|k| !na.contains(k)).count();
    // Secrets / build output committed to the repo: each side keeps what
    // it acts on of its own, two rules. Yup / zod, 蓝色 / 绿色: each keeps
    // only what it chooses, alternatives.
    let fill = slot::compare(&c.one_liner, &other.one_liner);
    let objects = fill == Slot::Objects;
    // Each side names something the other does not (pnpm vs yarn).
    let differing =
        matches!(fill, Slot::Objects | Slot::Choice) || if chinese { own_a > 0 && own_b > 0 } else { differ(&ka, &kb) };
    // A swap of one or two words in otherwise shared words: alternatives
    // for one slot. Two statements that differ in many words are about
    // different things, not in conflict, and two refusals of different
    // things never are ("never print passwords" / "never print tokens").
    let swap = differing
        && !objects
        && !(neg_c && neg_o)
        && overlap > 0.0
        && own_a <= SWAP_MAX
        && own_b <= SWAP_MAX
        && (!chinese || same_frame(&c.one_liner, &other.one_liner));
    // A user who says they move to another name for the note's subject
    // ("数据库以后改用 Postgres"), or away from what the note names ("不用
    // pnpm 了", "instead of yarn"), puts it in the scenario themselves.
    // A value in the scope ("under fifty lines" / "under thirty lines") is
    // the rule's choice, not another scope.
    let other_scope = other_scope && fill != Slot::Choice;
    // Close in meaning: a rewording or a translation is one scenario;
    // whether it is one conclusion is judged by polarity and names below
    // ("Use yarn" / "Use pnpm" are close, and a swap).
    let by_meaning = meaning.is_some_and(|m| m >= MEANING_SCENARIO);
    let same_scenario = hit.duplicate
        || (!other_scope
            && !objects
            && (hit.score >= SCENARIO_SURE
                || (shared > 0 && (hit.score >= SCENARIO_MIN || conclusion >= SCENARIO_PAIR))
                || (replacing && shared > 0 && swap)
                || (fill == Slot::Choice && shared > 0 && swap)
                // Two-letter words stem into collisions ("ad" hoc / "adding").
                || (replacing
                    && stance_c.rejected.iter().any(|r| r.chars().count() > 2 && subject(other).contains(r)))))
        || (!other_scope && (reverses || agrees))
        || (!other_scope && !objects && by_meaning);
    // "以后改用 yarn，不用 pnpm 了": a move to something the note lacks.
    // A cue the note itself holds ("而不是" in both) moves nowhere.
    // Picking again what the note picks moves nowhere, "from now on" or not.
    let moves = replacing
        && !agrees
        && ka.iter().any(|k| !kb.contains(k))
        && overlap > 0.0
        && cue::replacement(&other.one_liner).is_none();
    let same_conclusion = hit.duplicate
        || (same_scenario && agrees)
        || (same_scenario
            && !reverses
            && neg_c == neg_o
            && !differing
            && !moves
            && fill != Slot::Opposed
            && (conclusion >= CONCLUSION_MIN || overlap >= SAME_SUBJECT || fill == Slot::Reworded))
        // The same rule in other words or another language: one polarity,
        // no move, and no name of its own on either side.
        || (same_scenario
            && by_meaning
            && !reverses
            && neg_c == neg_o
            && !moves
            && fill != Slot::Opposed
            && if mixed { !names_apart(&c.one_liner, &other.one_liner) } else { !differing });
    // Opposite actions on one thing ("关闭 / 打开调试日志") conflict as a
    // refusal and a rule do; a refusal of the opposite action agrees.
    let opposed = fill == Slot::Opposed;
    // A refusal opposes a rule about the same thing: one word in common
    // is not that when each side acts on words of its own beyond a swap
    // ("Never commit secrets" / "Write commit messages in English").
    let common = ka.iter().filter(|k| kb.contains(k)).count();
    let refuses = overlap >= OPPOSED_SUBJECT && !opposed && (common > 1 || own_a.min(own_b) == 0 || !differing);
    let conflict = same_scenario
        && !same_conclusion
        && (reverses || moves || if neg_c != neg_o { refuses } else { opposed || swap });
    Neighbour {
        id: l.note.id.clone(),
        file: paths.rel(&l.note.id),
        title: other.title.clone(),
        score: sim::round(hit.score),
        bm25: sim::round(hit.bm25),
        ngram: sim::round(hit.ngram),
        dense: None,
        addressee: None,
        rank: sim::round(hit.score),
        duplicate: hit.duplicate,
        same_scenario,
        same_conclusion,
        conflict,
        completeness: other.completeness(),
        digest: l.note.content_digest(),
        loaded: l,
    }
}

/// How a neighbour's place is found from its lexical score and dense
/// cosine: `score + weight · dense`, the cosine read against the store's
/// floor when there is one ([`Fusion::meaning`]).
#[derive(Clone, Copy)]
struct Fusion {
    weight: f64,
    /// The lexical first stays first (the static table's rule).
    keep_first: bool,
    /// The sentence encoder's floor for this statement
    /// (`Semantic::floor`), so one weight serves models whose cosines
    /// spread differently.
    floor: Option<f64>,
}

impl Fusion {
    fn rank(self, score: f64, dense: Option<f64>) -> f64 {
        let dense = if self.floor.is_some() { self.meaning(dense) } else { dense };
        score + self.weight * dense.unwrap_or(0.0)
    }

    /// A cosine over the floor, as a share of the room above it:
    /// `(cos − floor) / (1 − floor)` ([`MEANING_SCENARIO`]); None without
    /// an encoder's floor.
    fn meaning(self, cos: Option<f64>) -> Option<f64> {
        self.floor.zip(cos).map(|(f, d)| (d - f) / (1.0 - f).max(f64::EPSILON))
    }
}

/// The encoder's weights in a statement's and a question's ranking:
/// [`MODEL_STATEMENT_WEIGHT`] and [`MODEL_QUESTION_WEIGHT`], or for
/// tuning runs only (bench/memgate_locomo.py --train)
/// `KB_MEMGATE_MODEL_TUNE="statement,question"`.
fn model_weights() -> (f64, f64) {
    static W: std::sync::OnceLock<(f64, f64)> = std::sync::OnceLock::new();
    *W.get_or_init(|| {
        let t: Vec<f64> = std::env::var("KB_MEMGATE_MODEL_TUNE")
            .unwrap_or_default()
            .split(',')
            .filter_map(|x| x.trim().parse().ok())
            .collect();
        match t.as_slice() {
            [st, q, ..] => (*st, *q),
            _ => (MODEL_STATEMENT_WEIGHT, MODEL_QUESTION_WEIGHT),
        }
    })
}

/// The notes to read, best first: the lexical hits; with the encoder,
/// every note by `score + w · cosine`, so a note that shares no word with
/// the query can still be found (ties by id).
fn candidates(q: &Features, view: &View<'_>, dense: &Dense<'_>, fusion: Fusion, k: usize) -> Vec<Hit> {
    let Dense::Encoder(s, v) = dense else { return view.search(q, k) };
    let mut lexical: Vec<Option<Hit>> = vec![None; view.slots()];
    for hit in view.search(q, usize::MAX) {
        let doc = hit.doc;
        lexical[doc] = Some(hit);
    }
    let mut all: Vec<(f64, Hit)> = view
        .docs()
        .map(|doc| {
            let hit = lexical[doc].take().unwrap_or(Hit { doc, bm25: 0.0, ngram: 0.0, duplicate: false, score: 0.0 });
            (fusion.rank(hit.score, s.cosine(v, doc)), hit)
        })
        .collect();
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| view.name(a.1.doc).0.cmp(&view.name(b.1.doc).0)));
    all.into_iter().take(k).map(|(_, hit)| hit).collect()
}

/// The query's vector and how it is fused: the sentence encoder's over
/// every note when one is configured; else the static table's over the
/// lexical top 20, for a question only — a statement restates its note in
/// the note's own words, where the lexical ranking is surer (Task A R@1
/// fell with the table), while a question names what it asks about in
/// other words.
enum Dense<'s> {
    None,
    Static(Vec<f32>),
    Encoder(&'s Semantic, Vec<f32>),
}

impl Dense<'_> {
    /// The cosine of the query with a note: `doc` its place in the view
    /// when the note is as indexed, so the encoder's cached vector serves.
    fn to(&self, l: &Loaded, doc: Option<usize>) -> Option<f64> {
        match self {
            Dense::None => None,
            Dense::Static(v) => Some(f64::from(embed::cosine(v, &embed::embed(&l.note.body.search_text())?))),
            Dense::Encoder(s, v) => doc
                .and_then(|d| s.cosine(v, d))
                .or_else(|| Some(f64::from(embed::cosine(v, &s.encode(&l.note.body.search_text()))))),
        }
    }
}

/// Finds and judges the Top 5 neighbours of a candidate, then decides.
/// `user_text` is searched for a replacement cue; `claim_note` is the note
/// the target claim names, if it names one (always judged, and decisive);
/// `semantic`, the sentence encoder and the notes' vectors, if configured.
pub fn govern(
    c: &Candidate,
    q: &Features,
    view: &View<'_>,
    semantic: Option<&Semantic>,
    paths: &Paths,
    user_text: &str,
    claim_note: Option<&Loaded>,
) -> Result<Governance> {
    let mut neighbours: Vec<Neighbour> = Vec::new();
    let replacing = cue::replacement(user_text).is_some();
    let asks = cue::asks(user_text).is_some();
    // An English encoder's vocabulary lacks most CJK characters, so a
    // Chinese text would be a row of unknown tokens, alike for every note:
    // a text the model does not read stays lexical. A multilingual model
    // reads it, and finds its neighbours across wording and language.
    let (dense, fusion) = match semantic.filter(|s| s.reads(user_text)) {
        Some(s) => {
            let (statement, question) = model_weights();
            let weight = if asks { question } else { statement };
            let v = s.encode(&c.search_text());
            let floor = s.floor(&v);
            (Dense::Encoder(s, v), Fusion { weight, keep_first: false, floor })
        }
        None => match asks.then(|| embed::embed(&c.search_text())).flatten() {
            Some(v) => (Dense::Static(v), Fusion { weight: DENSE_WEIGHT, keep_first: true, floor: None }),
            None => (Dense::None, Fusion { weight: 0.0, keep_first: false, floor: None }),
        },
    };
    // A statement that addresses someone by name ("Thanks, Nate!") is not
    // said by them: their notes are ranked down, from the top 20 (LoCoMo
    // 1–5: of 270 restatements that name whom they address, 4 restate a
    // note about that person).
    let addressed = if asks { Vec::new() } else { cue::addressed(user_text) };
    let want = if !matches!(dense, Dense::None) || !addressed.is_empty() { RERANK } else { TOP_K };
    let mut found: Vec<(Hit, Loaded, Option<f64>, Option<String>)> = Vec::new();
    // Ask for a few more than wanted: a note deleted since indexing is skipped.
    for hit in candidates(q, view, &dense, fusion, want + TOP_K) {
        if found.len() == want {
            break;
        }
        let (id, file) = view.name(hit.doc);
        if claim_note.is_some_and(|n| n.note.id == id) {
            continue;
        }
        let Some(l) = store::read_note(paths, &file)? else { continue };
        let as_indexed = (l.bytes.len() as u64, l.mtime_ns) == view.stamp(hit.doc);
        let hit = if as_indexed { hit } else { view.score_one(q, &l.entry().features) };
        let dense = dense.to(&l, as_indexed.then_some(hit.doc));
        let about = addressed.iter().find(|name| cue::about(&l.note.body.one_liner, name)).cloned();
        found.push((hit, l, dense, about));
    }
    let weight = |about: &Option<String>| if about.is_some() { ADDRESSEE_WEIGHT } else { 1.0 };
    // With the static table the lexical first stays first: a question
    // that names its note's words is surer of it than any vector (LoCoMo
    // 1–5: Task A R@1 .865 → .868 and B R@1 .542 → .544 with it kept, B
    // R@5 the same). The rest are re-ranked — all of them when the
    // statement names whom it addresses, as the first may be about them;
    // a stable sort keeps the lexical order of ties.
    let kept_first = usize::from(addressed.is_empty() && fusion.keep_first);
    let rank = |f: &(Hit, Loaded, Option<f64>, Option<String>)| fusion.rank(f.0.score * weight(&f.3), f.2);
    if let Some(rest) = found.get_mut(kept_first..) {
        rest.sort_by(|a, b| rank(b).total_cmp(&rank(a)));
    }
    found.truncate(TOP_K);
    for (i, (hit, l, dense, about)) in found.into_iter().enumerate() {
        let mut n = judge(c, &hit, l, paths, replacing, fusion.meaning(dense));
        n.dense = dense.map(sim::round);
        n.rank = if i < kept_first { f64::INFINITY } else { fusion.rank(n.score * weight(&about), n.dense) };
        n.addressee = about;
        neighbours.push(n);
    }
    if let Some(l) = claim_note {
        let hit = view.score_one(q, &l.entry().features);
        let cos = dense.to(l, None);
        let mut n = judge(c, &hit, l.clone(), paths, replacing, fusion.meaning(cos));
        n.dense = cos.map(sim::round);
        n.rank = fusion.rank(n.score, n.dense);
        // The user names this note: it is in the scenario by definition.
        n.same_scenario = true;
        n.conflict = !n.same_conclusion;
        neighbours.insert(0, n);
        neighbours.truncate(TOP_K);
    }
    neighbours.sort_by(|a, b| b.rank.total_cmp(&a.rank).then_with(|| a.id.cmp(&b.id)));
    let merge: Vec<String> =
        neighbours.iter().filter(|n| n.same_scenario && n.same_conclusion).map(|n| n.id.clone()).collect();
    if !merge.is_empty() {
        let reason = format!("same scenario and same conclusion as {}", merge.join(", "));
        return Ok(Governance { action: Action::Merge, targets: merge, reason, neighbours });
    }
    let conflicts: Vec<String> = neighbours.iter().filter(|n| n.conflict).map(|n| n.id.clone()).collect();
    if conflicts.is_empty() {
        return Ok(Governance {
            action: Action::New,
            targets: Vec::new(),
            reason: "no neighbour shares both scenario and conclusion, none conflicts".into(),
            neighbours,
        });
    }
    if let Some(l) = claim_note.filter(|l| conflicts.contains(&l.note.id)) {
        let reason = format!("conflicts with {} and the target claim names it: the user corrects it", l.note.id);
        return Ok(Governance { action: Action::Replace, targets: vec![l.note.id.clone()], reason, neighbours });
    }
    if let Some(cue) = cue::replacement(user_text) {
        let reason =
            format!("conflicts with {} and the user chose the new conclusion (\"{cue}\")", conflicts.join(", "));
        return Ok(Governance { action: Action::Replace, targets: conflicts, reason, neighbours });
    }
    // "Use yarn, not pnpm": turning down by name what each conflicting
    // note picks is the user choosing the new conclusion.
    let stance_c = stance::of(&c.one_liner);
    let turned_down = |n: &Neighbour| {
        let picks = stance::of(&n.loaded.note.body.one_liner).chosen;
        stance_c.rejected.iter().find(|r| picks.contains(r)).cloned()
    };
    let named: Vec<String> = neighbours.iter().filter(|n| n.conflict).filter_map(turned_down).collect();
    if named.len() == conflicts.len() {
        let reason = format!(
            "conflicts with {} and the user turned down what it picks ({})",
            conflicts.join(", "),
            named.join(", ")
        );
        return Ok(Governance { action: Action::Replace, targets: conflicts, reason, neighbours });
    }
    let reason = format!("conflicts with {} and the input gives no decisive variable", conflicts.join(", "));
    Ok(Governance { action: Action::Veto, targets: conflicts, reason, neighbours })
}
