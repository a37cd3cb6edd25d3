//! kb-memgate with a sentence encoder (`--model DIR`, `KB_MEMGATE_MODEL`):
//! a small seeded BERT written by `kb::text::bert::fixture` stands in for
//! all-MiniLM-L6-v2. reindex caches the notes' vectors in `.dense.vec`,
//! decide reads them (never writes), every note is a candidate, a damaged
//! or foreign cache is ignored and replaced, a broken model is an error
//! before any write, and Chinese stays lexical unless the model reads it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kb::text::bert::fixture;
use serde_json::{json, Value};

use crate::memgate::{lines, mem, remember, said};
use crate::util::{ok_records, records, Lib};

/// The fixture model's words: those of the notes and statements below.
const WORDS: &[&str] = &[
    "use",
    "tabs",
    "for",
    "indentation",
    "write",
    "commit",
    "messages",
    "in",
    "english",
    "run",
    "clippy",
    "before",
    "every",
    "push",
    "prefer",
    "pnpm",
    "to",
    "npm",
    "always",
    ".",
    ",",
];

const NOTES: [&str; 3] =
    ["Use tabs for indentation.", "Write commit messages in English.", "Run clippy before every push."];

/// An input without a target claim, whose digest ("what the user
/// settled") every note `remember` writes carries.
fn bare(text: &str) -> Value {
    let mut v = said("remember", text);
    v["input"].as_object_mut().unwrap().remove("target_claim");
    v
}

/// A fixture model folder in the workspace (outside the memory directory).
fn model(lib: &Lib, name: &str, seed: u64) -> PathBuf {
    let dir = lib.root().join(name);
    fixture::write(&dir, &fixture::SMALL, WORDS, seed).unwrap();
    dir
}

/// A store of the three notes, and the model.
fn store() -> (Lib, PathBuf, Vec<String>) {
    let lib = Lib::project();
    let ids = NOTES.iter().map(|t| remember(&lib, t)).collect();
    let m = model(&lib, "model", 1);
    (lib, m, ids)
}

fn reindex(lib: &Lib, m: &Path) -> Value {
    let recs = ok_records(lib.cmd("kb-memgate").arg("reindex").arg("--model").arg(m));
    assert_eq!(recs.len(), 1, "{recs:?}");
    recs[0].clone()
}

/// decide with the model: its records and its stderr.
fn decide_with(lib: &Lib, m: &Path, inputs: &[Value]) -> (Vec<Value>, String) {
    let out = lib.cmd("kb-memgate").arg("decide").arg("--model").arg(m).write_stdin(lines(inputs)).assert().success();
    (records(&out.get_output().stdout), String::from_utf8_lossy(&out.get_output().stderr).into_owned())
}

/// Asserts no file under the workspace changed since `before`, naming those that did.
#[track_caller]
fn unchanged(lib: &Lib, before: &BTreeMap<String, (Vec<u8>, std::time::SystemTime)>, what: &str) {
    let after = crate::util::tree_times(lib.root());
    let changed: Vec<&String> = before.keys().chain(after.keys()).filter(|p| before.get(*p) != after.get(*p)).collect();
    assert!(changed.is_empty(), "{what}: changed {changed:?}");
}

