//! Bahdanau's decoder loop (Bahdanau et al. 2015, appendix A.2.2) on a [`Launch`]: the GPU twin
//! of `kernels::cpu::bahdanau::forward` and `kernels::cpu::bahdanau_backward::backward`, on the layout of
//! `attention_kernels.rs`. Per step `i`, forward:
//! ```text
//! WS_i = s_{i-1} W_a (+ b_a, filled once)   α_i, c_i      cuBLAS, then attention.cu's kernels
//! GI_i = gie_i + c_i W_c                                  cuBLAS (GI starts as a copy of gie)
//! s_i  = GRU(GI_i, GH_i, s_{i-1})                         gru_cell.rs (GH starts as b_h)
//! ```
//! or, with an LSTM (`lstm_cell.rs`), `s_i, m_i = LSTM(GI_i, GH_i, s_{i-1}, m_{i-1})` from
//! `m_0 = 0`, its cell states `m_i` kept in `Q` (the CPU op's layout).
//! and backward, from the carry (the gradient reaching `s_i` from later steps): the cell's
//! step (`dGI_i`, `dGH_i`, the carry through `U`), `dc = dout_c + dGI_i W_cᵀ` (cuBLAS), the
//! attention's kernels and `carry += dWS_i W_aᵀ` (the LSTM's cell state has a carry of its own). After the loop each weight gradient is one
//! product over all `B·T` rows: `dW_a = S_prevᵀ dWS`, `dW_c = Cᵀ dGI`, `dU` (`gru_cell.rs`, from
//! the masked `S_prev`), and the bias and `v_a` sums.
use candle_core::Result;

use super::args::{self, FillRows, MaskRows};
use super::attention_kernels::{At, Back, BackAddr, Saved};
use super::gru_cell::{gemm, sum_rows, Step, StepGrads, NO_ROWS};
use super::launch::{Addr, Launch, View};
use crate::config::CellKind;

/// The forward pass: `(B·T, H + C)` and what the backward pass needs.
pub(super) fn forward<L: Launch>(l: &L, at: &At<'_>) -> Result<(L::Floats, Saved<L::Floats>)> {
    let (d, x) = (at.d, at.x);
    let (b, t, s, h, g) = (d.batch, d.tgt_len, d.src_len, d.hidden, d.g());
    let (o, ow, bt) = (d.woff(), d.out_w(), b * t);
    let out = l.scratch(bt * ow)?;
    let saved = Saved::new(l, at)?;
    // `m_0 = 0`, the LSTM's (a GRU reads no cell state).
    let zeros = if d.kind == CellKind::Lstm { l.zeros(b * h)? } else { l.scratch(1)? };
    let (e, hub) = (l.scratch(b * s)?, l.scratch(b * h)?);
    // Every address once, before the loop (on a GPU a lookup is driver calls: `cuda.rs`).
    let (op, sv, ep, hubp, zp) = (l.addr(&out), saved.addrs(l), l.addr(&e), l.addr(&hub), l.addr(&zeros));
    let (rows, width) = (bt as i64, |w: usize| w as i64);
    l.launch(
        &args::FILL_ROWS,
        bt * d.att,
        FillRows { dst: sv.ws, src: x.w.at(o.ba), src_ld: width(d.att), rows, width: width(d.att), group: rows },
    )?;
    l.launch(&args::FILL_ROWS, bt * g, FillRows { dst: sv.gh, src: x.w.at(o.bh), src_ld: width(g), rows, width: width(g), group: rows })?;
    let copy = MaskRows { dst: sv.gi, dst_ld: width(g), src: x.seq, src_ld: width(g), mask: Addr::NULL, rows, width: width(g) };
    l.launch(&args::MASK_ROWS, bt * g, copy)?;
    let cell = at.cell(o.u, x.mask, Addr::NULL);
    for i in 0..t {
        let hp = at.prev(op, i);
        let c_i = at.rows(op.at(h), ow, i);
        at.attend(l, hp, i, (&sv, ep, c_i))?;
        at.context_input(l, i, c_i, &sv)?;
        let cp = at.prev_cell(sv.q, zp, i);
        let st = Step { t: i, gi: at.rows(sv.gi, g, i), gh: at.rows(sv.gh, g, i), q: at.rows(sv.q, h, i), hp, cp, a: NO_ROWS };
        cell.forward(l, st, at.rows(op, ow, i), hubp)?;
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
    let BackAddr { dseq: dseqp, dw: dwp, dgh: dghp, dws: dwsp, ag, carry, carry_c, dq, buf, .. } = ba;
    let sv = saved.addrs(l);
    let cell = at.cell(o.u, x.mask, Addr::NULL);
    // `m_0 = 0`, the LSTM's, as in the forward pass.
    let zeros = if d.kind == CellKind::Lstm { l.zeros(b * h)? } else { l.scratch(1)? };
    let zp = l.addr(&zeros);
    for i in (0..t).rev() {
        let (gi, gh, q, hp, cp) =
            (at.rows(sv.gi, g, i), at.rows(sv.gh, g, i), at.rows(sv.q, h, i), at.prev(out, i), at.prev_cell(sv.q, zp, i));
        let st = Step { t: i, gi, gh, q, hp, cp, a: NO_ROWS };
        let (da, dyx) = (NO_ROWS, NO_ROWS);
        let grads = StepGrads { dgi: at.rows(dseqp, g, i), dgh: at.rows(dghp, g, i), carry, carry_c, dq, buf, da, dyx };
        cell.backward(l, st, at.rows(dout, ow, i), grads)?;
        at.context_backward(l, i, (dout, grads.dgi), &sv, &ba)?;
    }
    // S_prev (B·T, H), undropped for W_a, then masked for U.
    let sprev = l.scratch(bt * h)?;
    let sp = l.addr(&sprev);
    at.prev_states(l, out, Addr::NULL, sp)?;
    l.gemm(gemm(h, a, bt, View::new(sp, h).t(), View::new(dwsp, a), View::new(dwp.at(o.wa), a), false))?;
    l.gemm(gemm(c, g, bt, View::new(out.at(h), ow).t(), View::new(dseqp, g), View::new(dwp.at(o.wc), g), false))?;
    if x.mask != Addr::NULL {
        at.prev_states(l, out, x.mask, sp)?;
    }
    cell.u_grad(l, bt, (sp, sv.q), dghp, dwp.at(o.u))?;
    // Written, not uploaded: a recorded step copies nothing from the host (`recording.rs`).
    let ones = l.scratch(bt)?;
    l.fill(l.addr(&ones), bt, 1.0)?;
    let one = l.addr(&ones);
    sum_rows(l, bt, a, dwsp, dwp.at(o.ba), one)?;
    sum_rows(l, bt, g, dghp, dwp.at(o.bh), one)?;
    sum_rows(l, b, a, ag.dv, dwp.at(o.va), one)?;
    Ok(back.into_inputs())
}
