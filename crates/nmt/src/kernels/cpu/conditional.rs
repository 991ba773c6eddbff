//! The conditional GRU decoder's whole step loop (Sennrich et al. 2017, §2.3; Nematus' and
//! Marian's `s2s` decoder), forward and backward, on the layout of `attention_op.rs` with
//! `AttnDims::conditional` set. Per target step `i`:
//!
//! ```text
//! s'_i  = GRU₁(gie_i, s_{i-1})                      gie = E y W₁ + b₁, precomputed;  gh1 = s_{i-1} U₁ + b_h1
//! ws_i  = s'_i W_a + b_a                            (B, A)
//! α_i, c_i = attention(ws_i, [h_j; U_a h_j])        `attn_decoder::attend_row`
//! gi_i  = c_i W_c + b₂,   gh_i = s'_i U₂ + b_h2     (B, G)
//! s_i   = GRU₂(gi_i, gh_i, s'_i)                    `rnn_cell.rs`, either form
//! ```
//! Output rows `[s_i; c_i]`, as Bahdanau's loop (`attention_op.rs` shifts them for `previous`).
//! The packed weights: `W_a, b_a, v_a, W_c (= W₂), U₂, b_h2, U₁, b_h1, b₂` (`AttnDims::woff`).
//!
//! With layer normalisation (`AttnDims::norm`, `model/layer_norm.rs`) four products are
//! normalised, their gains following `b₂`: `gh1 = LN(s U₁)·γ + b_h1` and `gh = LN(s' U₂)·γ + b_h2`
//! (inside the cell, `rnn_cell.rs`), `gi = LN(c W_c)·γ + b₂`, and `ws = LN(s' W_a)·γ_w`, whose
//! `b_a` has moved to the keys (`attention_op.rs`). Their backward passes recompute the products
//! (`layer_norm.rs`) and add the gains' and shifts' gradients up per chunk ([`NormAcc`]).
//! Recurrent dropout masks `s_{i-1}` where it enters `U₁` (the second cell reads `s'` whole).
//!
//! Backward, step `i` back in time, `ds` the gradient reaching `s_i`: GRU₂'s backward gives
//! `dGI_i`, `dGH_i` and `ds'`; `dc_i = dc_out + dGI_i W_cᵀ` through the attention
//! (`attn_backward::attend_backward`) gives `dWS_i`, and `ds' += dWS_i W_aᵀ`; GRU₁'s backward
//! turns `ds'` into `dgie_i`, `dGH1_i` and the gradient of `s_{i-1}`. The weight gradients are
//! GEMMs over all steps afterwards, as in `bahdanau_backward.rs`.
use rayon::prelude::*;

use super::bahdanau::{attend_row, AttnScratch, Steps};
use super::bahdanau_backward::{attend_backward, sum_rows, AttnRowGrad};
use super::norm_rows::{ln_backward_product, ln_rows, Product};
use super::rnn_cell::{chunk_mask, dropped, masked_states, u_grad, CellKernel, LnGrads, Rows, StepGrads, StepIn};
use super::rnn_sequence::chunk_rows;
use crate::kernels::cpu::engine::isa::simd_dispatch;
use crate::kernels::cpu::engine::products::{matmul_wide, Precision};
use crate::kernels::gemm::{matmul, transpose, Mat, Real};
use crate::kernels::math::axpy;
use crate::kernels::shapes::attn_dims::AttnDims;

/// Splits `v` into chunks of `rows` batch rows of `per_row` values.
fn split<T>(v: &mut [T], rows: usize, per_row: usize) -> Vec<&mut [T]> {
    v.chunks_mut((rows * per_row).max(1)).collect()
}

/// One chunk's step buffers, `(nb, T, ·)`.
struct ChunkSteps<'a, T> {
    out: &'a mut [T],
    ws: &'a mut [T],
    gi: &'a mut [T],
    gh: &'a mut [T],
    q: &'a mut [T],
    gh1: &'a mut [T],
    q1: &'a mut [T],
    sp: &'a mut [T],
}

