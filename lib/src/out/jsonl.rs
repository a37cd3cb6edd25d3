//! JSON Lines in and out (DESIGN.md "Streams"): one reader that numbers
//! lines and turns bad ones into `error` records, one buffered writer that
//! treats a closed pipe as the end of the run.

use std::io::{self, BufRead, BufWriter, IsTerminal, Write};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Context, Error, Exit, Result};

/// One input line that did not parse, with its 1-based line number.
#[derive(Debug, Clone)]
pub struct LineError {
    /// 1-based line number in the input stream.
    pub line: usize,
    /// What was wrong with it.
    pub message: String,
}

/// The longest input line read whole (16 MiB): far over any request a
/// binary takes (a 1 MiB document escaped as `\u00XX` is 6 MiB), and what
/// bounds the memory a line without a newline (a 2 GB stream) can take.
pub const MAX_LINE: usize = 16 << 20;

/// The line limit for requests carrying up to `content_max` bytes of
/// content (`kb-append batch --max-bytes`): room for every byte escaped
/// as `\u00XX` and the other fields, never below [`MAX_LINE`].
pub fn line_limit_for(content_max: usize) -> usize {
    MAX_LINE.max(content_max.saturating_mul(6).saturating_add(64 << 10))
}

/// What [`read_line`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// The input ended before another line.
    End,
    /// A line, in the buffer without its newline.
    Fits,
    /// A line longer than the limit: read up to its newline and dropped
    /// (the buffer is empty).
    TooLong,
}

/// Reads one line into `buf` (cleared first, newline dropped) keeping at
/// most `limit` bytes of it: a longer line is read on to its newline and
/// dropped, never held whole, so a stream without newlines costs `limit`
/// bytes of memory, not its length.
pub fn read_line<R: BufRead + ?Sized>(reader: &mut R, buf: &mut Vec<u8>, limit: usize) -> io::Result<Line> {
    buf.clear();
    let (mut any, mut over) = (false, false);
    loop {
        let avail = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(match (any, over) {
                (false, _) => Line::End,
                (true, false) => Line::Fits,
                (true, true) => Line::TooLong,
            });
        }
        any = true;
        let newline = avail.iter().position(|&b| b == b'\n');
        let chunk = &avail[..newline.unwrap_or(avail.len())];
        if !over && buf.len() + chunk.len() > limit {
            over = true;
            buf.clear();
            buf.shrink_to(0);
        } else if !over {
            buf.extend_from_slice(chunk);
        }
        let used = newline.map_or(avail.len(), |i| i + 1);
        reader.consume(used);
        if newline.is_some() {
            return Ok(if over { Line::TooLong } else { Line::Fits });
        }
    }
}

/// Why a line over `limit` was not read, in every reader's words.
pub fn too_long(limit: usize) -> String {
    format!("the line is longer than the {limit}-byte line limit")
}

/// Reads JSON objects one per line; blank lines and a leading BOM are
/// skipped, a line that is not a JSON object (or is longer than
/// [`MAX_LINE`]) is yielded as a `LineError` and reading goes on.
pub fn read_objects<R: BufRead>(
    reader: R,
) -> impl Iterator<Item = (usize, std::result::Result<serde_json::Map<String, Value>, LineError>)> {
    read_objects_within(reader, MAX_LINE)
}

/// [`read_objects`] with its own line limit (see [`line_limit_for`]).
pub fn read_objects_within<R: BufRead>(
    mut reader: R,
    limit: usize,
) -> impl Iterator<Item = (usize, std::result::Result<serde_json::Map<String, Value>, LineError>)> {
    let mut line_no = 0;
    let mut bytes = Vec::new();
    let mut ended = false;
    std::iter::from_fn(move || {
        while !ended {
            line_no += 1;
            let err = |message: String| Some((line_no, Err(LineError { line: line_no, message })));
            match read_line(&mut reader, &mut bytes, limit) {
                Ok(Line::End) => ended = true,
                Err(e) => {
                    // A read error ends the input: it would repeat forever.
                    ended = true;
                    return err(format!("read error: {e}"));
                }
                Ok(Line::TooLong) => return err(too_long(limit)),
                Ok(Line::Fits) => {
                    if let Some(parsed) = object(&bytes, line_no) {
                        return Some((line_no, parsed));
                    }
                }
            }
        }
        None
    })
}

