//! One LSTM step on a [`Launch`] (Hochreiter & Schmidhuber 1997, with Gers et al.'s forget
//! gate; `kernels::cpu::lstm_cell`'s equations and gate order `[i | f | g | o]`): the GPU twin of
//! the CPU cell's LSTM step, for the direction loops (`direction.rs`) and Bahdanau's decoder
//! loop (`bahdanau.rs`), through `rnn_cell.rs`. Per step one cuBLAS
//! product `gh += hu U` and one gate kernel forward; one gate kernel and the carry's
//! `dGH Uᵀ` backward; `dU` one product over all steps.
//!
//! Shapes: `B` rows of `H` units, gate width `G = 4H`; `U (H, G)` row-major; each step's `gi`,
//! `gh` rows `(B, G)`, and the previous and new cell states `cp`, `q` rows `(B, H)`
//! (`gru_cell.rs`'s [`Step`]).
use candle_core::Result;

use super::args::{self, LstmBwd, LstmFwd};
use super::gru_cell::{carry_through_u, gemm, grad_rows, masked_state, step_rows, Rows, Step, StepGrads};
use super::launch::{Addr, Launch, View};

/// The cell of one direction or decoder: sizes, `U`, the recurrent-dropout mask `(B, H)` on the state
/// entering `U` (or [`Addr::NULL`]) and the sentence lengths (a step `t ≥ lens[b]` carries row
/// `b`'s states forward and their gradients back).
#[derive(Clone, Copy, Debug)]
pub(super) struct Lstm {
    pub rows: usize,
    pub hidden: usize,
    pub u: Addr,
    pub mask: Addr,
    pub lens: Addr,
}

impl Lstm {
    fn g(&self) -> usize {
        4 * self.hidden
    }

    /// The new states into `out` and the cell states into `s.q` (the previous ones in `s.cp`):
    /// `gh += hu U`, the gates. `hub` is `B × H` scratch for the masked state under recurrent
    /// dropout.
    pub fn forward<L: Launch>(&self, l: &L, s: Step, out: Rows, hub: Addr) -> Result<()> {
        let (b, h, g) = (self.rows, self.hidden, self.g());
        let (hu, hu_ld) = masked_state(l, (b, h), self.mask, s.hp, hub)?;
        l.gemm(gemm(b, g, h, View::new(hu, hu_ld as usize), View::new(self.u, g), View::new(s.gh.0, s.gh.1 as usize), true))?;
        let (rows, hidden, st) = (b as i64, h as i64, step_rows((s.t, self.lens), s.gi, s.gh));
        let (hp, cp, c) = (s.hp, s.cp, s.q);
        let a = LstmFwd { s: st, hp: hp.0, hp_ld: hp.1, cp: cp.0, cp_ld: cp.1, c: c.0, c_ld: c.1, out: out.0, out_ld: out.1, rows, hidden };
        l.launch(&args::LSTM_GATES_FWD, b * h, a)
    }

    /// One step back from `dh` (rows), the output's own gradient: writes `dgi`, `dgh` and
    /// turns `carry`, `carry_c` into the gradients reaching the previous states (`buf` is
    /// scratch under recurrent dropout).
    pub fn backward<L: Launch>(&self, l: &L, s: Step, dh: Rows, d: StepGrads) -> Result<()> {
        let (b, h, g) = (self.rows, self.hidden, self.g());
        let (rows, hidden, st) = (b as i64, h as i64, step_rows((s.t, self.lens), s.gi, s.gh));
        let (carry, carry_c, dg) = (d.carry, d.carry_c, grad_rows(d.dgi, d.dgh));
        let a = LstmBwd { s: st, cp: s.cp.0, cp_ld: s.cp.1, dh: dh.0, dh_ld: dh.1, carry, carry_c, dg, rows, hidden };
        l.launch(&args::LSTM_GATES_BWD, b * h, a)?;
        let dgv = View::new(d.dgh.0, d.dgh.1 as usize);
        carry_through_u(l, (b, h), self.mask, (dgv, g, View::new(self.u, g).t()), (d.carry, d.buf))
    }

    /// `dU (H, G)` at `du` from all `n` steps' rows: `H_prevᵀ dGH`, with `hprev (n, H)` the
    /// masked previous states and `dgh (n, G)` contiguous.
    pub fn u_grad<L: Launch>(&self, l: &L, n: usize, hprev: Addr, dgh: Addr, du: Addr) -> Result<()> {
        let (h, g) = (self.hidden, self.g());
        l.gemm(gemm(h, g, n, View::new(hprev, h).t(), View::new(dgh, g), View::new(du, g), false))
    }
}
