//! Builds a library's search index (`score::index`) from its documents
//! (kb::library::scan's document list, kb::library::entry's entries), its relation edges
//! (kb::library::relations, seed 000's `.relations.jsonl`) and the graph of
//! kb::library::graph. An earlier index is reused incrementally: a document whose
//! size and mtime did not change is not read again.

use std::collections::HashMap;
use std::fs;
use std::time::UNIX_EPOCH;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::clock;
use crate::doc::frontmatter;
use crate::error::Result;
use crate::library::entry::Entry;
use crate::library::graph::Graph;
use crate::library::relations;
use crate::library::scan::{self, Problem};
use crate::library::Library;
use crate::text;

use super::bm25::FieldTf;
use super::index::{self, DocRec, Forward, Info, Meta, View, Words, KEYWORD_PREFIX, NO_DATE, TOPIC_PREFIX};
use super::walk;
use super::written;
use crate::text::terms;

/// A built index and what went wrong on the way.
pub struct Built {
    /// The index bytes.
    pub bytes: Vec<u8>,
    /// Files that could not be read (they are left out or indexed by path).
    pub problems: Vec<Problem>,
    /// How many documents were read from disk (the rest were reused).
    pub read: usize,
}

/// `(size, mtime ns)` of a path, `(0, 0)` when it is missing.
pub fn stamp(path: &std::path::Path) -> (u64, u64) {
    match fs::metadata(path) {
        Ok(m) => (m.len(), mtime_ns(&m)),
        Err(_) => (0, 0),
    }
}

/// A file's mtime in nanoseconds since the epoch (0 when unknown).
pub fn mtime_ns(m: &fs::Metadata) -> u64 {
    m.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos() as u64)
}

/// Files other than documents whose change invalidates an index.
pub const WATCHED: &[&str] = &[relations::FILE, ".changelog", ".changelog-archive"];

/// `(name, size, mtime ns)` of each [`WATCHED`] file.
pub fn watched_stamps(lib: &Library) -> Vec<(String, u64, u64)> {
    WATCHED
        .iter()
        .map(|f| {
            let (s, m) = stamp(&lib.path(f));
            (f.to_string(), s, m)
        })
        .collect()
}

/// One document read from disk.
pub(super) struct Fresh {
    pub(super) entry: Entry,
    pub(super) rec: DocRec,
    pub(super) meta: Meta,
    pub(super) words: Vec<(String, u32)>,
}

/// A skill's reference file (walk::is_skill_reference) read as a user
/// document named by its file: topic from frontmatter, else the file name.
pub fn skill_reference(rel: &str, text: &str) -> Option<Entry> {
    if !walk::is_skill_reference(rel) {
        return None;
    }
    let name = rel.rsplit('/').next()?;
    let mut e = Entry::from_text(name, text)?;
    e.path = rel.to_string();
    Some(e)
}

/// Keywords indexed per document. A longer list (200,000 generated words
/// in 15 MB of frontmatter) would cost a dictionary entry, a heap string
/// and a spelling candidate per word: its first `MAX_KEYWORDS` are
/// indexed, the rest are not (the file keeps them; counted as body text
/// they still cost 460 MB at eight such documents), and the build warns
/// (a `keywords` problem).
pub const MAX_KEYWORDS: usize = 256;

