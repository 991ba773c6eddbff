//! A loop's cell on a [`Launch`], a GRU (`gru_cell.rs`) or an LSTM (`lstm_cell.rs`), chosen once from
//! the layer's [`CellKind`] (the CPU ops' `kernels::cpu::rnn_cell::CellKernel` does the same): what
//! the direction loops (`direction.rs`) and the decoder loops (`bahdanau.rs`,
//! `conditional.rs`) call per step, so that each loop is written once for both cells.
//!
//! Both cells take `gru_cell.rs`'s [`Step`] and [`StepGrads`]: the LSTM keeps its cell states in
//! the rows where the GRU's paper form keeps `q`, reads the previous ones from `Step::cp` and
//! carries their gradient in `StepGrads::carry_c`.
use candle_core::Result;

use super::gru_cell::{Cell, Rows, Step, StepGrads};
use super::launch::{Addr, Launch};
use super::lstm_cell::Lstm;
use crate::config::CellKind;

/// A GRU in either form, or an LSTM.
#[derive(Clone, Copy, Debug)]
pub(super) enum Recurrent {
    Gru(Cell),
    Lstm(Lstm),
}

impl Recurrent {
    /// The cell of `kind` for `rows × hidden` states with `U` at `u`, the recurrent-dropout
    /// mask `(B, H)` (or [`Addr::NULL`]) and the lengths (a step `t ≥ lens[b]` carries row
    /// `b`'s states forward and their gradients back); `gamma`, a reset-after GRU's layer
    /// normalisation gain on `h U` (or [`Addr::NULL`]; `gru_cell.rs`).
    pub fn new(kind: CellKind, (rows, hidden): (usize, usize), u: Addr, (mask, lens): (Addr, Addr), gamma: Addr) -> Self {
        match kind {
            CellKind::Gru(form) => Recurrent::Gru(Cell { form, rows, hidden, u, mask, lens, gamma }),
            CellKind::Lstm => Recurrent::Lstm(Lstm { rows, hidden, u, mask, lens }),
        }
    }

    /// The recurrent-dropout mask.
    pub fn mask(&self) -> Addr {
        match self {
            Recurrent::Gru(c) => c.mask,
            Recurrent::Lstm(c) => c.mask,
        }
    }

    /// Whether its `h U` is layer-normalised (a reset-after GRU's, `gru_cell.rs`).
    pub fn normed(&self) -> bool {
        matches!(self, Recurrent::Gru(c) if c.gamma != Addr::NULL)
    }

    /// One step forward into `out` (rows); `hub` is `B × H` scratch.
    pub fn forward<L: Launch>(&self, l: &L, s: Step, out: Rows, hub: Addr) -> Result<()> {
        match self {
            Recurrent::Gru(c) => c.forward(l, s, out, hub),
            Recurrent::Lstm(c) => c.forward(l, s, out, hub),
        }
    }

    /// One step back from `dh` (rows), the output's own gradient.
    pub fn backward<L: Launch>(&self, l: &L, s: Step, dh: Rows, d: StepGrads) -> Result<()> {
        match self {
            Recurrent::Gru(c) => c.backward(l, s, dh, d),
            Recurrent::Lstm(c) => c.backward(l, s, dh, d),
        }
    }

    /// `dU (H, G)` at `du` from all `n` steps' rows: the masked previous states `hprev (n,
    /// H)`, the GRU's paper-form `q (n, H)` and `dgh (n, G)`, contiguous.
    pub fn u_grad<L: Launch>(&self, l: &L, n: usize, (hprev, q): (Addr, Addr), dgh: Addr, du: Addr) -> Result<()> {
        match self {
            Recurrent::Gru(c) => c.u_grad(l, n, hprev, q, dgh, du),
            Recurrent::Lstm(c) => c.u_grad(l, n, hprev, dgh, du),
        }
    }
}
