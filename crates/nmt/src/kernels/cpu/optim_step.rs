//! The optimiser's update as one in-place pass over each parameter: reads `θ, g, m, v`, writes
//! `θ, m, v`, allocates nothing per update. The composed version
//! (`train/optim.rs`, the reference twin and the GPU path) allocates six temporaries of the
//! parameter's size per update; on 8.5 M
//! parameters that was 281 ms of page faults and copies against PyTorch's 57 ms (issue 4).
//!
//! The gradient is scaled by `grad_scale` on the fly: global-norm clipping costs no pass of
//! its own. Same arithmetic as the composed optimiser:
//! - Adam (Kingma & Ba 2015; PyTorch's `torch.optim.Adam`):
//!   `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²`, `θ ← θ − lr·√(1−β₂ᵗ)/(1−β₁ᵗ) · m / (√v + ε·√(1−β₂ᵗ))`;
//! - Adadelta (Zeiler 2012, as in RNNenc and RNNsearch), with `m = E[g²]`, `v = E[Δ²]`:
//!   `m ← ρm + (1−ρ)g²`, `Δ = √(v + ε)/√(m + ε) · g`, `v ← ρv + (1−ρ)Δ²`, `θ ← θ − lr·Δ`.
//!
//! With [`MomentFactors`] (`train.candidates.scale_moments`) each squared term (`g²`, and
//! Adadelta's `Δ²`) is multiplied by its element's factor `f`; without, the loop is the plain one.
//! The factors of a block are first laid out element by element, in a buffer each worker thread
//! keeps, so that the update's loop vectorises like the plain one. Adam per update at 1 thread
//! on an AVX2 EPYC (docs/logs/scale-moments-simd-avx2-2026-11-30.txt): 32.2 ms read through an
//! iterator (a scalar loop), 27.7 ms with a fresh buffer per block, 19.0 ms with the kept one,
//! against 18.2 ms without factors.
use std::cell::RefCell;

use candle_core::{bail, CpuStorage, InplaceOp2, Layout, Result, Tensor};
use rayon::prelude::*;

use crate::kernels::cpu::engine::isa::simd_dispatch;
use crate::kernels::shapes::update_rule::{MomentFactors, Rule};
use crate::kernels::storage::cpu_slice;

/// Updates the CPU f32 tensor `param` in place from `grad · grad_scale`, with the moments `m`
/// and `v` (host buffers of the parameter's size, owned by the optimiser), the squared terms
/// times `factors` when given.
pub fn update_in_place(
    param: &Tensor,
    grad: &Tensor,
    moments: (&mut [f32], &mut [f32]),
    rule: Rule,
    grad_scale: f64,
    factors: Option<MomentFactors<'_>>,
) -> Result<()> {
    let (m, v) = moments;
    if m.len() != param.elem_count() || v.len() != param.elem_count() || grad.dims() != param.dims() {
        bail!("optimiser update: parameter {:?}, gradient {:?} and moments ({}) differ", param.dims(), grad.dims(), m.len());
    }
    if factors.is_some_and(|f| f.factors.is_empty() || f.inner == 0) {
        bail!("optimiser update: empty moment factors");
    }
    crate::kernels::storage::cpu_only("fused-optimiser-update")?;
    let op = UpdateOp { m: RefCell::new(m), v: RefCell::new(v), rule, scale: grad_scale as f32, factors };
    crate::kernels::profile::timed(8, || param.inplace_op2(&grad.contiguous()?, &op))
}

struct UpdateOp<'a> {
    m: RefCell<&'a mut [f32]>,
    v: RefCell<&'a mut [f32]>,
    rule: Rule,
    scale: f32,
    factors: Option<MomentFactors<'a>>,
}

/// Elements per parallel task.
const BLOCK: usize = 1 << 16;

