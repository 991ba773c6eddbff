//! The conditional GRU's decoder loop (Sennrich et al. 2017, §2.3; Nematus' and Marian's
//! `s2s`) on a [`Launch`]: the GPU twin of `kernels::cpu::conditional`, on the layout of
//! `attention_kernels.rs`. Per step `i`, forward:
//! ```text
//! s'_i = GRU₁(gie_i, GH1_i, s_{i-1})        gru_cell.rs, U₁ (GH1 starts as b_h1; dropout on s_{i-1})
//! WS_i = s'_i W_a (+ b_a)   α_i, c_i         cuBLAS, then attention.cu's kernels
//! GI_i = c_i W_c (+ b₂)                      cuBLAS
//! s_i  = GRU₂(GI_i, GH_i, s'_i)              gru_cell.rs, U₂ (GH starts as b_h2; no dropout)
//! ```
//! Backward, step `i` back in time, the carry holding the gradient reaching `s_i`: GRU₂'s step
//! turns it into the gradient of `s'_i`; `dc = dout_c + dGI_i W_cᵀ` through the attention adds
//! `dWS_i W_aᵀ`; GRU₁'s step (its output's own gradient zero) writes `dgie_i` and turns the
//! carry into the gradient of `s_{i-1}`. Then one product per weight over all `B·T` rows:
//! `dW_a = S'ᵀ dWS`, `dW_c = Cᵀ dGI`, `dU₂` from `S'`, `dU₁` from the masked `S_prev`, and the sums.
//!
//! With layer normalisation (Marian's `s2s`, `AttnDims::norm`) the four products `s U₁`, `s'
//! W_a`, `c W_c`, `s' U₂` are normalised before their biases (`norm_rows.rs`; `b_a` is then the
//! keys', and `WS` starts at zero); their raw products are kept, the backward pass turns each
//! `dy` into the product's gradient `da`, which the carry and the weight products read in
//! place of `dy`, and the gains' gradients are the sums of `dy ⊙ x̂`.
use candle_core::Result;

use super::args::{self, FillRows};
use super::attention_kernels::{At, Back, BackAddr, Saved};
use super::gru_cell::{gemm, sum_rows, Step, StepGrads, NO_ROWS};
use super::launch::{Addr, Launch, View};

/// The forward pass: `(B·T, H + C)` and what the backward pass needs.
pub(super) fn forward<L: Launch>(l: &L, at: &At<'_>) -> Result<(L::Floats, Saved<L::Floats>)> {
    let (d, x) = (at.d, at.x);
    let (b, t, s, h, g) = (d.batch, d.tgt_len, d.src_len, d.hidden, d.g());
    let (o, ow, bt) = (d.woff(), d.out_w(), b * t);
    let out = l.scratch(bt * ow)?;
    let saved = Saved::new(l, at)?;
    let (e, hub) = (l.scratch(b * s)?, l.scratch(b * h)?);
    // Every address once, before the loop (on a GPU a lookup is driver calls: `cuda.rs`).
    let (op, sv, ep, hubp) = (l.addr(&out), saved.addrs(l), l.addr(&e), l.addr(&hub));
    let rows = bt as i64;
    // The biases the rows start from (`WS` from zero with layer normalisation: `b_a` is the keys').
    let mut biases = vec![(sv.gh, o.bh, g), (sv.gh1, o.bh1, g), (sv.gi, o.b2, g)];
    if !d.norm {
        biases.push((sv.ws, o.ba, d.att));
    }
    for (dst, bias, w) in biases {
        l.launch(&args::FILL_ROWS, bt * w, FillRows { dst, src: x.w.at(bias), src_ld: w as i64, rows, width: w as i64, group: rows })?;
    }
    let (cell1, cell2) = (at.cell(o.u1, x.mask, at.gain(o.g1h)), at.cell(o.u, Addr::NULL, at.gain(o.g2h)));
    for i in 0..t {
        let sp_i = at.rows(sv.sp, h, i);
        let (gh1, q1, a1) = (at.rows(sv.gh1, g, i), at.rows(sv.q1, h, i), at.normed(sv.raw.gh1, g, i));
        let st1 = Step { t: i, gi: at.rows(x.seq, g, i), gh: gh1, q: q1, hp: at.prev(op, i), cp: NO_ROWS, a: a1 };
        cell1.forward(l, st1, sp_i, hubp)?;
        let c_i = at.rows(op.at(h), ow, i);
        at.attend(l, sp_i, i, (&sv, ep, c_i))?;
        at.context_input(l, i, c_i, &sv)?;
        let (gi, gh, q, a) = (at.rows(sv.gi, g, i), at.rows(sv.gh, g, i), at.rows(sv.q, h, i), at.normed(sv.raw.gh, g, i));
        cell2.forward(l, Step { t: i, gi, gh, q, hp: sp_i, cp: NO_ROWS, a }, at.rows(op, ow, i), hubp)?;
    }
    Ok((out, saved))
}

