//! int8 products `y += x W` for the search's step (`SearchConfig::int8`): the decoder's small
//! GEMMs (`R` live rows by `W (k, cols)`: the attention query and recurrent gates, the cell's
//! inputs, the deep output's terms), which are most of a step once the output projection runs
//! in int8 over a shortlist.
//!
//! The arithmetic is `kernels/cpu/engine/int8.rs`'s: `Wᵀ` quantised once per output column (a weight row of
//! the kernel) to 7 bits, the rows of `x` quantised on the fly to 8 bits, exact `i32` sums, the
//! kernel's row-major output. Threads split the rows of `x`: each quantises and
//! multiplies its own rows, so no two write the same output row.
use rayon::prelude::*;

use crate::kernels::cpu::engine::int8::{block, QActs, QWeights};
use crate::kernels::gemm::{transpose, Mat};

/// `W (k, cols)` quantised for [`QLinear::mul_add`].
#[derive(Clone, Debug)]
pub struct QLinear {
    /// `Wᵀ (cols, k)`.
    w: QWeights,
}

impl QLinear {
    /// Quantises `w (k, cols)` row-major, per column.
    pub fn new(w: &[f32], k: usize, cols: usize) -> Self {
        QLinear { w: QWeights::new(&transpose(w, k, cols), cols, k) }
    }

    /// `dst[off + r·rs + j] += Σ_i x[r, i] W[i, j]` for the rows of `x (rows, k)`.
    pub fn mul_add(&self, dst: &mut [f32], off: usize, rs: usize, x: Mat<'_, f32>, threads: usize) {
        let (cols, k) = self.w.shape();
        assert_eq!(x.cols, k, "int8 product: inner dimensions differ");
        let rows = x.rows;
        if rows == 0 || cols == 0 {
            return;
        }
        assert!(rs >= cols && dst.len() >= off + (rows - 1) * rs + cols, "int8 product: output too small");
        // The rows of `x` contiguous (a strided `x`, such as the LSTM's `[s; cell]` rows, copied).
        let contiguous: Vec<f32>;
        let xs = if x.cs == 1 && x.rs == k {
            &x.data[x.off..x.off + rows * k]
        } else {
            contiguous = (0..rows).flat_map(|r| (0..k).map(move |i| x.data[x.off + r * x.rs + i * x.cs])).collect();
            &contiguous
        };
        let per = rows.div_ceil(threads.max(1)).max(1);
        let chunk = |(c, out): (usize, &mut [f32])| {
            let r0 = c * per;
            let n = per.min(rows - r0);
            let a = QActs::new(&xs[r0 * k..(r0 + n) * k], n, &self.w);
            block(&self.w, 0, cols, &a, out, rs);
        };
        let dst = &mut dst[off..];
        if per >= rows {
            chunk((0, dst));
        } else {
            dst.par_chunks_mut(per * rs).enumerate().for_each(chunk);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::gemm::matmul;

    #[test]
    fn int8_product_is_close_to_f32_and_threads_do_not_change_it() {
        let (rows, k, cols) = (37, 100, 70);
        let val = |i: usize, m: f32| ((i * 7919 % 1000) as f32 / 500.0 - 1.0) * m;
        let w: Vec<f32> = (0..k * cols).map(|i| val(i, 0.1)).collect();
        let x: Vec<f32> = (0..rows * k).map(|i| val(i + 13, 1.0)).collect();
        let (off, rs) = (3, cols + 5);
        let mut exact = vec![0.5f32; off + rows * rs];
        matmul(&mut exact, off, rs, Mat::new(&x, rows, k), Mat::new(&w, k, cols), true, 1);
        let q = QLinear::new(&w, k, cols);
        let run = |threads| {
            let mut out = vec![0.5f32; off + rows * rs];
            q.mul_add(&mut out, off, rs, Mat::new(&x, rows, k), threads);
            out
        };
        let one = run(1);
        assert_eq!(one, run(2));
        assert_eq!(one, run(5));
        // Untouched outside the product's columns; within a quantisation step elsewhere.
        for r in 0..rows {
            for j in 0..rs {
                let i = off + r * rs + j;
                if j >= cols {
                    assert_eq!(one[i], 0.5);
                } else {
                    assert!((one[i] - exact[i]).abs() < 0.02, "({r}, {j}): {} vs {}", one[i], exact[i]);
                }
            }
        }
        assert_eq!(one[..off], [0.5; 3]);
    }
}
