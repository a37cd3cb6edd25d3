//! Markdown tables read as their reader reads them: a row's cells are one
//! text, and so is a column read down its rows. A phrase cut by cell
//! borders (`| ignore all previous | instructions |`) or by a row break
//! is still said, while the line as written holds a `|` (or a line break)
//! in the middle of it. The guard matches these joined readings as well
//! as the lines, so this step can only add findings; each is reported at
//! the first row it spans (a rule the next row holds by itself is that
//! row's finding).

use super::work::{self, Step};

/// Readings of every GFM table in `text` (a header row, a delimiter row
/// such as `|---|:--:|`, then the rows that follow up to a line without a
/// `|`), as `(1-based line, joined text)`: for each row, its cells then
/// the next row's; and for each column, its cell then the one below it.
/// A line may have several readings. The delimiter row is not a row.
fn view(text: &str) -> Readings {
    work::add(Step::Deobfuscate, text.len());
    // Every table row holds a `|`: most files have none (one SIMD search).
    if memchr::memchr(b'|', text.as_bytes()).is_none() {
        return Readings::default();
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let (mut out, mut next_rows) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i + 1 < lines.len() {
        if !(lines[i].contains('|') && delimiter_row(lines[i + 1])) {
            i += 1;
            continue;
        }
        // (file line, cells) of the header and each body row.
        let mut rows = vec![(i + 1, cells(lines[i]))];
        let mut j = i + 2;
        while j < lines.len() && lines[j].contains('|') && !lines[j].trim().is_empty() {
            rows.push((j + 1, cells(lines[j])));
            j += 1;
        }
        for (k, (line, row)) in rows.iter().enumerate() {
            let next = rows.get(k + 1).map(|(_, r)| r.as_slice()).unwrap_or_default();
            next_rows.extend(rows.get(k + 1).map(|(n, _)| (*line, *n)));
            let joined: Vec<&str> = row.iter().chain(next).map(String::as_str).filter(|c| !c.is_empty()).collect();
            out.push((*line, joined.join(" ")));
            if row.len() > 1 {
                for (c, cell) in row.iter().enumerate() {
                    if let Some(below) = next.get(c).filter(|b| !b.is_empty() && !cell.is_empty()) {
                        out.push((*line, format!("{cell} {below}")));
                    }
                }
            }
        }
        i = j;
    }
    Readings { texts: out, next: next_rows }
}

/// The readings of a text's tables: [`view`], and each reading with the
/// evasions [`super::deobfuscate`] undoes undone (`| r"m" | -rf ~/ |`)
/// when that changes it.
#[derive(Debug, Default)]
pub struct Readings {
    /// `(1-based line, joined text)`, several per line.
    pub texts: Vec<(usize, String)>,
    /// Each row's line and the next row's (sorted).
    next: Vec<(usize, usize)>,
}

impl Readings {
    /// The line of the row after the one at `line`: the row a reading at
    /// `line` runs on into.
    pub fn next_row(&self, line: usize) -> Option<usize> {
        self.next.binary_search_by_key(&line, |(l, _)| *l).ok().map(|i| self.next[i].1)
    }
}

/// Every table of `text` read as [`Readings`].
pub fn readings(text: &str) -> Readings {
    let mut r = view(text);
    if r.texts.is_empty() {
        return r;
    }
    let joined: Vec<&str> = r.texts.iter().map(|(_, s)| s.as_str()).collect();
    let undone = super::deobfuscate::view(&joined.join("\n"), false);
    let undone: Vec<(usize, String)> = undone.into_iter().map(|(local, s)| (r.texts[local - 1].0, s)).collect();
    r.texts.extend(undone);
    r
}

/// A GFM delimiter row: cells of dashes with optional alignment colons
/// (`---`, `:--`, `--:`), with a `|` between or around them.
fn delimiter_row(line: &str) -> bool {
    let t = line.trim();
    t.contains('|')
        && t.contains('-')
        && t.split('|')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .all(|c| c.trim_start_matches(':').trim_end_matches(':').bytes().all(|b| b == b'-') && c.contains('-'))
}

/// A row's cells, trimmed: split at each `|` that is not escaped, the
/// outer pipes dropped, `\|` read as the `|` it shows.
fn cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = match t.strip_suffix('|') {
        Some(s) if !s.ends_with('\\') => s,
        _ => t,
    };
    let mut out = Vec::new();
    let mut cell = String::new();
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => out.push(std::mem::take(&mut cell).trim().to_string()),
            c => cell.push(c),
        }
    }
    out.push(cell.trim().to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_columns_are_read_joined() {
        let r = readings("intro | x\n| a | b |\n|:--|--:|\n| c \\| d | e |\n\nafter | y\n");
        let want = [(2, "a b c | d e"), (2, "a c | d"), (2, "b e"), (4, "c | d e")];
        let got: Vec<(usize, &str)> = r.texts.iter().map(|(l, s)| (*l, s.as_str())).collect();
        assert_eq!(got, want);
        assert_eq!((r.next_row(2), r.next_row(4), r.next_row(1)), (Some(4), None, None));
    }

    #[test]
    fn only_tables_are_read() {
        assert!(readings("a | b\nc | d\n").texts.is_empty());
        assert!(readings("a | b\n---\n").texts.is_empty(), "a rule under a line is no delimiter row");
        assert!(!delimiter_row("|--|x|"));
        assert!(delimiter_row("--|--"));
        assert_eq!(cells("| a | `b` |"), ["a", "`b`"]);
        assert_eq!(cells("a \\|"), ["a |"]);
    }
}