/// Forward pass: `(B, T, H + C)` and the steps the backward pass reads.
pub fn forward<T: Real>(d: &AttnDims, seq: &[T], enc: &[T], w: &[T]) -> (Vec<T>, Steps<T>) {
    let (ow, bt, h, g, a, tl) = (d.out_w(), d.batch * d.tgt_len, d.hidden, d.g(), d.att, d.tgt_len);
    let mut out = vec![T::ZERO; bt * ow];
    let z = |n: usize| vec![T::ZERO; n];
    let mut st = Steps { ws: z(bt * a), gi: z(bt * g), gh: z(bt * g), q: z(bt * h), gh1: z(bt * g), q1: z(bt * h), sp: z(bt * h) };
    let rows = chunk_rows(d.batch);
    let (gie, s0) = seq.split_at(bt * g);
    let chunks: Vec<ChunkSteps<'_, T>> = split(&mut out, rows, tl * ow)
        .into_iter()
        .zip(split(&mut st.ws, rows, tl * a))
        .zip(split(&mut st.gi, rows, tl * g))
        .zip(split(&mut st.gh, rows, tl * g))
        .zip(split(&mut st.q, rows, tl * h))
        .zip(split(&mut st.gh1, rows, tl * g))
        .zip(split(&mut st.q1, rows, tl * h))
        .zip(split(&mut st.sp, rows, tl * h))
        .map(|(((((((out, ws), gi), gh), q), gh1), q1), sp)| ChunkSteps { out, ws, gi, gh, q, gh1, q1, sp })
        .collect();
    chunks.into_par_iter().enumerate().for_each(|(c, mut bufs)| {
        let b0 = c * rows;
        let nb = bufs.q.len() / (tl * h);
        let x = (
            b0,
            &gie[b0 * tl * g..][..nb * tl * g],
            &s0[b0 * h..][..nb * h],
            &enc[b0 * d.src_len * d.enc_w()..][..nb * d.src_len * d.enc_w()],
        );
        simd_dispatch!(forward_chunk(d, x, w, &mut bufs))
    });
    (out, st)
}

