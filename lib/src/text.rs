//! Unicode-aware words for matching and full-text search (kb-score's BM25
//! tier, kb-memgate's similarity): NFKC normalisation, case folding, and
//! CJK text split into overlapping character bigrams so that Chinese and
//! Japanese documents, which do not separate words by spaces, are
//! searchable.

use unicode_normalization::UnicodeNormalization;

/// Whether a character belongs to a script written without spaces between
/// words (Han ideographs, Hiragana, Katakana); runs of these become bigrams.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F  // Extensions B–F and compatibility supplement
        | 0x31F0..=0x31FF    // Katakana phonetic extensions
    )
}

/// NFKC-normalises and case-folds text (full-width letters become ASCII,
/// ligatures split, `Ä` and `ä` compare equal).
pub fn fold(text: &str) -> String {
    if text.is_ascii() {
        // ASCII is already NFKC; lowercasing is its whole case folding.
        return text.to_ascii_lowercase();
    }
    text.nfkc().flat_map(char::to_lowercase).collect()
}

/// The words of a text, in order: runs of letters and digits, folded; each
/// run of CJK characters becomes its overlapping character bigrams (a lone
/// CJK character stays a unigram).
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    each_token(text, |t| out.push(t.to_string()));
    out
}

/// Calls `f` with each word [`tokens`] would return, in order, without
/// allocating a string per word (for indexing large libraries).
pub fn each_token(text: &str, mut f: impl FnMut(&str)) {
    let folded = fold(text);
    let mut word = String::new();
    let mut cjk: Vec<char> = Vec::new();
    let mut pair = String::new();
    let mut flush_cjk = |run: &mut Vec<char>, f: &mut dyn FnMut(&str)| {
        if run.len() == 1 {
            pair.clear();
            pair.push(run[0]);
            f(&pair);
        } else {
            for w in run.windows(2) {
                pair.clear();
                pair.push(w[0]);
                pair.push(w[1]);
                f(&pair);
            }
        }
        run.clear();
    };
    for c in folded.chars() {
        if is_cjk(c) {
            if !word.is_empty() {
                f(&word);
                word.clear();
            }
            cjk.push(c);
        } else if c.is_alphanumeric() {
            if !cjk.is_empty() {
                flush_cjk(&mut cjk, &mut f);
            }
            word.push(c);
        } else {
            if !word.is_empty() {
                f(&word);
                word.clear();
            }
            if !cjk.is_empty() {
                flush_cjk(&mut cjk, &mut f);
            }
        }
    }
    if !word.is_empty() {
        f(&word);
    }
    if !cjk.is_empty() {
        flush_cjk(&mut cjk, &mut f);
    }
}

/// Character n-grams of the folded text with whitespace collapsed, for
/// fuzzy similarity between short texts; a text shorter than `n` yields
/// itself.
pub fn char_ngrams(text: &str, n: usize) -> Vec<String> {
    let folded = fold(text);
    let chars: Vec<char> = folded.split_whitespace().collect::<Vec<_>>().join(" ").chars().collect();
    if n == 0 || chars.is_empty() {
        return Vec::new();
    }
    if chars.len() <= n {
        return vec![chars.iter().collect()];
    }
    chars.windows(n).map(|w| w.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_folded_and_cjk_is_bigrammed() {
        assert_eq!(tokens("JWT-Auth ＡＰＩ Straße"), ["jwt", "auth", "api", "straße"]);
        assert_eq!(tokens("知识库搜索"), ["知识", "识库", "库搜", "搜索"]);
        assert_eq!(tokens("用JWT认证"), ["用", "jwt", "认证"]);
        assert!(tokens("  -- !! ").is_empty());
    }

    #[test]
    fn ngrams() {
        assert_eq!(char_ngrams("Ab  c", 2), ["ab", "b ", " c"]);
        assert_eq!(char_ngrams("x", 3), ["x"]);
    }
}