/// The neighbours' ids of a decision.
fn ids(d: &Value) -> Vec<&str> {
    d["neighbours"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect()
}

/// Edits note `id` by hand: `from` becomes `to`.
fn edit(lib: &Lib, id: &str, from: &str, to: &str) {
    let p = mem(lib, &format!("notes/{id}.md"));
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{id}: {from}");
    std::fs::write(&p, text.replace(from, to)).unwrap();
}

fn dense_len(lib: &Lib) -> usize {
    std::fs::read(mem(lib, ".dense.vec")).unwrap().len()
}

/// The cache's layout: header of 76 bytes, then per note 16 key bytes and
/// its vector as f32.
const HEADER: usize = 4 + 4 + 64 + 4;
const ENTRY: usize = 16 + 4 * 8;

#[test]
fn reindex_caches_the_vectors_and_encodes_only_what_changed() {
    let (lib, m, ids) = store();
    assert!(!mem(&lib, ".dense.vec").exists());
    let rep = reindex(&lib, &m);
    assert_eq!(rep["vectors"], json!({"notes": 3, "encoded": 3}), "{rep}");
    assert_eq!(rep["notes"], 3);
    let cache = std::fs::read(mem(&lib, ".dense.vec")).unwrap();
    assert_eq!(&cache[..8], b"KBDV\x01\0\0\0");
    assert_eq!(&cache[72..76], &8u32.to_le_bytes());
    assert_eq!(cache.len(), HEADER + 3 * ENTRY);
    for v in cache[HEADER..].chunks_exact(ENTRY) {
        let x: Vec<f32> = v[16..].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert!((x.iter().map(|a| a * a).sum::<f32>() - 1.0).abs() < 1e-5, "a unit vector: {x:?}");
    }

    // Nothing changed: nothing encoded, the same bytes.
    assert_eq!(reindex(&lib, &m)["vectors"], json!({"notes": 3, "encoded": 0}));
    assert_eq!(std::fs::read(mem(&lib, ".dense.vec")).unwrap(), cache);

    // One note edited by hand: that one is encoded again.
    edit(&lib, &ids[1], "Write commit messages in English.", "Always write commit messages in English.");
    assert_eq!(reindex(&lib, &m)["vectors"], json!({"notes": 3, "encoded": 1}));
    assert_ne!(std::fs::read(mem(&lib, ".dense.vec")).unwrap(), cache);
    assert_eq!(reindex(&lib, &m)["vectors"], json!({"notes": 3, "encoded": 0}));

    // A note removed: its vector leaves the cache.
    std::fs::remove_file(mem(&lib, &format!("notes/{}.md", ids[0]))).unwrap();
    assert_eq!(reindex(&lib, &m)["vectors"], json!({"notes": 2, "encoded": 0}));
    assert_eq!(dense_len(&lib), HEADER + 2 * ENTRY);

    // Without a model the record has no vectors and the cache stays.
    let recs = ok_records(lib.cmd("kb-memgate").arg("reindex"));
    assert!(recs[0].get("vectors").is_none(), "{}", recs[0]);
    assert_eq!(dense_len(&lib), HEADER + 2 * ENTRY);
}

#[test]
fn decide_ranks_every_note_by_meaning_and_never_writes() {
    let (lib, m, ids) = store();
    reindex(&lib, &m);
    // Shares no word with any note.
    let q = [bare("Prefer pnpm to npm.")];
    let plain = crate::memgate::decide(&lib, &q);
    let before = crate::util::tree_times(lib.root());
    let (d, err) = decide_with(&lib, &m, &q);
    assert_eq!(err, "", "every vector was cached");
    unchanged(&lib, &before, "decide writes nothing");
    assert_eq!(d.len(), 1);
    let mut listed = self::ids(&d[0]);
    listed.sort_unstable();
    let mut all: Vec<&str> = ids.iter().map(String::as_str).collect();
    all.sort_unstable();
    assert_eq!(listed, all, "every note is a candidate: {}", d[0]);
    for n in d[0]["neighbours"].as_array().unwrap() {
        let c = n["dense"].as_f64().unwrap_or_else(|| panic!("no dense: {n}"));
        assert!((-1.0..=1.0).contains(&c), "{n}");
    }
    assert!(plain[0]["neighbours"].as_array().unwrap().iter().all(|n| n.get("dense").is_none()), "{}", plain[0]);
    assert_eq!(self::ids(&plain[0]), Vec::<&str>::new(), "lexically no note is a neighbour: {}", plain[0]);
    // The same decision but for the neighbours.
    let strip = |d: &Value| {
        let mut d = d.clone();
        d["neighbours"] = json!([]);
        d
    };
    assert_eq!(strip(&d[0]), strip(&plain[0]));

    // KB_MEMGATE_MODEL does what --model does; an empty one is none.
    let out = lib.cmd("kb-memgate").arg("decide").env("KB_MEMGATE_MODEL", &m).write_stdin(lines(&q)).assert().success();
    assert_eq!(records(&out.get_output().stdout), d);
    let out = lib.cmd("kb-memgate").arg("decide").env("KB_MEMGATE_MODEL", "").write_stdin(lines(&q)).assert().success();
    assert_eq!(records(&out.get_output().stdout), plain);
    // --model wins over the environment.
    let out = lib
        .cmd("kb-memgate")
        .args(["decide", "--model"])
        .arg(&m)
        .env("KB_MEMGATE_MODEL", lib.root().join("nowhere"))
        .write_stdin(lines(&q))
        .assert()
        .success();
    assert_eq!(records(&out.get_output().stdout), d);
    unchanged(&lib, &before, "decide writes nothing");
}

#[test]
fn a_note_written_after_reindex_is_encoded_for_the_run() {
    let (lib, m, _) = store();
    reindex(&lib, &m);
    let q = [said("remember", "Prefer pnpm to npm.")];
    let (cached, _) = decide_with(&lib, &m, &q);
    let new = remember(&lib, "Always use pnpm.");
    let before = crate::util::tree_times(lib.root());
    let (d, err) = decide_with(&lib, &m, &q);
    assert_eq!(
        err,
        "kb-memgate: 1 notes have no cached vector and were encoded for this run; 'kb-memgate reindex' caches them\n"
    );
    unchanged(&lib, &before, "decide writes nothing, not even the cache");
    assert!(ids(&d[0]).contains(&new.as_str()), "{}", d[0]);
    assert_eq!(ids(&d[0]).len(), 4);
    // The old notes' cosines are the cached ones.
    for n in cached[0]["neighbours"].as_array().unwrap() {
        let again = d[0]["neighbours"].as_array().unwrap().iter().find(|x| x["id"] == n["id"]).unwrap();
        assert_eq!(again["dense"], n["dense"]);
    }
    assert_eq!(reindex(&lib, &m)["vectors"], json!({"notes": 4, "encoded": 1}));
    let (again, err) = decide_with(&lib, &m, &q);
    assert_eq!(err, "");
    assert_eq!(again, d, "the cached vector is the one encoded for the run");
}

#[test]
fn a_damaged_or_foreign_cache_is_ignored_and_replaced() {
    let (lib, m, _) = store();
    let q = [said("remember", "Prefer pnpm to npm."), said("remember", "Use tabs for indentation in every file.")];
    // No cache: all three encoded for the run.
    let (fresh, err) = decide_with(&lib, &m, &q);
    assert!(err.contains("3 notes have no cached vector"), "{err}");
    reindex(&lib, &m);
    let good = std::fs::read(mem(&lib, ".dense.vec")).unwrap();
    let (cached, err) = decide_with(&lib, &m, &q);
    assert_eq!((cached.clone(), err.as_str()), (fresh.clone(), ""));

    // Another model's cache: the same sizes, other weights.
    let other = model(&lib, "other", 2);
    reindex(&lib, &other);
    let foreign = std::fs::read(mem(&lib, ".dense.vec")).unwrap();
    assert_eq!(foreign.len(), good.len());
    assert_ne!(foreign, good);
    // Another model's sizes.
    let wide = lib.root().join("wide");
    fixture::write(&wide, &fixture::Sizes { hidden: 12, heads: 3, layers: 1, inter: 8, positions: 16 }, WORDS, 1)
        .unwrap();
    reindex(&lib, &wide);
    let wider = std::fs::read(mem(&lib, ".dense.vec")).unwrap();
    assert_eq!(wider.len(), HEADER + 3 * (16 + 4 * 12));

    let mut flipped = good.clone();
    flipped[HEADER + 16] ^= 0x40; // one vector's first value, not its key
                                  // (what, the cache's bytes, how many notes it lacks)
    let damaged: Vec<(&str, Vec<u8>, usize)> = vec![
        ("empty", Vec::new(), 3),
        ("truncated header", good[..40].to_vec(), 3),
        // A killed append's torn last entry: the whole entries before it serve.
        ("torn last entry", good[..good.len() - 5].to_vec(), 1),
        ("header only", good[..HEADER].to_vec(), 3),
        ("garbage", (0..good.len()).map(|i| (i * 31 % 251) as u8).collect(), 3),
        ("another version", [&good[..4], &2u32.to_le_bytes()[..], &good[8..]].concat(), 3),
        ("another model", foreign, 3),
        ("another size", wider, 3),
    ];
    for (what, bytes, lacks) in damaged {
        std::fs::write(mem(&lib, ".dense.vec"), &bytes).unwrap();
        let (d, err) = decide_with(&lib, &m, &q);
        assert_eq!(d, fresh, "{what}: the same as with no cache");
        assert!(err.contains(&format!("{lacks} notes have no cached vector")), "{what}: {err}");
        assert_eq!(std::fs::read(mem(&lib, ".dense.vec")).unwrap(), bytes, "{what}: decide never writes");
        assert_eq!(reindex(&lib, &m)["vectors"], json!({"notes": 3, "encoded": lacks}), "{what}");
        assert_eq!(std::fs::read(mem(&lib, ".dense.vec")).unwrap(), good, "{what}: reindex replaces it");
    }
    // A directory or a symlink in its place: decide goes on without it;
    // reindex replaces the link (never writing through it) and names a
    // directory it cannot replace.
    std::fs::remove_file(mem(&lib, ".dense.vec")).unwrap();
    let outside = lib.root().join("outside.bin");
    std::fs::write(&outside, &good).unwrap();
    std::os::unix::fs::symlink(&outside, mem(&lib, ".dense.vec")).unwrap();
    let (d, err) = decide_with(&lib, &m, &q);
    assert_eq!((d, err.contains("3 notes have no cached vector")), (fresh.clone(), true), "{err}");
    assert_eq!(reindex(&lib, &m)["vectors"], json!({"notes": 3, "encoded": 3}));
    assert!(!mem(&lib, ".dense.vec").is_symlink());
    assert_eq!(std::fs::read(&outside).unwrap(), good, "the link's target is untouched");
    std::fs::remove_file(mem(&lib, ".dense.vec")).unwrap();
    std::fs::create_dir(mem(&lib, ".dense.vec")).unwrap();
    let (d, err) = decide_with(&lib, &m, &q);
    assert_eq!((d, err.contains("3 notes have no cached vector")), (fresh, true), "{err}");
    let out = lib.cmd("kb-memgate").args(["reindex", "--model"]).arg(&m).assert().code(2);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains(".dense.vec"));
}