/// One chunk of `nb` rows: `(b0, gie (nb, T, G), s0 (nb, H), enc (nb, S, C + A))`.
#[inline(always)]
fn forward_chunk<T: Real>(d: &AttnDims, x: (usize, &[T], &[T], &[T]), w: &[T], st: &mut ChunkSteps<'_, T>) {
    let (b0, gie, s0, enc) = x;
    let (tl, sl, h, c, a, g) = (d.tgt_len, d.src_len, d.hidden, d.ctx, d.att, d.g());
    let (ow, ew, o) = (d.out_w(), d.enc_w(), d.woff());
    let nb = s0.len() / h;
    let mut sc = AttnScratch::new(sl, a);
    let gain = |off: usize| d.norm.then(|| &w[off..off + g]);
    let cell1 = CellKernel { kind: d.kind, hidden: h, u: &w[o.u1..o.bh1], norm: gain(o.g1h) };
    let cell2 = CellKernel { kind: d.kind, hidden: h, u: &w[o.u..o.bh], norm: gain(o.g2h) };
    let active = vec![true; nb];
    let mask = chunk_mask::<T>(d.state_mask.as_deref(), b0, nb, h);
    let mut hu_buf = vec![T::ZERO; if mask.is_some() { nb * h } else { 0 }];
    let (mut hp, mut spc) = (s0.to_vec(), vec![T::ZERO; nb * h]);
    // What each row's `ws` and `gi` start from: their biases, or zero before normalising.
    let (ba, b2) = (&w[o.ba..o.va], &w[o.b2..o.g1h]);
    let (zero_a, zero_g) = (vec![T::ZERO; a], vec![T::ZERO; g]);
    let (ws_start, gi_start) = if d.norm { (&zero_a[..], &zero_g[..]) } else { (ba, b2) };
    for i in 0..tl {
        let (r3v, r1v, outr) =
            (Rows { off: i * g, stride: tl * g }, Rows { off: i * h, stride: tl * h }, Rows { off: i * ow, stride: tl * ow });
        // s' = GRU₁(gie_i, s_{i-1}).
        for b in 0..nb {
            st.gh1[r3v.at(b)..][..g].copy_from_slice(&w[o.bh1..o.b2]);
        }
        let hu = dropped(&hp, mask.as_deref(), &mut hu_buf);
        let sin = StepIn { hp: &hp, cp: &[], hu, mask: mask.as_deref(), gi: (gie, r3v), active: &active };
        cell1.forward(&sin, (&mut *st.gh1, r3v), (&mut *st.q1, r1v), (&mut *st.sp, r1v));
        for b in 0..nb {
            spc[b * h..(b + 1) * h].copy_from_slice(&st.sp[r1v.at(b)..][..h]);
            st.ws[(b * tl + i) * a..][..a].copy_from_slice(ws_start);
        }
        // The attention over s'.
        matmul(st.ws, i * a, tl * a, Mat::new(&spc, nb, h), Mat::new(&w[o.wa..o.ba], h, a), true, 1);
        if d.norm {
            ln_rows(st.ws, nb, (tl * a, i * a), &w[o.gw..o.end], None);
        }
        for b in 0..nb {
            let ctx = &mut st.out[outr.at(b) + h..][..c];
            let enc_b = &enc[b * sl * ew..(b + 1) * sl * ew];
            attend_row(enc_b, &st.ws[(b * tl + i) * a..][..a], &w[o.va..o.wc], d.lens[b0 + b], &mut sc, ctx);
            st.gi[r3v.at(b)..][..g].copy_from_slice(gi_start);
            st.gh[r3v.at(b)..][..g].copy_from_slice(&w[o.bh..o.u1]);
        }
        // s_i = GRU₂(c_i W_c + b₂, s').
        matmul(st.gi, i * g, tl * g, Mat::strided(st.out, i * ow + h, nb, c, tl * ow), Mat::new(&w[o.wc..o.u], c, g), true, 1);
        if d.norm {
            ln_rows(st.gi, nb, (tl * g, i * g), &w[o.g2x..o.g2h], Some(b2));
        }
        let sin = StepIn { hp: &spc, cp: &[], hu: &spc, mask: None, gi: (&*st.gi, r3v), active: &active };
        cell2.forward(&sin, (&mut *st.gh, r3v), (&mut *st.q, r1v), (&mut *st.out, outr));
        for b in 0..nb {
            hp[b * h..(b + 1) * h].copy_from_slice(&st.out[outr.at(b)..][..h]);
        }
    }
}

/// Gradient buffers one chunk owns, `(nb, T, ·)` and `(nb, ·)`.
struct ChunkGrads<'a, T> {
    dgi1: &'a mut [T],
    dgh1: &'a mut [T],
    dgi: &'a mut [T],
    dgh: &'a mut [T],
    dws: &'a mut [T],
    denc: &'a mut [T],
    /// The gradient reaching the current state; ends as that of `s_0`.
    carry: &'a mut [T],
}

/// `W_cᵀ`, `U₂ᵀ`, `U₁ᵀ`, `W_aᵀ`, transposed once per call.
struct WeightsT<T> {
    wc: Vec<T>,
    u2: Vec<T>,
    u1: Vec<T>,
    wa: Vec<T>,
}