/// Reads and analyses one document; `None` (with problems) when unreadable.
pub(super) fn read_one(lib: &Library, rel: &str, written: &HashMap<String, i64>) -> (Option<Fresh>, Vec<Problem>) {
    let (meta, text, mut problems) = match scan::read_text(lib, rel) {
        Ok(read) => read,
        Err(p) => return (None, vec![p]),
    };
    let Some(mut entry) = Entry::from_text(rel, &text).or_else(|| skill_reference(rel, &text)) else {
        return (None, problems);
    };
    if let Some(err) = &entry.frontmatter_error {
        problems.push(Problem { path: rel.to_string(), kind: "frontmatter".into(), message: err.clone() });
    }
    let extra = entry.keywords.len().saturating_sub(MAX_KEYWORDS);
    entry.keywords.truncate(MAX_KEYWORDS);
    if extra > 0 {
        problems.push(Problem {
            path: rel.to_string(),
            kind: "keywords".into(),
            message: format!(
                "{} keywords; the first {MAX_KEYWORDS} are indexed, the rest are not",
                MAX_KEYWORDS + extra
            ),
        });
    }
    let body = frontmatter::locate(&text).map_or(text.as_str(), |(_, _, b)| &text[b..]);
    // Per-field counts (bm25::FieldTf): heading = title or topic, keywords, body.
    let mut fields: FxHashMap<String, FieldTf> = FxHashMap::default();
    let mut len = 0u32;
    let title = entry.title.as_deref().unwrap_or("");
    let mut count = |part: &str, slot: fn(&mut FieldTf) -> &mut u32| {
        terms::each_term(part, |t| {
            len += 1;
            match fields.get_mut(t) {
                Some(f) => *slot(f) += 1,
                None => {
                    let mut f = FieldTf::default();
                    *slot(&mut f) = 1;
                    fields.insert(t.to_string(), f);
                }
            }
        });
    };
    count(&entry.keywords.join(" "), |f| &mut f.kw);
    count(body, |f| &mut f.body);
    count(title, |f| &mut f.head);
    // The topic counts as heading only where it says more than the title.
    let mut topic_tf: FxHashMap<String, u32> = FxHashMap::default();
    terms::each_term(&entry.topic, |t| *topic_tf.entry(t.to_string()).or_insert(0) += 1);
    for (t, n) in topic_tf {
        let f = fields.entry(t).or_default();
        if n > f.head {
            len += n - f.head;
            f.head = n;
        }
    }
    let mut counts: FxHashMap<String, u32> = fields.into_iter().map(|(t, f)| (t, f.pack())).collect();
    let topic_words = text::tokens(&entry.topic);
    for w in &topic_words {
        counts.insert(format!("{TOPIC_PREFIX}{w}"), 1);
    }
    let kw_words: Vec<Vec<String>> = entry.keywords.iter().map(|k| text::tokens(k)).collect();
    for w in kw_words.iter().flatten() {
        counts.insert(format!("{KEYWORD_PREFIX}{w}"), 1);
    }
    let mtime = mtime_ns(&meta);
    let verified = entry.last_verified_at.as_deref().and_then(clock::parse_instant);
    // Freshness from what the library knows, never the mtime (kb::score::written).
    let (fresh_at, fresh_from) = match (verified, written.get(rel)) {
        (Some(ts), _) => (ts.as_second(), "last_verified_at"),
        (None, Some(&ts)) => (ts, "changelog"),
        (None, None) => (NO_DATE, "none"),
    };
    let m = Meta {
        category: entry.category.as_str().to_string(),
        topic: entry.topic.clone(),
        title: entry.title.clone(),
        doc_type: entry.doc_type.clone(),
        keywords: entry.keywords.clone(),
        notebooks: entry.notebooks.clone(),
        quality_status: entry.quality_status.clone(),
        fresh_from: fresh_from.to_string(),
    };
    let words: Vec<(String, u32)> = counts.into_iter().collect();
    let rec = DocRec {
        path: rel.to_string(),
        meta: Vec::new(),
        terms: Vec::new(),
        len,
        fresh_at,
        size: meta.len(),
        mtime_ns: mtime,
        topic_n: topic_words.len() as u32,
        words: Words::encode(&topic_words, &kw_words),
        topic: entry.topic.clone(),
    };
    (Some(Fresh { entry, rec, meta: m, words }), problems)
}

/// Interns term strings to dense ids.
#[derive(Default)]
pub(super) struct Vocab {
    ids: FxHashMap<String, u32>,
    pub(super) words: Vec<String>,
}

impl Vocab {
    pub(super) fn id(&mut self, w: &str) -> u32 {
        if let Some(&i) = self.ids.get(w) {
            return i;
        }
        let i = self.words.len() as u32;
        self.ids.insert(w.to_string(), i);
        self.words.push(w.to_string());
        i
    }
}

/// Documents read in parallel before their terms are interned.
const READ_CHUNK: usize = 4096;

