//! RNNsearch's decoder loops on a [`Launch`], as one op: Bahdanau's step (`bahdanau.rs`,
//! Bahdanau et al. 2015, appendix A.2.2) and the conditional GRU (`conditional.rs`, Sennrich
//! et al. 2017, §2.3), each a GRU in either form with recurrent dropout: the GPU twins of
//! `kernels::cpu::bahdanau`/`kernels::cpu::bahdanau_backward` and `kernels::cpu::conditional`; Bahdanau's
//! step also with an LSTM, the conditional GRU also with layer normalisation (as the CPU ops).
//! Marian's `gAtt`/`gAttBack` are the model: the products on cuBLAS, attention as a few
//! elementwise kernels (`attention.cu`), the cells as in `rnn_cell.rs`, the normalisations
//! as in `norm_rows.rs`. This file holds what both loops share: the layout, the attention's
//! launches forward and backward, the weight sums; `attention_op.rs` makes them one candle op.
//!
//! The sizes are the CPU op's (`AttnDims`), and so is the layout (`bahdanau.rs`):
//! - `seq = [gie (B, T, G); s_0 (B, H)]` flat;
//! - `enc (B, S, C + A)`, each source position's `[h_j; U_a h_j]`;
//! - `w = [W_a (H, A); b_a (A); v_a (A); W_c (C, G); U (H, G); b_h (G)]` flat, then for the
//!   conditional GRU `[U₁ (H, G); b_h1 (G); b₂ (G)]` (`W_c`, `U`, `b_h` are then its second
//!   cell's), and with layer normalisation the gains `[γ₁ₕ (G); γ₂ₓ (G); γ₂ₕ (G); γ_w (A)]`
//!   of `s U₁`, `c W_c`, `s' U₂` and `s' W_a` (`b_a` then sits in the keys, `U_a h_j`'s rows,
//!   not in the loop: `AttnDims::woff`);
//! - output `(B·T, H + C)`, each step's `[s_i; c_i]`; the gradient of `seq` is `[dgie; ds_0]`.
use candle_core::Result;

use super::args::{self, AttContext, AttDalpha, AttEncBwd, AttQueryBwd, AttScores, AttSoftmax, AttSoftmaxBwd, MaskRows, PrevStates};
use super::gru_cell::{gemm, Rows, NO_ROWS};
use super::launch::{Addr, Launch, View};
use super::norm_rows;
use super::rnn_cell::Recurrent;
use crate::config::{CellKind, GruForm};
use crate::kernels::shapes::attn_dims::AttnDims;

/// The inputs' addresses and the uploaded lengths (`lens` of the source; `all` = `T` per
/// sentence: every target step is live) and mask; an LSTM's initial cell states `m_0 (B, H)`
/// where the caller gives them (the search's step), else [`Addr::NULL`] for zeros.
#[derive(Clone, Copy)]
pub(super) struct Inputs {
    pub seq: Addr,
    pub enc: Addr,
    pub w: Addr,
    pub lens: Addr,
    pub all: Addr,
    pub mask: Addr,
    pub m0: Addr,
}

/// What the forward pass keeps, `(B, T, ·)` each: the queries `WS`, the (second) cell's `GI`,
/// `GH`, the paper form's `Q` (the LSTM's cell states), the weights `α`; the conditional GRU's first cell's `GH1`,
/// `Q1` and its output `s'` (`SP`); with layer normalisation the raw products ([`Raw`]).
pub struct Saved<F> {
    pub(super) ws: F,
    pub(super) gi: F,
    pub(super) gh: F,
    pub(super) q: F,
    pub(super) alpha: F,
    pub(super) gh1: F,
    pub(super) q1: F,
    pub(super) sp: F,
    pub(super) raw: Raw<F>,
}

/// With layer normalisation, one buffer `(B, T, ·)` for each normalised product, named after
/// the rows it feeds (`norm_rows.rs`): `s' W_a` (→ `WS`), `c W_c` (→ `GI`), `s U₁` (→ `GH1`), `s'
/// U₂` (→ `GH`). The forward pass keeps the raw products in them; the backward pass has two
/// more sets, for their gradients `da` and for `dy ⊙ x̂`. One element each without.
#[derive(Clone, Copy)]
pub(super) struct Raw<F> {
    pub ws: F,
    pub gi: F,
    pub gh1: F,
    pub gh: F,
}

