//! One direction of a recurrent layer on a [`Launch`]: the loops through time that the
//! bidirectional op (`birnn.rs`, the GPU twin of `kernels::cpu::birnn`) and the one-direction op
//! (`rnn_sequence.rs`, the twin of `kernels::cpu::rnn_sequence`) share. A step is `rnn_cell.rs`'s: a GRU's
//! (`gru_cell.rs`) or an LSTM's (`lstm_cell.rs`).
//!
//! Shapes: `B` sentences of `S` positions, `H` units, gate width `G` (`3H`, the LSTM `4H`).
//! A direction owns column block `k` of `cols` blocks: of `gi (B, S, cols·G)` and of the
//! output `(B, S, cols·H)`. It keeps `GH (B, S, G)` (`h U + ghb` per step) and `Q (B, S, H)`
//! (the paper form's `r ⊙ hu`, the LSTM's cell states), as the CPU ops do; with layer
//! normalisation (the reset-after GRU's `LN(h U)·γ_h + b_h`, `norm_rows.rs`) also the raw products
//! `A (B, S, G)`, and its backward pass their gradients `dA` and `dGH ⊙ x̂` (`dYX`).
use candle_core::Result;

use super::args::{self, PrevStates};
use super::gru_cell::{Rows, Step, StepGrads, NO_ROWS};
use super::launch::{Addr, Launch};
use super::rnn_cell::Recurrent;
use crate::config::{CellKind, GruForm};

/// A layer's sizes and cell, and whether its `h U` is layer-normalised (the bidirectional
/// op's reset-after GRU: `bh` rows `[b_h | γ_h]`, `birnn.rs`).
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    pub batch: usize,
    pub len: usize,
    pub hidden: usize,
    pub kind: CellKind,
    pub norm: bool,
}

impl Dims {
    /// The gate width `G`.
    pub fn g(&self) -> usize {
        self.kind.gates() * self.hidden
    }

    /// Elements of a `Q` buffer: none for the reset-after GRU (one, as a placeholder).
    pub fn q_len(&self) -> usize {
        match self.kind {
            CellKind::Gru(GruForm::ResetAfter) => 1,
            _ => self.batch * self.len * self.hidden,
        }
    }
}

/// A direction's own buffers, `(B, S, ·)`: `GH`, `Q` and with layer normalisation `A` (else
/// [`Addr::NULL`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Own {
    pub gh: Addr,
    pub q: Addr,
    pub a: Addr,
}

/// One direction: where it reads and writes, and its cell (`U`, the recurrent-dropout mask
/// `(B, H)` or [`Addr::NULL`], the lengths, layer normalisation's gain).
pub(super) struct Dir {
    d: Dims,
    k: usize,
    cols: usize,
    reverse: bool,
    cell: Recurrent,
}

/// The backward loop's `B × H` buffers: the gradients reaching the previous states (`carry`,
/// and the LSTM's `carry_c`; zero before the last step, the gradient of `h_0` after the
/// first), scratch `dq` and `buf`; with layer normalisation the `(B, S, G)` buffers `da` and
/// `dyx` (else [`Addr::NULL`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Carries {
    pub carry: Addr,
    pub carry_c: Addr,
    pub dq: Addr,
    pub buf: Addr,
    pub da: Addr,
    pub dyx: Addr,
}

impl Dir {
    /// Column block `k` of `cols`, right to left when `reverse`, with `U (H, G)` at `u` and
    /// layer normalisation's `γ_h (G)` at `gamma` ([`Addr::NULL`] without).
    pub fn new(d: Dims, (k, cols, reverse): (usize, usize, bool), u: Addr, (mask, lens): (Addr, Addr), gamma: Addr) -> Dir {
        let cell = Recurrent::new(d.kind, (d.batch, d.hidden), u, (mask, lens), gamma);
        Dir { d, k, cols, reverse, cell }
    }

    /// Step `t`'s rows of one of the normalisation's buffers `(B, S, G)`, or [`NO_ROWS`].
    fn normed_rows(&self, buf: Addr, t: usize) -> Rows {
        match self.cell.normed() {
            true => self.own(buf, t, self.d.g()),
            false => NO_ROWS,
        }
    }

    /// The position of the `step`-th step processed.
    fn pos(&self, step: usize) -> usize {
        if self.reverse {
            self.d.len - 1 - step
        } else {
            step
        }
    }

