//! Layer normalisation on host rows, the search's form of `model/layer_norm.rs` (which says
//! where Marian's `s2s` applies it): `LN(a)·γ + β` with `σ = √(mean((a − μ)²) + ε)`.
use super::math::Real;

/// Marian's `ε` (`src/graph/expression_operators.h`, `layerNorm`).
pub const LN_EPS: f64 = 1e-9;

/// For each of `rows` rows of `buf` (row `r`'s block at `r · stride + off`, `γ.len()` wide),
/// `block = LN(block)·γ + β` in place (`β` as long as `γ`, or none).
pub fn ln_rows<T: Real>(buf: &mut [T], rows: usize, (stride, off): (usize, usize), gamma: &[T], beta: Option<&[T]>) {
    let k = T::from_f64(gamma.len() as f64);
    for r in 0..rows {
        let row = &mut buf[r * stride + off..][..gamma.len()];
        let mu = row.iter().fold(T::ZERO, |s, &x| s + x) / k;
        let var = row.iter().fold(T::ZERO, |s, &x| s + (x - mu) * (x - mu)) / k;
        let inv = T::ONE / T::from_f64((var.to_f64() + LN_EPS).sqrt());
        for (j, x) in row.iter_mut().enumerate() {
            *x = (*x - mu) * inv * gamma[j] + beta.map_or(T::ZERO, |b| b[j]);
        }
    }
}

/// One normalised block of a product's rows, where several products share one GEMM (the
/// search step's concatenated weights): the block at column `off`, `LN(·)·γ + β`.
#[derive(Clone, Debug)]
pub struct NormedBlock {
    pub off: usize,
    pub gamma: Vec<f32>,
    pub beta: Option<Vec<f32>>,
}

impl NormedBlock {
    /// Normalises each of the blocks in `rows` rows of `buf` (row stride `stride`).
    pub fn apply_all(blocks: &[NormedBlock], buf: &mut [f32], rows: usize, stride: usize) {
        for k in blocks {
            ln_rows(buf, rows, (stride, k.off), &k.gamma, k.beta.as_deref());
        }
    }
}
