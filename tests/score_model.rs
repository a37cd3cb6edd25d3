//! kb-score with a sentence encoder (`--model DIR`, `KB_MODEL`): a small
//! seeded BERT (`kb::text::bert::fixture`) stands in for a real model.
//! Each hit shows its cosine (`dense`); the documents' vectors live in a
//! file beside the index named by the model's digest; an edit re-encodes
//! only the edited document; `--no-dense` and no model are the lexical
//! ranking, byte for byte.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kb::text::bert::fixture;
use serde_json::Value;

use crate::score::seed_library;
use crate::util::{conforms, records, Lib};

const WORDS: &[&str] =
    &["jwt", "authentication", "session", "management", "rate", "limiting", "token", "tokens", "sign", "##ed"];

fn model(lib: &Lib, name: &str, seed: u64) -> PathBuf {
    let dir = lib.root().join(name);
    fixture::write(&dir, &fixture::SMALL, WORDS, seed).unwrap();
    dir
}

fn run(lib: &Lib, args: &[&str], env: Option<&Path>) -> String {
    let mut c = lib.cmd("kb-score");
    c.args(["--no-registries", "--format", "jsonl"]).args(args);
    if let Some(m) = env {
        c.env("KB_MODEL", m);
    }
    String::from_utf8(c.output().unwrap().stdout).unwrap()
}

/// The vector files in the cache directory, by name.
fn vector_files(lib: &Lib) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(lib.path(".cache/kb-score"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".vectors-"))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect()
}

/// A vector file's entries (key, chunks and vectors), as the module doc
/// lays them out: 76 header bytes, then 16 key bytes, u32 chunks, f32s.
fn entries(bytes: &[u8], dims: usize) -> Vec<Vec<u8>> {
    assert_eq!(&bytes[..4], b"KBSV");
    let mut at = 76;
    let mut out = Vec::new();
    while at < bytes.len() {
        let n = u32::from_le_bytes(bytes[at + 16..at + 20].try_into().unwrap()) as usize;
        let end = at + 20 + n * dims * 4;
        out.push(bytes[at..end].to_vec());
        at = end;
    }
    assert_eq!(at, bytes.len());
    out
}

#[test]
fn meaning_joins_the_words_and_only_an_edited_document_is_encoded_again() {
    let lib = seed_library();
    let m = model(&lib, "model", 1);
    let m = m.to_str().unwrap();
    let lexical = run(&lib, &["jwt"], None);
    assert!(!lexical.contains("\"dense\""), "{lexical}");
    let out = run(&lib, &["jwt", "--model", m], None);
    let recs = records(out.as_bytes());
    let hits: Vec<&Value> = recs.iter().filter(|r| r["record"] == "hit").collect();
    assert!(!hits.is_empty());
    for h in &hits {
        conforms(h);
        if h["hop"] == 0 {
            let c = h["dense"].as_f64().unwrap_or_else(|| panic!("a direct hit shows its cosine: {h}"));
            assert!((-1.0..=1.0).contains(&c), "{h}");
        }
    }
    // The first call wrote an aligned copy of the weights beside the index;
    // the next ones map it and answer the same, byte for byte.
    let copies: Vec<String> = std::fs::read_dir(lib.path(".cache/kb-score"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("model-") && n.ends_with(".f32"))
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    // KB_MODEL does what --model does; --no-dense turns it off, byte for byte the lexical answer.
    assert_eq!(run(&lib, &["jwt"], Some(Path::new(m))), out);
    assert_eq!(run(&lib, &["jwt", "--no-dense"], Some(Path::new(m))), lexical);
    assert_eq!(run(&lib, &["jwt", "--model", m, "--no-dense"], None), lexical);

    // One file of vectors, named by the model; every document has an entry.
    let files = vector_files(&lib);
    assert_eq!(files.len(), 1, "{:?}", files.keys());
    let (name, first) = files.into_iter().next().unwrap();
    assert!(name.starts_with("index-v") && name.ends_with(".bin"), "{name}");
    let before = entries(&first, fixture::SMALL.hidden);
    assert_eq!(before.len(), 6, "six documents");

    // Nothing changed: nothing encoded, the same bytes.
    run(&lib, &["session", "--model", m], None);
    assert_eq!(vector_files(&lib)[&name], first);

    // One document edited: exactly its entry is new, the five others kept.
    let p = lib.path(".memory/.references/rate-limiting-v1.md");
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, text.replace("Token buckets throttle clients per session.", "Signed tokens rate limiting."))
        .unwrap();
    run(&lib, &["jwt", "--model", m], None);
    let after = entries(&vector_files(&lib)[&name], fixture::SMALL.hidden);
    assert_eq!(after.len(), 6);
    let kept = after.iter().filter(|e| before.contains(e)).count();
    assert_eq!(kept, 5, "only the edited document is encoded again");

    // Another model writes its own file and never reads the first one's.
    let other = model(&lib, "other", 2);
    let out2 = run(&lib, &["jwt", "--model", other.to_str().unwrap()], None);
    let files = vector_files(&lib);
    assert_eq!(files.len(), 2, "{:?}", files.keys());
    assert_ne!(out2, run(&lib, &["jwt", "--model", m], None), "other weights, other cosines");
}