    /// Rows of step `t` in a `(B, S, cols·w)` buffer at `a` (this direction's block).
    fn block(&self, a: Addr, t: usize, w: usize) -> Rows {
        (a.at(t * self.cols * w + self.k * w), (self.d.len * self.cols * w) as i64)
    }

    /// Rows of step `t` in a `(B, S, w)` buffer of this direction's own.
    fn own(&self, a: Addr, t: usize, w: usize) -> Rows {
        (a.at(t * w), (self.d.len * w) as i64)
    }

    /// Step `step`'s rows: `gi`, `GH`, `Q`, the previous states (the output of the step
    /// before, or `h0`) and the LSTM's previous cell states (`Q`'s rows of the step before,
    /// or `c_0 = 0`: `zeros`, `B × H`).
    fn step(&self, gi: Addr, o: Own, out: Addr, (h0, zeros): (Rows, Addr), step: usize) -> Step {
        let Own { gh, q, a } = o;
        let (g, h, t) = (self.d.g(), self.d.hidden, self.pos(step));
        let (hp, cp) = match step {
            0 => (h0, (zeros, h as i64)),
            _ => (self.block(out, self.pos(step - 1), h), self.own(q, self.pos(step - 1), h)),
        };
        let cp = if matches!(self.cell, Recurrent::Lstm(_)) { cp } else { NO_ROWS };
        Step { t, gi: self.block(gi, t, g), gh: self.own(gh, t, g), q: self.own(q, t, h), hp, cp, a: self.normed_rows(a, t) }
    }

    /// The forward loop into `out`: `GH` holds `ghb` on entry; `h0` the initial states,
    /// `zeros` and `hub` `B × H` (zeros, scratch).
    pub fn forward<L: Launch>(&self, l: &L, gi: Addr, own: Own, out: Addr, (h0, zeros, hub): (Rows, Addr, Addr)) -> Result<()> {
        for step in 0..self.d.len {
            let st = self.step(gi, own, out, (h0, zeros), step);
            self.cell.forward(l, st, self.block(out, st.t, self.d.hidden), hub)?;
        }
        Ok(())
    }

    /// The backward loop from the output `out` and its gradient `dout`: writes this
    /// direction's block of `dgi` and its own `dgh (B, S, G)` (and `c.da`, `c.dyx` with layer
    /// normalisation); leaves the gradient of `h0` in `c.carry`.
    pub fn backward<L: Launch>(
        &self,
        l: &L,
        (gi, dgi): (Addr, Addr),
        (own, dgh): (Own, Addr),
        (out, dout): (Addr, Addr),
        (h0, zeros): (Rows, Addr),
        c: Carries,
    ) -> Result<()> {
        let (g, h) = (self.d.g(), self.d.hidden);
        for step in (0..self.d.len).rev() {
            let st = self.step(gi, own, out, (h0, zeros), step);
            let (dgi_t, dgh_t, dout_t) = (self.block(dgi, st.t, g), self.own(dgh, st.t, g), self.block(dout, st.t, h));
            let (da, dyx) = (self.normed_rows(c.da, st.t), self.normed_rows(c.dyx, st.t));
            let grads = StepGrads { dgi: dgi_t, dgh: dgh_t, carry: c.carry, carry_c: c.carry_c, dq: c.dq, buf: c.buf, da, dyx };
            self.cell.backward(l, st, dout_t, grads)?;
        }
        Ok(())
    }

    /// `dU (H, G)` at `du`: the previous states entering `U` laid out in `hprev (B·S, H)`
    /// (from the output `out` and the initial states `h0`, rows at [`Addr::NULL`] for zeros,
    /// times the mask), then `H_prevᵀ dGH` (the GRU's paper form: and `Qᵀ dGH_n`; with layer
    /// normalisation the caller passes `dA` for `dGH`).
    pub fn u_grad<L: Launch>(&self, l: &L, (out, h0): (Addr, Rows), (hprev, q, dgh): (Addr, Addr, Addr), du: Addr) -> Result<()> {
        let (b, s, h) = (self.d.batch, self.d.len, self.d.hidden);
        let a = PrevStates {
            dst: hprev,
            out: out.at(self.k * h),
            out_ld: (self.cols * h) as i64,
            init: h0.0,
            init_ld: h0.1,
            mask: self.cell.mask(),
            batch: b as i64,
            len: s as i64,
            hidden: h as i64,
            reverse: self.reverse as i64,
        };
        l.launch(&args::PREV_STATES, b * s * h, a)?;
        self.cell.u_grad(l, b * s, (hprev, q), dgh, du)
    }
}
