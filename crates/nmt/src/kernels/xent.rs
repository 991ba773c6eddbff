//! Fused log-softmax + negative log-likelihood over the vocabulary, one pass per row.
//!
//! `nll_r = logsumexp(logits_r) - logits_r[y_r]` for `logits (N, V)`; the gradient is
//! `g_r (softmax(logits_r) - onehot(y_r))`, with the log-normaliser recovered from the output
//! (`lse_r = nll_r + logits_r[y_r]`), so no `(N, V)` intermediate is ever stored. The composed
//! twin (`log_softmax`, `gather`) builds several such intermediates: 30 MB each on the bench.
use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp1, DType, Layout, Result, Shape, Tensor, WithDType};
use rayon::prelude::*;

use super::gemm::Real;
use super::storage::{cpu_slice, float_dtype, tensor_from, with_slice};
use crate::simd_dispatch;

/// Per-row NLL `(N,)` of `targets` under `softmax(logits (N, V))`. Targets must be `< V`.
pub fn nll_rows(logits: &Tensor, targets: &[u32]) -> Result<Tensor> {
    let (n, v) = logits.dims2()?;
    if targets.len() != n || targets.iter().any(|&t| t as usize >= v) {
        candle_core::bail!("nll_rows: {} targets (all < {v}) expected for {n} rows", n);
    }
    logits.contiguous()?.apply_op1(Xent { targets: targets.to_vec(), vocab: v })
}

struct Xent {
    targets: Vec<u32>,
    vocab: usize,
}

impl CustomOp1 for Xent {
    fn name(&self) -> &'static str {
        "fused-log-softmax-nll"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let shape = Shape::from(self.targets.len());
        Ok(match float_dtype(&[s.dtype()])? {
            DType::F32 => (CpuStorage::F32(forward(cpu_slice(s, l)?, &self.targets, self.vocab)), shape),
            _ => (CpuStorage::F64(forward(cpu_slice(s, l)?, &self.targets, self.vocab)), shape),
        })
    }

    fn bwd(&self, arg: &Tensor, res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        fn go<T: Real + WithDType>(op: &Xent, arg: &Tensor, res: &Tensor, grad: &Tensor) -> Result<Tensor> {
            with_slice::<T, _>(arg, |x| {
                with_slice::<T, _>(res, |nll| {
                    with_slice::<T, _>(grad, |g| tensor_from(backward(x, nll, g, &op.targets, op.vocab), arg.shape(), arg))
                })
            })
        }
        Ok(Some(match arg.dtype() {
            DType::F32 => go::<f32>(self, arg, res, grad)?,
            _ => go::<f64>(self, arg, res, grad)?,
        }))
    }
}

/// Rows per parallel task: large enough to amortise scheduling.
pub(crate) const ROWS: usize = 16;

fn forward<T: Real>(x: &[T], targets: &[u32], v: usize) -> Vec<T> {
    let mut out = vec![T::ZERO; targets.len()];
    out.par_chunks_mut(ROWS).enumerate().for_each(|(c, o)| {
        simd_dispatch!({
            for (k, slot) in o.iter_mut().enumerate() {
                let r = c * ROWS + k;
                let row = &x[r * v..(r + 1) * v];
                *slot = logsumexp(row) - row[targets[r] as usize];
            }
        })
    });
    out
}

#[inline(always)]
pub(crate) fn logsumexp<T: Real>(row: &[T]) -> T {
    let mut m = [T::from_f64(f64::NEG_INFINITY); 16];
    let full = row.len() / 16 * 16;
    for ch in row[..full].chunks_exact(16) {
        for k in 0..16 {
            m[k] = m[k].max(ch[k]);
        }
    }
    let mut max = m.iter().fold(T::from_f64(f64::NEG_INFINITY), |a, &b| a.max(b));
    for &x in &row[full..] {
        max = max.max(x);
    }
    let mut s = [T::ZERO; 16];
    for ch in row[..full].chunks_exact(16) {
        for k in 0..16 {
            s[k] += (ch[k] - max).exp_fast();
        }
    }
    let mut sum = s.iter().fold(T::ZERO, |a, &b| a + b);
    for &x in &row[full..] {
        sum += (x - max).exp_fast();
    }
    max + sum.ln()
}

fn backward<T: Real>(x: &[T], nll: &[T], g: &[T], targets: &[u32], v: usize) -> Vec<T> {
    let mut dx = vec![T::ZERO; x.len()];
    dx.par_chunks_mut(ROWS * v).enumerate().for_each(|(c, d)| {
        simd_dispatch!({
            for (k, drow) in d.chunks_mut(v).enumerate() {
                let r = c * ROWS + k;
                let row = &x[r * v..(r + 1) * v];
                let t = targets[r] as usize;
                let lse = nll[r] + row[t];
                let gr = g[r];
                for (dj, &xj) in drow.iter_mut().zip(row) {
                    *dj = gr * (xj - lse).exp_fast();
                }
                drow[t] = drow[t] - gr;
            }
        })
    });
    dx
}
