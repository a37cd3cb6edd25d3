//! Text normalisation before matching: the guard must see
//! what a reader (or a model) sees, not what an attacker typed. UTF-16 with a
//! BOM is decoded; bytes that are not UTF-8 are reported and replaced, never
//! skipped; invisible and bidi control characters are removed and reported;
//! Unicode tag characters are decoded to the ASCII they hide; NFKC folds
//! fullwidth and compatibility forms; Latin words spelt with Cyrillic or
//! Greek look-alikes are mapped back to Latin and reported. Line breaks are
//! never added or removed, so line numbers stay those of the file.

use std::borrow::Cow;

use unicode_normalization::UnicodeNormalization;

use super::work::{self, Step};
use crate::out::is_bidi;

/// A normalisation event worth a finding: the rule id, where it first
/// happened (1-based line and character column), and what was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// A builtin rule id (`invisible_chars`, `bidi_control`, ...).
    pub rule: &'static str,
    /// 1-based line of the first occurrence.
    pub line: usize,
    /// 1-based character column of the first occurrence.
    pub column: usize,
    /// A short description with the count and the code points.
    pub matched: String,
}

/// Decoded, normalised text ready for matching.
#[derive(Debug)]
pub struct Normalised<'a> {
    /// The text the rules run on.
    pub text: Cow<'a, str>,
    /// What normalisation found.
    pub notes: Vec<Note>,
    /// 1-based numbers of the lines normalisation changed (sorted).
    pub changed_lines: Vec<usize>,
    /// `utf-8`, `utf-16le` or `utf-16be`.
    pub encoding: &'static str,
}

/// Removes invisible, bidi and tag characters from one line (tags are
/// dropped, not decoded: what they hide is not meant to be read). Returns
/// the cleaned line and how many characters of each rule went.
pub fn strip_hidden(line: &str) -> (String, Vec<(&'static str, usize)>) {
    let mut counts = [("invisible_chars", 0), ("bidi_control", 0), ("tag_chars", 0)];
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    for (i, &c) in chars.iter().enumerate() {
        if ('\u{E0000}'..='\u{E007F}').contains(&c) {
            counts[2].1 += 1;
        } else if is_bidi(c) {
            counts[1].1 += 1;
        } else if is_invisible(c) {
            let prev = i.checked_sub(1).map(|p| chars[p]);
            if ordinary_joiner(c, prev, chars.get(i + 1).copied()) {
                out.push(c);
            } else {
                counts[0].1 += 1;
            }
        } else {
            out.push(c);
        }
    }
    (out, counts.into_iter().filter(|(_, n)| *n > 0).collect())
}

/// Decodes `bytes` (BOM-aware) and normalises the text.
pub fn normalise(bytes: &[u8]) -> Normalised<'_> {
    let mut notes = Vec::new();
    let (text, encoding) = decode(bytes, &mut notes);
    let (text, changed_lines) = match text {
        Cow::Borrowed(t) => match fold(t, &mut notes) {
            None => (Cow::Borrowed(t), Vec::new()),
            Some((s, c)) => (Cow::Owned(s), c),
        },
        Cow::Owned(t) => match fold(&t, &mut notes) {
            None => (Cow::Owned(t), Vec::new()),
            Some((s, c)) => (Cow::Owned(s), c),
        },
    };
    Normalised { text, notes, changed_lines, encoding }
}

/// Bytes to text without folding (for `sanitize`, which keeps lines it does
/// not change as they were): BOMs, UTF-16 and invalid UTF-8 handled.
pub fn decode_lossy(bytes: &[u8]) -> String {
    decode(bytes, &mut Vec::new()).0.into_owned()
}

