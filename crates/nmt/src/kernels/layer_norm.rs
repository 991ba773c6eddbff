//! Layer normalisation on host rows, the search's form of `model/layer_norm.rs` (which says
//! where Marian's `s2s` applies it): `LN(a)·γ + β` with `σ = √(mean((a − μ)²) + ε)`.
use super::math::Real;

/// Marian's `ε` (`src/graph/expression_operators.h`, `layerNorm`).
pub const LN_EPS: f64 = 1e-9;

/// For each of `rows` rows of `buf` (row `r`'s block at `r · stride + off`, `γ.len()` wide),
/// `block = LN(block)·γ + β` in place (`β` as long as `γ`, or none).
pub fn ln_rows<T: Real>(buf: &mut [T], rows: usize, (stride, off): (usize, usize), gamma: &[T], beta: Option<&[T]>) {
    for r in 0..rows {
        normed_into(&mut buf[r * stride + off..][..gamma.len()], None, gamma, beta);
    }
}

/// `out = LN(a)·γ + β` for one row, `a` read from `src` or, without it, from `out` itself.
#[inline(always)]
pub(crate) fn normed_into<T: Real>(out: &mut [T], src: Option<&[T]>, gamma: &[T], beta: Option<&[T]>) {
    let k = T::from_f64(gamma.len() as f64);
    let a: &[T] = match src {
        Some(a) => a,
        None => out,
    };
    let mu = a.iter().fold(T::ZERO, |s, &x| s + x) / k;
    let var = a.iter().fold(T::ZERO, |s, &x| s + (x - mu) * (x - mu)) / k;
    let inv = T::ONE / T::from_f64((var.to_f64() + LN_EPS).sqrt());
    let shift = |j: usize| beta.map_or(T::ZERO, |b| b[j]);
    match src {
        Some(a) => {
            for (j, o) in out.iter_mut().enumerate() {
                *o = (a[j] - mu) * inv * gamma[j] + shift(j);
            }
        }
        None => {
            for (j, o) in out.iter_mut().enumerate() {
                *o = (*o - mu) * inv * gamma[j] + shift(j);
            }
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
