//! The attention weights of every target step at once as one op (Bahdanau et al. 2014, eq. 6
//! and appendix A.1.2), what the copy mixture's training loss reads (`model/copy.rs`) beside
//! the fused decoders, which keep theirs inside:
//!
//! ```text
//! x_ij = tanh(U_a h_j + ws_i),  e_ij = x_ij · v_a     (B, T, S, A) → (B, T, S), never stored
//! α_ij = softmax_j(e_ij) over sentence b's first len_b positions, 0 past them
//! ```
//! Inputs `ws (B, T, A)` (`s_{i-1} W_a + b_a`, or its layer norm), `uh (B, S, A)` (`U_a h_j`) and
//! `v_a (A, 1)`; output `α (B, T, S)`. The composed twin is `Attention::weights_all`'s candle
//! form, whose `(B, T, S, A)` activations and their gradients were most of what the copy
//! mixture added to a training step. Backward recomputes `x` row by row (as
//! `bahdanau_backward.rs` does), from `α` and its gradient:
//! ```text
//! de_ij = α_ij (dα_ij − Σ_k α_ik dα_ik),  dpre = de_ij v_a ⊙ (1 − x_ij²)
//! dws_i += dpre,  d(U_a h_j) += dpre,  dv_a += de_ij x_ij
//! ```
//! in parallel over sentences (each owns its `d(U_a h)` rows), `dv_a`'s per-sentence parts added
//! in order, so the result does not depend on the number of threads.
use candle_core::{Result, Shape, Tensor};
use rayon::prelude::*;

use super::bahdanau::{attention_weights, AttnScratch};
use super::bahdanau_backward::score_grad;
use super::op::apply;
use crate::kernels::cpu::engine::isa::simd_dispatch;
use crate::kernels::fused_op::{FusedOp, Host};
use crate::kernels::gemm::Real;
use crate::kernels::math::axpy;

/// `α (B, T, S)` from `ws (B, T, A)`, `uh (B, S, A)`, `v (A, 1)` and each sentence's source
/// length (clamped to `1..=S`: a sentence has at least its `</s>`).
pub fn attention_weights_all(ws: &Tensor, uh: &Tensor, v: &Tensor, lens: &[usize]) -> Result<Tensor> {
    let (b, t, a) = ws.dims3()?;
    let (b2, s, a2) = uh.dims3()?;
    if b2 != b || a2 != a || v.dims() != [a, 1] || lens.len() != b || s == 0 {
        candle_core::bail!(
            "attention_weights_all: ws {:?}, uh {:?}, v {:?} and {} lengths do not fit",
            ws.dims(),
            uh.dims(),
            v.dims(),
            lens.len()
        );
    }
    let lens = lens.iter().map(|&l| l.clamp(1, s)).collect();
    apply(AttnWeights { b, t, s, a, lens }, ws, uh, v)
}

struct AttnWeights {
    b: usize,
    t: usize,
    s: usize,
    a: usize,
    lens: Vec<usize>,
}

/// Sentence `bi`'s `α (T, S)` into `out`.
#[inline(always)]
fn forward_one<T: Real>(op: &AttnWeights, ws: &[T], uh: &[T], v: &[T], bi: usize, out: &mut [T]) {
    let (t, s, a) = (op.t, op.s, op.a);
    let mut sc = AttnScratch::new(s, a);
    let uh_b = &uh[bi * s * a..(bi + 1) * s * a];
    for (i, row) in out.chunks_exact_mut(s).enumerate() {
        attention_weights(uh_b, 0, &ws[(bi * t + i) * a..(bi * t + i + 1) * a], v, op.lens[bi], &mut sc);
        row.copy_from_slice(&sc.alpha[..s]);
    }
}

/// Sentence `bi`'s gradients: `dws (T, A)` and `duh (S, A)` (zero on entry), `dv (A)` added to.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn backward_one<T: Real>(
    op: &AttnWeights,
    [ws, uh, v]: [&[T]; 3],
    alpha: &[T],
    dalpha: &[T],
    bi: usize,
    dws: &mut [T],
    duh: &mut [T],
    dv: &mut [T],
) {
    let (t, s, a, len) = (op.t, op.s, op.a, op.lens[bi]);
    let mut sc = AttnScratch::new(s, a);
    let uh_b = &uh[bi * s * a..(bi + 1) * s * a];
    for i in 0..t {
        let r = bi * t + i;
        // The forward pass's α is the op's output; only `x` is recomputed.
        attention_weights(uh_b, 0, &ws[r * a..(r + 1) * a], v, len, &mut sc);
        let (al, da) = (&alpha[r * s..r * s + len], &dalpha[r * s..r * s + len]);
        let mean = al.iter().zip(da).fold(T::ZERO, |m, (&p, &d)| m + p * d);
        let dws_i = &mut dws[i * a..(i + 1) * a];
        for j in 0..len {
            let de = al[j] * (da[j] - mean);
            score_grad(de, &sc.x[j * a..(j + 1) * a], v, dv, &mut duh[j * a..(j + 1) * a], dws_i);
        }
    }
}

impl<T: Real> FusedOp<Host<T>> for AttnWeights {
    type Saved = ();
    const NAME: &'static str = "fused-attention-weights";

    fn out_shape(&self) -> Shape {
        Shape::from((self.b, self.t, self.s))
    }

    fn forward(&self, _: &Host<T>, [ws, uh, v]: [&[T]; 3]) -> Result<(Vec<T>, ())> {
        let mut out = vec![T::ZERO; self.b * self.t * self.s];
        out.par_chunks_mut(self.t * self.s).enumerate().for_each(|(bi, o)| simd_dispatch!(forward_one(self, ws, uh, v, bi, o)));
        Ok((out, ()))
    }

    fn backward(&self, _: &Host<T>, x: [&[T]; 3], _: (), alpha: &[T], dalpha: &[T]) -> Result<[Vec<T>; 3]> {
        let (t, s, a) = (self.t, self.s, self.a);
        let (mut dws, mut duh) = (vec![T::ZERO; self.b * t * a], vec![T::ZERO; self.b * s * a]);
        let parts: Vec<Vec<T>> = dws
            .par_chunks_mut(t * a)
            .zip(duh.par_chunks_mut(s * a))
            .enumerate()
            .map(|(bi, (dw, du))| {
                let mut dv = vec![T::ZERO; a];
                simd_dispatch!(backward_one(self, x, alpha, dalpha, bi, dw, du, &mut dv));
                dv
            })
            .collect();
        let mut dv = vec![T::ZERO; a];
        for part in parts {
            axpy(T::ONE, &part, &mut dv);
        }
        Ok([dws, duh, dv])
    }
}
