//! Active content in SVG files: an SVG is a document a browser runs, so a
//! skill's `icon.svg` holding `<script>`, an event handler (`onload=`), a
//! `javascript:` link or `<foreignObject>` HTML runs code when someone
//! opens it. The text rules cannot tell such an icon from a plain one
//! (none of those words is a threat in prose), so SVGs get this
//! structural look: only tags and their attribute values are read, and a
//! plain icon (paths, gradients, `<title>`, `xlink:href="#id"`) has no
//! finding: shipping an icon is not a finding.

/// One piece of active content: 0-based byte offset in the text and the
/// text as written (up to the part that makes it active).
#[derive(Debug, PartialEq, Eq)]
pub struct Active {
    /// Byte offset of the match in the scanned text.
    pub at: usize,
    /// The matched text as written.
    pub matched: String,
}

/// Whether a file is an SVG: by its name, or by text that opens with an
/// XML prolog or an `<svg` tag (a renamed SVG still renders as one).
pub fn is_svg(path: &str, text: &str) -> bool {
    if path.to_ascii_lowercase().ends_with(".svg") {
        return true;
    }
    let head = text.trim_start_matches('\u{feff}').trim_start();
    let starts = |p: &str| head.as_bytes().get(..p.len()).is_some_and(|h| h.eq_ignore_ascii_case(p.as_bytes()));
    if starts("<svg") {
        return true;
    }
    // Only an XML prologue is read further (lowercasing every file's head
    // cost a scan an allocation and a copy per file).
    starts("<?xml") && head.get(..head.len().min(4096)).unwrap_or(head).to_ascii_lowercase().contains("<svg")
}

/// Schemes that run code when a link or a resource is followed.
const SCHEMES: &[&str] = &["javascript:", "vbscript:", "data:text/html"];

/// Elements that run code or embed HTML inside an SVG.
const ELEMENTS: &[&str] = &["script", "foreignobject"];

/// Every piece of active content in `text`, in order.
pub fn find(text: &str) -> Vec<Active> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(off) = b[i..].iter().position(|&c| c == b'<') {
        let start = i + off;
        if b[start..].starts_with(b"<!--") {
            i = find_from(b, start + 4, b"-->").map_or(b.len(), |e| e + 3);
            continue;
        }
        if !b.get(start + 1).is_some_and(u8::is_ascii_alphabetic) {
            i = start + 1;
            continue;
        }
        i = tag(text, start, &mut out);
    }
    out
}

fn find_from(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    b.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|p| p + from)
}

/// Reads the tag opening at `start` (`<name attrs>`), records its active
/// parts, and returns where the tag ends.
fn tag(text: &str, start: usize, out: &mut Vec<Active>) -> usize {
    let b = text.as_bytes();
    let name_end = (start + 1..b.len()).find(|&j| !is_name_byte(b[j])).unwrap_or(b.len());
    let name = text[start + 1..name_end].to_ascii_lowercase();
    let local = name.rsplit(':').next().unwrap_or(&name);
    if ELEMENTS.contains(&local) {
        out.push(Active { at: start, matched: text[start..name_end].to_string() });
    }
    let mut j = name_end;
    loop {
        // Between attributes: whitespace and `/` (`<g/onclick=...>`).
        while j < b.len() && (b[j].is_ascii_whitespace() || b[j] == b'/') {
            j += 1;
        }
        if j >= b.len() || b[j] == b'>' || b[j] == b'<' {
            return (j + 1).min(b.len());
        }
        let attr = j;
        while j < b.len() && !b[j].is_ascii_whitespace() && !matches!(b[j], b'=' | b'>' | b'/' | b'<') {
            j += 1;
        }
        let attr_name = text[attr..j].to_ascii_lowercase();
        let mut k = j;
        while k < b.len() && b[k].is_ascii_whitespace() {
            k += 1;
        }
        if b.get(k) != Some(&b'=') {
            if j == attr {
                j += 1; // a stray byte: step over it
            }
            continue;
        }
        let local = attr_name.rsplit(':').next().unwrap_or(&attr_name);
        if local.len() > 2 && local.starts_with("on") && local[2..].bytes().all(|c| c.is_ascii_alphabetic()) {
            out.push(Active { at: attr, matched: text[attr..=k].to_string() });
        }
        k += 1;
        while k < b.len() && b[k].is_ascii_whitespace() {
            k += 1;
        }
        let (v_start, v_end, next) = match b.get(k) {
            Some(&q) if q == b'"' || q == b'\'' => {
                let end = (k + 1..b.len()).find(|&e| b[e] == q).unwrap_or(b.len());
                (k + 1, end, (end + 1).min(b.len()))
            }
            _ => {
                let end = (k..b.len()).find(|&e| b[e].is_ascii_whitespace() || b[e] == b'>').unwrap_or(b.len());
                (k, end, end)
            }
        };
        let value = &text[v_start..v_end];
        let parts = if local == "values" { value_parts(value) } else { vec![(0, value.len())] };
        for (at, len) in parts {
            if let Some(n) = scheme_len(&text[v_start + at..v_start + at + len]) {
                out.push(Active { at: v_start + at, matched: text[v_start + at..v_start + at + n].to_string() });
            }
        }
        j = next;
    }
}

fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b':' | b'.')
}

/// The `;`-separated parts of an `<animate values=...>` list (it may
/// hold a link among others), as (offset, length).
fn value_parts(v: &str) -> Vec<(usize, usize)> {
    let mut parts = Vec::new();
    let mut from = 0;
    for (i, c) in v.char_indices() {
        // `&#58;` ends in `;` but is part of the value: split on a `;` only
        // when it does not close an entity.
        if c == ';' && !closes_entity(&v[..i]) {
            parts.push((from, i - from));
            from = i + 1;
        }
    }
    parts.push((from, v.len() - from));
    parts
}

fn closes_entity(before: &str) -> bool {
    before.rfind('&').is_some_and(|a| before[a + 1..].bytes().all(|c| c.is_ascii_alphanumeric() || c == b'#'))
}

/// If `raw` (an attribute value as written) starts with a scheme that
/// runs code, once entities are decoded and the whitespace and control
/// characters a browser ignores in a URL are dropped, the length of `raw`
/// up to the end of that scheme.
fn scheme_len(raw: &str) -> Option<usize> {
    let mut decoded = String::new();
    let mut i = 0;
    while i < raw.len() {
        let (c, len) = decode_at(&raw[i..]);
        i += len;
        if c > ' ' {
            decoded.extend(c.to_lowercase());
        }
        if let Some(s) = SCHEMES.iter().find(|s| decoded.starts_with(**s)) {
            return (decoded.len() == s.len()).then_some(i);
        }
        if !SCHEMES.iter().any(|s| s.starts_with(decoded.as_str())) {
            return None;
        }
    }
    None
}

/// The character at the start of `s`, an entity decoded, and its length
/// as written.
fn decode_at(s: &str) -> (char, usize) {
    let first = s.chars().next().unwrap_or('\0');
    if first != '&' {
        return (first, first.len_utf8().max(1));
    }
    let body_end = s[1..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '#')).map_or(s.len(), |e| e + 1);
    let body = &s[1..body_end];
    let len = if s[body_end..].starts_with(';') { body_end + 1 } else { body_end };
    let num = if let Some(hex) = body.strip_prefix("#x").or_else(|| body.strip_prefix("#X")) {
        u32::from_str_radix(hex, 16).ok()
    } else if let Some(dec) = body.strip_prefix('#') {
        dec.parse().ok()
    } else {
        match body.to_ascii_lowercase().as_str() {
            "tab" => Some(9),
            "newline" => Some(10),
            "colon" => Some(58),
            "sol" => Some(47),
            "amp" => Some(38),
            _ => None,
        }
    };
    match num.and_then(char::from_u32) {
        Some(c) => (c, len),
        None => ('&', 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matched(text: &str) -> Vec<String> {
        find(text).into_iter().map(|a| a.matched).collect()
    }

    #[test]
    fn plain_icons_have_nothing() {
        let svg = "<svg><!-- <script> --><title>a onload= b</title><use xlink:href=\"#p\"/>\
                   <text data-x=\"a onload=b\">javascript: is a language</text></svg>";
        assert!(find(svg).is_empty(), "{:?}", find(svg));
        assert!(find("<a href=\"https://x.test/a;javascript:b\">").is_empty());
    }

    #[test]
    fn active_parts_are_found_as_written() {
        assert_eq!(matched("<svg onload=\"x\"><SCRIPT>y</SCRIPT></svg>"), ["onload=", "<SCRIPT"]);
        assert_eq!(matched("<svg:script href=x/>"), ["<svg:script"]);
        assert_eq!(matched("<a href=' JaVa\tScRiPt:x'>"), [" JaVa\tScRiPt:"]);
        assert_eq!(matched("<a href=\"&#106;avascript&#58;x\">"), ["&#106;avascript&#58;"]);
        assert_eq!(matched("<animate values=\"#a;javascript:x\"/>"), ["javascript:"]);
        assert_eq!(matched("<iframe src=data:text/html,x>"), ["data:text/html"]);
    }

    #[test]
    fn svgs_are_known_by_name_or_by_their_first_tag() {
        assert!(is_svg("a/icon.SVG", ""));
        assert!(is_svg("icon.png", "\u{feff}<?xml version=\"1.0\"?>\n<svg>"));
        assert!(is_svg("x", "  <svg/>"));
        assert!(!is_svg("notes.md", "# A note\n\n<svg onload=x>"));
    }
}