/// Gradients of `(seq, enc, w)` given the loop's output `out` and its gradient `dout`
/// (`attn_backward::backward`'s contract); `steps` from the forward pass, or recomputed.
pub fn backward<T: Real>(
    d: &AttnDims,
    steps: Option<Steps<T>>,
    seq: &[T],
    enc: &[T],
    w: &[T],
    out: &[T],
    dout: &[T],
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (b, tl, sl, h, c, a, g) = (d.batch, d.tgt_len, d.src_len, d.hidden, d.ctx, d.att, d.g());
    let (bt, ow, ew, o) = (b * tl, d.out_w(), d.enc_w(), d.woff());
    let threads = rayon::current_num_threads();
    let s0 = &seq[bt * g..];
    let mut sprev = vec![T::ZERO; bt * h];
    for bi in 0..b {
        for i in 0..tl {
            let src = if i == 0 { &s0[bi * h..(bi + 1) * h] } else { &out[(bi * tl + i - 1) * ow..][..h] };
            sprev[(bi * tl + i) * h..][..h].copy_from_slice(src);
        }
    }
    let st = steps.unwrap_or_else(|| forward(d, seq, enc, w).1);
    let wt = WeightsT {
        wc: transpose(&w[o.wc..o.u], c, g),
        u2: transpose(&w[o.u..o.bh], h, g),
        u1: transpose(&w[o.u1..o.bh1], h, g),
        wa: transpose(&w[o.wa..o.ba], h, a),
    };
    let z = |n: usize| vec![T::ZERO; n];
    let (mut dgi1, mut dgh1, mut dgi, mut dgh, mut dws) = (z(bt * g), z(bt * g), z(bt * g), z(bt * g), z(bt * a));
    let (mut denc, mut ds0) = (z(b * sl * ew), z(b * h));
    let rows = chunk_rows(b);
    let chunks: Vec<ChunkGrads<'_, T>> = split(&mut dgi1, rows, tl * g)
        .into_iter()
        .zip(split(&mut dgh1, rows, tl * g))
        .zip(split(&mut dgi, rows, tl * g))
        .zip(split(&mut dgh, rows, tl * g))
        .zip(split(&mut dws, rows, tl * a))
        .zip(split(&mut denc, rows, sl * ew))
        .zip(split(&mut ds0, rows, h))
        .map(|((((((dgi1, dgh1), dgi), dgh), dws), denc), carry)| ChunkGrads { dgi1, dgh1, dgi, dgh, dws, denc, carry })
        .collect();
    let ctx = Ctx { d, seq, enc, w, wt: &wt, out, dout, sprev: &sprev, st: &st };
    // Each chunk's `dv_a` and, with layer normalisation, its gains' and shifts' gradients, at
    // their places in `w`.
    let parts: Vec<Vec<T>> = chunks
        .into_par_iter()
        .enumerate()
        .map(|(ci, mut gr)| {
            let mut part = vec![T::ZERO; o.end];
            simd_dispatch!(backward_chunk(&ctx, ci * rows, &mut gr, &mut part));
            part
        })
        .collect();
    let mut dw = vec![T::ZERO; o.end];
    let sp = Mat::new(&st.sp, bt, h);
    matmul_wide(d.products, &mut dw, o.wa, a, sp.t(), Mat::new(&dws, bt, a), false, threads);
    matmul_wide(d.products, &mut dw, o.wc, g, Mat::strided(out, h, bt, c, ow).t(), Mat::new(&dgi, bt, g), false, threads);
    dw[o.u..o.bh].copy_from_slice(&u_grad(d.kind, h, &st.sp, &st.q, &dgh, d.products, threads));
    let du1 = u_grad(d.kind, h, &masked_states(&sprev, d.state_mask.as_deref(), tl, h), &st.q1, &dgh1, d.products, threads);
    dw[o.u1..o.bh1].copy_from_slice(&du1);
    if !d.norm {
        // (With layer normalisation the chunks added these up, and `b_a` is the keys'.)
        sum_rows(&dws, &mut dw[o.ba..o.va]);
        sum_rows(&dgh, &mut dw[o.bh..o.u1]);
        sum_rows(&dgh1, &mut dw[o.bh1..o.b2]);
        sum_rows(&dgi, &mut dw[o.b2..o.g1h]);
    }
    for part in parts {
        axpy(T::ONE, &part, &mut dw);
    }
    let mut dseq = dgi1;
    dseq.extend_from_slice(&ds0);
    (dseq, denc, dw)
}