/// Builds the index of `lib`, reusing unchanged documents of `old`.
pub fn build(lib: &Library, old: Option<&View>) -> Result<Built> {
    let lap = profiler("build");
    // Stamps first: a change made while we read makes the next query update.
    let stamps = watched_stamps(lib);
    // The relations as of now, kept in the index for side indexes to diff.
    let rels = read_relations(lib)?;
    let walked = match old {
        Some(v) => {
            let old_paths: Vec<&str> = (0..v.docs() as u32).map(|d| v.path(d)).collect();
            walk::update(lib, &old_paths, &v.info.dirs)
        }
        None => walk::full(lib),
    };
    let (paths, dirs, mut problems) = (walked.paths, walked.dirs, walked.problems);
    lap("walk");
    let old_ids: HashMap<&str, u32> = match old {
        Some(v) => (0..v.docs() as u32).map(|d| (v.path(d), d)).collect(),
        None => HashMap::new(),
    };
    // Which documents can be reused: same path, size and mtime.
    let reuse: Vec<Option<u32>> = paths
        .par_iter()
        .map(|p| {
            let d = *old_ids.get(p.as_str())?;
            let v = old?;
            (stamp(&lib.path(p)) == v.stamp(d)).then_some(d)
        })
        .collect();
    let read = reuse.iter().filter(|r| r.is_none()).count();
    if let Some(v) = old {
        if read == 0 && paths.len() == v.docs() && stamps == v.info.stamps {
            // Nothing indexed changed (a directory was touched): re-stamp only.
            let info = Info { dirs, stamps, ..Info::default() };
            problems.sort_by(|a, b| a.path.cmp(&b.path));
            return Ok(Built { bytes: index::restamp(v.main(), info), problems, read });
        }
    }
    let written = if read > 0 { written::from_changelog(lib)? } else { HashMap::new() };

    let mut vocab = Vocab::default();
    // Forward lists (new term id, tf) of reused documents, from the old postings.
    let old_fwd = match old.filter(|_| reuse.iter().any(Option::is_some)) {
        Some(v) => {
            let old_map: Vec<u32> = (0..v.terms()).map(|t| vocab.id(v.term(t))).collect();
            let old_map = &old_map;
            Forward::invert(v.docs(), old_map.len(), |t| v.postings_of(t).map(move |(d, tf)| (d, old_map[t], tf)))
        }
        None => Forward::default(),
    };
    // Every document's forward list in one flat vector: a Vec per
    // document cost its header and growth slack 100,000 times over.
    let mut fwd = Forward::default();
    let mut docs: Vec<DocRec> = Vec::with_capacity(paths.len());
    // Documents with no date at all, for one git log at the end.
    let mut undated: Vec<(usize, Meta)> = Vec::new();
    // The old graph facts still hold when no document came or went, no
    // topic changed and the relations are the same.
    let mut same_graph = old.is_some_and(|v| v.docs() == paths.len() && v.info.stamps == stamps);
    // Read in parallel a chunk at a time and turn each chunk's term
    // strings into ids before the next: the strings of every document at
    // once were most of a cold build's memory (0.8 GB at 100,000).
    let progress = crate::out::progress::Progress::new("kb-score: indexing", read);
    for start in (0..paths.len()).step_by(READ_CHUNK) {
        let end = (start + READ_CHUNK).min(paths.len());
        let fresh: Vec<(Option<Fresh>, Vec<Problem>)> = paths[start..end]
            .par_iter()
            .zip(reuse[start..end].par_iter())
            .inspect(|(_, r)| {
                if r.is_none() {
                    progress.count();
                }
            })
            .map(|(p, r)| if r.is_some() { (None, Vec::new()) } else { read_one(lib, p, &written) })
            .collect();
        for (k, (f, probs)) in fresh.into_iter().enumerate() {
            let (i, p, r) = (start + k, &paths[start + k], &reuse[start + k]);
            problems.extend(probs);
            if let Some(v) = old.filter(|_| same_graph) {
                let d = i as u32;
                same_graph = v.path(d) == p && f.as_ref().is_none_or(|f| v.topic(d) == f.entry.topic);
            }
            match (r, f, old) {
                (Some(d), _, Some(v)) => {
                    let (size, mtime_ns) = v.stamp(*d);
                    fwd.push_doc(old_fwd.doc(*d as usize).iter().copied());
                    docs.push(DocRec {
                        path: p.clone(),
                        meta: v.meta_bytes(*d).to_vec(),
                        terms: Vec::new(),
                        len: v.len(*d),
                        fresh_at: v.fresh_at(*d),
                        size,
                        mtime_ns,
                        topic_n: v.topic_n(*d),
                        words: v.words_raw(*d).to_string(),
                        topic: v.topic(*d).to_string(),
                    });
                }
                (_, Some(f), _) => {
                    let mut rec = f.rec;
                    fwd.push_doc(f.words.iter().map(|(w, tf)| (vocab.id(w), *tf)));
                    rec.meta = serde_json::to_vec(&f.meta).unwrap_or_default();
                    if rec.fresh_at == NO_DATE {
                        undated.push((docs.len(), f.meta));
                    }
                    docs.push(rec);
                }
                _ => {}
            }
        }
    }
    drop(old_fwd);
    lap("read");
    date_from_git(lib, &mut docs, undated);
    problems.sort_by(|a, b| a.path.cmp(&b.path));

    lap("assemble");
    let parsed = rels.as_deref().and_then(relations::parse);
    let relations_ok = parsed.is_some();
    let (used, adj) = match old {
        Some(v) if same_graph && docs.len() == v.docs() => {
            let n = v.docs() as u32;
            ((0..n).map(|d| v.used_by(d)).collect(), (0..n).map(|d| v.neighbors(d).collect()).collect())
        }
        _ => {
            let edges = match parsed {
                Some(set) => set,
                None => {
                    let scan = scan::library(lib);
                    relations::all_edges(scan.docs.iter().map(|d| d.edges.as_slice()), lib)?
                }
            };
            let g = Graph::build(&edges, docs.iter().map(|d| (d.path.as_str(), d.topic.as_str())));
            (g.used, g.adj)
        }
    };
    lap("graph");
    let built = std::time::SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    let info = Info { dirs, stamps, built, relations_ok, ..Info::default() };
    let rels = if relations_ok { rels.unwrap_or_default() } else { String::new() };
    let bytes = index::write_flat(docs, fwd, &vocab.words, &used, &adj, rels.as_bytes(), info);
    lap("write");
    Ok(Built { bytes, problems, read })
}