impl<F> Raw<F> {
    fn scratch<L: Launch<Floats = F>>(l: &L, d: &AttnDims) -> Result<Self> {
        let bt = d.batch * d.tgt_len;
        let n = |len: usize| if d.norm { bt * len } else { 1 };
        // Every row is written (a product, `norm_rows.rs`'s kernels) before it is read.
        Ok(Raw { ws: l.scratch(n(d.att))?, gi: l.scratch(n(d.g()))?, gh1: l.scratch(n(d.g()))?, gh: l.scratch(n(d.g()))? })
    }

    fn addrs<L: Launch<Floats = F>>(&self, l: &L) -> Raw<Addr> {
        Raw { ws: l.addr(&self.ws), gi: l.addr(&self.gi), gh1: l.addr(&self.gh1), gh: l.addr(&self.gh) }
    }
}

impl<F> Saved<F> {
    /// The buffers for `d` (one element where a buffer is not used), zeroed only where a
    /// launch adds to them.
    pub(super) fn new<L: Launch<Floats = F>>(l: &L, at: &At<'_>) -> Result<Self> {
        let d = at.d;
        let (bt, h, g) = (d.batch * d.tgt_len, d.hidden, d.g());
        let paper = d.kind == CellKind::Gru(GruForm::Paper);
        let q = d.kind != CellKind::Gru(GruForm::ResetAfter);
        let [gh1, q1, sp] = [d.conditional, d.conditional && paper, d.conditional];
        let n = |used: bool, len: usize| if used { len } else { 1 };
        Ok(Saved {
            // `WS` accumulates the normalised query onto zero with layer normalisation; every
            // other buffer is written (a bias row, a copy, a kernel's output) before it is read.
            ws: if d.norm { l.zeros(bt * d.att)? } else { l.scratch(bt * d.att)? },
            gi: l.scratch(bt * g)?,
            gh: l.scratch(bt * g)?,
            q: l.scratch(n(q, bt * h))?,
            alpha: l.scratch(bt * d.src_len)?,
            gh1: l.scratch(n(gh1, bt * g))?,
            q1: l.scratch(n(q1, bt * h))?,
            sp: l.scratch(n(sp, bt * h))?,
            raw: Raw::scratch(l, d)?,
        })
    }
}

impl<F: Send + Sync + 'static> Saved<F> {
    /// The buffers' addresses.
    pub(super) fn addrs<L: Launch<Floats = F>>(&self, l: &L) -> Saved<Addr> {
        let a = |f: &F| l.addr(f);
        let (ws, gi, gh, q, alpha, gh1, q1, sp) =
            (a(&self.ws), a(&self.gi), a(&self.gh), a(&self.q), a(&self.alpha), a(&self.gh1), a(&self.q1), a(&self.sp));
        Saved { ws, gi, gh, q, alpha, gh1, q1, sp, raw: self.raw.addrs(l) }
    }
}

/// The attention's backward buffers: `dc (B, C)` (in: the gradient reaching `c_i`), scratch
/// `de (B, S)`, `denc (B, S, C + A)` and the per-sentence `dv (B, A)`, both accumulated.
#[derive(Clone, Copy)]
pub(super) struct AttnGrads {
    pub dc: Addr,
    pub de: Addr,
    pub denc: Addr,
    pub dv: Addr,
}

/// The buffers both loops' backward passes share, zeroed: the inputs' gradients `dseq`,
/// `denc`, `dw`; `dGH`, `dWS (B, T, ·)`; the attention's `dv`, `dc`, `de` ([`AttnGrads`]); the
/// LSTM's `carry_c` and the cell's scratch `dq`, `buf` (`B × H`); with layer normalisation
/// the normalised products' `da` and `dyx` ([`Raw`]).
pub(super) struct Back<F> {
    dseq: F,
    denc: F,
    dw: F,
    dgh: F,
    dws: F,
    scratch: [F; 6],
    norm: [Raw<F>; 2],
}

/// [`Back`]'s addresses, and the carry: the rows of `dseq` that end as the gradient of `s_0`.
#[derive(Clone, Copy)]
pub(super) struct BackAddr {
    pub dseq: Addr,
    pub dw: Addr,
    pub dgh: Addr,
    pub dws: Addr,
    pub ag: AttnGrads,
    pub carry: Addr,
    pub carry_c: Addr,
    pub dq: Addr,
    pub buf: Addr,
    pub da: Raw<Addr>,
    pub dyx: Raw<Addr>,
}

