//! Backward pass of the fused attention decoder (`bahdanau.rs`), written out by hand.
//!
//! For step `i`, going back in time, with `ds` the gradient reaching `s_i`:
//! ```text
//! GRU:        dGI_i, dGH_i from ds (as in gru.rs);    ds_{i-1} += ds ⊙ z + dGH_i Uᵀ
//! context:    dc_i = dc_out_i + dGI_i W_cᵀ
//! attention:  dα_j = dc_i · h_j,   dh_j += α_j dc_i
//!             de_j = α_j (dα_j - Σ_k α_k dα_k)
//!             dpre_j = de_j v_a ⊙ (1 - x_j²);  d(U_a h_j) += dpre_j;  dv_a += de_j x_j
//!             dWS_i = Σ_j dpre_j;              ds_{i-1} += dWS_i W_aᵀ
//! ```
//! then `dW_a = S_prevᵀ dWS`, `dW_c = Cᵀ dGI`, `dU = S_prevᵀ dGH` as GEMMs over all steps
//! (under recurrent dropout the `U` terms use `m ⊙ s` and `ds_{i-1}` gets `m ⊙ (dGH Uᵀ)`).
use rayon::prelude::*;

use super::bahdanau::{attention_weights, AttnScratch, Steps};
use super::rnn_cell::{chunk_mask, dropped, masked_states, u_grad, CellKernel, CellKind, Rows, StepGrads, StepIn};
use super::rnn_sequence::chunk_rows;
use crate::kernels::cpu::engine::isa::simd_dispatch;
use crate::kernels::cpu::engine::products::matmul_wide;
use crate::kernels::gemm::{matmul, transpose, Mat, Real};
use crate::kernels::math::{axpy, dot};
use crate::kernels::shapes::attn_dims::AttnDims;

/// Recomputed per-step quantities, `(B, T, ·)` each.
struct Recomputed<T> {
    sprev: Vec<T>,
    /// The LSTM's previous cell states (empty for a GRU).
    cprev: Vec<T>,
    ws: Vec<T>,
    gi: Vec<T>,
    gh: Vec<T>,
    q: Vec<T>,
}

/// Returns the gradients of `(seq, enc, w)` given the output `out` and its gradient `dout`.
pub fn backward<T: Real>(
    d: &AttnDims,
    steps: Option<Steps<T>>,
    seq: &[T],
    enc: &[T],
    w: &[T],
    out: &[T],
    dout: &[T],
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (bt, tl, sl, h, c, a) = (d.batch * d.tgt_len, d.tgt_len, d.src_len, d.hidden, d.ctx, d.att);
    let (ow, ew, o, g) = (h + c, c + a, d.woff(), d.g());
    let threads = rayon::current_num_threads();
    let s0 = &seq[bt * g..];

    // S_prev: the state each step started from.
    let mut sprev = vec![T::ZERO; bt * h];
    for b in 0..d.batch {
        for i in 0..tl {
            let src = if i == 0 { &s0[b * h..(b + 1) * h] } else { &out[(b * tl + i - 1) * ow..][..h] };
            sprev[(b * tl + i) * h..][..h].copy_from_slice(src);
        }
    }
    // No steps from the forward pass (a second backward): run it again.
    let steps = steps.unwrap_or_else(|| super::bahdanau::forward(d, seq, enc, w).1);
    // C_prev: the LSTM's cell state each step started from (zero at the first).
    let mut cprev = Vec::new();
    if d.kind == CellKind::Lstm {
        cprev = vec![T::ZERO; bt * h];
        for b in 0..d.batch {
            for i in 1..tl {
                cprev[(b * tl + i) * h..][..h].copy_from_slice(&steps.q[(b * tl + i - 1) * h..][..h]);
            }
        }
    }
    let re = Recomputed { sprev, cprev, ws: steps.ws, gi: steps.gi, gh: steps.gh, q: steps.q };

    let mut dgi = vec![T::ZERO; bt * g];
    let mut dgh = vec![T::ZERO; bt * g];
    let mut dws = vec![T::ZERO; bt * a];
    let mut denc = vec![T::ZERO; d.batch * sl * ew];
    let mut ds0 = vec![T::ZERO; d.batch * h];
    let wt = WeightsT { wc: transpose(&w[o.wc..o.u], c, g), u: transpose(&w[o.u..o.bh], h, g), wa: transpose(&w[o.wa..o.ba], h, a) };
    let rows = chunk_rows(d.batch);
    let dv_parts: Vec<Vec<T>> = dgi
        .par_chunks_mut(rows * tl * g)
        .zip(dgh.par_chunks_mut(rows * tl * g))
        .zip(dws.par_chunks_mut(rows * tl * a))
        .zip(denc.par_chunks_mut(rows * sl * ew))
        .zip(ds0.par_chunks_mut(rows * h))
        .enumerate()
        .map(|(ci, ((((dgi_c, dgh_c), dws_c), denc_c), ds0_c))| {
            let b0 = ci * rows;
            let nb = ds0_c.len() / h;
            let mut bufs = ChunkOut { dgi: dgi_c, dgh: dgh_c, dws: dws_c, denc: denc_c, carry: ds0_c, dv: vec![T::ZERO; a] };
            simd_dispatch!(backward_chunk(d, b0, nb, enc, w, &wt, dout, &re, &mut bufs));
            bufs.dv
        })
        .collect();

    let mut dw = vec![T::ZERO; o.end];
    let sp = Mat::new(&re.sprev, bt, h).t();
    matmul_wide(d.products, &mut dw, o.wa, a, sp, Mat::new(&dws, bt, a), false, threads);
    matmul_wide(d.products, &mut dw, o.wc, g, Mat::strided(out, h, bt, c, ow).t(), Mat::new(&dgi, bt, g), false, threads);
    let du = u_grad(d.kind, h, &masked_states(&re.sprev, d.state_mask.as_deref(), tl, h), &re.q, &dgh, d.products, threads);
    dw[o.u..o.bh].copy_from_slice(&du);
    sum_rows(&dws, &mut dw[o.ba..o.va]);
    sum_rows(&dgh, &mut dw[o.bh..o.end]);
    for part in dv_parts {
        axpy(T::ONE, &part, &mut dw[o.va..o.wc]);
    }
    let mut dseq = dgi;
    dseq.extend_from_slice(&ds0);
    (dseq, denc, dw)
}

