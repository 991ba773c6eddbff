//! The backward pass of the gated-feedback stack on a [`Launch`] (`feedback_forward.rs` has the
//! forward pass): back through time, the upper layers top-down within a step, as
//! `kernels/cpu/feedback_backward.rs` (the CPU's twin) goes, product by product. The carry between
//! steps is `dS (B, L·n)` (two buffers, swapped each step) and the LSTM's cell-state
//! gradients; the weight gradients add up step by step (products and column sums that
//! accumulate).
use candle_core::Result;

use super::args::{self, FbCellBwd, FbGateBwd, FbSourcesBwd, FbStateBwd};
use super::feedback_forward::{add_col_sums, addr_or_null, fill_rows, put_rows, Put, Saved, Stack, Sz};
use super::gru_cell::{gemm, grad_rows};
use super::launch::{Addr, Launch, View};
use crate::config::CellKind;

/// The gradients of `(s1, h0, params)` from the top outputs' gradient `dtop (B, T, n)`.
pub(super) fn backward<L: Launch>(
    op: &Stack,
    l: &L,
    [_s1, _h0, p]: [Addr; 3],
    sv: &Saved<L::Floats>,
    dtop: Addr,
) -> Result<[L::Floats; 3]> {
    let z = op.sz();
    let Sz { b, t: tl, n, l: nl, u: ups, g } = z;
    let (ln, lstm) = (z.ln(), op.d.kind == CellKind::Lstm);
    let masks = op.masks(l)?;
    let (ds1, dh0, dp) = (l.zeros(b * tl * n)?, l.zeros(b * n)?, l.zeros(ups * op.d.offsets().len)?);
    let (ds_a, ds_b, zero_row) = (l.zeros(b * ln)?, l.scratch(b * ln)?, l.zeros(ln)?);
    let dc = if lstm { l.zeros(ups * b * n)? } else { l.scratch(1)? };
    // Written before they are read, each step.
    let bn = || l.scratch(b * n);
    let (dh, drs, dr, dhprev, dhu, dxin, hu) = (bn()?, bn()?, bn()?, bn()?, bn()?, bn()?, bn()?);
    let (dgi, dgh, dv, dgp) = (l.scratch(b * g)?, l.scratch(b * g)?, l.scratch(b * ln)?, l.scratch(b * nl)?);
    let d_o = [bn()?, bn()?];
    // Written, not uploaded: a recorded step copies nothing from the host (`recording.rs`).
    let ones = l.scratch(b)?;
    l.fill(l.addr(&ones), b, 1.0)?;
    let [s1g, h0g, dpp, dcp, zr, one] = [&ds1, &dh0, &dp, &dc, &zero_row, &ones].map(|f| l.addr(f));
    let [dhp, drsp, drp, dhpp, dhup, dxp, hup] = [&dh, &drs, &dr, &dhprev, &dhu, &dxin, &hu].map(|f| l.addr(f));
    let [dgip, dghp, dvp, dgpp] = [&dgi, &dgh, &dv, &dgp].map(|f| l.addr(f));
    let [sp, cp, xinp, gip, ghp, gp, vp, rp, cdp] =
        [&sv.s, &sv.c, &sv.xin, &sv.gi, &sv.gh, &sv.g, &sv.v, &sv.rsum, &sv.cand].map(|f| l.addr(f));
    let (mut ds_next, mut ds_cur) = (l.addr(&ds_a), l.addr(&ds_b));
    let d_o = d_o.each_ref().map(|f| l.addr(f));
    let rows = (b, n);
    for t in (0..tl).rev() {
        let s_t = sp.at(t * b * ln);
        fill_rows(l, ds_cur, zr, (b, ln))?;
        let mut cur = 0;
        put_rows(l, Put::Copy, (d_o[cur], n), (dtop.at(t * n), tl * n), Addr::NULL, rows)?;
        for k in (0..ups).rev() {
            let (i, own, (w, o), (gw, _)) = (t * ups + k, k + 1, op.layer(p, k), op.layer(dpp, k));
            let (gi, gh, gg, v) = (gip.at(i * b * g), ghp.at(i * b * g), gp.at(i * b * nl), vp.at(i * b * ln));
            let (xin, input_mask, state_mask) = (
                xinp.at(i * b * n),
                masks.input[k].as_ref().map_or(Addr::NULL, |m| l.addr(m).at(t * b * n)),
                addr_or_null(l, masks.state[k].as_ref()),
            );
            // dh = d_o + dS_{t+1}'s block of this layer.
            put_rows(l, Put::Copy, (dhp, n), (d_o[cur], n), Addr::NULL, rows)?;
            put_rows(l, Put::Add, (dhp, n), (ds_next.at(own * n), ln), Addr::NULL, rows)?;
            let (cprev, c) =
                if lstm { (cp.at((t * ups + k) * b * n), cp.at(((t + 1) * ups + k) * b * n)) } else { (Addr::NULL, Addr::NULL) };
            // The gates' gradients, and GH's: the same without the candidate's block (GH = (m ⊙ h)
            // U + b_h feeds every gate but the candidate), written by the cell and sources kernels.
            let grads = grad_rows((dgip, g as i64), (dghp, g as i64));
            let cell = FbCellBwd {
                rows: op.rows(gi, gh),
                cand: cdp.at(i * b * n),
                rsum: rp.at(i * b * n),
                bh: w.at(o.bh),
                hprev: s_t.at(own * n),
                hprev_ld: ln as i64,
                cprev,
                c,
                dh: dhp,
                dc: if lstm { dcp.at(k * b * n) } else { Addr::NULL },
                dg: grads,
                drs: drsp,
                dr: drp,
                dhprev: dhpp,
                batch: b as i64,
                hidden: n as i64,
                kind: op.kind(),
            };
            l.launch(&args::FB_CELL_BWD, b * n, cell)?;
            // R = V [U_c; U_other] (+ b_h,c inside ρ).
            add_col_sums(l, (b, n), drsp, gw.at(o.bh + 2 * n), one)?;
            let (drv, uo_rows) = (View::new(drsp, n), (nl - 1) * n);
            l.gemm(gemm(n, n, b, View::new(v, ln).t(), drv, View::new(gw.at(o.u + 2 * n), g), true))?;
            l.gemm(gemm(uo_rows, n, b, View::new(v.at(n), ln).t(), drv, View::new(gw.at(o.uo), n), true))?;
            l.gemm(gemm(b, n, n, drv, View::new(w.at(o.u + 2 * n), g).t(), View::new(dvp, ln), false))?;
            l.gemm(gemm(b, uo_rows, n, drv, View::new(w.at(o.uo), n).t(), View::new(dvp.at(n), ln), false))?;
            // V's sources and gates.
            put_rows(l, Put::Copy, (hup, n), (s_t.at(own * n), ln), state_mask, rows)?;
            let st = op.step((gi, gh, gg), hup, s_t, own);
            l.launch(&args::FB_GATE_BWD, b * nl, FbGateBwd { p: st, dv: dvp, dgp: dgpp })?;
            l.launch(&args::FB_SOURCES_BWD, b * n, FbSourcesBwd { p: st, dv: dvp, dr: drp, dhu: dhup, ds: ds_cur, dg: grads })?;
            let (bi, ni) = (b as i64, n as i64);
            l.gemm(gemm(b, n, g, View::new(dghp, g), View::new(w.at(o.u), g).t(), View::new(dhup, n), true))?;
            l.gemm(gemm(n, g, b, View::new(hup, n).t(), View::new(dghp, g), View::new(gw.at(o.u), g), true))?;
            add_col_sums(l, (b, g), dghp, gw.at(o.bh), one)?;
            let own64 = own as i64;
            let sb =
                FbStateBwd { ds: ds_cur, dhprev: dhpp, dhu: dhup, mask: state_mask, own: own64, batch: bi, layers: nl as i64, hidden: ni };
            l.launch(&args::FB_STATE_BWD, b * n, sb)?;
            // g = σ(x W_g + S U_g), then gi = x W + b.
            let (xv, dgpv, dgiv) = (View::new(xin, n), View::new(dgpp, nl), View::new(dgip, g));
            l.gemm(gemm(n, nl, b, xv.t(), dgpv, View::new(gw.at(o.wg), nl), true))?;
            l.gemm(gemm(ln, nl, b, View::new(s_t, ln).t(), dgpv, View::new(gw.at(o.ug), nl), true))?;
            l.gemm(gemm(b, ln, nl, dgpv, View::new(w.at(o.ug), nl).t(), View::new(ds_cur, ln), true))?;
            l.gemm(gemm(n, g, b, xv.t(), dgiv, View::new(gw.at(o.w), g), true))?;
            add_col_sums(l, (b, g), dgip, gw.at(o.b), one)?;
            l.gemm(gemm(b, n, nl, dgpv, View::new(w.at(o.wg), nl).t(), View::new(dxp, n), false))?;
            l.gemm(gemm(b, n, g, dgiv, View::new(w.at(o.w), g).t(), View::new(dxp, n), true))?;
            // The input's gradient: to `s1` from the first upper layer, else the layer below's output.
            match k {
                0 => {
                    let dst = (s1g.at(t * n), tl * n);
                    put_rows(l, Put::Add, dst, (dxp, n), input_mask, rows)?;
                    if op.d.residual {
                        put_rows(l, Put::Add, dst, (d_o[cur], n), Addr::NULL, rows)?;
                    }
                }
                _ => {
                    let next = 1 - cur;
                    put_rows(l, Put::Copy, (d_o[next], n), (dxp, n), input_mask, rows)?;
                    if op.d.residual {
                        put_rows(l, Put::Add, (d_o[next], n), (d_o[cur], n), Addr::NULL, rows)?;
                    }
                    cur = next;
                }
            }
        }
        // Block 0 of S_t is the first layer's output at t − 1, or h0.
        let dst = if t > 0 { (s1g.at((t - 1) * n), tl * n) } else { (h0g, n) };
        put_rows(l, Put::Add, dst, (ds_cur, ln), Addr::NULL, rows)?;
        std::mem::swap(&mut ds_next, &mut ds_cur);
    }
    // Every upper layer started from h0.
    for i in 1..nl {
        put_rows(l, Put::Add, (h0g, n), (ds_next.at(i * n), ln), Addr::NULL, rows)?;
    }
    Ok([ds1, dh0, dp])
}
