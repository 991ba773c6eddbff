//! Layer normalisation on host rows, forward and backward: the fused kernels' and the host
//! search's form of `model/layer_norm.rs` (which says where Marian's `s2s` applies it):
//! `y = LN(a)·γ + β` with `x̂ = (a − μ)/σ`, `σ = √(mean((a − μ)²) + ε)`.
//!
//! Backward (Ba et al. 2016; exact with `ε` inside `σ`), for one row of `k` values with
//! `g = dy ⊙ γ`:
//!
//! ```text
//! da = (g − mean(g) − x̂ ⊙ mean(g ⊙ x̂)) / σ,    dγ += dy ⊙ x̂,    dβ += dy
//! ```
//! The training kernels keep no `x̂`: they recompute the row's product `a` (one small GEMM per
//! step, as large as the forward one) and its statistics, so their saved buffers are those of
//! the model without layer normalisation.
use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp2, DType, Layout, Result, Shape, Tensor, WithDType};
use rayon::prelude::*;

use crate::kernels::cpu::engine::products::{matmul_wide, Precision};
use crate::kernels::gemm::Mat;
use crate::kernels::math::Real;
use crate::kernels::storage::{cpu_slice, float_dtype, tensor_from, with_slices};

/// Marian's `ε` (`src/graph/expression_operators.h`, `layerNorm`).
pub const LN_EPS: f64 = 1e-9;

/// A row's `(μ, 1/σ)`.
#[inline(always)]
pub fn ln_stats<T: Real>(row: &[T]) -> (T, T) {
    let k = T::from_f64(row.len() as f64);
    let mu = row.iter().fold(T::ZERO, |s, &x| s + x) / k;
    let var = row.iter().fold(T::ZERO, |s, &x| s + (x - mu) * (x - mu)) / k;
    (mu, T::ONE / T::from_f64((var.to_f64() + LN_EPS).sqrt()))
}

/// For each of `rows` rows of `buf` (row `r`'s block at `r · stride + off`, `γ.len()` wide),
/// `block = LN(block)·γ + β` in place (`β` as long as `γ`, or none).
pub fn ln_rows<T: Real>(buf: &mut [T], rows: usize, (stride, off): (usize, usize), gamma: &[T], beta: Option<&[T]>) {
    for r in 0..rows {
        let row = &mut buf[r * stride + off..][..gamma.len()];
        let (mu, inv) = ln_stats(row);
        for (j, x) in row.iter_mut().enumerate() {
            *x = (*x - mu) * inv * gamma[j] + beta.map_or(T::ZERO, |b| b[j]);
        }
    }
}

/// One row's backward pass in place: `d` holds `dy` (the gradient of `LN(a)·γ + β`) on entry
/// and `da` on return; `a` is the row's product before normalisation. Adds `dy ⊙ x̂` to
/// `dgamma` and `dy` to `dbeta` (when given).
#[inline(always)]
pub fn ln_backward_row<T: Real>(a: &[T], d: &mut [T], gamma: &[T], dgamma: &mut [T], dbeta: Option<&mut [T]>) {
    let k = T::from_f64(a.len() as f64);
    let (mu, inv) = ln_stats(a);
    if let Some(db) = dbeta {
        for (acc, &x) in db.iter_mut().zip(d.iter()) {
            *acc += x;
        }
    }
    let (mut mg, mut mgx) = (T::ZERO, T::ZERO);
    for j in 0..a.len() {
        let xh = (a[j] - mu) * inv;
        let g = d[j] * gamma[j];
        dgamma[j] += d[j] * xh;
        mg += g;
        mgx += g * xh;
    }
    let (mg, mgx) = (mg / k, mgx / k);
    for j in 0..a.len() {
        let xh = (a[j] - mu) * inv;
        d[j] = (d[j] * gamma[j] - mg - xh * mgx) * inv;
    }
}

/// `LN(x)·γ` over the last axis of `x (…, k)` with `γ (k)`, as one candle op with its
/// backward pass (the rows in parallel): the fused twin of `model::layer_norm::layer_norm`,
/// which builds the same from seven composed ops (and twenty in its backward pass).
pub fn layer_norm_op(x: &Tensor, gamma: &Tensor) -> Result<Tensor> {
    let k = gamma.elem_count();
    if x.dims().last() != Some(&k) || gamma.rank() != 1 {
        candle_core::bail!("layer_norm_op: x {:?} and γ {:?} do not fit", x.dims(), gamma.dims());
    }
    crate::kernels::storage::cpu_only("fused-layer-norm")?;
    x.contiguous()?.apply_op2(&gamma.contiguous()?, LayerNorm)
}

struct LayerNorm;

/// Rows per parallel task: large enough that a task outweighs its scheduling.
const ROWS_PER_TASK: usize = 64;

impl CustomOp2 for LayerNorm {
    fn name(&self) -> &'static str {
        "fused-layer-norm"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> Result<(CpuStorage, Shape)> {
        fn fwd<T: Real + WithDType>(x: &[T], gamma: &[T]) -> Vec<T> {
            let k = gamma.len();
            let mut y = x.to_vec();
            y.par_chunks_mut(k * ROWS_PER_TASK).for_each(|rows| ln_rows(rows, rows.len() / k, (k, 0), gamma, None));
            y
        }
        let shape = l1.shape().clone();
        Ok(match float_dtype(&[s1.dtype(), s2.dtype()])? {
            DType::F32 => (CpuStorage::F32(fwd::<f32>(cpu_slice(s1, l1)?, cpu_slice(s2, l2)?)), shape),
            _ => (CpuStorage::F64(fwd::<f64>(cpu_slice(s1, l1)?, cpu_slice(s2, l2)?)), shape),
        })
    }

