//! Text for lexical matching in English and Chinese alike: NFKC, case
//! folding, word tokens for Latin-script runs and overlapping character
//! bigrams for CJK runs, and character n-grams. Seed 003's "semantic
//! neighbours" and kb-score's BM25 both need the same tokens, so they live
//! here and nowhere else.

use unicode_normalization::UnicodeNormalization;

/// NFKC plus lower case: full-width letters, ligatures and case no longer
/// separate two spellings of the same word.
pub fn normalise(text: &str) -> String {
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
    let norm = normalise(text);
    let mut out = Vec::new();
    let mut word = String::new();
    let mut cjk: Vec<char> = Vec::new();
    let flush_cjk = |cjk: &mut Vec<char>, out: &mut Vec<String>| {
        match cjk.len() {
            0 => {}
            1 => out.push(cjk[0].to_string()),
            _ => out.extend(cjk.windows(2).map(|w| w.iter().collect::<String>())),
        }
        cjk.clear();
    };
    let flush_word = |word: &mut String, out: &mut Vec<String>| {
        let w = word.trim_matches(|c| c == '\'' || c == '_');
        if !w.is_empty() {
            out.push(w.to_string());
        }
        word.clear();
    };
    for c in norm.chars() {
        if is_cjk(c) {
            flush_word(&mut word, &mut out);
            cjk.push(c);
        } else if c.is_alphanumeric() || ((c == '\'' || c == '_') && !word.is_empty()) {
            flush_cjk(&mut cjk, &mut out);
            word.push(c);
        } else {
            flush_word(&mut word, &mut out);
            flush_cjk(&mut cjk, &mut out);
        }
    }
    flush_word(&mut word, &mut out);
    flush_cjk(&mut cjk, &mut out);
    out
}

/// Character n-grams of the normalised text with every run of
/// non-alphanumeric characters collapsed to one space and a space at both
/// ends, so word boundaries take part ("the" → " th", "the", "he ").
/// Texts shorter than `n` give themselves as their one n-gram.
pub fn char_ngrams(text: &str, n: usize) -> Vec<String> {
    let n = n.max(1);
    let mut chars = vec![' '];
    for c in normalise(text).chars() {
        if c.is_alphanumeric() {
            chars.push(c);
        } else if chars.last() != Some(&' ') {
            chars.push(' ');
        }
    }
    if chars.last() != Some(&' ') {
        chars.push(' ');
    }
    if chars.len() <= 2 {
        return Vec::new();
    }
    if chars.len() < n {
        return vec![chars.iter().collect()];
    }
    chars.windows(n).map(|w| w.iter().collect()).collect()
}

/// The text with its words normalised and joined by single spaces: two
/// texts that differ only in case, width, punctuation or spacing give the
/// same string (the basis of exact-duplicate digests).
pub fn canonical(text: &str) -> String {
    tokens(text).join(" ")
}

/// Calls `f` with each token [`tokens`] returns, in the same order,
/// without allocating a string per token (kb-score indexes whole
/// libraries with it). ASCII text skips NFKC, which leaves it unchanged.
pub fn each_token(text: &str, mut f: impl FnMut(&str)) {
    let norm = if text.is_ascii() { text.to_ascii_lowercase() } else { normalise(text) };
    let mut word = String::new();
    let mut cjk: Vec<char> = Vec::new();
    let mut pair = String::new();
    let mut flush_cjk = |cjk: &mut Vec<char>, f: &mut dyn FnMut(&str)| {
        if cjk.len() == 1 {
            pair.clear();
            pair.push(cjk[0]);
            f(&pair);
        } else {
            for w in cjk.windows(2) {
                pair.clear();
                pair.push(w[0]);
                pair.push(w[1]);
                f(&pair);
            }
        }
        cjk.clear();
    };
    let flush_word = |word: &mut String, f: &mut dyn FnMut(&str)| {
        let w = word.trim_matches(|c| c == '\'' || c == '_');
        if !w.is_empty() {
            f(w);
        }
        word.clear();
    };
    for c in norm.chars() {
        if is_cjk(c) {
            if !word.is_empty() {
                flush_word(&mut word, &mut f);
            }
            cjk.push(c);
        } else if c.is_alphanumeric() || ((c == '\'' || c == '_') && !word.is_empty()) {
            if !cjk.is_empty() {
                flush_cjk(&mut cjk, &mut f);
            }
            word.push(c);
        } else {
            if !word.is_empty() {
                flush_word(&mut word, &mut f);
            }
            if !cjk.is_empty() {
                flush_cjk(&mut cjk, &mut f);
            }
        }
    }
    if !word.is_empty() {
        flush_word(&mut word, &mut f);
    }
    if !cjk.is_empty() {
        flush_cjk(&mut cjk, &mut f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_and_chinese_tokens() {
        assert_eq!(tokens("Don't use VAR, use let/const!"), ["don't", "use", "var", "use", "let", "const"]);
        assert_eq!(tokens("不要用var"), ["不要", "要用", "var"]);
        assert_eq!(tokens("ＡＢＣ 好"), ["abc", "好"]);
        assert_eq!(char_ngrams("The", 3), [" th", "the", "he "]);
        assert_eq!(canonical("  Use   PNPM. "), "use pnpm");
        assert!(mostly_cjk("这里不要用 var"));
        assert!(!mostly_cjk("use pnpm for installs, 好"));
    }

    #[test]
    fn each_token_matches_tokens() {
        for t in [
            "Don't use VAR, use let/const!",
            "不要用var",
            "ＡＢＣ 好",
            "_x_ 'quoted' snake_case 한국어 知识库搜索 A",
            "",
            "!!",
        ] {
            let mut got = Vec::new();
            each_token(t, |w| got.push(w.to_string()));
            assert_eq!(got, tokens(t), "{t}");
        }
    }
}