#[test]
fn apply_with_a_model_caches_the_note_it_writes() {
    let (lib, m, _) = store();
    reindex(&lib, &m);
    let good = std::fs::read(mem(&lib, ".dense.vec")).unwrap();
    // A torn last entry (an apply killed while appending) is cut off first.
    std::fs::write(mem(&lib, ".dense.vec"), [&good[..], &[7u8; 5][..]].concat()).unwrap();
    let d = crate::memgate::decide(&lib, &[bare("Always use pnpm.")]);
    let out = lib.cmd("kb-memgate").args(["apply", "--model"]).arg(&m).write_stdin(lines(&d)).assert().success();
    let r = records(&out.get_output().stdout);
    assert_eq!(r[0]["status"], "applied", "{r:?}");
    let new = r[0]["note_id"].as_str().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.get_output().stderr), "");
    let cache = std::fs::read(mem(&lib, ".dense.vec")).unwrap();
    assert_eq!(cache.len(), good.len() + ENTRY, "one whole entry appended, the torn bytes gone");
    assert_eq!(&cache[..good.len()], &good[..]);
    // decide finds every vector cached, and ranks as a reindexed store does.
    let q = [said("remember", "Prefer pnpm to npm.")];
    let (d, err) = decide_with(&lib, &m, &q);
    assert_eq!(err, "", "nothing left to encode");
    assert!(ids(&d[0]).contains(&new), "{}", d[0]);
    assert_eq!(reindex(&lib, &m)["vectors"], json!({"notes": 4, "encoded": 0}));
    let (again, _) = decide_with(&lib, &m, &q);
    assert_eq!(again, d);
    // Without the model apply leaves the cache alone; decide encodes that note.
    let before = std::fs::read(mem(&lib, ".dense.vec")).unwrap();
    remember(&lib, "Never commit secrets.");
    assert_eq!(std::fs::read(mem(&lib, ".dense.vec")).unwrap(), before);
    let (_, err) = decide_with(&lib, &m, &q);
    assert!(err.contains("1 notes have no cached vector"), "{err}");
    // The environment names the model as --model does; a cache of another
    // model is started anew with the note apply writes.
    std::fs::write(mem(&lib, ".dense.vec"), b"not a cache").unwrap();
    let d = crate::memgate::decide(&lib, &[bare("Keep the changelog short.")]);
    lib.cmd("kb-memgate").arg("apply").env("KB_MEMGATE_MODEL", &m).write_stdin(lines(&d)).assert().success();
    assert_eq!(dense_len(&lib), HEADER + ENTRY);
}

