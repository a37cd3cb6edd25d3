//! Text for lexical matching in English and Chinese alike: NFKC, case
//! folding, word tokens for Latin-script runs and overlapping character
//! bigrams for CJK runs, and character n-grams; the word pipeline on top of
//! them (`terms`: stop words, spellings, stems); and, beside it, the
//! sentence encoder (`bert`, its `tokenizer`, the vectors' file frame
//! `vecfile`). Seed 003's "semantic neighbours" and kb-score's search both
//! need the same tokens and terms, so they live here and nowhere else.

use unicode_normalization::UnicodeNormalization;

pub mod bert;
pub mod bm25;
pub mod embed;
mod seen;
pub mod segment;
pub mod simd;
pub mod terms;
pub(crate) mod tokenizer;
pub mod vecfile;

/// NFKC plus lower case: full-width letters, ligatures and case no longer
/// separate two spellings of the same word.
pub fn normalise(text: &str) -> String {
    // Most text is NFKC already (the quick check says so without
    // decomposing): then only the case changes.
    if unicode_normalization::is_nfkc_quick(text.chars()) == unicode_normalization::IsNormalized::Yes {
        return text.chars().flat_map(char::to_lowercase).collect();
    }
    text.nfkc().flat_map(char::to_lowercase).collect()
}

/// Whether a character is written without spaces between words (CJK
/// ideographs, kana, hangul), so it is tokenised as character bigrams.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // hiragana, katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0x20000..=0x2FA1F) // CJK extensions B–F and supplement
}

/// Whether a text is written in a CJK language: some CJK characters and
/// no more than four Latin letters for each (code words like `var` mixed
/// into Chinese do not make it English). Used to answer in the user's
/// language.
pub fn mostly_cjk(text: &str) -> bool {
    let (mut cjk, mut other) = (0usize, 0usize);
    for c in text.chars() {
        if is_cjk(c) {
            cjk += 1;
        } else if c.is_alphabetic() {
            other += 1;
        }
    }
    cjk > 0 && cjk * 4 >= other
}

/// The word tokens of a text, in order: normalised alphanumeric runs
/// (`_` and `'` inside a word kept, so `don't` and `snake_case` stay one
/// token), and for CJK runs every overlapping character bigram (a lone CJK
/// character is its own token).
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    each_token(text, |w| out.push(w.to_string()));
    out
}

/// Character n-grams for fuzzy matching: each word padded with a space at
/// both ends and cut into trigrams (" go", "go "; no gram spans two
/// words), and each CJK run as its single characters and its bigrams, so
/// "打印语句" meets "打印的语句" through 打, 印, 语, 句, 打印, 语句.
pub fn grams(text: &str) -> Vec<String> {
    grams_n(text, 3)
}

/// [`grams`] with words cut into `n`-grams instead of trigrams.
pub fn grams_n(text: &str, n: usize) -> Vec<String> {
    grams_where(text, n, |_| true)
}

/// [`grams_n`] of the words `keep` accepts (CJK runs always kept).
pub fn grams_where(text: &str, n: usize, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut padded: Vec<char> = Vec::new();
    each_run(&normalise(text), |run| match run {
        Run::Word(w) if !keep(w) => {}
        Run::Word(w) => {
            padded.clear();
            padded.push(' ');
            padded.extend(w.chars());
            padded.push(' ');
            out.extend(padded.windows(n.max(1)).map(|g| g.iter().collect::<String>()));
        }
        Run::Cjk(r) => {
            out.extend(r.iter().map(char::to_string));
            out.extend(r.windows(2).map(|g| g.iter().collect::<String>()));
        }
    });
    out
}

/// The text with its words normalised and joined by single spaces: two
/// texts that differ only in case, width, punctuation or spacing give the
/// same string (the basis of exact-duplicate digests).
pub fn canonical(text: &str) -> String {
    tokens(text).join(" ")
}