pub(crate) fn sum_rows<T: Real>(m: &[T], acc: &mut [T]) {
    for row in m.chunks(acc.len()) {
        axpy(T::ONE, row, acc);
    }
}

/// One pass over a source position's score gradient: `dv += de x_j`, and
/// `dpre = de v ⊙ (1 − x_j²)` into `d(U_a h_j)` and `dWS`. A function of its own so that the
/// three outputs are known not to alias and the loop vectorises (inline, it ran 2× slower).
#[inline(always)]
pub(crate) fn score_grad<T: Real>(de: T, xj: &[T], v: &[T], dv: &mut [T], duh: &mut [T], dws: &mut [T]) {
    let a = xj.len();
    let (v, dv, duh, dws) = (&v[..a], &mut dv[..a], &mut duh[..a], &mut dws[..a]);
    for k in 0..a {
        dv[k] += de * xj[k];
        let dp = de * v[k] * (T::ONE - xj[k] * xj[k]);
        duh[k] += dp;
        dws[k] += dp;
    }
}

/// One sentence's gradients at one step of [`attend_row`](super::bahdanau::attend_row).
pub(crate) struct AttnRowGrad<'a, T> {
    /// The gradient reaching the context `c_i (C)`.
    pub dc: &'a [T],
    /// Accumulates into `[dh_j; d(U_a h_j)] (S, C + A)`.
    pub denc: &'a mut [T],
    /// Receives `dWS_i (A)`, the gradient of `s W_a + b_a`.
    pub dws: &'a mut [T],
}

/// The attention's backward pass for one sentence of `len` positions, its weights recomputed
/// from `ws (A)` into `sc` (`dalpha (S)` is scratch); `dv (A)` accumulates `v_a`'s gradient.
#[inline(always)]
pub(crate) fn attend_backward<T: Real>(
    enc_b: &[T],
    ws: &[T],
    v: &[T],
    len: usize,
    scratch: (&mut AttnScratch<T>, &mut [T]),
    g: AttnRowGrad<'_, T>,
    dv: &mut [T],
) {
    let (sc, dalpha) = scratch;
    let (c, a) = (g.dc.len(), ws.len());
    let ew = c + a;
    attention_weights(enc_b, c, ws, v, len, sc);
    let (x, alpha) = (&sc.x, &sc.alpha);
    let mut mean = T::ZERO;
    for j in 0..len {
        dalpha[j] = dot(g.dc, &enc_b[j * ew..j * ew + c]);
        mean += alpha[j] * dalpha[j];
        axpy(alpha[j], g.dc, &mut g.denc[j * ew..j * ew + c]);
    }
    for j in 0..len {
        let de = alpha[j] * (dalpha[j] - mean);
        let xj = &x[j * a..(j + 1) * a];
        let duh = &mut g.denc[j * ew + c..(j + 1) * ew];
        score_grad(de, xj, v, dv, duh, g.dws);
    }
}