/// One line's JSON object, or why it is not one; `None` for a blank line.
fn object(bytes: &[u8], line_no: usize) -> Option<std::result::Result<serde_json::Map<String, Value>, LineError>> {
    let text = match std::str::from_utf8(bytes) {
        // A file saved by an editor that marks UTF-8 with a BOM.
        Ok(t) if line_no == 1 => t.strip_prefix('\u{feff}').unwrap_or(t).trim(),
        Ok(t) => t.trim(),
        Err(_) => return Some(Err(LineError { line: line_no, message: "line is not valid UTF-8".into() })),
    };
    if text.is_empty() {
        return None;
    }
    Some(match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => {
            Err(LineError { line: line_no, message: format!("expected a JSON object, found {}", kind_of(&other)) })
        }
        Err(e) => Err(LineError { line: line_no, message: format!("invalid JSON: {e}") }),
    })
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An `error` record (`schemas/error.schema.json`): the input line it
/// belongs to (if any), the message, then the fields that say what it is
/// about (`path`, `rule_file`, a refusal's `verdict` and `findings`, ...).
#[derive(Debug, Serialize)]
#[serde(tag = "record", rename = "error")]
pub struct ErrorRecord<'a, A: Serialize> {
    /// 1-based input line, for a rejected input line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// What went wrong.
    pub message: &'a str,
    /// What it is about.
    #[serde(flatten)]
    pub about: A,
}

/// The fields of an untyped `extra` object but those an error record
/// already has (it never overrides them).
fn about(extra: Option<&Value>, own: &[&str]) -> Map<String, Value> {
    let Some(Value::Object(m)) = extra else { return Map::new() };
    m.iter().filter(|(k, _)| !own.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// How records are printed: JSON Lines for programs, a table for people.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line.
    Jsonl,
    /// Aligned columns.
    Table,
}

impl Format {
    /// Parses `--format`; `extra` lists formats a binary adds (e.g. sarif).
    pub fn parse(s: &str) -> Result<Format> {
        match s {
            "jsonl" | "json" => Ok(Format::Jsonl),
            "table" => Ok(Format::Table),
            other => Err(Error::usage(format!("unknown format '{other}' (expected jsonl or table)"))),
        }
    }

    /// The default: a table on a terminal, JSON Lines into a pipe or file.
    pub fn default_for_stdout() -> Format {
        if io::stdout().is_terminal() {
            Format::Table
        } else {
            Format::Jsonl
        }
    }
}

/// The one writer of records to stdout: buffered, flushed at the end, and
/// the place where rejected input lines are reported (record + stderr).
pub struct Out {
    w: Sink,
    tool: &'static str,
    exit: Exit,
    /// Records held for one table at the end ([`Out::as_tables`]), when
    /// `--format table` asks a command that has no table of its own.
    held: Option<Vec<Value>>,
}

/// Where records go: stdout for the binaries, memory for a caller that
/// owns stdout itself (kb-mcp speaks JSON-RPC there).
enum Sink {
    Stdout(BufWriter<io::StdoutLock<'static>>),
    Memory(Vec<u8>),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Stdout(w) => w.write(buf),
            Sink::Memory(v) => v.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout(w) => w.flush(),
            Sink::Memory(_) => Ok(()),
        }
    }
}

impl Out {
    /// A writer for binary `tool` (used as the stderr prefix).
    pub fn stdout(tool: &'static str) -> Out {
        Out { w: Sink::Stdout(BufWriter::new(io::stdout().lock())), tool, exit: Exit::Success, held: None }
    }

    /// A writer that keeps the records in memory, for a caller that owns
    /// stdout; [`Out::captured`] hands them back.
    pub fn memory(tool: &'static str) -> Out {
        Out { w: Sink::Memory(Vec::new()), tool, exit: Exit::Success, held: None }
    }