/// What every chunk of the backward pass reads.
struct Ctx<'a, T> {
    d: &'a AttnDims,
    seq: &'a [T],
    enc: &'a [T],
    w: &'a [T],
    wt: &'a WeightsT<T>,
    out: &'a [T],
    dout: &'a [T],
    sprev: &'a [T],
    st: &'a Steps<T>,
}

/// Where a chunk adds up `dv_a` and, with layer normalisation, the gains' and shifts'
/// gradients: its part `(o.end)` of `dw`, split at the places of `v_a`, `b_h2`, `b_h1`, `b₂`,
/// `γ₁ₕ`, `γ₂ₓ`, `γ₂ₕ` and `γ_w` (the weights' places stay zero: GEMMs over all steps fill them).
struct NormAcc<'a, T> {
    dv: &'a mut [T],
    bh2: &'a mut [T],
    bh1: &'a mut [T],
    b2: &'a mut [T],
    g1h: &'a mut [T],
    g2x: &'a mut [T],
    g2h: &'a mut [T],
    gw: &'a mut [T],
}

impl<'a, T> NormAcc<'a, T> {
    fn new(part: &'a mut [T], d: &AttnDims) -> Self {
        let (o, g) = (d.woff(), d.g());
        let (head, tail) = part.split_at_mut(o.bh1);
        let (dv, rest) = head[o.va..].split_at_mut(o.wc - o.va);
        let bh2 = &mut rest[o.bh - o.wc..o.bh - o.wc + g];
        let (bh1, tail) = tail.split_at_mut(g);
        let (b2, tail) = tail.split_at_mut(g);
        let (g1h, tail) = tail.split_at_mut(o.g2x - o.g1h);
        let (g2x, tail) = tail.split_at_mut(o.g2h - o.g2x);
        let (g2h, gw) = tail.split_at_mut(o.gw - o.g2h);
        NormAcc { dv, bh2, bh1, b2, g1h, g2x, g2h, gw }
    }
}

