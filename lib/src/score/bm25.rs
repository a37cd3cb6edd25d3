//! Okapi BM25 over a library's index (title, topic, keywords and body as
//! one field), the full-text tier that finds documents whose topic and
//! keywords do not name the query. k1 0.9 / b 0.4 are Anserini's values;
//! a grid on the SciFact train queries (bench/scifact.py) changed nDCG@10
//! by under 0.01, so they stay.

use super::index::View;

/// Term-frequency saturation.
pub const K1: f64 = 0.9;
/// Length normalisation.
pub const B: f64 = 0.4;

/// BM25 scores of every document containing at least one query term,
/// ordered by document id.
pub fn search(v: &View, terms: &[String]) -> Vec<(u32, f64)> {
    let n = v.docs() as f64;
    let avg = if v.info.avg_len > 0.0 { v.info.avg_len } else { 1.0 };
    let mut acc: Vec<f64> = Vec::new();
    let mut touched: Vec<u32> = Vec::new();
    for t in terms {
        let Some(id) = v.find(t) else { continue };
        let posts: Vec<(u32, u32)> = v.postings_of(id).collect();
        let df = posts.len() as f64;
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        if acc.is_empty() {
            acc = vec![0.0; v.docs()];
        }
        for (d, tf) in posts {
            let tf = f64::from(tf);
            let len = f64::from(v.len(d));
            let s = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg));
            let slot = &mut acc[d as usize];
            if *slot == 0.0 {
                touched.push(d);
            }
            *slot += s;
        }
    }
    touched.sort_unstable();
    touched.into_iter().map(|d| (d, acc[d as usize])).filter(|(_, s)| *s > 0.0).collect()
}
