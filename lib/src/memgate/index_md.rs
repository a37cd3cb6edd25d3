//! `INDEX.md`, seed 003 "INDEX 格式": one table with the seed's exact
//! header, one row per note, File as `memory/notes/MEM-xxx.md`. A new
//! note's row is appended to the file (no rewrite), a changed note's row
//! is replaced in place and removed notes lose their row; a file whose
//! table cannot be read is an error (nothing is written over it).

use super::candidate::one_line;
use super::note::{file_name, Note};

/// The seed's header, byte for byte.
pub const HEADER: &str =
    "| Id | Kind | Title | When to load | Status | Strength | Scope | Supersedes | CreatedAt | UpdatedAt | Source | Session | File |";

const COLUMNS: usize = 13;
const TITLE: &str = "# Memory Index\n\n";

/// One row: the thirteen cells, unescaped.
pub type Row = Vec<String>;

/// The row a note should have.
pub fn row(note: &Note) -> Row {
    let b = &note.body;
    vec![
        note.id.clone(),
        b.kind.clone(),
        b.title.clone(),
        b.when_to_load.join("; "),
        note.status.clone(),
        b.recommendation.strength.clone(),
        b.recommendation.scope.clone(),
        note.supersedes.join(", "),
        note.created_at.clone(),
        note.updated_at.clone(),
        b.source.clone(),
        note.session.clone(),
        format!("memory/notes/{}", file_name(&note.id)),
    ]
    .into_iter()
    .map(|c| one_line(&c))
    .collect()
}

fn escape(cell: &str) -> String {
    cell.replace('|', "\\|")
}

/// Splits a table line into unescaped cells.
fn cells(line: &str) -> Option<Vec<String>> {
    let inner = line.trim().strip_prefix('|')?.strip_suffix('|')?;
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cur.push('|');
                chars.next();
            }
            '|' => out.push(std::mem::take(&mut cur).trim().to_string()),
            _ => cur.push(c),
        }
    }
    out.push(cur.trim().to_string());
    Some(out)
}

/// Parses INDEX.md into its rows. An empty or missing file has none; a
/// file without the seed's header, or with a row of the wrong width, is
/// corrupted.
pub fn parse(text: &str) -> Result<Vec<Row>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut lines = text.lines().enumerate().skip_while(|(_, l)| l.trim() != HEADER);
    if lines.next().is_none() {
        return Err("INDEX.md has no table with the header '| Id | Kind | Title | … | File |'".into());
    }
    let mut rows = Vec::new();
    for (i, line) in lines {
        let t = line.trim();
        if t.is_empty() {
            break;
        }
        let Some(c) = cells(t) else {
            return Err(format!("INDEX.md:{}: not a table row", i + 1));
        };
        if c.iter().all(|x| x.chars().all(|ch| ch == '-' || ch == ':')) {
            continue;
        }
        if c.len() != COLUMNS {
            return Err(format!("INDEX.md:{}: row has {} cells, expected {COLUMNS}", i + 1, c.len()));
        }
        if !c[0].starts_with("MEM-") {
            return Err(format!("INDEX.md:{}: Id '{}' does not start with MEM-", i + 1, c[0]));
        }
        rows.push(c);
    }
    Ok(rows)
}

/// Renders the rows under the seed's header.
pub fn render(rows: &[Row]) -> String {
    let mut out = String::from(TITLE);
    out.push_str(HEADER);
    out.push('\n');
    out.push_str(&format!("|{}\n", "---|".repeat(COLUMNS)));
    for r in rows {
        out.push_str(&render_row(r));
    }
    out
}

/// One row as its table line.
pub fn render_row(r: &Row) -> String {
    let cells: Vec<String> = r.iter().map(|c| escape(c)).collect();
    format!("| {} |\n", cells.join(" | "))
}

/// Whether a new row can be appended to this INDEX.md as it stands: it
/// holds the seed's table and ends with one of its lines, whole. Checks
/// the header, the last line and that no blank line ends the table
/// early, not every row, so adding a note costs about the same at 10,000
/// notes as at 1,000; a damaged row further up is found by the next full
/// parse (`reindex --check`).
pub fn appendable(text: &str) -> bool {
    let Some(at) = text.find(HEADER) else { return false };
    let last = text.trim_end_matches('\n').rsplit('\n').next().unwrap_or("");
    text.ends_with('\n') && last.starts_with('|') && !text[at..].contains("\n\n")
}

/// Brings the rows in line with a change: rows of `removed` ids go, the
/// row of each `upserted` note is replaced in place or appended.
pub fn update(rows: &mut Vec<Row>, removed: &[String], upserted: &[&Note]) {
    rows.retain(|r| !removed.contains(&r[0]));
    for n in upserted {
        let new = row(n);
        match rows.iter_mut().find(|r| r[0] == n.id) {
            Some(r) => *r = new,
            None => rows.push(new),
        }
    }
}

/// The rows the notes call for, ordered by CreatedAt then Id (what
/// `reindex` writes).
pub fn from_notes(notes: &[Note]) -> Vec<Row> {
    let mut sorted: Vec<&Note> = notes.iter().collect();
    sorted.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    sorted.into_iter().map(row).collect()
}
