//! BM25, the project's one lexical relevance formula (Robertson &
//! Spärck Jones IDF with Lucene's +1, so it is never negative). Every
//! ranker shares it and brings its own parameters, measured for its use:
//! kb-score ranks documents with field weights on top (`score::bm25`),
//! kb-memgate compares short notes (`memgate::similarity`).

/// Inverse document frequency of a term in `df` of `n` documents.
pub fn idf(n: f64, df: f64) -> f64 {
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// BM25's saturation of a (possibly field-weighted) term frequency `tf`
/// in a document of length `len` (mean `avg`), before IDF: in
/// [0, k1 + 1). `k1` bounds what repeating a term is worth, `b` how much a
/// long document is discounted.
pub fn saturate(k1: f64, b: f64, tf: f64, len: f64, avg: f64) -> f64 {
    if tf <= 0.0 {
        return 0.0;
    }
    let avg = if avg > 0.0 { avg } else { 1.0 };
    tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len / avg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_monotone() {
        assert_eq!(saturate(1.2, 0.75, 0.0, 10.0, 10.0), 0.0);
        assert!((saturate(1.2, 0.75, 1.0, 10.0, 10.0) - 1.0).abs() < 1e-12);
        assert!(saturate(1.2, 0.75, 1e9, 10.0, 10.0) < 2.2);
        assert!(saturate(1.2, 0.75, 1.0, 5.0, 10.0) > saturate(1.2, 0.75, 1.0, 20.0, 10.0));
        assert!(idf(100.0, 100.0) > 0.0 && idf(100.0, 1.0) > idf(100.0, 50.0));
    }
}
