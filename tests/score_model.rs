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

/// Three notes on three topics (path, title, body): no word of "jwt
/// authentication" or of "pizza dough recipe" is in any of them.
const THREE_NOTES: [(&str, &str, &str); 3] = [
    (".memory/.references/signed-tokens-v1.md", "Signed tokens", "Tokens signed by the server."),
    (".memory/.references/rate-limits-v1.md", "Rate limiting", "Rate limiting of every session."),
    (".memory/.references/birds-v1.md", "Birds", "Swallows fly south in winter."),
];

#[test]
fn a_document_no_word_matched_ranks_by_meaning_with_its_cosine_in_the_record() {
    let docs = THREE_NOTES;
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
    // A document joins by meaning alone from the median cosine plus
    // FUSION.join of the way from it to 1.
    let mut sorted: Vec<f64> = all.iter().map(|(_, c)| *c).collect();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let join = median + kb::score::rank::FUSION.join * (1.0 - median);
    let mut want: Vec<(String, f64)> = all.into_iter().filter(|(_, c)| *c >= join && *c > floor).collect();
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

/// The words of [`anisotropic_model`], each with the topic it means.
const TOPICS: &[(&str, usize)] = &[
    ("jwt", 0),
    ("authentication", 0),
    ("signed", 0),
    ("tokens", 0),
    ("server", 0),
    ("rate", 1),
    ("limiting", 1),
    ("session", 1),
    ("birds", 2),
    ("swallows", 2),
    ("fly", 2),
    ("south", 2),
    ("winter", 2),
    ("pizza", 3),
    ("dough", 3),
    ("recipe", 3),
];

/// A one-layer model built by hand whose cosines sit high and close, as
/// multilingual-e5-small's do (0.7–0.9 for any pair of texts): each word
/// is its topic's direction (orthogonal, zero-mean rows of a Hadamard
/// matrix; special and unknown tokens one more direction of their own),
/// the layers pass it through unchanged, and the last layer norm adds
/// the same vector to every token, so every text shares a large part.
fn anisotropic_model(lib: &Lib) -> PathBuf {
    const H: usize = 8;
    let sizes = fixture::Sizes { hidden: H, heads: 2, layers: 1, inter: 16, positions: 32 };
    let words: Vec<&str> = TOPICS.iter().map(|(w, _)| *w).collect();
    let dir = lib.root().join("anisotropic");
    fixture::write(&dir, &sizes, &words, 1).unwrap();
    // Rows of the 8×8 Hadamard matrix past the first: zero mean, orthogonal.
    let direction = |k: usize| -> Vec<f32> {
        (0..H).map(|j| if ((k + 1) & j).count_ones().is_multiple_of(2) { 1.0 } else { -1.0 }).collect()
    };
    let neutral = direction(6);
    let vocab = 5 + words.len();
    let tensors: Vec<(String, Vec<usize>, Vec<f32>)> = fixture::tensors(&sizes, vocab)
        .into_iter()
        .map(|(name, shape)| {
            let n: usize = shape.iter().product();
            let v: Vec<f32> = match name.as_str() {
                "embeddings.word_embeddings.weight" => (0..vocab)
                    .flat_map(|id| match id.checked_sub(5) {
                        Some(w) => direction(TOPICS[w].1),
                        None => neutral.clone(),
                    })
                    .collect(),
                n if n.ends_with("LayerNorm.weight") => vec![1.0; H],
                "encoder.layer.0.output.LayerNorm.bias" => vec![1.5; H],
                _ => vec![0.0; n],
            };
            (name, shape, v)
        })
        .collect();
    std::fs::write(dir.join("model.safetensors"), fixture::safetensors(&tensors)).unwrap();
    dir
}

#[test]
fn a_question_off_the_librarys_topics_is_out_of_scope_whatever_the_models_scale() {
    let docs = THREE_NOTES;
    let lib = library_of(&docs);
    let m = anisotropic_model(&lib);
    let (paraphrase, off_topic) = ("jwt authentication", "pizza dough recipe");
    // The model's cosines sit high and close, for any query and document.
    let enc = kb::text::bert::Encoder::load(&m).unwrap();
    for q in [paraphrase, off_topic] {
        let qv = enc.encode_query(q);
        for (_, title, body) in &docs {
            for c in kb::score::vectors::chunks(title, body) {
                let cos: f32 = enc.encode_passage(&c).iter().zip(&qv).map(|(a, b)| a * b).sum();
                assert!((0.75..=1.0).contains(&cos), "{q} · {c}: {cos}");
            }
        }
    }
    let m = m.to_str().unwrap();
    for q in [paraphrase, off_topic] {
        let words = lib.cmd("kb-score").args(["--no-registries", "--format", "jsonl", q]).output().unwrap();
        assert_eq!(words.status.code(), Some(1), "no word of the query is in the library: {words:?}");
    }
    // Off the library's topics: the cosines are all alike, nothing joins.
    let out =
        lib.cmd("kb-score").args(["--no-registries", "--format", "jsonl", off_topic, "--model", m]).output().unwrap();
    let recs = records(&out.stdout);
    let summary = recs.last().unwrap();
    assert_eq!(summary["out_of_scope"], true, "{recs:?}");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // The same library, a question on one of its topics in other words:
    // found by meaning, and only that document.
    let out = run(&lib, &[paraphrase, "--model", m, "--no-recommend"], None);
    let recs = records(out.as_bytes());
    let hits: Vec<&str> = recs.iter().filter(|r| r["record"] == "hit").map(|h| h["path"].as_str().unwrap()).collect();
    assert_eq!(hits, [".memory/.references/signed-tokens-v1.md"], "{out}");
    assert_eq!(recs.last().unwrap()["out_of_scope"], false, "{out}");
}
