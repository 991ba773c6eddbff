//! The RNNsearch decoder's whole step loop (Bahdanau et al. 2014, appendix A.2.2) as one candle
//! op: additive attention, context, and a recurrent cell (`rnn_cell.rs`: a GRU in either form,
//! or an LSTM) whose input is `[E y_{i-1}; c_i]`. Below, `3H` is the GRU's gate width `G`
//! (the LSTM's is `4H`; it keeps its cell states where the GRU keeps `q`).
//!
//! ```text
//! ws_i  = s_{i-1} W_a + b_a                         (B, A)     one GEMM per step
//! x_ij  = tanh(U_a h_j + ws_i),  e_ij = x_ij · v_a  (B, S, A) → (B, S)
//! α_i   = softmax_j(e_ij) over the source length     (B, S)
//! c_i   = Σ_j α_ij h_j                              (B, C)     C = 2H for a bi-GRU encoder
//! gi_i  = gie_i + c_i W_c,  gh_i = s_{i-1} U + b_h   (B, 3H)    gie = E y W_e + b_i, precomputed
//! s_i   = GRU(gi_i, gh_i, s_{i-1})                  `rnn_cell.rs`; `gh_i` += `q U_n` for the paper form
//! ```
//!
//! This file is the loop itself, on the internal layout that `attention_op.rs` (the candle op) builds:
//! - `seq`: flat `[gie (B, T, 3H); s_0 (B, H)]`;
//! - `enc`: `(B, S, C + A)`, each source position's `[h_j; U_a h_j]`;
//! - `w`: flat `[W_a (H, A); b_a (A); v_a (A); W_c (C, 3H); U (H, 3H); b_h (3H)]` (a prefix of
//!   the op's packed weights).
//!
//! Output `(B, T, H + C)`: each step's `[s_i; c_i]`. The source lengths are part of the op
//! (positions at or past a sentence's length get no attention).
//!
//! Backward recomputes the attention and the gates: `WS`, `GH` and `GI` for all steps are three
//! GEMMs before the loop, the loop back through time does three small GEMMs per step
//! (`dGI Wcᵀ`, `dGH Uᵀ`, `dWS W_aᵀ`), and the weight gradients are GEMMs over all steps.
use rayon::prelude::*;

use super::rnn_cell::{chunk_mask, dropped, CellKernel, CellKind, Rows, StepIn};
use super::rnn_sequence::chunk_rows;
use crate::kernels::cpu::engine::isa::simd_dispatch;
use crate::kernels::gemm::{matmul, Mat, Real};
use crate::kernels::math::{axpy, dot};
use crate::kernels::shapes::attn_dims::AttnDims;

/// Per-thread scratch of [`attend_row`]: the `tanh` activations `x (S, A)` (kept for the
/// backward pass) and the weights `alpha (S)`.
pub(crate) struct AttnScratch<T> {
    pub x: Vec<T>,
    pub alpha: Vec<T>,
}

impl<T: Real> AttnScratch<T> {
    pub(crate) fn new(src_len: usize, att: usize) -> Self {
        AttnScratch { x: vec![T::ZERO; src_len * att], alpha: vec![T::ZERO; src_len] }
    }
}

/// Attention for one sentence of `len` positions: fills `sc.alpha (S)` and `ctx (C)` from
/// `ws (A)`; `enc_b (S, C + A)` holds each position's `[h_j; U_a h_j]`.
#[inline(always)]
pub(crate) fn attend_row<T: Real>(enc_b: &[T], ws: &[T], v: &[T], len: usize, sc: &mut AttnScratch<T>, ctx: &mut [T]) {
    let ctx_dim = ctx.len();
    attention_weights(enc_b, ctx_dim, ws, v, len, sc);
    let ew = ctx_dim + ws.len();
    ctx.fill(T::ZERO);
    for j in 0..len {
        axpy(sc.alpha[j], &enc_b[j * ew..j * ew + ctx_dim], ctx);
    }
}

