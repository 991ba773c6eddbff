//! The attention decoder's reset-before GRU step (Cho et al. 2014, RNNenc §2.3; model/gru.rs
//! is its candle twin) for a block of rows, forward only. (The encoders run the training
//! kernels' GRU forward pass itself, `kernels::gru`/`kernels::bigru`.)
//!
//! ```text
//! r, z = σ(W_rz x + b_rz + U_rz h)      (rows, 2n): one GEMM
//! h~   = tanh(W x + b + U (r ⊙ h))       (rows, n):  one GEMM
//! h'   = h~ + z ⊙ (h − h~)
//! ```
//! The input terms `W x + b` are computed by the caller for a whole sequence (encoder) or
//! with the step's other input products (decoder) and handed in.
use crate::kernels::gemm::{fill_rows, matmul, Mat};
use crate::kernels::math::FastMath;
use crate::simd_dispatch;

/// Reusable buffers of a step over `rows` rows with hidden size `n`.
pub struct GruScratch {
    pub rz: Vec<f32>,
    pub cand: Vec<f32>,
    rh: Vec<f32>,
}

impl GruScratch {
    pub fn new(rows: usize, n: usize) -> Self {
        GruScratch { rz: vec![0.0; rows * 2 * n], cand: vec![0.0; rows * n], rh: vec![0.0; rows * n] }
    }
}

/// The decoder's step after its first product: `sc.rz` already holds `W_rz x + b_rz + U_rz h` (the
/// decoder computes `U_rz h` together with its other products of `h`). `u` is `U (n, n)`.
pub fn gru_finish(u: &[f32], n: usize, h: &[f32], sc: &mut GruScratch, out: &mut [f32], live: impl Fn(usize) -> bool, threads: usize) {
    let rows = h.len() / n;
    simd_dispatch!(reset(&mut sc.rz, h, &mut sc.rh, n));
    matmul(&mut sc.cand, 0, n, Mat::new(&sc.rh, rows, n), Mat::new(u, n, n), true, threads);
    for r in 0..rows {
        let (hp, o) = (&h[r * n..(r + 1) * n], &mut out[r * n..(r + 1) * n]);
        if live(r) {
            simd_dispatch!(update(&sc.cand[r * n..(r + 1) * n], &sc.rz[r * 2 * n + n..(r + 1) * 2 * n], hp, o));
        } else {
            o.copy_from_slice(hp);
        }
    }
}

/// `rz ← σ(rz)` in place, `rh = r ⊙ h`.
#[inline(always)]
fn reset(rz: &mut [f32], h: &[f32], rh: &mut [f32], n: usize) {
    for ((g, hp), o) in rz.chunks_exact_mut(2 * n).zip(h.chunks_exact(n)).zip(rh.chunks_exact_mut(n)) {
        for x in g.iter_mut() {
            *x = x.sigmoid_fast();
        }
        for k in 0..n {
            o[k] = g[k] * hp[k];
        }
    }
}

/// `h' = tanh(c) + z ⊙ (h − tanh(c))`.
#[inline(always)]
fn update(c: &[f32], z: &[f32], hp: &[f32], out: &mut [f32]) {
    for k in 0..out.len() {
        let hc = c[k].tanh_fast();
        out[k] = hc + z[k] * (hp[k] - hc);
    }
}

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
