//! kb-score ranking, tuned in process: runs every query of a SciFact
//! split through `kb::score::rank::direct` over the index caches that
//! bench/scifact.py built, once per parameter set, and prints nDCG@10 and
//! Recall@100 per library variant. Same ranking code as the CLI, without
//! a process per query, so a grid of settings takes seconds instead of
//! minutes. Tune on the train split only (the data README).
//!
//! usage: cargo bench --bench rank_tune -- WORKDIR SPLIT 'spec;spec;...'
//!   WORKDIR  bench/scifact.py's work directory (one subdirectory per
//!            variant, each holding `.library` with a built cache)
//!   SPLIT    train (test is reported once, by bench/scifact.py)
//!   spec     a KB_SCORE_TUNE value, `k1=0.9,b=0.6,gamma=2,...` ("" = the
//!            shipped constants)
//! Honours KB_NOW (bench/scifact.py pins it) for freshness. With
//! KB_MODEL set, meaning joins the words as in `kb-score --model`: each
//! query is encoded once, the documents' vectors are read from the file
//! beside the cache (encoded and saved first when missing), and the
//! fusion knobs (dense_w, dense_floor_z, dense_gamma, dense_depth) tune.
//! With RANK_TUNE_BUILD set, the indexes are built in process instead of read
//! from the caches, so analysis knobs in KB_SCORE_TUNE (set in the
//! environment, one analysis per run) take effect.
//! Each row also counts the relevant documents in the top 100 that only
//! meaning found (`match` dense), and, with RANK_TUNE_OFFTOPIC naming a
//! file of questions off the library's topics (one a line, `#` comments;
//! bench/offtopic-questions.txt), how many of them are answered out of
//! scope (no candidate at all), as `kb-score` answers them.

use std::collections::HashMap;
use std::path::Path;

