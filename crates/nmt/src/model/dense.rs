//! Dense pieces of the host search: a step's weight matrices ([`Dense`], `f32` or int8), affine
//! maps, embedding lookups, `tanh` in place, and the copy of a parameter to the host. The GRU
//! arithmetic itself is the training kernels' (`kernels::cpu::rnn_cell`, `kernels::cpu::rnn_sequence`,
//! `kernels::cpu::birnn`): the search has no cell of its own.
use candle_core::{DType, Tensor};

use crate::error::Result;
use crate::kernels::cpu::engine::isa::simd_dispatch;
use crate::kernels::gemm::{fill_rows, matmul, Mat};
use crate::kernels::math::FastMath;
use crate::model::int8_linear::QLinear;

/// `out (rows, cols) = x (rows, k) · w (k, cols) + bias`.
pub fn affine(x: &[f32], rows: usize, k: usize, w: &[f32], bias: &[f32], threads: usize) -> Vec<f32> {
    let cols = bias.len();
    let mut out = fill_rows(bias, rows);
    matmul(&mut out, 0, cols, Mat::new(x, rows, k), Mat::new(w, k, cols), true, threads);
    out
}

/// A weight matrix `W (k, cols)` of a search step, row-major, multiplied in `f32` or, once
/// [`Dense::quantize`]d (an int8 snapshot, `SearchConfig::int8`), in int8
/// (`model/int8_linear.rs`). The `f32` values stay: the layers that multiply them directly
/// (the gated-feedback step) and the concatenations built from them read those.
#[derive(Clone, Debug)]
pub struct Dense {
    pub w: Vec<f32>,
    k: usize,
    q: Option<QLinear>,
}

impl Dense {
    /// `w (k, cols)` row-major (`cols = w.len() / k`; an empty `w` is a `(k, 0)` matrix).
    pub fn new(w: Vec<f32>, k: usize) -> Self {
        Dense { w, k, q: None }
    }

    /// The inner dimension `k` (the rows of `W`).
    pub fn inner_dim(&self) -> usize {
        self.k
    }

    pub fn cols(&self) -> usize {
        self.w.len() / self.k.max(1)
    }

    /// From now on multiply in int8.
    pub fn quantize(&mut self) {
        self.q = Some(QLinear::new(&self.w, self.k, self.cols()));
    }

    /// `dst[off + r·rs + j] += Σ_i x[r, i] W[i, j]`.
    pub fn mul_add(&self, dst: &mut [f32], off: usize, rs: usize, x: Mat<'_, f32>, threads: usize) {
        match &self.q {
            Some(q) => q.mul_add(dst, off, rs, x, threads),
            None => matmul(dst, off, rs, x, Mat::new(&self.w, self.k, self.cols()), true, threads),
        }
    }

    /// `x (rows, k) · W + bias`, `(rows, cols)`.
    pub fn affine(&self, x: &[f32], rows: usize, bias: &[f32], threads: usize) -> Vec<f32> {
        let cols = self.cols();
        let mut out = fill_rows(bias, rows);
        self.mul_add(&mut out, 0, cols, Mat::new(x, rows, self.k), threads);
        out
    }
}

/// Rows `ids` of an embedding table `(V, dim)`. Ids come from the model's own vocabulary (the
/// segmenter maps anything else to `<unk>`), so they are in range.
pub fn gather_rows(table: &[f32], ids: &[u32], dim: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(ids.len() * dim);
    for &i in ids {
        out.extend_from_slice(&table[i as usize * dim..(i as usize + 1) * dim]);
    }
    out
}

/// `x ← tanh(x)`.
pub fn tanh_in_place(x: &mut [f32]) {
    simd_dispatch!(x.iter_mut().for_each(|v| *v = v.tanh_fast()));
}

/// A tensor's elements as host `f32` (a transposed view is laid out row-major first): how the
/// snapshots (`weights.rs`, `grconv.rs`) copy the candle parameters.
pub(crate) fn host(t: &Tensor) -> Result<Vec<f32>> {
    Ok(t.flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()?)
}

/// Row-major `(rows, Σ cols)` from row-major `(rows, cols_i)` blocks placed side by side.
pub fn hcat(blocks: &[(&[f32], usize)], rows: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(rows * blocks.iter().map(|b| b.1).sum::<usize>());
    for r in 0..rows {
        for &(m, cols) in blocks {
            out.extend_from_slice(&m[r * cols..(r + 1) * cols]);
        }
    }
    out
}