    /// The exit status earned and the bytes written (empty for stdout).
    pub fn captured(mut self) -> Result<(Exit, Vec<u8>)> {
        self.w.flush().ctx(|| "writing to stdout")?;
        match self.w {
            Sink::Memory(v) => Ok((self.exit, v)),
            Sink::Stdout(_) => Ok((self.exit, Vec::new())),
        }
    }

    /// Prints the records as tables at the end instead of JSON lines:
    /// `--format table` for a command whose records have no table of their
    /// own. Consecutive records of one kind make one table, a column per
    /// field in the order first seen (see [`records_table`]).
    pub fn as_tables(&mut self) {
        self.held = Some(Vec::new());
    }

    /// Writes one record as a JSON line.
    pub fn record<T: Serialize + ?Sized>(&mut self, rec: &T) -> Result<()> {
        if let Some(held) = &mut self.held {
            held.push(serde_json::to_value(rec).map_err(|e| Error::msg(format!("cannot encode record: {e}")))?);
            return Ok(());
        }
        // Encoded first, so a closed pipe surfaces as an I/O error (quiet
        // exit), not as an encoding error.
        let mut line = serde_json::to_vec(rec).map_err(|e| Error::msg(format!("cannot encode record: {e}")))?;
        line.push(b'\n');
        self.w.write_all(&line).ctx(|| "writing to stdout")
    }

    /// Writes records as JSON lines, as [`Out::record`] one by one would:
    /// encoded on every core a thousand at a time, written in order, at
    /// most 64 thousand held encoded at once. A scan's tens of thousands of
    /// findings were encoded on one core while the other waited.
    pub fn records<T: Serialize + Sync>(&mut self, recs: &[T]) -> Result<()> {
        use rayon::prelude::*;
        if self.held.is_some() {
            return recs.iter().try_for_each(|r| self.record(r));
        }
        for window in recs.chunks(64 << 10) {
            let encoded: Vec<Result<Vec<u8>>> = window
                .par_chunks(1 << 10)
                .map(|chunk| {
                    let mut buf = Vec::new();
                    for rec in chunk {
                        serde_json::to_writer(&mut buf, rec)
                            .map_err(|e| Error::msg(format!("cannot encode record: {e}")))?;
                        buf.push(b'\n');
                    }
                    Ok(buf)
                })
                .collect();
            for chunk in encoded {
                self.w.write_all(&chunk?).ctx(|| "writing to stdout")?;
            }
        }
        Ok(())
    }

    /// Writes raw text (tables, reports).
    /// Control characters from the library are shown escaped
    /// ([`super::printable`]).
    pub fn text(&mut self, s: &str) -> Result<()> {
        self.w.write_all(super::printable(s, true).as_bytes()).ctx(|| "writing to stdout")
    }

    /// Writes bytes that are data, not a report: a sanitised document, a
    /// diff of a file's lines. They go out exactly as they are (a CRLF
    /// file keeps its `\r`).
    pub fn raw(&mut self, s: &str) -> Result<()> {
        self.w.write_all(s.as_bytes()).ctx(|| "writing to stdout")
    }

    /// Reports a rejected input line: an `error` record on stdout, a
    /// `tool: <stdin>:N: message` line on stderr, and a failing exit.
    pub fn line_error(&mut self, line: usize, message: &str, extra: Option<&Value>) -> Result<()> {
        self.exit = self.exit.max(Exit::Failure);
        eprintln!("{}: <stdin>:{line}: {}", self.tool, super::printable(message, true));
        self.record(&ErrorRecord { line: Some(line), message, about: about(extra, &["record", "line", "message"]) })
    }

    /// Passes a parsed input object through, or reports its line as an
    /// error record (see [`Out::line_error`]) and yields `None` so the
    /// caller goes on with the next line.
    pub fn accept(
        &mut self,
        rec: std::result::Result<serde_json::Map<String, Value>, LineError>,
    ) -> Result<Option<serde_json::Map<String, Value>>> {
        match rec {
            Ok(m) => Ok(Some(m)),
            Err(e) => self.line_error(e.line, &e.message, None).map(|()| None),
        }
    }

