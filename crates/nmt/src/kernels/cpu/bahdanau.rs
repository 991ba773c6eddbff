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
use crate::config::OutputState;
use crate::kernels::gemm::{matmul, Mat, Real};
use crate::kernels::math::simd_dispatch;
use crate::kernels::math::{axpy, dot};

/// Dimensions of the attention decoder op.
#[derive(Clone, Debug)]
pub struct AttnDims {
    pub batch: usize,
    pub tgt_len: usize,
    pub src_len: usize,
    pub hidden: usize,
    pub ctx: usize,
    pub att: usize,
    /// Source length of each sentence, `<= src_len`.
    pub lens: Vec<usize>,
    /// The decoder's cell (`rnn_cell.rs`); `b_h` is zero for the paper's GRU and the LSTM.
    pub kind: CellKind,
    /// Which state each output row carries: `s_i`, or `s_{i-1}` (RNNsearch's deep output).
    pub output: OutputState,
    /// Recurrent dropout on `s_{i-1}` where it enters `U` (`rnn_cell.rs`): a mask `(B, H)`
    /// of `0` or `1/(1−p)`, the same at every step. The attention reads the undropped state.
    /// (The conditional GRU: where `s_{i-1}` enters its first cell's `U₁`.)
    pub state_mask: Option<Vec<f32>>,
    /// The conditional GRU (`conditional.rs`) instead of Bahdanau's step: its first cell's
    /// `U₁`, `b_h1` and the second cell's input bias `b₂` join the packed weights.
    pub conditional: bool,
    /// What `s_0` summarises of the annotations (`start_pool.rs`; `W_s` is `(P, H)`).
    pub start: crate::config::StartState,
    /// Layer normalisation (the conditional GRU only, `model/layer_norm.rs`): its gains join
    /// the packed weights ([`WOff`]) and `b_a` moves from the query to the keys.
    pub norm: bool,
}

/// Offsets of the parameters inside the packed `w`.
#[derive(Clone, Copy)]
pub(crate) struct WOff {
    pub wa: usize,
    pub ba: usize,
    pub va: usize,
    pub wc: usize,
    pub u: usize,
    pub bh: usize,
    /// The conditional GRU's `U₁ (H, G)`, `b_h1 (G)`, `b₂ (G)` (empty for Bahdanau's).
    pub u1: usize,
    pub bh1: usize,
    pub b2: usize,
    /// Layer normalisation's gains on the loop's products (empty without it): `γ (G)` on
    /// `s U₁`, on `c W_c`, on `s' U₂`, and `γ_w (A)` on `s' W_a`.
    pub g1h: usize,
    pub g2x: usize,
    pub g2h: usize,
    pub gw: usize,
    /// The loop's own weights end here; the prologue's `U_a`, `W_s`, `b_s` follow, then with
    /// layer normalisation `γ_u (A)` on `h U_a` and `γ_s (H)` on `p W_s`.
    pub end: usize,
    pub ua: usize,
    pub ws: usize,
    pub bs: usize,
    pub gu: usize,
    pub gs: usize,
    pub total: usize,
}

impl AttnDims {
    /// The cell's gate width `G`.
    pub(crate) fn g(&self) -> usize {
        self.kind.gates() * self.hidden
    }

    /// Length of the op's packed weights `w` (`attention_op.rs`).
    pub fn weights_len(&self) -> usize {
        self.woff().total
    }

    pub(crate) fn woff(&self) -> WOff {
        let (h, c, a, g) = (self.hidden, self.ctx, self.att, self.g());
        let ba = h * a;
        let va = ba + a;
        let wc = va + a;
        let u = wc + c * g;
        let bh = u + h * g;
        let u1 = bh + g;
        let (bh1, b2, g1h) = match self.conditional {
            true => (u1 + h * g, u1 + h * g + g, u1 + h * g + 2 * g),
            false => (u1, u1, u1),
        };
        let (ng, na, nh) = match self.norm {
            true => (g, a, h),
            false => (0, 0, 0),
        };
        let (g2x, g2h, gw) = (g1h + ng, g1h + 2 * ng, g1h + 3 * ng);
        let end = gw + na;
        let ws = end + c * a;
        let bs = ws + self.start_width() * h;
        let (gu, gs) = (bs + h, bs + h + na);
        WOff { wa: 0, ba, va, wc, u, bh, u1, bh1, b2, g1h, g2x, g2h, gw, end, ua: end, ws, bs, gu, gs, total: gs + nh }
    }
    /// The width `P` of `s_0`'s summary `p`: `H` for `←h_1` (the columns `[C − H, C)` of
    /// position 0), else `start_pool::width`.
    pub(crate) fn start_width(&self) -> usize {
        match self.start {
            crate::config::StartState::FirstBackward => self.hidden,
            kind => super::start_pool::width(kind, self.ctx),
        }
    }
    pub(crate) fn out_w(&self) -> usize {
        self.hidden + self.ctx
    }
    pub(crate) fn enc_w(&self) -> usize {
        self.ctx + self.att
    }
}

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