#[test]
fn a_missing_or_broken_model_is_an_error_before_any_write() {
    let (lib, m, ids) = store();
    reindex(&lib, &m);
    // Something for reindex to do: a hand-edited note.
    edit(&lib, &ids[0], "- Status: active", "- Status: paused");
    let broken = model(&lib, "broken", 3);
    std::fs::write(broken.join("model.safetensors"), b"not weights").unwrap();
    let relu = model(&lib, "relu", 3);
    let cfg = std::fs::read_to_string(relu.join("config.json")).unwrap().replace("\"gelu\"", "\"relu\"");
    std::fs::write(relu.join("config.json"), cfg).unwrap();
    let q = [said("remember", "Prefer pnpm to npm.")];
    for (dir, names) in [
        (lib.root().join("nowhere"), "nowhere/config.json"),
        (broken.clone(), "broken/model.safetensors"),
        (relu.clone(), "relu/config.json"),
    ] {
        let before = crate::util::tree_times(lib.root());
        for args in [vec!["decide"], vec!["reindex"], vec!["apply"]] {
            let out =
                lib.cmd("kb-memgate").args(&args).arg("--model").arg(&dir).write_stdin(lines(&q)).assert().code(2);
            let o = out.get_output();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(err.lines().count(), 1, "{args:?} {}: one line: {err}", dir.display());
            assert!(err.contains(names), "{args:?}: names the file: {err}");
            assert_eq!(String::from_utf8_lossy(&o.stdout), "", "{args:?}");
            unchanged(&lib, &before, &format!("{args:?} {}: nothing written", dir.display()));
            // The same through the environment.
            let out =
                lib.cmd("kb-memgate").args(&args).env("KB_MEMGATE_MODEL", &dir).write_stdin(lines(&q)).assert().code(2);
            assert!(String::from_utf8_lossy(&out.get_output().stderr).contains(names));
            unchanged(&lib, &before, &format!("{args:?} {}: nothing written", dir.display()));
        }
    }
}