/// With `KB_SCORE_PROFILE` set, a function printing each phase's time and
/// the peak RSS so far on stderr; else one doing nothing.
pub fn profiler(name: &'static str) -> impl Fn(&str) {
    let t0 = std::time::Instant::now();
    let on = std::env::var_os("KB_SCORE_PROFILE").is_some();
    move |what: &str| {
        if on {
            let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
            let hwm =
                status.lines().find(|l| l.starts_with("VmHWM:")).unwrap_or("").trim_start_matches("VmHWM:").trim();
            eprintln!("kb-score: profile: {name}: {what} at {:?} (peak RSS {hwm})", t0.elapsed());
        }
    }
}

/// `.relations.jsonl` as text: empty when missing, None when it is not
/// UTF-8 (relations::read's rules; the caller rebuilds edges then).
fn read_relations(lib: &Library) -> Result<Option<String>> {
    let p = lib.path(relations::FILE);
    match fs::read(&p) {
        Ok(b) => Ok(String::from_utf8(b).ok()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Some(String::new())),
        Err(e) => Err(crate::Error::io(format!("reading {}", p.display()), e)),
    }
}

/// Documents with no date at all get their last commit's: one git log
/// for all of them.
pub(super) fn date_from_git(lib: &Library, docs: &mut [DocRec], undated: Vec<(usize, Meta)>) {
    let committed = {
        let ps: Vec<&str> = undated.iter().map(|(i, _)| docs[*i].path.as_str()).collect();
        written::from_git(lib, &ps)
    };
    for (i, mut m) in undated {
        if let Some(&t) = committed.get(&docs[i].path) {
            docs[i].fresh_at = t;
            m.fresh_from = "git".into();
            docs[i].meta = serde_json::to_vec(&m).unwrap_or_default();
        }
    }
}