use kb::score::{index::View, query::Query, rank};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let [work, split, specs] = match args.as_slice() {
        [w, s, p, ..] => [w.clone(), s.clone(), p.clone()],
        _ => {
            eprintln!("usage: rank_tune WORKDIR SPLIT 'spec;spec;...'");
            std::process::exit(2);
        }
    };
    let data = std::env::var("KB_SCIFACT").unwrap_or_else(|_| "../shared/data/scifact".to_string());
    let Ok(queries_text) = std::fs::read_to_string(Path::new(&data).join("beir_scifact/queries.jsonl")) else {
        eprintln!("rank_tune: data set not found under {data}; skipped");
        return;
    };
    let mut queries: HashMap<String, String> = HashMap::new();
    for line in queries_text.lines() {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            if let (Some(id), Some(t)) = (v["_id"].as_str(), v["text"].as_str()) {
                queries.insert(id.to_string(), t.to_string());
            }
        }
    }
    let qrels_text = std::fs::read_to_string(Path::new(&data).join(format!("beir_scifact/qrels/{split}.tsv")))
        .expect("qrels of the split");
    let mut qrels: Vec<(String, HashMap<String, f64>)> = Vec::new();
    for line in qrels_text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(q), Some(d), Some(r)) = (f.first(), f.get(f.len().wrapping_sub(2)), f.last()) else { continue };
        let Ok(r) = r.parse::<f64>() else { continue };
        match qrels.iter_mut().find(|(id, _)| id == q) {
            Some((_, m)) => {
                m.insert(d.to_string(), r);
            }
            None => qrels.push((q.to_string(), HashMap::from([(d.to_string(), r)]))),
        }
    }
    let now = kb::clock::now().expect("KB_NOW").as_second();
    let mut variants: Vec<(String, Vec<u8>)> = Vec::new();
    for v in ["realistic", "title"] {
        let cache = Path::new(&work)
            .join(v)
            .join(".library/.cache/kb-score")
            .join(format!("index-v{}.bin", kb::score::index::FORMAT_VERSION));
        if std::env::var_os("RANK_TUNE_BUILD").is_some() {
            // Build in process: the analysis in force (KB_SCORE_TUNE) decides the terms.
            let lib = kb::Library::resolve(Some(&Path::new(&work).join(v))).expect("library");
            let built = kb::score::build::build(&lib, None).expect("index builds");
            variants.push((v.to_string(), built.bytes));
            continue;
        }
        match std::fs::read(&cache) {
            Ok(b) => variants.push((v.to_string(), b)),
            Err(e) => eprintln!("rank_tune: {}: {e}; variant {v} skipped", cache.display()),
        }
    }
    // The body of every document (feedback and proximity read the best
    // few at query time; the index holds no per-document text).
    let mut seqs: HashMap<String, HashMap<String, String>> = HashMap::new();
    for (name, _) in &variants {
        let dir = Path::new(&work).join(name).join(".library/scifact");
        let mut m = HashMap::new();
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            let mut parts = text.splitn(3, "---\n");
            let (_, _, body) = (parts.next(), parts.next(), parts.next().unwrap_or(""));
            let id = e.file_name().to_string_lossy().trim_start_matches("doc-").trim_end_matches(".md").to_string();
            m.insert(id, body.to_string());
        }
        seqs.insert(name.clone(), m);
    }
    let parsed: Vec<(String, Query)> =
        qrels.iter().filter_map(|(id, _)| Some((id.clone(), Query::parse(queries.get(id)?).ok()?))).collect();
    let offtopic: Vec<Query> = std::env::var("RANK_TUNE_OFFTOPIC")
        .ok()
        .map(|f| std::fs::read_to_string(f).expect("the off-topic questions"))
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| Query::parse(l).ok())
        .collect();
    // With a model: per variant, each query's cosine with every document.
    let model = kb::text::bert::model_dir(None).map(|m| kb::text::bert::Encoder::load(&m).expect("the model loads"));
    let mut cosines: HashMap<String, Vec<Vec<f32>>> = HashMap::new();
    if let Some(enc) = &model {
        let t = std::time::Instant::now();
        let qvs: Vec<Vec<f32>> =
            parsed.iter().map(|(_, q)| q).chain(&offtopic).map(|q| enc.encode_query(&q.text)).collect();
        eprintln!("rank_tune: {} queries encoded in {:.1} s", qvs.len(), t.elapsed().as_secs_f64());
        for (name, bytes) in &variants {
            let v = View::open(bytes).expect("index opens");
            let lib = Path::new(&work).join(name).join(".library");
            let cache = lib.join(".cache/kb-score").join(format!("index-v{}.bin", kb::score::index::FORMAT_VERSION));
            let file = kb::score::vectors::path_for(&cache, enc);
            // As the CLI reads a document: its title, and its body past the frontmatter.
            let title_body = |d: u32| {
                let text = std::fs::read_to_string(lib.join(v.path(d))).ok()?;
                let body = kb::doc::frontmatter::locate(&text).map_or(text.as_str(), |(_, _, b)| &text[b..]);
                Some((v.meta(d).title.unwrap_or_default(), body.to_string()))
            };
            let t = std::time::Instant::now();
            let first = kb::score::vectors::dense(&file, &v, enc, || &qvs[0][..], &title_body);
            eprintln!("rank_tune: {name}: {} documents encoded in {:.1} s", first.encoded, t.elapsed().as_secs_f64());
            let all = qvs
                .iter()
                .map(|qv| kb::score::vectors::dense(&file, &v, enc, || &qv[..], &title_body).cosine)
                .collect();
            cosines.insert(name.clone(), all);
        }
    }
    for spec in specs.split(';') {
        let tuning = rank::TUNING.tuned(spec);
        let mut row = format!("{split} {spec:40}");
        for (name, bytes) in &variants {
            let v = View::open(bytes).expect("index opens");
            let id_of = |d: u32| {
                let path = v.path(d);
                let base = path.rsplit('/').next().unwrap_or(path);
                base.trim_start_matches("doc-").trim_end_matches(".md")
            };
            let (mut nd, mut rc, mut by_meaning) = (0.0, 0.0, 0);
            let t = std::time::Instant::now();
            for (i, ((_, rel), (_, q))) in qrels.iter().zip(&parsed).enumerate() {
                let seq = &seqs[name];
                // As the CLI reads it: the title, a line, the body.
                let doc_text =
                    |d: u32| Some(format!("{}\n{}", v.meta(d).title.unwrap_or_default(), seq.get(id_of(d))?));
                let given = cosines.get(name).map(|c| || c[i].clone());
                let dense = given.as_ref().map(|f| f as rank::Cosines);
                let (hits, _) = rank::direct(&v, q, now, &rank::Filters::default(), 100, &doc_text, dense, &tuning);
                let ranked: Vec<&str> = hits.iter().map(|h| id_of(h.doc)).collect();
                nd += ndcg10(&ranked, rel);
                rc += recall100(&ranked, rel);
                by_meaning += hits
                    .iter()
                    .filter(|h| {
                        h.kind == kb::score::formula::Match::Dense && rel.get(id_of(h.doc)).is_some_and(|r| *r > 0.0)
                    })
                    .count();
            }
            let n = parsed.len() as f64;
            let ms = t.elapsed().as_secs_f64() * 1000.0 / n;
            row.push_str(&format!("  {name} {:.4} {:.4} ({ms:.2} ms/q) by meaning {by_meaning}", nd / n, rc / n));
            if !offtopic.is_empty() {
                let out = offtopic
                    .iter()
                    .enumerate()
                    .filter(|(i, q)| {
                        let given = cosines.get(name).map(|c| || c[parsed.len() + i].clone());
                        let dense = given.as_ref().map(|f| f as rank::Cosines);
                        let none = |_: u32| None;
                        rank::direct(&v, q, now, &rank::Filters::default(), 100, &none, dense, &tuning).1 == 0
                    })
                    .count();
                row.push_str(&format!(" off-topic out of scope {out}/{}", offtopic.len()));
            }
        }
        println!("{row}");
    }
}

fn ndcg10(ranked: &[&str], rel: &HashMap<String, f64>) -> f64 {
    let dcg: f64 =
        ranked.iter().take(10).enumerate().map(|(i, d)| rel.get(*d).unwrap_or(&0.0) / (i as f64 + 2.0).log2()).sum();
    let mut ideal: Vec<f64> = rel.values().copied().collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal.iter().take(10).enumerate().map(|(i, r)| r / (i as f64 + 2.0).log2()).sum();
    if idcg > 0.0 {
        dcg / idcg
    } else {
        0.0
    }
}

fn recall100(ranked: &[&str], rel: &HashMap<String, f64>) -> f64 {
    let want: Vec<&String> = rel.iter().filter(|(_, r)| **r > 0.0).map(|(d, _)| d).collect();
    if want.is_empty() {
        return 0.0;
    }
    let top: std::collections::HashSet<&str> = ranked.iter().take(100).copied().collect();
    want.iter().filter(|d| top.contains(d.as_str())).count() as f64 / want.len() as f64
}
