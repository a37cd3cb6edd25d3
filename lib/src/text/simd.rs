//! The encoder's two hot loops, vectorised for the CPU found at run time
//! (pulp dispatches AVX2 and FMA, or AVX-512, else plain code): the
//! product of a few rows with a weight matrix, and the dot product.
//!
//! A query is 10–40 tokens. matrixmultiply packs the whole weight matrix
//! before it multiplies, which for so few rows costs more than the product
//! (the larger half of a kb-score call with a model was its packing); here
//! each weight row is read once, straight from the mapped weights, and
//! met by a block of input rows held in registers. Past [`FEW_ROWS`] rows
//! (a document's chunk of up to 256 tokens) packing pays for itself, and
//! the caller keeps matrixmultiply (bench/RESULTS.md, "The query's forward
//! pass": the crossover measured). A query's product is large enough to
//! split by output columns over the thread pool, which a CLI call on a
//! small machine otherwise leaves idle.

use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;

/// The most rows [`rows_times_weights`] is used for: above it,
/// matrixmultiply's packed product is as fast or faster.
pub const FEW_ROWS: usize = 64;

/// Input rows of one block.
const ROWS: usize = 4;
/// Weight rows of one block: 4 × 3 accumulators, 3 weight vectors and an
/// input vector fill AVX2's 16 registers.
const COLS: usize = 3;

/// Multiply-adds of a product above which it is split over the thread
/// pool: a query's feed-forward products (25 rows × 384 × 1536, 14.7
/// million) are; its 384 × 384 ones (3.7 million) cost less than the
/// hand-over between threads saves (bench/RESULTS.md, "The query's
/// forward pass on two cores").
const SPLIT_WORK: usize = 1 << 23;

/// `y = x Wᵀ + b` for `x` of `rows` × `k` and `W` of `n` × `k` (a
/// checkpoint's `[out, in]`), all row-major; `y` is `rows` × `n`. A large
/// enough product is split by output columns over the thread pool (a CLI
/// call's forward pass then uses both cores of a small machine); each
/// output is summed in the same order either way, so `y` is the same to
/// the bit.
pub fn rows_times_weights(x: &[f32], w: &[f32], b: &[f32], k: usize, y: &mut [f32]) {
    let parts = if x.len() * b.len() < SPLIT_WORK { 1 } else { rayon::current_num_threads() };
    rows_times_weights_in(parts, x, w, b, k, y);
}

/// [`rows_times_weights`] in at most `parts` parts, cut at multiples of
/// a block's weight rows so that every output meets the same block (or
/// edge) as in one part.
fn rows_times_weights_in(parts: usize, x: &[f32], w: &[f32], b: &[f32], k: usize, y: &mut [f32]) {
    let (rows, n) = (x.len() / k.max(1), b.len());
    assert!(x.len() == rows * k && w.len() == n * k && y.len() == rows * n, "shapes of x, W, b and y agree");
    let per = n.div_ceil(COLS).div_ceil(parts.max(1)) * COLS;
    if per >= n || rows == 0 {
        Arch::new().dispatch(Product { x, w, b, k, y });
        return;
    }
    let outs: Vec<Vec<f32>> = w
        .par_chunks(per * k)
        .zip(b.par_chunks(per))
        .map(|(w, b)| {
            let mut y = vec![0f32; rows * b.len()];
            Arch::new().dispatch(Product { x, w, b, k, y: &mut y });
            y
        })
        .collect();
    for (part, out) in outs.iter().enumerate() {
        let (from, width) = (part * per, out.len() / rows);
        for (p, row) in out.chunks_exact(width).enumerate() {
            y[p * n + from..p * n + from + width].copy_from_slice(row);
        }
    }
}

/// The dot product of two vectors of one length.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    Arch::new().dispatch(Dot { a, b })
}

struct Dot<'a> {
    a: &'a [f32],
    b: &'a [f32],
}

impl WithSimd for Dot<'_> {
    type Output = f32;

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> f32 {
        let (a, at) = S::as_simd_f32s(self.a);
        let (b, bt) = S::as_simd_f32s(self.b);
        // Four sums in flight hide the latency of each add.
        let mut acc = [simd.splat_f32s(0.0); 4];
        let (a4, a1) = a.split_at(a.len() / 4 * 4);
        let (b4, b1) = b.split_at(a4.len().min(b.len()));
        for (x, y) in a4.chunks_exact(4).zip(b4.chunks_exact(4)) {
            for j in 0..4 {
                acc[j] = simd.mul_add_e_f32s(x[j], y[j], acc[j]);
            }
        }
        for (x, y) in a1.iter().zip(b1) {
            acc[0] = simd.mul_add_e_f32s(*x, *y, acc[0]);
        }
        let sum = simd.add_f32s(simd.add_f32s(acc[0], acc[1]), simd.add_f32s(acc[2], acc[3]));
        simd.reduce_sum_f32s(sum) + at.iter().zip(bt).map(|(x, y)| x * y).sum::<f32>()
    }
}

struct Product<'a> {
    x: &'a [f32],
    w: &'a [f32],
    b: &'a [f32],
    k: usize,
    y: &'a mut [f32],
}