/// One run of a normalised text: a word of a spaced script, or a run of
/// CJK characters (written without spaces, so it has no word boundaries).
enum Run<'a> {
    Word(&'a str),
    Cjk(&'a [char]),
}

/// Cuts a normalised text into its runs, in order: alphanumeric words
/// (`'` and `_` kept inside, trimmed at the ends) and CJK runs; anything
/// else separates. The one place word boundaries are decided.
fn each_run(norm: &str, mut f: impl FnMut(Run)) {
    if norm.is_ascii() {
        return each_ascii_word(norm, |w| f(Run::Word(w)));
    }
    each_char_run(norm, f)
}

/// [`each_run`] of any text, char by char.
fn each_char_run(norm: &str, mut f: impl FnMut(Run)) {
    let mut word = String::new();
    let mut cjk: Vec<char> = Vec::new();
    let flush = |word: &mut String, cjk: &mut Vec<char>, f: &mut dyn FnMut(Run)| {
        let w = word.trim_matches(|c| c == '\'' || c == '_');
        if !w.is_empty() {
            f(Run::Word(w));
        }
        word.clear();
        if !cjk.is_empty() {
            f(Run::Cjk(cjk));
        }
        cjk.clear();
    };
    for c in norm.chars() {
        if is_cjk(c) {
            if !word.is_empty() {
                flush(&mut word, &mut cjk, &mut f);
            }
            cjk.push(c);
        } else if c.is_alphanumeric() || ((c == '\'' || c == '_') && !word.is_empty()) {
            if !cjk.is_empty() {
                flush(&mut word, &mut cjk, &mut f);
            }
            word.push(c);
        } else if !word.is_empty() || !cjk.is_empty() {
            flush(&mut word, &mut cjk, &mut f);
        }
    }
    flush(&mut word, &mut cjk, &mut f);
}

/// [`each_run`] of an ASCII text (no CJK), on bytes and without copying:
/// the same words, several times faster (kb-score tokenizes the best
/// documents again at query time).
fn each_ascii_word(norm: &str, mut f: impl FnMut(&str)) {
    let b = norm.as_bytes();
    let mut start: Option<usize> = None;
    let emit = |from: usize, to: usize, f: &mut dyn FnMut(&str)| {
        let w = norm[from..to].trim_end_matches(['\'', '_']);
        if !w.is_empty() {
            f(w);
        }
    };
    for (i, &c) in b.iter().enumerate() {
        if c.is_ascii_alphanumeric() {
            start.get_or_insert(i);
        } else if c != b'\'' && c != b'_' {
            // `'` and `_` continue a word (and are trimmed from its end).
            if let Some(s) = start.take() {
                emit(s, i, &mut f);
            }
        }
    }
    if let Some(s) = start {
        emit(s, b.len(), &mut f);
    }
}

/// Calls `f` with each token [`tokens`] returns, in the same order,
/// without allocating a string per token (kb-score indexes whole
/// libraries with it). ASCII text skips NFKC, which leaves it unchanged.
pub fn each_token(text: &str, mut f: impl FnMut(&str)) {
    let norm = if text.is_ascii() { text.to_ascii_lowercase() } else { normalise(text) };
    let mut pair = String::new();
    each_run(&norm, |run| match run {
        Run::Word(w) => f(w),
        Run::Cjk([c]) => {
            pair.clear();
            pair.push(*c);
            f(&pair);
        }
        Run::Cjk(r) => {
            for w in r.windows(2) {
                pair.clear();
                pair.push(w[0]);
                pair.push(w[1]);
                f(&pair);
            }
        }
    });
}

/// The candidate nearest to `word` by edit distance, when near enough:
/// the "did you mean" of every name a person or a program can mistype
/// (a flag, a command, a request's key).
pub fn closest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (distance(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over chars.
pub fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Bytes as lower-case hex: here, below `doc` (tests/layers.rs), so the
/// encoder's digests and cache names and `doc::digest` share one.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(2 * bytes.len());
    for b in bytes {
        s.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        s.push(char::from_digit(u32::from(b & 0xf), 16).unwrap_or('0'));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("topic", "topic"), 0);
        assert_eq!(distance("tpoic", "topic"), 2);
        assert_eq!(distance("day", "days"), 1);
    }

    #[test]
    fn ascii_words_are_those_of_the_char_scan() {
        let words = |t: &str, ascii: bool| {
            let mut out: Vec<String> = Vec::new();
            let mut push = |r: Run| {
                if let Run::Word(w) = r {
                    out.push(w.to_string())
                }
            };
            if ascii {
                each_ascii_word(t, |w| push(Run::Word(w)))
            } else {
                each_char_run(t, &mut push)
            }
            out
        };
        for t in ["don't _x_ y__ 'q' a'b'' __ il-6 h2o. 9'", "", "'", "a", "x_y's end_", "  two  words  "] {
            assert_eq!(words(t, true), words(t, false), "{t:?}");
        }
    }

    #[test]
    fn english_and_chinese_tokens() {
        assert_eq!(tokens("Don't use VAR, use let/const!"), ["don't", "use", "var", "use", "let", "const"]);
        assert_eq!(tokens("不要用var"), ["不要", "要用", "var"]);
        assert_eq!(tokens("ＡＢＣ 好"), ["abc", "好"]);
        assert_eq!(normalise("Ｘ ﬁ ½ µg Σβ"), "x fi 1⁄2 μg σβ");
        assert_eq!(normalise("TNF-α ≥ 2 °C"), "tnf-α ≥ 2 °c");
        assert_eq!(grams("Go it"), [" go", "go ", " it", "it "]);
        assert_eq!(grams("打印语句"), ["打", "印", "语", "句", "打印", "印语", "语句"]);
        assert_eq!(grams("用pnpm"), ["用", " pn", "pnp", "npm", "pm "]);
        assert_eq!(canonical("  Use   PNPM. "), "use pnpm");
        assert!(mostly_cjk("这里不要用 var"));
        assert!(!mostly_cjk("use pnpm for installs, 好"));
    }

    #[test]
    fn word_edges() {
        assert_eq!(
            tokens("_x_ 'quoted' snake_case 한국어 知识库搜索 A"),
            ["x", "quoted", "snake_case", "한국", "국어", "知识", "识库", "库搜", "搜索", "a"]
        );
        assert!(tokens("!!").is_empty() && tokens("").is_empty());
    }
}