/// Bytes to text: a UTF-8 BOM is dropped, UTF-16 with a BOM (or with the
/// unmistakable zero-byte pattern of ASCII in UTF-16) decoded, and invalid
/// sequences replaced by U+FFFD with an `invalid_utf8` note.
fn decode<'a>(bytes: &'a [u8], notes: &mut Vec<Note>) -> (Cow<'a, str>, &'static str) {
    work::add(Step::Decode, bytes.len());
    let utf16 = match bytes {
        [0xFF, 0xFE, ..] => Some((true, 2)),
        [0xFE, 0xFF, ..] => Some((false, 2)),
        _ => looks_utf16(bytes).map(|le| (le, 0)),
    };
    if let Some((le, skip)) = utf16 {
        let units = bytes[skip..].chunks(2).map(|c| {
            let pair = [c[0], *c.get(1).unwrap_or(&0)];
            if le {
                u16::from_le_bytes(pair)
            } else {
                u16::from_be_bytes(pair)
            }
        });
        let mut s = String::with_capacity(bytes.len() / 2);
        let mut bad = 0usize;
        for ch in char::decode_utf16(units) {
            match ch {
                Ok(c) => s.push(c),
                Err(_) => {
                    if bad == 0 {
                        notes.push(position_note("invalid_utf8", &s, "unpaired UTF-16 surrogate".into()));
                    }
                    bad += 1;
                    s.push('\u{FFFD}');
                }
            }
        }
        return (Cow::Owned(s), if le { "utf-16le" } else { "utf-16be" });
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(t) => (Cow::Borrowed(t), "utf-8"),
        Err(e) => {
            let valid = std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default();
            let lossy = String::from_utf8_lossy(bytes).into_owned();
            let count = lossy.matches('\u{FFFD}').count() - valid.matches('\u{FFFD}').count();
            notes.push(position_note(
                "invalid_utf8",
                valid,
                format!("{count} invalid UTF-8 sequence(s), scanned lossily"),
            ));
            (Cow::Owned(lossy), "utf-8")
        }
    }
}

/// A note at the end of `prefix` (the text before the event).
fn position_note(rule: &'static str, prefix: &str, matched: String) -> Note {
    let line = prefix.matches('\n').count() + 1;
    let column = prefix.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Note { rule, line, column, matched }
}

/// UTF-16 without a BOM: in the first 4 KiB, one byte parity is mostly zero
/// and the other almost never. Returns whether it is little-endian.
fn looks_utf16(bytes: &[u8]) -> Option<bool> {
    let head = &bytes[..bytes.len().min(4096) & !1];
    // Text without a zero byte (nearly every file) is not UTF-16: one
    // SIMD pass instead of two byte counts.
    if head.len() < 8 || memchr::memchr(0, head).is_none() {
        return None;
    }
    let pairs = head.len() / 2;
    let even = head.iter().step_by(2).filter(|&&b| b == 0).count();
    let odd = head.iter().skip(1).step_by(2).filter(|&&b| b == 0).count();
    if odd * 10 >= pairs * 7 && even * 20 <= pairs {
        Some(true)
    } else if even * 10 >= pairs * 7 && odd * 20 <= pairs {
        Some(false)
    } else {
        None
    }
}

/// Per-kind first occurrence and count, turned into notes at the end.
#[derive(Default)]
struct Tally {
    first: Option<(usize, usize)>,
    count: usize,
    samples: Vec<char>,
}

impl Tally {
    fn add(&mut self, line: usize, col: usize, c: char) {
        self.first.get_or_insert((line, col));
        self.count += 1;
        if self.samples.len() < 4 && !self.samples.contains(&c) {
            self.samples.push(c);
        }
    }

    fn note(&self, rule: &'static str, what: &str, notes: &mut Vec<Note>) {
        if let Some((line, column)) = self.first {
            let cps: Vec<String> = self.samples.iter().map(|c| format!("U+{:04X}", *c as u32)).collect();
            notes.push(Note { rule, line, column, matched: format!("{} {what} ({})", self.count, cps.join(" ")) });
        }
    }
}

#[derive(Default)]
struct Tallies {
    invisible: Tally,
    bidi: Tally,
    tags: Tally,
    homoglyph: Tally,
}

/// Folds the text line by line; `None` when nothing changed (ASCII text
/// takes the fast path and is never copied).
fn fold(text: &str, notes: &mut Vec<Note>) -> Option<(String, Vec<usize>)> {
    work::add(Step::Fold, text.len());
    if text.is_ascii() {
        return None;
    }
    let mut t = Tallies::default();
    let mut out = String::with_capacity(text.len());
    let mut changed = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match fold_line(line, i + 1, &mut t) {
            Some(l) => {
                out.push_str(&l);
                changed.push(i + 1);
            }
            None => out.push_str(line),
        }
    }
    t.invisible.note("invisible_chars", "invisible character(s) removed", notes);
    t.bidi.note("bidi_control", "bidi control character(s) removed", notes);
    t.tags.note("tag_chars", "tag character(s) decoded", notes);
    t.homoglyph.note("homoglyph", "look-alike letter(s) mapped to Latin", notes);
    if changed.is_empty() {
        None
    } else {
        Some((out, changed))
    }
}

fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{200B}'..='\u{200D}'
            | '\u{2060}'..='\u{2064}'
            | '\u{FEFF}'
            | '\u{180E}'
            | '\u{00AD}'
            | '\u{034F}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{3164}'
            | '\u{FFA0}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{E0100}'..='\u{E01EF}'
    )
}

/// Joiners and variation selectors between non-ASCII symbols are how emoji
/// and several scripts are written: removed, but not worth a finding. A
/// variation selector after a symbol (`⚙️ Setup`, `❤️,`) picks that
/// symbol's emoji or text look, whatever follows it; after a letter, a
/// digit or ASCII it can only split a word, and stays a finding.
fn ordinary_joiner(c: char, prev: Option<char>, next: Option<char>) -> bool {
    match c {
        '\u{FE0E}' | '\u{FE0F}' if prev.is_some_and(|p| !p.is_ascii() && !p.is_alphanumeric()) => true,
        '\u{200C}' | '\u{200D}' | '\u{FE0E}' | '\u{FE0F}' => {
            !prev.is_some_and(|p| p.is_ascii()) && !next.is_some_and(|n| n.is_ascii())
        }
        _ => false,
    }
}

fn fold_line(line: &str, line_no: usize, t: &mut Tallies) -> Option<String> {
    if line.is_ascii() {
        return None;
    }
    work::add(Step::Fold, line.len());
    // Each step below copies the line only when it has something to do:
    // most lines with non-ASCII text (prose in other scripts, emoji,
    // typography) hold nothing to strip, fold, map or look like Latin.
    let mut seen = Survey::of(line);
    let kept = if seen.hidden { Cow::Owned(strip(line, line_no, t)) } else { Cow::Borrowed(line) };
    let mut folded = match nfkc(&kept) {
        Cow::Owned(f) => {
            seen = Survey::of(&f);
            Cow::Owned(f)
        }
        Cow::Borrowed(_) => kept,
    };
    if seen.punctuation {
        folded = Cow::Owned(folded.chars().map(|c| punctuation(c).unwrap_or(c)).collect());
    }
    if let Some(mapped) = seen.lookalike.then(|| map_homoglyphs(&folded, line_no, &mut t.homoglyph)).flatten() {
        folded = Cow::Owned(mapped);
    }
    match folded {
        Cow::Owned(f) if f != line => Some(f),
        _ => None,
    }
}

/// What one pass over a line's characters finds for the steps of
/// [`fold_line`]: whether any is [`hidden`], is [`punctuation`] to map, or
/// is a look-alike ([`confusable`]).
struct Survey {
    hidden: bool,
    punctuation: bool,
    lookalike: bool,
}

impl Survey {
    fn of(s: &str) -> Survey {
        let mut seen = Survey { hidden: false, punctuation: false, lookalike: false };
        for c in s.chars().filter(|c| !c.is_ascii()) {
            seen.hidden |= hidden(c);
            seen.punctuation |= punctuation(c).is_some();
            seen.lookalike |= confusable(c).is_some();
        }
        seen
    }
}

/// Bytes of a line normalised as one piece, at least (a piece ends before
/// an ASCII character).
const NFKC_PIECE: usize = 64;

/// `s` in NFKC, normalising only the pieces that may change. An ASCII
/// character is a starter that nothing before it composes with, so the
/// text splits before each into pieces that normalise on their own; a
/// piece the quick check passes is kept as it is. A long line with a few
/// fullwidth letters costs their pieces, not a normalisation of the whole
/// line.
fn nfkc(s: &str) -> Cow<'_, str> {
    use unicode_normalization::{is_nfkc_quick, IsNormalized};
    if is_nfkc_quick(s.chars()) == IsNormalized::Yes {
        return Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut from = 0;
    while from < b.len() {
        let to = (from + NFKC_PIECE..b.len()).find(|&i| b[i].is_ascii()).unwrap_or(b.len());
        let piece = &s[from..to];
        if is_nfkc_quick(piece.chars()) == IsNormalized::Yes {
            out.push_str(piece);
        } else {
            out.extend(piece.nfkc());
        }
        from = to;
    }
    Cow::Owned(out)
}