/// `W_cᵀ (G, C)`, `Uᵀ (G, H)`, `W_aᵀ (A, H)`, transposed once per call (see `gemm::transpose`).
struct WeightsT<T> {
    wc: Vec<T>,
    u: Vec<T>,
    wa: Vec<T>,
}

/// The gradient buffers one chunk of batch rows owns.
struct ChunkOut<'a, T> {
    dgi: &'a mut [T],
    dgh: &'a mut [T],
    dws: &'a mut [T],
    denc: &'a mut [T],
    /// Gradient reaching the current state; ends as the gradient of `s_0`.
    carry: &'a mut [T],
    dv: Vec<T>,
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn backward_chunk<T: Real>(
    d: &AttnDims,
    b0: usize,
    nb: usize,
    enc: &[T],
    w: &[T],
    wt: &WeightsT<T>,
    dout: &[T],
    re: &Recomputed<T>,
    g: &mut ChunkOut<'_, T>,
) {
    let (tl, sl, h, c, a, g3) = (d.tgt_len, d.src_len, d.hidden, d.ctx, d.att, d.g());
    let (ow, ew, o) = (h + c, c + a, d.woff());
    let v = &w[o.va..o.wc];
    let mut dc = vec![T::ZERO; nb * c];
    let mut sc = AttnScratch::new(sl, a);
    let mut dalpha = vec![T::ZERO; sl];
    let cell = CellKernel { kind: d.kind, hidden: h, u: &w[o.u..o.bh], norm: None };
    let active = vec![true; nb];
    let (mut hp, mut ds, mut dq) = (vec![T::ZERO; nb * h], vec![T::ZERO; nb * h], vec![T::ZERO; nb * h]);
    let lstm = d.kind == CellKind::Lstm;
    // The LSTM's previous cell states and the gradient carried into its cell state.
    let (mut cp, mut dcell) = (vec![T::ZERO; if lstm { nb * h } else { 0 }], vec![T::ZERO; if lstm { nb * h } else { 0 }]);
    let mask = chunk_mask::<T>(d.state_mask.as_deref(), b0, nb, h);
    let mut hu_buf = vec![T::ZERO; if mask.is_some() { nb * h } else { 0 }];
    for i in (0..tl).rev() {
        for b in 0..nb {
            let row = (b0 + b) * tl + i;
            hp[b * h..(b + 1) * h].copy_from_slice(&re.sprev[row * h..(row + 1) * h]);
            if lstm {
                cp[b * h..(b + 1) * h].copy_from_slice(&re.cprev[row * h..(row + 1) * h]);
            }
            for j in 0..h {
                ds[b * h + j] = dout[row * ow + j] + g.carry[b * h + j];
            }
            dc[b * c..(b + 1) * c].copy_from_slice(&dout[row * ow + h..][..c]);
        }
        // The GRU: dGI, dGH, and the carry becomes the gradient of s_{i-1}.
        let rg = Rows { off: (b0 * tl + i) * g3, stride: tl * g3 };
        let rl = Rows { off: i * g3, stride: tl * g3 };
        let hu = dropped(&hp, mask.as_deref(), &mut hu_buf);
        let sin = StepIn { hp: &hp, cp: &cp, hu, mask: mask.as_deref(), gi: (&re.gi, rg), active: &active };
        let grads =
            StepGrads { dgi: (&mut *g.dgi, rl), dgh: (&mut *g.dgh, rl), carry: &mut *g.carry, dq: &mut dq, dc: &mut dcell, ln: None };
        cell.backward(&sin, (&re.gh, rg), &ds, &wt.u, grads);
        // dc += dGI Wcᵀ.
        matmul(&mut dc, 0, c, Mat::strided(g.dgi, i * g3, nb, g3, tl * g3), Mat::new(&wt.wc, g3, c), true, 1);
        for b in 0..nb {
            let bg = b0 + b;
            let enc_b = &enc[bg * sl * ew..(bg + 1) * sl * ew];
            let ws = &re.ws[(bg * tl + i) * a..][..a];
            let row = AttnRowGrad {
                dc: &dc[b * c..(b + 1) * c],
                denc: &mut g.denc[b * sl * ew..(b + 1) * sl * ew],
                dws: &mut g.dws[(b * tl + i) * a..][..a],
            };
            attend_backward(enc_b, ws, v, d.lens[bg], (&mut sc, &mut dalpha), row, &mut g.dv);
        }
        // carry += dWS W_aᵀ.
        matmul(g.carry, 0, h, Mat::strided(g.dws, i * a, nb, a, tl * a), Mat::new(&wt.wa, a, h), true, 1);
    }
}