impl WithSimd for Product<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Product { x, w, b, k, y } = self;
        let n = b.len();
        let rows = y.len() / n.max(1);
        fn row(m: &[f32], i: usize, k: usize) -> &[f32] {
            &m[i * k..(i + 1) * k]
        }
        // One weight row against one input row, for the edges of the blocks.
        let one = |p: usize, o: usize| -> f32 {
            let (xs, xt) = S::as_simd_f32s(row(x, p, k));
            let (ws, wt) = S::as_simd_f32s(row(w, o, k));
            let mut acc = simd.splat_f32s(0.0);
            for (a, c) in xs.iter().zip(ws) {
                acc = simd.mul_add_e_f32s(*a, *c, acc);
            }
            simd.reduce_sum_f32s(acc) + xt.iter().zip(wt).map(|(a, c)| a * c).sum::<f32>()
        };
        let full_rows = rows / ROWS * ROWS;
        for o in (0..n).step_by(COLS) {
            if o + COLS > n {
                for o in o..n {
                    for p in 0..rows {
                        y[p * n + o] = b[o] + one(p, o);
                    }
                }
                break;
            }
            let ws: [(&[S::f32s], &[f32]); COLS] = std::array::from_fn(|c| S::as_simd_f32s(row(w, o + c, k)));
            for p in (0..full_rows).step_by(ROWS) {
                let xs: [(&[S::f32s], &[f32]); ROWS] = std::array::from_fn(|r| S::as_simd_f32s(row(x, p + r, k)));
                let mut acc = [[simd.splat_f32s(0.0); COLS]; ROWS];
                for i in 0..ws[0].0.len() {
                    let wv: [S::f32s; COLS] = std::array::from_fn(|c| ws[c].0[i]);
                    for r in 0..ROWS {
                        let xv = xs[r].0[i];
                        for c in 0..COLS {
                            acc[r][c] = simd.mul_add_e_f32s(xv, wv[c], acc[r][c]);
                        }
                    }
                }
                for r in 0..ROWS {
                    for c in 0..COLS {
                        let tail: f32 = xs[r].1.iter().zip(ws[c].1).map(|(a, c)| a * c).sum();
                        y[(p + r) * n + o + c] = b[o + c] + simd.reduce_sum_f32s(acc[r][c]) + tail;
                    }
                }
            }
            for p in full_rows..rows {
                for c in 0..COLS {
                    y[p * n + o + c] = b[o + c] + one(p, o + c);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(seed: u64, n: usize) -> Vec<f32> {
        crate::text::bert::fixture::values(seed, n)
    }

    /// `x Wᵀ + b` by plain loops in f64.
    fn naive(x: &[f32], w: &[f32], b: &[f32], k: usize) -> Vec<f64> {
        let (rows, n) = (x.len() / k, b.len());
        let mut y = vec![0f64; rows * n];
        for p in 0..rows {
            for o in 0..n {
                y[p * n + o] =
                    f64::from(b[o]) + (0..k).map(|i| f64::from(x[p * k + i]) * f64::from(w[o * k + i])).sum::<f64>();
            }
        }
        y
    }

    #[test]
    fn the_product_equals_plain_loops_at_every_edge_of_its_blocks() {
        // Rows and outputs that fill the blocks and that leave edges;
        // lengths that fill the vector lanes and that leave a tail.
        for (rows, n, k) in [(1, 1, 1), (4, 3, 16), (5, 7, 384), (9, 4, 37), (13, 385, 24), (64, 6, 1536), (3, 2, 7)] {
            let (x, w, b) = (values(1, rows * k), values(2, n * k), values(3, n));
            let mut y = vec![f32::NAN; rows * n];
            rows_times_weights(&x, &w, &b, k, &mut y);
            for (got, want) in y.iter().zip(naive(&x, &w, &b, k)) {
                assert!(
                    (f64::from(*got) - want).abs() <= 1e-5 * want.abs().max(1.0),
                    "{rows}×{k}·{n}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn the_product_in_parts_is_the_product_in_one_to_the_bit() {
        // Outputs that fill the parts and that leave a short last part or
        // an edge of the blocks in it; more parts than blocks.
        for (rows, n, k) in [(25, 384, 384), (25, 1536, 384), (7, 385, 37), (4, 7, 16), (1, 3, 8), (3, 2, 5)] {
            let (x, w, b) = (values(6, rows * k), values(7, n * k), values(8, n));
            let mut one = vec![f32::NAN; rows * n];
            rows_times_weights_in(1, &x, &w, &b, k, &mut one);
            for parts in [2, 3, 4, 64] {
                let mut split = vec![f32::NAN; rows * n];
                rows_times_weights_in(parts, &x, &w, &b, k, &mut split);
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&split), bits(&one), "{rows}×{k}·{n} in {parts} parts");
            }
        }
    }

    #[test]
    fn the_dot_product_equals_plain_loops_for_any_length() {
        for len in [0, 1, 7, 8, 31, 32, 33, 384, 1000] {
            let (a, b) = (values(4, len), values(5, len));
            let want: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
            let got = dot(&a, &b);
            assert!((f64::from(got) - want).abs() <= 1e-5 * want.abs().max(1.0), "{len}: {got} vs {want}");
        }
    }
}
