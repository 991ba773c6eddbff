//! Row-major GEMM on strided slices, through the `gemm` crate (the one candle's CPU matmul uses,
//! so the fused kernels and candle's own matmuls run the same micro-kernels).
//!
//! A matrix view is `(ptr offset, rows, cols, row stride)` with unit column stride, or its
//! transpose: [`Mat::t`] swaps the strides without copying, which is how `Aᵀ·B` in the backward
//! passes is expressed.

pub use super::math::Real;

/// A strided read-only matrix view: element `(i, j)` is `data[off + i*rs + j*cs]`.
#[derive(Clone, Copy)]
pub struct Mat<'a, T> {
    pub data: &'a [T],
    pub off: usize,
    pub rows: usize,
    pub cols: usize,
    pub rs: usize,
    pub cs: usize,
}

impl<'a, T> Mat<'a, T> {
    /// A contiguous row-major `(rows, cols)` matrix.
    pub fn new(data: &'a [T], rows: usize, cols: usize) -> Self {
        Mat { data, off: 0, rows, cols, rs: cols, cs: 1 }
    }

    /// Rows of length `cols` taken every `rs` elements, starting at `off`.
    pub fn strided(data: &'a [T], off: usize, rows: usize, cols: usize, rs: usize) -> Self {
        Mat { data, off, rows, cols, rs, cs: 1 }
    }

    /// The transpose, as a view.
    pub fn t(self) -> Self {
        Mat { rows: self.cols, cols: self.rows, rs: self.cs, cs: self.rs, ..self }
    }

    /// The last element index this view touches, plus one (0 for an empty view).
    fn extent(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            return 0;
        }
        self.off + (self.rows - 1) * self.rs + (self.cols - 1) * self.cs + 1
    }
}

/// `dst = beta_dst * dst + a · b`, where `dst` is `(a.rows, b.cols)` with row stride `dst_rs`
/// starting at `dst_off`; `accumulate == false` overwrites `dst` (its old values are not read).
/// `threads > 1` lets the `gemm` crate split the product over the rayon pool.
///
/// # Panics
/// On mismatched shapes or views that run past their slices: these are programming errors
/// in the kernels, never reachable from user input (the kernels check shapes up front).
pub fn matmul<T: Real>(dst: &mut [T], dst_off: usize, dst_rs: usize, a: Mat<'_, T>, b: Mat<'_, T>, accumulate: bool, threads: usize) {
    assert_eq!(a.cols, b.rows, "gemm: inner dimensions differ");
    let (m, n, k) = (a.rows, b.cols, a.cols);
    if m == 0 || n == 0 {
        return;
    }
    assert!(a.extent() <= a.data.len() && b.extent() <= b.data.len(), "gemm: view out of bounds");
    assert!(dst_off + (m - 1) * dst_rs + n <= dst.len(), "gemm: destination out of bounds");
    if k == 0 {
        if !accumulate {
            for i in 0..m {
                dst[dst_off + i * dst_rs..dst_off + i * dst_rs + n].fill(T::ZERO);
            }
        }
        return;
    }
    if m == 1 && k > 2 {
        return one_row(dst, dst_off, a, b, accumulate, threads);
    }
    let par = if threads > 1 && m * n * k >= 1 << 18 { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
    // SAFETY: the asserts above keep every index the views describe inside their slices, and
    // `dst` is borrowed mutably, so it cannot alias `a` or `b`.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr().add(dst_off),
            1,
            dst_rs as isize,
            accumulate,
            a.data.as_ptr().add(a.off),
            a.cs as isize,
            a.rs as isize,
            b.data.as_ptr().add(b.off),
            b.cs as isize,
            b.rs as isize,
            T::ONE,
            T::ONE,
            false,
            false,
            false,
            par,
        );
    }
}

/// [`matmul`] of one row, as the first of two. The `gemm` crate multiplies a single row by its
/// matrix-vector kernels, which sum in another order than its GEMM kernels: a row's result
/// then depended on whether it was alone, and the fused kernels split rows between threads
/// (`rnn_op::chunk_rows` gives one row per thread when there are as many threads as sentences),
/// so 58 threads scored sentences otherwise than 2 (issue 56). Multiplied as one of two rows,
/// the row gets the GEMM kernels' numbers, whatever the thread count (the module's test).
fn one_row<T: Real>(dst: &mut [T], dst_off: usize, a: Mat<'_, T>, b: Mat<'_, T>, accumulate: bool, threads: usize) {
    let (n, k) = (b.cols, a.cols);
    let mut rows = Vec::with_capacity(2 * k);
    rows.extend((0..k).map(|j| a.data[a.off + j * a.cs]));
    rows.extend_from_within(..k);
    let mut out = vec![T::ZERO; 2 * n];
    if accumulate {
        out[..n].copy_from_slice(&dst[dst_off..dst_off + n]);
    }
    matmul(&mut out, 0, n, Mat::new(&rows, 2, k), b, accumulate, threads);
    dst[dst_off..dst_off + n].copy_from_slice(&out[..n]);
}