    /// Reports an error that is not tied to an input line (a file, a rule).
    pub fn error(&mut self, message: &str, extra: Value) -> Result<()> {
        self.error_about(message, &about(Some(&extra), &["record", "message"]))
    }

    /// [`Out::error`] with typed fields: `about` says what the error is
    /// about (its fields follow `message`).
    pub fn error_about<A: Serialize>(&mut self, message: &str, about: &A) -> Result<()> {
        self.exit = self.exit.max(Exit::Failure);
        eprintln!("{}: {}", self.tool, super::printable(message, true));
        self.record(&ErrorRecord { line: None, message, about })
    }

    /// Raises the final exit status (never lowers it).
    pub fn raise(&mut self, exit: Exit) {
        self.exit = self.exit.max(exit);
    }

    /// Flushes and returns the exit status the run earned.
    pub fn finish(mut self) -> Result<Exit> {
        if let Some(held) = self.held.take() {
            self.text(&records_table(&held))?;
        }
        self.w.flush().ctx(|| "writing to stdout")?;
        Ok(self.exit)
    }
}

/// One thing a command prints. Library code that decides several outputs
/// (skills, rule evolution) returns these, and the binary prints them in
/// order through its one [`Out`] with [`print`].
#[derive(Debug, Clone)]
pub enum Rec {
    /// A record.
    Record(Value),
    /// A bad input line (see [`Out::line_error`]).
    LineError(usize, String),
    /// An error record with extra fields (see [`Out::error`]).
    Error(String, Value),
    /// Text for people (a table, a report).
    Table(String),
    /// Raise the run's exit status (1: a check found problems).
    Raise(Exit),
}

impl Rec {
    /// A typed record (a serde-tagged struct) as a [`Rec::Record`].
    pub fn of<T: Serialize>(rec: &T) -> Rec {
        // Records are plain structs with string keys: encoding cannot fail.
        Rec::Record(serde_json::to_value(rec).unwrap_or(Value::Null))
    }

    /// An [`Rec::Error`] whose typed `about` says what it is about.
    pub fn error_about<A: Serialize>(message: String, about: &A) -> Rec {
        Rec::Error(message, serde_json::to_value(about).unwrap_or(Value::Null))
    }
}

/// Prints `recs` in order.
pub fn print(out: &mut Out, recs: Vec<Rec>) -> Result<()> {
    for r in recs {
        match r {
            Rec::Record(v) => out.record(&v)?,
            Rec::LineError(line, m) => out.line_error(line, &m, None)?,
            Rec::Error(m, extra) => out.error(&m, extra)?,
            Rec::Table(t) => out.text(&t)?,
            Rec::Raise(e) => out.raise(e),
        }
    }
    Ok(())
}

/// Records as tables for people: each run of consecutive records of one
/// kind (their `record` field) is one table, titled by the kind, with a
/// column per field in the order the fields are first seen; a string is
/// shown as it is, a list of plain values joined by `, `, anything else as
/// compact JSON, a missing field or null empty.
pub fn records_table(records: &[Value]) -> String {
    let kind = |v: &Value| v.get("record").and_then(Value::as_str).unwrap_or("").to_string();
    let cell = |v: Option<&Value>| match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            a.iter().map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string)).collect::<Vec<_>>().join(", ")
        }
        Some(other) => other.to_string(),
    };
    let mut out = String::new();
    let mut start = 0;
    while start < records.len() {
        let k = kind(&records[start]);
        let end = start + records[start..].iter().take_while(|r| kind(r) == k).count();
        let mut columns: Vec<&str> = Vec::new();
        for r in &records[start..end] {
            for key in r.as_object().into_iter().flat_map(|o| o.keys()) {
                if key != "record" && !columns.contains(&key.as_str()) {
                    columns.push(key);
                }
            }
        }
        let rows: Vec<Vec<String>> =
            records[start..end].iter().map(|r| columns.iter().map(|c| cell(r.get(*c))).collect()).collect();
        let header: Vec<String> = columns.iter().map(|c| c.to_uppercase()).collect();
        if !out.is_empty() {
            out.push('\n');
        }
        if !k.is_empty() {
            out.push_str(&k);
            out.push('\n');
        }
        out.push_str(&table(&header.iter().map(String::as_str).collect::<Vec<_>>(), &rows));
        start = end;
    }
    out
}