impl<F: Send + Sync + 'static> Back<F> {
    pub(super) fn zeros<L: Launch<Floats = F>>(l: &L, d: &AttnDims) -> Result<Self> {
        let (b, bt, h, g, a) = (d.batch, d.batch * d.tgt_len, d.hidden, d.g(), d.att);
        Ok(Back {
            dseq: l.zeros(bt * g + b * h)?,
            denc: l.zeros(b * d.src_len * d.enc_w())?,
            dw: l.zeros(d.woff().end)?,
            dgh: l.zeros(bt * g)?,
            dws: l.zeros(bt * a)?,
            scratch: [l.zeros(b * a)?, l.zeros(b * d.ctx)?, l.zeros(b * d.src_len)?, l.zeros(b * h)?, l.zeros(b * h)?, l.zeros(b * h)?],
            norm: [Raw::scratch(l, d)?, Raw::scratch(l, d)?],
        })
    }

    pub(super) fn addrs<L: Launch<Floats = F>>(&self, l: &L, d: &AttnDims) -> BackAddr {
        let [dv, dc, de, carry_c, dq, buf] = self.scratch.each_ref().map(|f| l.addr(f));
        let dseq = l.addr(&self.dseq);
        let ag = AttnGrads { dc, de, denc: l.addr(&self.denc), dv };
        let carry = dseq.at(d.batch * d.tgt_len * d.g());
        let [da, dyx] = self.norm.each_ref().map(|r| r.addrs(l));
        BackAddr { dseq, dw: l.addr(&self.dw), dgh: l.addr(&self.dgh), dws: l.addr(&self.dws), ag, carry, carry_c, dq, buf, da, dyx }
    }

    /// The gradients of `(seq, enc, w)`.
    pub(super) fn into_inputs(self) -> [F; 3] {
        [self.dseq, self.denc, self.dw]
    }
}

/// Where step `i`'s rows are, and the launches both loops share: the loop's sizes (the CPU
/// op's, `kernels::cpu::bahdanau`: its `lens`, `state_mask`, `conditional`, cell, layer
/// normalisation and weight offsets) and its inputs.
pub(super) struct At<'a> {
    pub d: &'a AttnDims,
    pub x: Inputs,
}