/// A model whose vocabulary lacks the characters (an English one: a row
/// of unknown tokens, alike for every note) leaves Chinese to the words.
#[test]
fn chinese_stays_lexical_with_a_model_that_does_not_read_it() {
    let lib = Lib::project();
    let zh = remember(&lib, "缩进一律使用 tabs");
    for t in NOTES {
        remember(&lib, t);
    }
    let m = model(&lib, "model", 1);
    reindex(&lib, &m);
    let q = [said("remember", "以后缩进都使用 tabs")];
    let plain = crate::memgate::decide(&lib, &q);
    let (d, _) = decide_with(&lib, &m, &q);
    assert_eq!(d, plain, "a Chinese text ignores the encoder");
    assert_eq!(ids(&d[0]).first(), Some(&zh.as_str()), "{}", d[0]);
    assert!(d[0]["neighbours"].as_array().unwrap().iter().all(|n| n.get("dense").is_none()), "{}", d[0]);
    // An English statement in the same store is ranked with it.
    let (d, _) = decide_with(&lib, &m, &[said("remember", "Use tabs for indentation in every file.")]);
    assert_eq!(ids(&d[0]).len(), 4, "{}", d[0]);
    assert!(d[0]["neighbours"].as_array().unwrap().iter().all(|n| n["dense"].is_number()), "{}", d[0]);
}