/// The weights alone (the backward pass recomputes them but not the context): `sc.x (S, A)`
/// and `sc.alpha (S)`, zero past `len`.
#[inline(always)]
pub(crate) fn attention_weights<T: Real>(enc_b: &[T], ctx_dim: usize, ws: &[T], v: &[T], len: usize, sc: &mut AttnScratch<T>) {
    let (x, alpha) = (&mut sc.x, &mut sc.alpha);
    let a = ws.len();
    let ew = ctx_dim + a;
    let mut max = T::from_f64(f64::NEG_INFINITY);
    for j in 0..len {
        let uh = &enc_b[j * ew + ctx_dim..(j + 1) * ew];
        let xj = &mut x[j * a..(j + 1) * a];
        for k in 0..a {
            xj[k] = (uh[k] + ws[k]).tanh_fast();
        }
        let e = dot(xj, v);
        alpha[j] = e;
        max = max.max(e);
    }
    let mut sum = T::ZERO;
    for al in alpha[..len].iter_mut() {
        *al = (*al - max).exp_fast();
        sum += *al;
    }
    let inv = T::ONE / sum;
    for al in alpha[..len].iter_mut() {
        *al = *al * inv;
    }
    alpha[len..].fill(T::ZERO);
}

/// Forward pass: `(B, T, H + C)`.
pub fn forward<T: Real>(d: &AttnDims, seq: &[T], enc: &[T], w: &[T]) -> (Vec<T>, Steps<T>) {
    let (ow, bt, h, g) = (d.out_w(), d.batch * d.tgt_len, d.hidden, d.g());
    let mut out = vec![T::ZERO; bt * ow];
    let mut st = Steps {
        ws: vec![T::ZERO; bt * d.att],
        gi: vec![T::ZERO; bt * g],
        gh: vec![T::ZERO; bt * g],
        q: vec![T::ZERO; bt * h],
        ..Steps::default()
    };
    let rows = chunk_rows(d.batch);
    let (gie, s0) = seq.split_at(bt * g);
    let tl = d.tgt_len;
    out.par_chunks_mut(rows * tl * ow)
        .zip(st.ws.par_chunks_mut(rows * tl * d.att))
        .zip(st.gi.par_chunks_mut(rows * tl * g))
        .zip(st.gh.par_chunks_mut(rows * tl * g))
        .zip(st.q.par_chunks_mut(rows * tl * h))
        .enumerate()
        .for_each(|(c, ((((out_c, ws_c), gi_c), gh_c), q_c))| {
            let b0 = c * rows;
            let nb = out_c.len() / (tl * ow);
            let gie_c = &gie[b0 * tl * g..][..nb * tl * g];
            let s0_c = &s0[b0 * h..][..nb * h];
            let enc_c = &enc[b0 * d.src_len * d.enc_w()..][..nb * d.src_len * d.enc_w()];
            let mut stc = StepsMut { ws: ws_c, gi: gi_c, gh: gh_c, q: q_c };
            let ins = ChunkIn { b0, gie: gie_c, s0: s0_c, enc: enc_c };
            simd_dispatch!(forward_chunk(d, &ins, w, out_c, &mut stc))
        });
    (out, st)
}

/// Each step's `ws`, `gi`, `gh` `(B, T, ·)` and the paper cell's `q = r ⊙ s_{i-1}` (the
/// LSTM's cell state) `(B, T, H)`, kept by the op for its backward pass; the conditional GRU
/// also keeps its first cell's `gh1`, `q1` and output `s'` (`sp`), empty otherwise.
pub struct Steps<T> {
    pub ws: Vec<T>,
    pub gi: Vec<T>,
    pub gh: Vec<T>,
    pub q: Vec<T>,
    pub gh1: Vec<T>,
    pub q1: Vec<T>,
    pub sp: Vec<T>,
}

impl<T> Default for Steps<T> {
    fn default() -> Self {
        Steps { ws: Vec::new(), gi: Vec::new(), gh: Vec::new(), q: Vec::new(), gh1: Vec::new(), q1: Vec::new(), sp: Vec::new() }
    }
}

