//! Dense pieces of the host search: affine maps, embedding lookups, `tanh` in place. The GRU
//! arithmetic itself is the training kernels' (`kernels::gru_cell`, `kernels::gru`,
//! `kernels::bigru`): the search has no cell of its own.
use crate::kernels::gemm::{fill_rows, matmul, Mat};
use crate::kernels::math::FastMath;
use crate::simd_dispatch;

/// `out (rows, cols) = x (rows, k) · w (k, cols) + bias`.
pub fn affine(x: &[f32], rows: usize, k: usize, w: &[f32], bias: &[f32], threads: usize) -> Vec<f32> {
    let cols = bias.len();
    let mut out = fill_rows(bias, rows);
    matmul(&mut out, 0, cols, Mat::new(x, rows, k), Mat::new(w, k, cols), true, threads);
    out
}

/// Rows `ids` of an embedding table `(V, dim)`. Ids come from the model's own vocabulary (the
/// segmenter maps anything else to `<unk>`), so they are in range.
pub fn embed(table: &[f32], ids: &[u32], dim: usize) -> Vec<f32> {
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