/// A contiguous copy of the transpose of the row-major `(rows, cols)` matrix `src`.
///
/// The `gemm` crate packs a transposed operand ~3× slower than a contiguous one (measured:
/// 338 µs against 120 µs for a `(16, 768) · (768, 256)` product), so the backward passes
/// transpose each weight once per call and reuse it in every step.
pub fn transpose<T: Real>(src: &[T], rows: usize, cols: usize) -> Vec<T> {
    const TILE: usize = 32;
    let mut out = vec![T::ZERO; rows * cols];
    for r0 in (0..rows).step_by(TILE) {
        for c0 in (0..cols).step_by(TILE) {
            for r in r0..(r0 + TILE).min(rows) {
                for c in c0..(c0 + TILE).min(cols) {
                    out[c * rows + r] = src[r * cols + c];
                }
            }
        }
    }
    out
}

/// `n` copies of the row `bias`, as a row-major `(n, bias.len())` matrix: the initial value
/// of a GEMM that adds a bias.
pub fn fill_rows<T: Real>(bias: &[T], n: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(n * bias.len());
    for _ in 0..n {
        out.extend_from_slice(bias);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host search splits a step's rows between threads, so a row's product must not
    /// depend on how many rows are multiplied with it (issue 56: 16 threads translated
    /// otherwise than 2).
    #[test]
    fn a_rows_product_does_not_depend_on_the_other_rows() {
        let (k, n) = (256, 768);
        let a: Vec<f32> = (0..320 * k).map(|i| ((i * 7919 % 1013) as f32 - 506.0) * 1e-3).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 104_729 % 997) as f32 - 498.0) * 1e-3).collect();
        let full = |m: usize, threads: usize| {
            let mut c = vec![0f32; m * n];
            matmul(&mut c, 0, n, Mat::new(&a[..m * k], m, k), Mat::new(&b, k, n), false, threads);
            c
        };
        let all = full(320, 1);
        // `Bᵀ` stored, as the recurrent kernels keep `U`: a single row took the matrix-vector
        // kernel, whose sums differ in the last bits.
        let bt = transpose(&b, k, n);
        let by_t = |m: usize| {
            let mut c = vec![0f32; m * n];
            matmul(&mut c, 0, n, Mat::new(&a[..m * k], m, k), Mat::new(&bt, n, k).t(), false, 1);
            c
        };
        let all_t = by_t(64);
        for m in [1, 2, 5] {
            let part = by_t(m);
            let same = part.iter().zip(&all_t).filter(|(x, y)| x.to_bits() == y.to_bits()).count();
            assert_eq!(same, m * n, "Bᵀ, {m} rows: {} of {} entries differ", m * n - same, m * n);
        }
        for (m, threads) in [(20, 1), (160, 1), (33, 1), (320, 2), (320, 16), (160, 2), (320, 64), (33, 64), (1, 1), (2, 1), (3, 1), (4, 1)]
        {
            let part = full(m, threads);
            let same = part.iter().zip(&all).filter(|(x, y)| x.to_bits() == y.to_bits()).count();
            assert_eq!(same, m * n, "{m} rows on {threads} threads: {} of {} entries differ", m * n - same, m * n);
        }
        // The column-major form the projection uses: zᵀ = Gᵀ tᵀ.
        let colmajor = |m: usize| {
            let mut c = vec![0f32; n * m];
            matmul(&mut c, 0, m, Mat::new(&b, k, n).t(), Mat::new(&a[..m * k], m, k).t(), false, 1);
            transpose(&c, n, m)
        };
        let all = colmajor(320);
        for m in [20, 160, 33] {
            let part = colmajor(m);
            let same = part.iter().zip(&all).filter(|(x, y)| x.to_bits() == y.to_bits()).count();
            assert_eq!(same, m * n, "column-major, {m} rows: {} of {} entries differ", m * n - same, m * n);
        }
    }
}