/// The backward pass from the output `out` and its gradient `dout`: the gradients of `(seq,
/// enc, w)`.
pub(super) fn backward<L: Launch>(l: &L, at: &At<'_>, saved: &Saved<L::Floats>, (out, dout): (Addr, Addr)) -> Result<[L::Floats; 3]> {
    let (d, x) = (at.d, at.x);
    let (b, t, h, c, a, g) = (d.batch, d.tgt_len, d.hidden, d.ctx, d.att, d.g());
    let (o, ow, bt) = (d.woff(), d.out_w(), b * t);
    let back = Back::zeros(l, d)?;
    let ba = back.addrs(l, d);
    let BackAddr { dseq: dseqp, dw: dwp, dgh: dghp, dws: dwsp, ag, carry, carry_c, dq, buf, da, dyx } = ba;
    // GRU₂'s input gradient, GRU₁'s recurrent one, and GRU₁'s output gradient (none: zeros).
    let (dgi, dgh1, zeros) = (l.zeros(bt * g)?, l.zeros(bt * g)?, l.zeros(b * h)?);
    let [dgip, dgh1p, zp] = [&dgi, &dgh1, &zeros].map(|f| l.addr(f));
    let sv = saved.addrs(l);
    let (cell1, cell2) = (at.cell(o.u1, x.mask, at.gain(o.g1h)), at.cell(o.u, Addr::NULL, at.gain(o.g2h)));
    for i in (0..t).rev() {
        let sp_i = at.rows(sv.sp, h, i);
        let (gi, gh, q, a2) = (at.rows(sv.gi, g, i), at.rows(sv.gh, g, i), at.rows(sv.q, h, i), at.normed(sv.raw.gh, g, i));
        let st2 = Step { t: i, gi, gh, q, hp: sp_i, cp: NO_ROWS, a: a2 };
        let (dgi_i, dgh_i, da2, dyx2) = (at.rows(dgip, g, i), at.rows(dghp, g, i), at.normed(da.gh, g, i), at.normed(dyx.gh, g, i));
        let grads2 = StepGrads { dgi: dgi_i, dgh: dgh_i, carry, carry_c, dq, buf, da: da2, dyx: dyx2 };
        cell2.backward(l, st2, at.rows(dout, ow, i), grads2)?;
        at.context_backward(l, i, (dout, grads2.dgi), &sv, &ba)?;
        let (gh1, q1, a1) = (at.rows(sv.gh1, g, i), at.rows(sv.q1, h, i), at.normed(sv.raw.gh1, g, i));
        let st1 = Step { t: i, gi: at.rows(x.seq, g, i), gh: gh1, q: q1, hp: at.prev(out, i), cp: NO_ROWS, a: a1 };
        let (dgi1, dgh1_i, da1, dyx1) = (at.rows(dseqp, g, i), at.rows(dgh1p, g, i), at.normed(da.gh1, g, i), at.normed(dyx.gh1, g, i));
        let grads1 = StepGrads { dgi: dgi1, dgh: dgh1_i, carry, carry_c, dq, buf, da: da1, dyx: dyx1 };
        cell1.backward(l, st1, (zp, h as i64), grads1)?;
    }
    // The products' gradients: `dy` itself, or with layer normalisation the raw product's `da`.
    let prod = |dy: Addr, da: Addr| if d.norm { da } else { dy };
    let (dws_p, dgi_p) = (prod(dwsp, da.ws), prod(dgip, da.gi));
    l.gemm(gemm(h, a, bt, View::new(sv.sp, h).t(), View::new(dws_p, a), View::new(dwp.at(o.wa), a), false))?;
    l.gemm(gemm(c, g, bt, View::new(out.at(h), ow).t(), View::new(dgi_p, g), View::new(dwp.at(o.wc), g), false))?;
    cell2.u_grad(l, bt, (sv.sp, sv.q), prod(dghp, da.gh), dwp.at(o.u))?;
    let sprev = l.scratch(bt * h)?;
    at.prev_states(l, out, x.mask, l.addr(&sprev))?;
    cell1.u_grad(l, bt, (l.addr(&sprev), sv.q1), prod(dgh1p, da.gh1), dwp.at(o.u1))?;
    // Written, not uploaded: a recorded step copies nothing from the host (`recording.rs`).
    let ones = l.scratch(bt)?;
    l.fill(l.addr(&ones), bt, 1.0)?;
    let one = l.addr(&ones);
    let mut sums = vec![(dghp, g, o.bh), (dgh1p, g, o.bh1), (dgip, g, o.b2)];
    match d.norm {
        // The gains' gradients; `b_a`'s comes through the keys, outside the loop.
        true => sums.extend([(dyx.gh1, g, o.g1h), (dyx.gi, g, o.g2x), (dyx.gh, g, o.g2h), (dyx.ws, a, o.gw)]),
        false => sums.push((dwsp, a, o.ba)),
    }
    for (src, w, dst) in sums {
        sum_rows(l, bt, w, src, dwp.at(dst), one)?;
    }
    sum_rows(l, b, a, ag.dv, dwp.at(o.va), one)?;
    Ok(back.into_inputs())
}