    fn bwd(&self, x: &Tensor, gamma: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<(Option<Tensor>, Option<Tensor>)> {
        fn go<T: Real + WithDType>(x: &Tensor, gamma: &Tensor, grad: &Tensor) -> Result<(Tensor, Tensor)> {
            with_slices::<T, _, 3>([x, gamma, grad], |[xs, g, dy]| {
                let k = g.len();
                let mut dx = dy.to_vec();
                // Each task's `dγ`, summed in task order: the same sum on every run.
                let parts: Vec<Vec<T>> = dx
                    .par_chunks_mut(k * ROWS_PER_TASK)
                    .zip(xs.par_chunks(k * ROWS_PER_TASK))
                    .map(|(d, a)| {
                        let mut acc = vec![T::ZERO; k];
                        for (dr, ar) in d.chunks_exact_mut(k).zip(a.chunks_exact(k)) {
                            ln_backward_row(ar, dr, g, &mut acc, None);
                        }
                        acc
                    })
                    .collect();
                let mut dgamma = vec![T::ZERO; k];
                for p in &parts {
                    dgamma.iter_mut().zip(p).for_each(|(x, y)| *x += *y);
                }
                Ok((tensor_from(dx, x.shape(), x)?, tensor_from(dgamma, gamma.shape(), gamma)?))
            })
        }
        let (dx, dg) = match x.dtype() {
            DType::F32 => go::<f32>(x, gamma, grad)?,
            _ => go::<f64>(x, gamma, grad)?,
        };
        Ok((Some(dx), Some(dg)))
    }
}

/// How the forward pass multiplied a normalised product `x W`: `x`, `W`, in which precision
/// ([`matmul_wide`]'s: `F32` for the products that never run in bf16) and on how many threads.
pub(crate) struct Product<'a, T> {
    pub x: Mat<'a, T>,
    pub w: Mat<'a, T>,
    pub products: Precision,
    pub threads: usize,
}

/// Layer normalisation's backward pass over the rows of a product `a = x W` that the forward
/// pass normalised: `dy`'s row `r` (at `r · stride + off`) holds the gradient of `LN(a)·γ + β`
/// on entry and that of `a` on return; `dγ`, `dβ` (when given) add up. `a` is recomputed as the
/// forward pass multiplied it (the kernels keep no `x̂`: module docs). Rows whose `dy` is zero
/// (padding) come out zero and add nothing.
pub(crate) fn ln_backward_product<T: Real>(
    p: Product<'_, T>,
    (dy, stride, off): (&mut [T], usize, usize),
    gamma: &[T],
    (dgamma, mut dbeta): (&mut [T], Option<&mut [T]>),
) {
    let (rows, k) = (p.x.rows, p.w.cols);
    let mut a = vec![T::ZERO; rows * k];
    matmul_wide(p.products, &mut a, 0, k, p.x, p.w, false, p.threads);
    for r in 0..rows {
        ln_backward_row(&a[r * k..(r + 1) * k], &mut dy[r * stride + off..][..k], gamma, dgamma, dbeta.as_deref_mut());
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The backward row against central differences of `Σ w ⊙ (LN(a)·γ + β)`, in f64.
    #[test]
    fn backward_row_matches_finite_differences() {
        let k = 9;
        let a: Vec<f64> = (0..k).map(|j| ((j * 7 % 5) as f64 - 2.0) * 0.4 + 0.1 * j as f64).collect();
        let gamma: Vec<f64> = (0..k).map(|j| 0.7 + 0.05 * j as f64).collect();
        let w: Vec<f64> = (0..k).map(|j| ((j * 3 % 4) as f64 - 1.5) * 0.3).collect();
        let loss = |a: &[f64], g: &[f64]| {
            let mut y = a.to_vec();
            ln_rows(&mut y, 1, (k, 0), g, None);
            y.iter().zip(&w).map(|(y, w)| y * w).sum::<f64>()
        };
        let (mut d, mut dg, mut db) = (w.clone(), vec![0.0; k], vec![0.0; k]);
        ln_backward_row(&a, &mut d, &gamma, &mut dg, Some(&mut db));
        let h = 1e-6;
        for j in 0..k {
            let (mut ap, mut am, mut gp, mut gm) = (a.clone(), a.clone(), gamma.clone(), gamma.clone());
            ap[j] += h;
            am[j] -= h;
            gp[j] += h;
            gm[j] -= h;
            let da = (loss(&ap, &gamma) - loss(&am, &gamma)) / (2.0 * h);
            let dgam = (loss(&a, &gp) - loss(&a, &gm)) / (2.0 * h);
            assert!((da - d[j]).abs() < 1e-8, "da[{j}]: {da} vs {}", d[j]);
            assert!((dgam - dg[j]).abs() < 1e-8, "dγ[{j}]: {dgam} vs {}", dg[j]);
            assert_eq!(db[j], w[j]);
        }
    }
}
