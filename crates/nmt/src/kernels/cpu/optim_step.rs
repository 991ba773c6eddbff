//! The optimiser's update as one in-place pass over each parameter: reads `θ, g, m, v`, writes
//! `θ, m, v`, allocates nothing but the factors' buffer below. The composed version
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
//! The factors of a block are first laid out element by element (one buffer of the block's size
//! per task, the only allocation), so that the update's loop vectorises like the plain one: read
//! through an iterator it ran as a scalar loop, 32.2 ms against 27.2 ms of Adam per update at 1
//! thread on an AVX2 EPYC, and 19.4 ms without factors
//! (docs/logs/scale-moments-simd-avx2-2026-11-30.txt).
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
                    Some(f) => {
                        let mut fs = vec![0f32; p.len()];
                        f.fill(b * BLOCK, &mut fs);
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
                    }
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
                    Some(f) => {
                        let mut fs = vec![0f32; p.len()];
                        f.fill(b * BLOCK, &mut fs);
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
                    }
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