/// A model that reads Chinese (its vocabulary holds the characters, as a
/// multilingual model's does) ranks a Chinese statement by meaning too:
/// every neighbour gets its cosine, which an English model's row of
/// unknown tokens would not earn.
#[test]
fn chinese_is_ranked_by_meaning_with_a_model_that_reads_it() {
    let lib = Lib::project();
    let zh = remember(&lib, "缩进一律使用 tabs");
    for t in NOTES {
        remember(&lib, t);
    }
    let mut words: Vec<String> = WORDS.iter().map(|w| w.to_string()).collect();
    words.extend("缩进一律使用以后都，。".chars().map(String::from));
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let m = lib.root().join("zh-model");
    fixture::write(&m, &fixture::SMALL, &words, 1).unwrap();
    reindex(&lib, &m);
    let (d, _) = decide_with(&lib, &m, &[said("remember", "以后缩进都使用 tabs")]);
    assert_eq!(ids(&d[0]).first(), Some(&zh.as_str()), "{}", d[0]);
    assert_eq!(ids(&d[0]).len(), 4, "every note is a candidate: {}", d[0]);
    assert!(d[0]["neighbours"].as_array().unwrap().iter().all(|n| n["dense"].is_number()), "{}", d[0]);
}

#[test]
fn without_a_model_a_statement_has_no_dense() {
    let (lib, _, ids) = store();
    let d = crate::memgate::decide(&lib, &[said("remember", "Use tabs for indentation in every file.")]);
    assert_eq!(d[0]["neighbours"][0]["id"], ids[0].as_str(), "{}", d[0]);
    assert!(d[0]["neighbours"].as_array().unwrap().iter().all(|n| n.get("dense").is_none()), "{}", d[0]);
    assert!(!mem(&lib, ".dense.vec").exists());
    let recs = ok_records(lib.cmd("kb-memgate").arg("reindex"));
    assert!(recs[0].get("vectors").is_none());
    assert!(!mem(&lib, ".dense.vec").exists(), "no model, no cache");
}

#[test]
fn a_note_edited_since_reindex_is_read_as_it_is_now() {
    let (lib, m, ids) = store();
    reindex(&lib, &m);
    edit(&lib, &ids[2], "Run clippy before every push.", "Prefer pnpm to npm.");
    let q = [bare("Prefer pnpm to npm."), said("remember", "Which package manager do I prefer?")];
    let (edited, _) = decide_with(&lib, &m, &q);
    // The same as with no cache at all: the edited note's old vector is not used.
    std::fs::remove_file(mem(&lib, ".dense.vec")).unwrap();
    let (fresh, err) = decide_with(&lib, &m, &q);
    assert!(err.contains("3 notes have no cached vector"), "{err}");
    assert_eq!(edited, fresh);
    assert!(edited.iter().all(|d| d["neighbours"].as_array().unwrap().iter().all(|n| n["dense"].is_number())));
}

#[test]
fn an_empty_store_with_a_model() {
    let lib = Lib::project();
    let m = model(&lib, "model", 1);
    let (d, err) = decide_with(&lib, &m, &[bare("Prefer pnpm to npm.")]);
    assert_eq!((d[0]["action"].as_str(), err.as_str()), (Some("new"), ""), "{d:?}");
    assert_eq!(d[0]["neighbours"], json!([]));
    assert_eq!(reindex(&lib, &m)["vectors"], json!({"notes": 0, "encoded": 0}));
    assert_eq!(dense_len(&lib), HEADER);
    let (again, _) = decide_with(&lib, &m, &[bare("Prefer pnpm to npm.")]);
    assert_eq!(again, d);
}