impl At<'_> {
    /// Rows of a `(B, T, w)` buffer at step `i`.
    pub fn rows(&self, buf: Addr, w: usize, i: usize) -> Rows {
        (buf.at(i * w), (self.d.tgt_len * w) as i64)
    }
    /// `s_{i-1}`: `s_0`, or the state columns of the output's previous step.
    pub fn prev(&self, out: Addr, i: usize) -> Rows {
        let d = self.d;
        match i {
            0 => (self.x.seq.at(d.batch * d.tgt_len * d.g()), d.hidden as i64),
            _ => self.rows(out, d.out_w(), i - 1),
        }
    }
    /// A cell of the loop with `U` at offset `u` of `w`, recurrent-dropout mask `mask` and
    /// layer normalisation's gain `gamma` on `h U` ([`Addr::NULL`] without).
    pub fn cell(&self, u: usize, mask: Addr, gamma: Addr) -> Recurrent {
        let d = self.d;
        Recurrent::new(d.kind, (d.batch, d.hidden), self.x.w.at(u), (mask, self.x.all), gamma)
    }
    /// The gain at offset `off` of `w` with layer normalisation, else [`Addr::NULL`].
    pub fn gain(&self, off: usize) -> Addr {
        match self.d.norm {
            true => self.x.w.at(off),
            false => Addr::NULL,
        }
    }
    /// Step `i`'s rows of a normalised product's buffer ([`Raw`]), or [`NO_ROWS`] without
    /// layer normalisation.
    pub fn normed(&self, buf: Addr, w: usize, i: usize) -> Rows {
        match self.d.norm {
            true => self.rows(buf, w, i),
            false => NO_ROWS,
        }
    }
    /// The LSTM's cell states before step `i`: `Q`'s rows of step `i − 1`, or `m_0` (the
    /// inputs', or zero: `zeros`, `B × H`); nothing for a GRU.
    pub fn prev_cell(&self, q: Addr, zeros: Addr, i: usize) -> Rows {
        match (self.d.kind, i) {
            (CellKind::Gru(_), _) => NO_ROWS,
            (CellKind::Lstm, 0) if self.x.m0 != Addr::NULL => (self.x.m0, self.d.hidden as i64),
            (CellKind::Lstm, 0) => (zeros, self.d.hidden as i64),
            (CellKind::Lstm, _) => self.rows(q, self.d.hidden, i - 1),
        }
    }
    fn sizes(&self) -> (i64, i64, i64, i64) {
        let d = self.d;
        (d.batch as i64, d.src_len as i64, d.ctx as i64, d.att as i64)
    }

    /// `WS_i += q_i W_a` (the query rows `q`; with layer normalisation `WS_i += LN(q_i W_a)·γ_w`),
    /// then `α_i` and `c_i` (rows); `e (B, S)` scratch.
    pub fn attend<L: Launch>(&self, l: &L, query: Rows, i: usize, bufs: (&Saved<Addr>, Addr, Rows)) -> Result<()> {
        let (d, x, (saved, e, c_i)) = (self.d, self.x, bufs);
        let (b, s, h, a) = (d.batch, d.src_len, d.hidden, d.att);
        let (n, sl, cd, ad) = self.sizes();
        let (ws_i, alpha_i, v) = (self.rows(saved.ws, a, i), self.rows(saved.alpha, s, i), x.w.at(d.woff().va));
        let (qv, wa) = (View::new(query.0, query.1 as usize), View::new(x.w.at(d.woff().wa), a));
        norm_rows::product(l, (b, a, h), (qv, wa), self.gain(d.woff().gw), self.normed(saved.raw.ws, a, i), ws_i)?;
        let sc = AttScores { enc: x.enc, ws: ws_i.0, ws_ld: ws_i.1, v, lens: x.lens, e, batch: n, src_len: sl, ctx: cd, att: ad };
        l.launch(&args::ATT_SCORES, b * s, sc)?;
        let sm = AttSoftmax { e, lens: x.lens, alpha: alpha_i.0, alpha_ld: alpha_i.1, batch: n, src_len: sl };
        l.launch(&args::ATT_SOFTMAX, b, sm)?;
        let (alpha, alpha_ld, enc, lens) = (alpha_i.0, alpha_i.1, x.enc, x.lens);
        let cx = AttContext { alpha, alpha_ld, enc, lens, c: c_i.0, c_ld: c_i.1, batch: n, src_len: sl, ctx: cd, att: ad };
        l.launch(&args::ATT_CONTEXT, b * d.ctx, cx)
    }

    /// Back through step `i`'s attention from `g.dc`: `d[h_j; U_a h_j]`, `dv`, and `dWS_i`
    /// into the rows of `dws (B, T, A)`; then `carry += dWS_i W_aᵀ` (with layer
    /// normalisation, the raw product's gradient `da.ws` for `dWS_i`).
    pub fn attend_backward<L: Launch>(&self, l: &L, i: usize, saved: &Saved<Addr>, back: &BackAddr) -> Result<()> {
        let (d, x, g, dws) = (self.d, self.x, back.ag, back.dws);
        let (b, s, h, a) = (d.batch, d.src_len, d.hidden, d.att);
        let (n, sl, cd, ad) = self.sizes();
        let (ws_i, alpha_i, dws_i, v) =
            (self.rows(saved.ws, a, i), self.rows(saved.alpha, s, i), self.rows(dws, a, i), x.w.at(d.woff().va));
        let da = AttDalpha { enc: x.enc, dc: g.dc, lens: x.lens, de: g.de, batch: n, src_len: sl, ctx: cd, att: ad };
        l.launch(&args::ATT_DALPHA, b * s, da)?;
        let sm = AttSoftmaxBwd { alpha: alpha_i.0, alpha_ld: alpha_i.1, lens: x.lens, de: g.de, batch: n, src_len: sl };
        l.launch(&args::ATT_SOFTMAX_BWD, b, sm)?;
        let (alpha, alpha_ld, enc, ws, ws_ld, lens) = (alpha_i.0, alpha_i.1, x.enc, ws_i.0, ws_i.1, x.lens);
        let (dc, de, denc) = (g.dc, g.de, g.denc);
        let eb = AttEncBwd { alpha, alpha_ld, enc, ws, ws_ld, v, dc, de, lens, denc, batch: n, src_len: sl, ctx: cd, att: ad };
        l.launch(&args::ATT_ENC_BWD, b * s * d.enc_w(), eb)?;
        let (dws, dws_ld, dv) = (dws_i.0, dws_i.1, g.dv);
        let qb = AttQueryBwd { enc, ws, ws_ld, v, de, lens, dws, dws_ld, dv, batch: n, src_len: sl, ctx: cd, att: ad };
        l.launch(&args::ATT_QUERY_BWD, b * a, qb)?;
        let grads = (self.normed(back.da.ws, a, i), self.normed(back.dyx.ws, a, i));
        let dq = norm_rows::product_grad(l, (b, a), self.gain(d.woff().gw), self.normed(saved.raw.ws, a, i), dws_i, grads)?;
        let wat = View::new(x.w.at(d.woff().wa), a).t();
        l.gemm(gemm(b, h, a, View::new(dq.0, dq.1 as usize), wat, View::new(back.carry, h), true))
    }

    /// `GI_i += c_i W_c` (with layer normalisation `GI_i += LN(c_i W_c)·γ₂ₓ`): the context's
    /// part of the (second) cell's input.
    pub fn context_input<L: Launch>(&self, l: &L, i: usize, c_i: Rows, saved: &Saved<Addr>) -> Result<()> {
        let (d, wc) = (self.d, self.x.w.at(self.d.woff().wc));
        let (b, g) = (d.batch, d.g());
        let (civ, wcv, gi_i) = (View::new(c_i.0, c_i.1 as usize), View::new(wc, g), self.rows(saved.gi, g, i));
        norm_rows::product(l, (b, g, d.ctx), (civ, wcv), self.gain(d.woff().g2x), self.normed(saved.raw.gi, g, i), gi_i)
    }

    /// Back from step `i`'s context: `dc = dout_c + dGI_i W_cᵀ` (`dout` the output's
    /// gradient, `dgi_i` the rows of the cell's input gradient; with layer normalisation the
    /// raw product's gradient `da.gi` for `dGI_i`), then [`Self::attend_backward`].
    pub fn context_backward<L: Launch>(
        &self,
        l: &L,
        i: usize,
        (dout, dgi_i): (Addr, Rows),
        saved: &Saved<Addr>,
        back: &BackAddr,
    ) -> Result<()> {
        let d = self.d;
        let (b, c, gw, dc) = (d.batch, d.ctx, d.g(), back.ag.dc);
        let dout_c = self.rows(dout.at(d.hidden), d.out_w(), i);
        let (n, cd) = (b as i64, c as i64);
        let copy = MaskRows { dst: dc, dst_ld: cd, src: dout_c.0, src_ld: dout_c.1, mask: Addr::NULL, rows: n, width: cd };
        l.launch(&args::MASK_ROWS, b * c, copy)?;
        let grads = (self.normed(back.da.gi, gw, i), self.normed(back.dyx.gi, gw, i));
        let dp = norm_rows::product_grad(l, (b, gw), self.gain(d.woff().g2x), self.normed(saved.raw.gi, gw, i), dgi_i, grads)?;
        let wct = View::new(self.x.w.at(d.woff().wc), gw).t();
        l.gemm(gemm(b, c, gw, View::new(dp.0, dp.1 as usize), wct, View::new(dc, c), true))?;
        self.attend_backward(l, i, saved, back)
    }

    /// `dst (B·T, H)` = each step's `s_{i-1}` from the output rows `out`, times `mask`.
    pub fn prev_states<L: Launch>(&self, l: &L, out: Addr, mask: Addr, dst: Addr) -> Result<()> {
        let d = self.d;
        let (bt, h) = (d.batch * d.tgt_len, d.hidden);
        let (out_ld, (init, init_ld), batch, len) = (d.out_w() as i64, self.prev(out, 0), d.batch as i64, d.tgt_len as i64);
        let a = PrevStates { dst, out, out_ld, init, init_ld, mask, batch, len, hidden: h as i64, reverse: 0 };
        l.launch(&args::PREV_STATES, bt * h, a)
    }
}