struct StepsMut<'a, T> {
    ws: &'a mut [T],
    gi: &'a mut [T],
    gh: &'a mut [T],
    q: &'a mut [T],
}

/// A chunk's inputs: its first row, `gie (nb, T, 3H)`, `s0 (nb, H)`, `enc (nb, S, C + A)`.
struct ChunkIn<'a, T> {
    b0: usize,
    gie: &'a [T],
    s0: &'a [T],
    enc: &'a [T],
}

#[inline(always)]
fn forward_chunk<T: Real>(d: &AttnDims, x: &ChunkIn<'_, T>, w: &[T], out: &mut [T], st: &mut StepsMut<'_, T>) {
    let (tl, sl, h, c, a, g) = (d.tgt_len, d.src_len, d.hidden, d.ctx, d.att, d.g());
    let (ow, ew, o) = (d.out_w(), d.enc_w(), d.woff());
    let nb = x.s0.len() / h;
    let (ws, gi, gh) = (&mut *st.ws, &mut *st.gi, &mut *st.gh);
    let mut sc = AttnScratch::new(sl, a);
    let cell = CellKernel { kind: d.kind, hidden: h, u: &w[o.u..o.bh], norm: None };
    let lstm = d.kind == CellKind::Lstm;
    // The LSTM's cell states, from zero.
    let mut cp = vec![T::ZERO; if lstm { nb * h } else { 0 }];
    let active = vec![true; nb];
    let mask = chunk_mask::<T>(d.state_mask.as_deref(), x.b0, nb, h);
    let mut hu_buf = vec![T::ZERO; if mask.is_some() { nb * h } else { 0 }];
    // The previous states s_{i-1}, contiguous: s_0, then each step's output.
    let mut hp = x.s0.to_vec();
    for i in 0..tl {
        // Row b of step i sits at (b·T + i) in the (nb, T, ·) step buffers.
        let (r3, ra) = (|b: usize| (b * tl + i) * g, |b: usize| (b * tl + i) * a);
        for b in 0..nb {
            ws[ra(b)..ra(b) + a].copy_from_slice(&w[o.ba..o.ba + a]);
            gh[r3(b)..r3(b) + g].copy_from_slice(&w[o.bh..o.end]);
        }
        matmul(ws, i * a, tl * a, Mat::new(&hp, nb, h), Mat::new(&w[o.wa..o.ba], h, a), true, 1);
        for b in 0..nb {
            let ctx = &mut out[(b * tl + i) * ow + h..(b * tl + i + 1) * ow];
            let enc_b = &x.enc[b * sl * ew..(b + 1) * sl * ew];
            attend_row(enc_b, &ws[ra(b)..ra(b) + a], &w[o.va..o.wc], d.lens[x.b0 + b], &mut sc, ctx);
            gi[r3(b)..r3(b) + g].copy_from_slice(&x.gie[r3(b)..r3(b) + g]);
        }
        matmul(gi, i * g, tl * g, Mat::strided(out, i * ow + h, nb, c, tl * ow), Mat::new(&w[o.wc..o.u], c, g), true, 1);
        let (r3v, r1v) = (Rows { off: i * g, stride: tl * g }, Rows { off: i * h, stride: tl * h });
        let hu = dropped(&hp, mask.as_deref(), &mut hu_buf);
        let sin = StepIn { hp: &hp, cp: &cp, hu, mask: mask.as_deref(), gi: (&*gi, r3v), active: &active };
        let outr = Rows { off: i * ow, stride: tl * ow };
        cell.forward(&sin, (&mut *gh, r3v), (&mut *st.q, r1v), (&mut *out, outr));
        for b in 0..nb {
            hp[b * h..(b + 1) * h].copy_from_slice(&out[outr.at(b)..][..h]);
            if lstm {
                cp[b * h..(b + 1) * h].copy_from_slice(&st.q[r1v.at(b)..][..h]);
            }
        }
    }
}