#[inline(always)]
fn backward_chunk<T: Real>(x: &Ctx<'_, T>, b0: usize, gr: &mut ChunkGrads<'_, T>, part: &mut [T]) {
    let d = x.d;
    let (tl, sl, h, c, a, g) = (d.tgt_len, d.src_len, d.hidden, d.ctx, d.att, d.g());
    let (ow, ew, o) = (d.out_w(), d.enc_w(), d.woff());
    let nb = gr.carry.len() / h;
    let gie = &x.seq[..d.batch * tl * g];
    let v = &x.w[o.va..o.wc];
    let gain = |off: usize, len: usize| d.norm.then(|| &x.w[off..off + len]);
    let cell1 = CellKernel { kind: d.kind, hidden: h, u: &x.w[o.u1..o.bh1], norm: gain(o.g1h, g) };
    let cell2 = CellKernel { kind: d.kind, hidden: h, u: &x.w[o.u..o.bh], norm: gain(o.g2h, g) };
    let acc = NormAcc::new(part, d);
    let active = vec![true; nb];
    let mask = chunk_mask::<T>(d.state_mask.as_deref(), b0, nb, h);
    let mut hu_buf = vec![T::ZERO; if mask.is_some() { nb * h } else { 0 }];
    let z = |n: usize| vec![T::ZERO; n];
    let (mut hp, mut spc, mut ds, mut dsp, mut dq, mut dc) = (z(nb * h), z(nb * h), z(nb * h), z(nb * h), z(nb * h), z(nb * c));
    let (mut sc, mut dalpha) = (AttnScratch::new(sl, a), z(sl));
    for i in (0..tl).rev() {
        for b in 0..nb {
            let row = (b0 + b) * tl + i;
            hp[b * h..(b + 1) * h].copy_from_slice(&x.sprev[row * h..(row + 1) * h]);
            spc[b * h..(b + 1) * h].copy_from_slice(&x.st.sp[row * h..(row + 1) * h]);
            for j in 0..h {
                ds[b * h + j] = x.dout[row * ow + j] + gr.carry[b * h + j];
            }
            dc[b * c..(b + 1) * c].copy_from_slice(&x.dout[row * ow + h..][..c]);
        }
        let (rg, rl) = (Rows { off: (b0 * tl + i) * g, stride: tl * g }, Rows { off: i * g, stride: tl * g });
        // GRU₂: dGI, dGH, and ds' from s_i.
        let sin = StepIn { hp: &spc, cp: &[], hu: &spc, mask: None, gi: (&x.st.gi, rg), active: &active };
        let ln = d.norm.then_some(LnGrads { dgamma: &mut *acc.g2h, dbeta: &mut *acc.bh2 });
        let grads = StepGrads { dgi: (&mut *gr.dgi, rl), dgh: (&mut *gr.dgh, rl), carry: &mut dsp, dq: &mut dq, dc: &mut [], ln };
        cell2.backward(&sin, (&x.st.gh, rg), &ds, &x.wt.u2, grads);
        if let Some(gamma) = gain(o.g2x, g) {
            let ctx = Mat::strided(x.out, (b0 * tl + i) * ow + h, nb, c, tl * ow);
            let cw = Product { x: ctx, w: Mat::new(&x.w[o.wc..o.u], c, g), products: Precision::F32, threads: 1 };
            ln_backward_product(cw, (&mut *gr.dgi, rl.stride, rl.off), gamma, (&mut *acc.g2x, Some(&mut *acc.b2)));
        }
        // dc += dGI W_cᵀ, then the attention over s'.
        matmul(&mut dc, 0, c, Mat::strided(gr.dgi, i * g, nb, g, tl * g), Mat::new(&x.wt.wc, g, c), true, 1);
        for b in 0..nb {
            let bg = b0 + b;
            let enc_b = &x.enc[bg * sl * ew..(bg + 1) * sl * ew];
            let ws = &x.st.ws[(bg * tl + i) * a..][..a];
            let row = AttnRowGrad {
                dc: &dc[b * c..(b + 1) * c],
                denc: &mut gr.denc[b * sl * ew..(b + 1) * sl * ew],
                dws: &mut gr.dws[(b * tl + i) * a..][..a],
            };
            attend_backward(enc_b, ws, v, d.lens[bg], (&mut sc, &mut dalpha), row, acc.dv);
        }
        if let Some(gamma) = gain(o.gw, a) {
            let sw = Product { x: Mat::new(&spc, nb, h), w: Mat::new(&x.w[o.wa..o.ba], h, a), products: Precision::F32, threads: 1 };
            ln_backward_product(sw, (&mut *gr.dws, tl * a, i * a), gamma, (&mut *acc.gw, None));
        }
        // ds' += dWS W_aᵀ.
        matmul(&mut dsp, 0, h, Mat::strided(gr.dws, i * a, nb, a, tl * a), Mat::new(&x.wt.wa, a, h), true, 1);
        // GRU₁: dgie, dGH1, and the carry becomes the gradient of s_{i-1}.
        let hu = dropped(&hp, mask.as_deref(), &mut hu_buf);
        let sin = StepIn { hp: &hp, cp: &[], hu, mask: mask.as_deref(), gi: (gie, rg), active: &active };
        let ln = d.norm.then_some(LnGrads { dgamma: &mut *acc.g1h, dbeta: &mut *acc.bh1 });
        let grads = StepGrads { dgi: (&mut *gr.dgi1, rl), dgh: (&mut *gr.dgh1, rl), carry: &mut *gr.carry, dq: &mut dq, dc: &mut [], ln };
        cell1.backward(&sin, (&x.st.gh1, rg), &dsp, &x.wt.u1, grads);
    }
}