/// Whether `c` is removed from a line (or decoded, for tags) before
/// matching: a tag, bidi control or invisible character.
fn hidden(c: char) -> bool {
    ('\u{E0000}'..='\u{E007F}').contains(&c) || is_bidi(c) || is_invisible(c)
}

/// `line` with its [`hidden`] characters gone (tags decoded to the ASCII
/// they spell), each counted in `t` at its character column but the
/// joiners that are how a script is written ([`ordinary_joiner`]).
fn strip(line: &str, line_no: usize, t: &mut Tallies) -> String {
    let mut kept = String::with_capacity(line.len());
    let mut prev = None;
    let mut chars = line.chars().peekable();
    let mut col = 0;
    while let Some(c) = chars.next() {
        col += 1;
        match c {
            '\u{E0020}'..='\u{E007E}' => {
                t.tags.add(line_no, col, c);
                kept.push(char::from((c as u32 - 0xE0000) as u8));
            }
            '\u{E0000}'..='\u{E007F}' => t.tags.add(line_no, col, c),
            c if is_bidi(c) => t.bidi.add(line_no, col, c),
            c if is_invisible(c) => {
                if !ordinary_joiner(c, prev, chars.peek().copied()) {
                    t.invisible.add(line_no, col, c);
                }
            }
            c => kept.push(c),
        }
        prev = Some(c);
    }
    kept
}

/// ASCII punctuation that dashes, minus signs and odd slashes imitate
/// (`rm \u{2010}rf`): mapped wherever they appear, since no word is spelt
/// with them; NFKC leaves most of them alone.
fn punctuation(c: char) -> Option<char> {
    Some(match c {
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}' | '\u{2212}' | '\u{FE58}'
        | '\u{FE63}' | '\u{2043}' | '\u{02D7}' => '-',
        '\u{2044}' | '\u{2215}' | '\u{29F8}' | '\u{2571}' => '/',
        '\u{2216}' | '\u{29F5}' | '\u{29F9}' => '\\',
        '\u{2758}' | '\u{2223}' | '\u{01C0}' => '|',
        '\u{02DC}' | '\u{2053}' | '\u{223C}' => '~',
        '\u{A789}' | '\u{0589}' | '\u{2236}' => ':',
        _ => return None,
    })
}

/// The Latin letter a Cyrillic, Greek or other look-alike stands for.
fn confusable(c: char) -> Option<char> {
    Some(match c {
        'а' | 'α' | 'ɑ' => 'a',
        'с' | 'ϲ' => 'c',
        'ԁ' => 'd',
        'е' | 'ε' => 'e',
        'һ' => 'h',
        'і' | 'ι' | 'ı' => 'i',
        'ј' => 'j',
        'κ' => 'k',
        'ӏ' => 'l',
        'ո' => 'n',
        'о' | 'ο' | 'օ' => 'o',
        'р' | 'ρ' => 'p',
        'ԛ' => 'q',
        'ѕ' => 's',
        'υ' | 'ս' => 'u',
        'ν' => 'v',
        'ԝ' => 'w',
        'х' | 'χ' => 'x',
        'у' | 'ү' => 'y',
        'ɡ' => 'g',
        'А' | 'Α' => 'A',
        'В' | 'Β' => 'B',
        'С' | 'Ϲ' => 'C',
        'Е' | 'Ε' => 'E',
        'Н' | 'Η' => 'H',
        'І' | 'Ι' => 'I',
        'Ј' => 'J',
        'К' | 'Κ' => 'K',
        'М' | 'Μ' => 'M',
        'Ν' => 'N',
        'О' | 'Ο' => 'O',
        'Р' | 'Ρ' => 'P',
        'Ѕ' => 'S',
        'Т' | 'Τ' => 'T',
        'Х' | 'Χ' => 'X',
        'У' | 'Υ' => 'Y',
        'Ζ' => 'Z',
        'ɩ' | 'ǀ' => 'l',
        'ɾ' => 'r',
        'ѡ' | 'ɯ' => 'w',
        'ʏ' => 'y',
        'ᴄ' => 'c',
        'ᴏ' => 'o',
        'ᴠ' => 'v',
        'ᴡ' => 'w',
        'ᴢ' => 'z',
        'ⅼ' => 'l',
        'ꓲ' => 'I',
        'Ꭺ' => 'A',
        'Ᏼ' => 'B',
        'Ꮯ' => 'C',
        'Ꭼ' => 'E',
        'Ꮋ' => 'H',
        'Ꮶ' => 'K',
        'Ꮇ' => 'M',
        'Ꮲ' => 'P',
        'Ꮪ' => 'S',
        'Ꭲ' => 'T',
        'Ꮃ' => 'W',
        'Ꮓ' => 'Z',
        'Ү' => 'Y',
        'Ԁ' => 'D',
        'Ԛ' => 'Q',
        'Ԝ' => 'W',
        'Ѵ' | 'ѵ' => 'v',
        'ԍ' => 'G',
        'ǃ' => '!',
        _ => return None,
    })
}