/// Renders rows as aligned columns under a header and a rule line, the
/// shape of the seed's search table. Widths are display widths (a CJK
/// character takes two columns), so columns line up in a terminal.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    use unicode_width::UnicodeWidthStr;
    let mut widths: Vec<usize> = header.iter().map(|h| h.width()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(cell.width());
            }
        }
    }
    let mut out = String::new();
    let line = |cells: &mut dyn Iterator<Item = &str>, out: &mut String| {
        let mut parts = Vec::new();
        for (i, c) in cells.enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            let pad = w.saturating_sub(c.width());
            parts.push(format!("{c}{}", " ".repeat(pad)));
        }
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied(), &mut out);
    let total: usize = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
    out.push_str(&"─".repeat(total));
    out.push('\n');
    for row in rows {
        line(&mut row.iter().map(String::as_str), &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records written at once are the bytes written one by one, in
    /// order, across the windows and chunks they are encoded in.
    #[test]
    fn records_at_once_are_records_one_by_one() {
        let recs: Vec<serde_json::Value> = (0..70_000)
            .map(|i| serde_json::json!({"record": "finding", "n": i, "text": format!("line {i}\n\"quoted\" é")}))
            .collect();
        let mut one = Out::memory("test");
        recs.iter().try_for_each(|r| one.record(r)).unwrap();
        let mut all = Out::memory("test");
        all.records(&recs).unwrap();
        let (one, all) = (one.captured().unwrap().1, all.captured().unwrap().1);
        assert_eq!(one.iter().filter(|&&b| b == b'\n').count(), 70_000);
        assert!(one == all, "records() wrote other bytes than record() one by one");
    }

    /// A line of exactly `limit` bytes is read; one byte more is dropped
    /// whole (the next line is read), with or without a final newline.
    #[test]
    fn read_line_keeps_at_most_the_limit() {
        let mut r = io::BufReader::with_capacity(3, &b"abcd\nabcde\nxy\nabcdefgh"[..]);
        let mut buf = Vec::new();
        let mut got = Vec::new();
        loop {
            match read_line(&mut r, &mut buf, 4).unwrap() {
                Line::End => break,
                l => got.push((l, String::from_utf8(buf.clone()).unwrap())),
            }
        }
        let want = [(Line::Fits, "abcd"), (Line::TooLong, ""), (Line::Fits, "xy"), (Line::TooLong, "")];
        assert_eq!(got, want.map(|(l, s)| (l, s.to_string())));
    }

    /// Records of one kind make one table, a column per field in the
    /// order first seen; another kind starts another table.
    #[test]
    fn records_table_groups_by_kind() {
        let recs: Vec<Value> = vec![
            serde_json::json!({"record": "write", "path": "a.md", "bytes": 4}),
            serde_json::json!({"record": "write", "path": "b.md", "bytes": 12, "verdict": "caution"}),
            serde_json::json!({"record": "error", "line": 3, "message": "bad", "tags": ["x", 1]}),
        ];
        let want = "write\nPATH  BYTES  VERDICT\n────────────────────\na.md  4\nb.md  12     caution\n\nerror\nLINE  MESSAGE  TAGS\n───────────────────\n3     bad      x, 1\n";
        assert_eq!(records_table(&recs), want);
    }

    /// Chinese cells take two columns each, so the next column
    /// starts at the same screen position on every row.
    #[test]
    fn table_aligns_by_display_width() {
        let rows = vec![vec!["连接池".to_string(), "x".to_string()], vec!["pool".to_string(), "y".to_string()]];
        let t = table(&["Topic", "V"], &rows);
        assert_eq!(t, "Topic   V\n─────────\n连接池  x\npool    y\n");
    }
}