#[test]
fn a_broken_model_is_an_error_naming_its_file() {
    let lib = seed_library();
    let m = model(&lib, "model", 1);
    std::fs::remove_file(m.join("model.safetensors")).unwrap();
    let out = lib.cmd("kb-score").args(["--no-registries", "jwt", "--model"]).arg(&m).output().unwrap();
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("model.safetensors"), "{err}");
}

/// Writes documents with a title and a body, no date (freshness 0) and
/// no relations, so their final scores order as their bases do.
fn library_of(docs: &[(&str, &str, &str)]) -> Lib {
    let lib = Lib::new();
    let batch: String = docs
        .iter()
        .map(|(path, title, body)| {
            let content = format!("---\ntitle: {title}\n---\n{body}\n");
            serde_json::json!({"path": path, "content": content}).to_string() + "\n"
        })
        .collect();
    lib.cmd("kb-append").args(["batch", "--no-commit"]).write_stdin(batch).assert().success();
    lib
}

#[test]
fn a_document_no_word_matched_ranks_by_meaning_with_its_cosine_in_the_record() {
    let docs = [
        (".memory/.references/signed-tokens-v1.md", "Signed tokens", "Tokens signed by the server."),
        (".memory/.references/rate-limits-v1.md", "Rate limiting", "Rate limiting of every session."),
        (".memory/.references/birds-v1.md", "Birds", "Swallows fly south in winter."),
    ];
    let lib = library_of(&docs);
    let m = model(&lib, "model", 1);
    let query = "jwt authentication";
    // No document holds a word of the query: words alone find nothing.
    let words = lib.cmd("kb-score").args(["--no-registries", "--format", "jsonl", query]).output().unwrap();
    assert_eq!(words.status.code(), Some(1), "{words:?}");
    // The cosines the encoder gives, computed here from the chunks.
    let enc = kb::text::bert::Encoder::load(&m).unwrap();
    let qv = enc.encode_query(query);
    let cos = |title: &str, body: &str| {
        kb::score::vectors::chunks(title, body)
            .iter()
            .map(|c| enc.encode_passage(c).iter().zip(&qv).map(|(a, b)| f64::from(a * b)).sum::<f64>())
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let all: Vec<(String, f64)> =
        docs.iter().map(|(p, t, b)| (p.trim_start_matches(".memory/").to_string(), cos(t, b))).collect();
    // The query's floor: the mean of its cosines plus FUSION.floor standard deviations.
    let n = all.len() as f64;
    let mean = all.iter().map(|(_, c)| c).sum::<f64>() / n;
    let sd = (all.iter().map(|(_, c)| (c - mean).powi(2)).sum::<f64>() / n).sqrt();
    let floor = mean + kb::score::rank::FUSION.floor * sd;
    let mut want: Vec<(String, f64)> =
        all.into_iter().filter(|(_, c)| *c >= kb::score::rank::FUSION.join && *c > floor).collect();
    want.sort_by(|a, b| b.1.total_cmp(&a.1));
    assert!(!want.is_empty(), "the fixture model gives a cosine past the floor: {want:?}");
    // The fixture's cosines sit high and close (0.90-0.96), as some models'
    // do: a fixed floor would let all three in; the query's own keeps the best.
    assert!(want.len() < docs.len(), "the query's floor leaves some out: {want:?} floor {floor}");

    let out = run(&lib, &[query, "--model", m.to_str().unwrap(), "--no-recommend"], None);
    let recs = records(out.as_bytes());
    let hits: Vec<&Value> = recs.iter().filter(|r| r["record"] == "hit").collect();
    let got: Vec<(String, f64)> = hits
        .iter()
        .map(|h| {
            conforms(h);
            assert_eq!(h["match"], "dense", "{h}");
            let path = h["path"].as_str().unwrap();
            (path.trim_start_matches(".memory/").to_string(), h["dense"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(got.len(), want.len(), "{got:?} {want:?}");
    for ((gp, gc), (wp, wc)) in got.iter().zip(&want) {
        assert!(gp.ends_with(wp.as_str()), "ranked by meaning: {got:?} {want:?}");
        assert!((gc - wc).abs() < 1e-3, "the record shows the cosine: {got:?} {want:?}");
    }
    let summary = recs.last().unwrap();
    assert_eq!(summary["out_of_scope"], false, "{summary}");
    // The best cosine earns the whole weight of meaning.
    assert!(hits[0]["score"].as_f64().unwrap() > 0.0, "{}", hits[0]);
}
