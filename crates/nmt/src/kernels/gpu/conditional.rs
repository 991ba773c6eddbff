//! The conditional GRU's decoder loop (Sennrich et al. 2017, §2.3; Nematus' and Marian's
//! `s2s`) on a [`Launch`]: the GPU twin of `kernels::cgru_decoder` without layer
//! normalisation, on the layout of `attention.rs`. Per step `i`, forward:
//! ```text
//! s'_i = GRU₁(gie_i, GH1_i, s_{i-1})        cell.rs, U₁ (GH1 starts as b_h1; dropout on s_{i-1})
//! WS_i = s'_i W_a (+ b_a)   α_i, c_i         cuBLAS, then attention.cu's kernels
//! GI_i = c_i W_c (+ b₂)                      cuBLAS
//! s_i  = GRU₂(GI_i, GH_i, s'_i)              cell.rs, U₂ (GH starts as b_h2; no dropout)
//! ```
//! Backward, step `i` back in time, the carry holding the gradient reaching `s_i`: GRU₂'s step
//! turns it into the gradient of `s'_i`; `dc = dout_c + dGI_i W_cᵀ` through the attention adds
//! `dWS_i W_aᵀ`; GRU₁'s step (its output's own gradient zero) writes `dgie_i` and turns the
//! carry into the gradient of `s_{i-1}`. Then one product per weight over all `B·T` rows:
//! `dW_a = S'ᵀ dWS`, `dW_c = Cᵀ dGI`, `dU₂` from `S'`, `dU₁` from the masked `S_prev`, and the sums.
use candle_core::Result;

use super::args::{self, FillRows};
use super::attention::{At, Back, BackAddr, Saved};
use super::cell::{gemm, sum_rows, Step, StepGrads, NO_ROWS};
use super::{Addr, Launch, View};

/// The forward pass: `(B·T, H + C)` and what the backward pass needs.
pub(super) fn forward<L: Launch>(l: &L, at: &At<'_>) -> Result<(L::Floats, Saved<L::Floats>)> {
    let (d, x) = (at.d, at.x);
    let (b, t, s, h, g) = (d.batch, d.tgt_len, d.src_len, d.hidden, d.g());
    let (o, ow, bt) = (d.woff(), d.out_w(), b * t);
    let out = l.zeros(bt * ow)?;
    let saved = Saved::zeros(l, at)?;
    let (e, hub) = (l.zeros(b * s)?, l.zeros(b * h)?);
    // Every address once, before the loop (on a GPU a lookup is driver calls: `cuda.rs`).
    let (op, sv, ep, hubp) = (l.addr(&out), saved.addrs(l), l.addr(&e), l.addr(&hub));
    let rows = bt as i64;
    for (dst, bias, w) in [(sv.ws, o.ba, d.att), (sv.gh, o.bh, g), (sv.gh1, o.bh1, g), (sv.gi, o.b2, g)] {
        l.launch(&args::FILL_ROWS, bt * w, FillRows { dst, src: x.w.at(bias), src_ld: w as i64, rows, width: w as i64, group: rows })?;
    }
    let (cell1, cell2) = (at.cell(o.u1, x.mask), at.cell(o.u, Addr::NULL));
    for i in 0..t {
        let sp_i = at.rows(sv.sp, h, i);
        let st1 = Step { t: i, gi: at.rows(x.seq, g, i), gh: at.rows(sv.gh1, g, i), q: at.rows(sv.q1, h, i), hp: at.prev(op, i), cp: NO_ROWS };
        cell1.forward(l, st1, sp_i, hubp)?;
        let c_i = at.rows(op.at(h), ow, i);
        at.attend(l, sp_i, i, (&sv, ep, c_i))?;
        let gi_i = at.rows(sv.gi, g, i);
        at.context_input(l, c_i, gi_i)?;
        let st2 = Step { t: i, gi: gi_i, gh: at.rows(sv.gh, g, i), q: at.rows(sv.q, h, i), hp: sp_i, cp: NO_ROWS };
        cell2.forward(l, st2, at.rows(op, ow, i), hubp)?;
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
    let BackAddr { dseq: dseqp, dw: dwp, dgh: dghp, dws: dwsp, ag, carry, carry_c, dq, buf } = back.addrs(l, d);
    // GRU₂'s input gradient, GRU₁'s recurrent one, and GRU₁'s output gradient (none: zeros).
    let (dgi, dgh1, zeros) = (l.zeros(bt * g)?, l.zeros(bt * g)?, l.zeros(b * h)?);
    let [dgip, dgh1p, zp] = [&dgi, &dgh1, &zeros].map(|f| l.addr(f));
    let sv = saved.addrs(l);
    let (cell1, cell2) = (at.cell(o.u1, x.mask), at.cell(o.u, Addr::NULL));
    for i in (0..t).rev() {
        let sp_i = at.rows(sv.sp, h, i);
        let st2 = Step { t: i, gi: at.rows(sv.gi, g, i), gh: at.rows(sv.gh, g, i), q: at.rows(sv.q, h, i), hp: sp_i, cp: NO_ROWS };
        let grads2 = StepGrads { dgi: at.rows(dgip, g, i), dgh: at.rows(dghp, g, i), carry, carry_c, dq, buf };
        cell2.backward(l, st2, at.rows(dout, ow, i), grads2)?;
        at.context_backward(l, i, (dout, grads2.dgi), (&sv, dwsp), ag, carry)?;
        let st1 = Step { t: i, gi: at.rows(x.seq, g, i), gh: at.rows(sv.gh1, g, i), q: at.rows(sv.q1, h, i), hp: at.prev(out, i), cp: NO_ROWS };
        let grads1 = StepGrads { dgi: at.rows(dseqp, g, i), dgh: at.rows(dgh1p, g, i), carry, carry_c, dq, buf };
        cell1.backward(l, st1, (zp, h as i64), grads1)?;
    }
    l.gemm(gemm(h, a, bt, View::new(sv.sp, h).t(), View::new(dwsp, a), View::new(dwp.at(o.wa), a), false))?;
    l.gemm(gemm(c, g, bt, View::new(out.at(h), ow).t(), View::new(dgip, g), View::new(dwp.at(o.wc), g), false))?;
    cell2.u_grad(l, bt, (sv.sp, sv.q), dghp, dwp.at(o.u))?;
    let sprev = l.zeros(bt * h)?;
    at.prev_states(l, out, x.mask, l.addr(&sprev))?;
    cell1.u_grad(l, bt, (l.addr(&sprev), sv.q1), dgh1p, dwp.at(o.u1))?;
    let ones = l.upload(&vec![1.0; bt])?;
    let one = l.addr(&ones);
    for (src, w, dst) in [(dwsp, a, o.ba), (dghp, g, o.bh), (dgh1p, g, o.bh1), (dgip, g, o.b2)] {
        sum_rows(l, bt, w, src, dwp.at(dst), one)?;
    }
    sum_rows(l, b, a, ag.dv, dwp.at(o.va), one)?;
    Ok(back.into_inputs())
}