thread_local! {
    /// One block's factors, per worker thread: allocated on a thread's first scaled update and
    /// reused by every later one.
    static FACTORS: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Runs `body` on the factors of elements `start .. start + len`, laid out in this thread's
/// buffer.
fn with_factors<R>(f: MomentFactors<'_>, start: usize, len: usize, body: impl FnOnce(&[f32]) -> R) -> R {
    FACTORS.with(|buf| {
        let mut buf = buf.borrow_mut();
        if buf.len() < len {
            buf.resize(len, 0.0);
        }
        f.fill(start, &mut buf[..len]);
        body(&buf[..len])
    })
}

impl InplaceOp2 for UpdateOp<'_> {
    fn name(&self) -> &'static str {
        "fused-optimiser-update"
    }

    fn cpu_fwd(&self, dst: &mut CpuStorage, dst_l: &Layout, gs: &CpuStorage, gl: &Layout) -> Result<()> {
        let g = cpu_slice::<f32>(gs, gl)?;
        let Some((a, b)) = dst_l.contiguous_offsets() else { bail!("optimiser update: parameter is not contiguous") };
        let p = match dst {
            CpuStorage::F32(p) => &mut p[a..b],
            _ => bail!("optimiser update: parameters must be f32"),
        };
        let mut m = self.m.borrow_mut();
        let mut v = self.v.borrow_mut();
        let blocks = p.par_chunks_mut(BLOCK).zip(m.par_chunks_mut(BLOCK)).zip(v.par_chunks_mut(BLOCK)).zip(g.par_chunks(BLOCK));
        let (s, factors) = (self.scale, self.factors);
        match self.rule {
            Rule::Adam { lr, beta1, beta2, eps, step } => {
                let t = step.max(1) as i32;
                let bc2 = (1.0 - beta2.powi(t)).sqrt();
                let lr_t = (lr * bc2 / (1.0 - beta1.powi(t))) as f32;
                let eps_t = (eps * bc2) as f32;
                let (b1, b2) = (beta1 as f32, beta2 as f32);
                blocks.enumerate().for_each(|(b, (((p, m), v), g))| match factors {
                    None => simd_dispatch!({
                        for i in 0..p.len() {
                            let gi = g[i] * s;
                            let mi = b1 * m[i] + (1.0 - b1) * gi;
                            let vi = b2 * v[i] + (1.0 - b2) * gi * gi;
                            m[i] = mi;
                            v[i] = vi;
                            p[i] -= lr_t * mi / (vi.sqrt() + eps_t);
                        }
                    }),
                    Some(f) => with_factors(f, b * BLOCK, p.len(), |fs| {
                        simd_dispatch!({
                            for i in 0..p.len() {
                                let gi = g[i] * s;
                                let mi = b1 * m[i] + (1.0 - b1) * gi;
                                let vi = b2 * v[i] + (1.0 - b2) * gi * gi * fs[i];
                                m[i] = mi;
                                v[i] = vi;
                                p[i] -= lr_t * mi / (vi.sqrt() + eps_t);
                            }
                        })
                    }),
                });
            }
            Rule::Adadelta { lr, rho, eps } => {
                let (lr, rho, eps) = (lr as f32, rho as f32, eps as f32);
                blocks.enumerate().for_each(|(b, (((p, m), v), g))| match factors {
                    None => simd_dispatch!({
                        for i in 0..p.len() {
                            let gi = g[i] * s;
                            let eg = rho * m[i] + (1.0 - rho) * gi * gi;
                            let d = (v[i] + eps).sqrt() / (eg + eps).sqrt() * gi;
                            m[i] = eg;
                            v[i] = rho * v[i] + (1.0 - rho) * d * d;
                            p[i] -= lr * d;
                        }
                    }),
                    Some(f) => with_factors(f, b * BLOCK, p.len(), |fs| {
                        simd_dispatch!({
                            for i in 0..p.len() {
                                let gi = g[i] * s;
                                let eg = rho * m[i] + (1.0 - rho) * gi * gi * fs[i];
                                let d = (v[i] + eps).sqrt() / (eg + eps).sqrt() * gi;
                                m[i] = eg;
                                v[i] = rho * v[i] + (1.0 - rho) * d * d * fs[i];
                                p[i] -= lr * d;
                            }
                        })
                    }),
                });
            }
        }
        Ok(())
    }
}

/// `Σ g²` of a CPU f32 or f64 gradient, accumulated in f64 without a temporary tensor.
pub fn sum_squares(grad: &Tensor) -> Result<f64> {
    fn go<T: Copy + Into<f64> + Send + Sync>(x: &[T]) -> f64 {
        // Per-block sums in block order, then added in order: the same bits on every run.
        let parts: Vec<f64> = x
            .par_chunks(BLOCK)
            .map(|c| {
                c.iter()
                    .map(|&v| {
                        let v: f64 = v.into();
                        v * v
                    })
                    .sum::<f64>()
            })
            .collect();
        parts.iter().sum()
    }
    match grad.dtype() {
        candle_core::DType::F32 => crate::kernels::storage::with_slice::<f32, _>(grad, |x| Ok(go(x))),
        candle_core::DType::F64 => crate::kernels::storage::with_slice::<f64, _>(grad, |x| Ok(go(x))),
        d => bail!("sum_squares: {d:?} gradient"),
    }
}

#[cfg(test)]
mod tests {
    use candle_core::Device;

    use super::*;

    /// Adam with factors against the rule written out per element with [`MomentFactors::at`]:
    /// a parameter of more than one block (so the blocks' factors start mid-cycle), then a
    /// smaller one on the same threads (each thread's kept buffer is longer than its block).
    #[test]
    fn the_factor_loops_read_each_blocks_own_factors() {
        let factors = [0.5f32, 1.0, 0.2, 0.9, 0.05];
        let rule = Rule::Adam { lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, step: 1 };
        for (n, inner) in [(BLOCK + 37, 1), (BLOCK + 37, 3), (100, 1), (100, 7)] {
            let f = MomentFactors { factors: &factors, inner };
            let w: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
            let g: Vec<f32> = (0..n).map(|i| ((i * 104_729) % 997) as f32 / 997.0 - 0.5).collect();
            let param = Tensor::from_vec(w.clone(), n, &Device::Cpu).unwrap();
            let grad = Tensor::from_vec(g.clone(), n, &Device::Cpu).unwrap();
            let (mut m, mut v) = (vec![0f32; n], vec![0f32; n]);
            update_in_place(&param, &grad, (&mut m, &mut v), rule, 0.5, Some(f)).unwrap();
            let got = param.to_vec1::<f32>().unwrap();
            // Step 1: `lr_t = lr·√(1−β₂)/(1−β₁)`, `eps_t = eps·√(1−β₂)`, as the kernel computes them.
            let (lr_t, eps_t) = ((0.01 * 0.001f64.sqrt() / 0.1) as f32, (1e-8 * 0.001f64.sqrt()) as f32);
            for i in 0..n {
                let gi = g[i] * 0.5;
                let (mi, vi) = ((1.0 - 0.9f32) * gi, (1.0 - 0.999f32) * gi * gi * f.at(i));
                let want = w[i] - lr_t * mi / (vi.sqrt() + eps_t);
                assert_eq!((m[i], v[i]), (mi, vi), "n {n} inner {inner} element {i}");
                assert!((got[i] - want).abs() <= 1e-6 * want.abs().max(1.0), "n {n} inner {inner} element {i}: {} vs {want}", got[i]);
            }
        }
    }
}
