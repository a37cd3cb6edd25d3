//! How kb-lastword speaks (DESIGN.md "Streams"): one record per entry in
//! JSON Lines, or the same rows as an aligned table on a terminal; every
//! failure is also one `kb-lastword: …` line on stderr.

use serde::Serialize;
use serde_json::Value;

use super::records::FileError;
use crate::error::{Error, Exit, Result};
use crate::out::jsonl::{self, Format, Out};

/// Collects records and prints them in the chosen format.
pub struct Reporter {
    out: Out,
    format: Format,
    columns: &'static [&'static str],
    rows: Vec<Vec<String>>,
}

impl Reporter {
    /// A reporter whose table shows `columns` of each record.
    pub fn new(format: Format, columns: &'static [&'static str]) -> Reporter {
        Reporter { out: Out::stdout("kb-lastword"), format, columns, rows: Vec::new() }
    }

    /// A reporter that keeps JSON Lines in memory (kb-mcp owns stdout);
    /// [`Reporter::captured`] hands them back.
    pub fn memory(columns: &'static [&'static str]) -> Reporter {
        Reporter { out: Out::memory("kb-lastword"), format: Format::Jsonl, columns, rows: Vec::new() }
    }

    /// The exit status and the records of a [`Reporter::memory`].
    pub fn captured(self) -> Result<(Exit, Vec<u8>)> {
        self.out.captured()
    }

    /// Emits a record.
    pub fn record<T: Serialize>(&mut self, rec: &T) -> Result<()> {
        match self.format {
            Format::Jsonl => self.out.record(rec),
            Format::Table => {
                let rec = serde_json::to_value(rec).map_err(|e| Error::msg(format!("cannot encode record: {e}")))?;
                let cell = |k: &str| match rec.get(k) {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s.replace('\n', " "),
                    Some(v) => v.to_string(),
                };
                self.rows.push(self.columns.iter().map(|c| cell(c)).collect());
                Ok(())
            }
        }
    }

    /// Emits a record that reports a failure: also a stderr line, and the
    /// run's exit becomes at least `exit`.
    pub fn failure<T: Serialize>(&mut self, message: &str, rec: &T, exit: Exit) -> Result<()> {
        eprintln!("kb-lastword: {message}");
        self.out.raise(exit);
        self.record(rec)
    }

    /// Emits an `error` record for a problem in a file.
    pub fn problem(&mut self, file: &str, entry: Option<usize>, field: &str, message: &str, exit: Exit) -> Result<()> {
        let rec = FileError { file: file.into(), entry, field: field.into(), message: message.into(), staging: None };
        let text = if field.is_empty() { format!("{file}: {message}") } else { format!("{file}: {field}: {message}") };
        self.failure(&text, &rec, exit)
    }

    /// Raises the exit status.
    pub fn raise(&mut self, exit: Exit) {
        self.out.raise(exit);
    }

    /// Writes raw text (diffs: the file's own bytes, `\r` included).
    pub fn text(&mut self, s: &str) -> Result<()> {
        self.out.raw(s)
    }

    /// Prints the table (if any) and returns the exit status.
    pub fn finish(mut self) -> Result<Exit> {
        if self.format == Format::Table && !self.rows.is_empty() {
            let t = jsonl::table(self.columns, &self.rows);
            self.out.text(&t)?;
        }
        self.out.finish()
    }
}