/// Maps look-alikes inside words that are Latin words in disguise: words
/// mixing ASCII letters with look-alikes, or made only of look-alikes and at
/// least four letters long. Real Cyrillic or Greek words are left alone.
fn map_homoglyphs(s: &str, line_no: usize, tally: &mut Tally) -> Option<String> {
    if s.is_ascii() {
        return None;
    }
    let chars: Vec<char> = s.chars().collect();
    work::add(Step::Fold, chars.len());
    let mut latin_tokens: Option<Vec<usize>> = None;
    let mut out: Option<Vec<char>> = None;
    let mut i = 0;
    while i < chars.len() {
        if !alphanumeric(chars[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && alphanumeric(chars[i]) {
            i += 1;
        }
        let word = &chars[start..i];
        let looks = word.iter().filter(|c| confusable(**c).is_some()).count();
        if looks == 0 || !word.iter().all(|c| c.is_ascii_alphanumeric() || confusable(*c).is_some()) {
            continue;
        }
        let has_ascii = word.iter().any(|c| c.is_ascii_alphabetic());
        if !has_ascii && word.len() < 4 {
            let latin = latin_tokens.get_or_insert_with(|| latin_marks(&chars));
            let own = word.iter().filter(|c| latin_mark(**c)).count();
            if latin[start] == own {
                continue;
            }
        }
        let buf = out.get_or_insert_with(|| chars.clone());
        for (k, c) in word.iter().enumerate() {
            if let Some(l) = confusable(*c) {
                tally.add(line_no, start + k + 1, *c);
                buf[start + k] = l;
            }
        }
    }
    out.map(|v| v.into_iter().collect())
}

/// [`char::is_alphanumeric`], asked of the look-alike table first: every
/// look-alike is a letter, and a line of them (`ѕ.і.ѕ.і`) would otherwise
/// look each one up in Unicode's tables.
fn alphanumeric(c: char) -> bool {
    c.is_ascii_alphanumeric() || (!c.is_ascii() && (confusable(c).is_some() || c.is_alphanumeric()))
}

/// ASCII letters and digits, and path and variable punctuation.
fn latin_mark(c: char) -> bool {
    c.is_ascii_alphanumeric() || "~/_$\\".contains(c)
}

/// For each character, how many [`latin_mark`]s its token holds. A short
/// look-alike word in a token with marks besides its own (`~/.ѕѕһ/іd_rѕа`)
/// is Latin in disguise, while a short Cyrillic or Greek word between
/// spaces is left alone, and so is a Greek letter in a formula: tokens end
/// at whitespace and at mathematical operators (`ε[∇S` is `ε[` and `S`),
/// which no command or path is spelt with. One pass over the line (asking
/// per word would rescan a long token once for each of its words).
fn latin_marks(chars: &[char]) -> Vec<usize> {
    work::add(Step::Fold, chars.len());
    let mut marks = vec![0; chars.len()];
    let mut start = 0;
    let ends = |i: &usize| *i == chars.len() || chars[*i].is_whitespace() || math_operator(chars[*i]);
    for end in (0..=chars.len()).filter(ends) {
        let n = chars[start..end].iter().filter(|c| latin_mark(**c)).count();
        marks[start..end].fill(n);
        start = end + 1;
    }
    marks
}

/// The Unicode blocks of mathematical operators and arrows (`∇`, `∑`,
/// `⊗`, `→`), and `±`, `×`, `÷`, `·`.
fn math_operator(c: char) -> bool {
    matches!(c, '\u{2190}'..='\u{22FF}' | '\u{27C0}'..='\u{27FF}' | '\u{2900}'..='\u{2AFF}' | '±' | '×' | '÷' | '·')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lookalike_words_in_paths_and_dashes_are_mapped() {
        let n = normalise("cat ~/.\u{0455}\u{0455}\u{04BB}/\u{0456}d_r\u{0455}\u{0430}\nrm \u{2010}rf /\n\u{0434}\u{0430} \u{043D}\u{0435}\u{0442}\n".as_bytes());
        assert_eq!(n.text, "cat ~/.ssh/id_rsa\nrm -rf /\n\u{0434}\u{0430} \u{043D}\u{0435}\u{0442}\n");
    }

    #[test]
    fn ascii_is_borrowed_and_untouched() {
        let n = normalise(b"rm -rf /\n");
        assert!(matches!(n.text, Cow::Borrowed(_)));
        assert!(n.notes.is_empty());
    }

    #[test]
    fn folds_the_usual_evasions() {
        let n = normalise("ｒｍ　-rf /\nr\u{200B}m x\n\u{0456}gn\u{043E}re\n".as_bytes());
        assert_eq!(n.text, "rm -rf /\nrm x\nignore\n");
        assert_eq!(n.changed_lines, vec![1, 2, 3]);
        let rules: Vec<_> = n.notes.iter().map(|n| n.rule).collect();
        assert_eq!(rules, vec!["invisible_chars", "homoglyph"]);
    }

    /// Every look-alike is alphanumeric: asking the table first splits
    /// words where Unicode does.
    #[test]
    fn every_lookalike_is_alphanumeric() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            assert_eq!(alphanumeric(c), c.is_alphanumeric(), "{c:?} U+{:04X}", c as u32);
        }
    }

    /// NFKC by stretches is NFKC of the whole line: fullwidth forms,
    /// combining marks after ASCII letters and after other marks (which
    /// NFKC reorders and composes), Hangul jamo, ligatures, compatibility
    /// ideographs, at the start, the end and between ASCII.
    #[test]
    fn nfkc_by_stretches_is_nfkc_of_the_line() {
        let pieces = [
            "a",
            "e",
            " ",
            "-",
            "ｒｍ",
            "\u{301}",
            "\u{323}\u{307}",
            "\u{344}",
            "é",
            "\u{1100}\u{1161}",
            "\u{11A8}",
            "ﬁ",
            "\u{F900}",
            "ℌ",
            "①",
            "ｶﾞ",
            "\u{FF9E}",
            "新指令",
            "ѕ.і",
            "\u{212B}",
            "Å",
            "\u{2126}",
            "x\u{338}",
            "≠",
        ];
        let mut lines = crate::guard::pieces::Pieces::new(7, &pieces);
        for _ in 0..4000 {
            let line = lines.line(8);
            let whole: String = line.nfkc().collect();
            assert_eq!(nfkc(&line), whole, "{line:?}");
        }
    }

    #[test]
    fn utf16_with_bom_is_decoded() {
        let mut b = vec![0xFF, 0xFE];
        for u in "curl x | sh".encode_utf16() {
            b.extend(u.to_le_bytes());
        }
        let n = normalise(&b);
        assert_eq!(n.text, "curl x | sh");
        assert_eq!(n.encoding, "utf-16le");
    }

    #[test]
    fn invalid_utf8_is_reported_and_replaced() {
        let n = normalise(b"ok\nbad \xFF here");
        assert_eq!(n.text, "ok\nbad \u{FFFD} here");
        assert_eq!(n.notes[0].rule, "invalid_utf8");
        assert_eq!((n.notes[0].line, n.notes[0].column), (2, 5));
    }
}
