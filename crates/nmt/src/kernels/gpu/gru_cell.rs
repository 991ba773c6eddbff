//! One GRU step on a [`Launch`] (Cho et al. 2014, eq. 5–8, in either form; `rnn_cell.rs`'s
//! equations), shared by the bidirectional encoder (`birnn.rs`) and the attention decoder
//! (`attention_kernels.rs`): per step one cuBLAS product `h U` (the paper form: two, around the reset
//! kernel) and one gate kernel, forward and backward; the weight gradient over all steps.
//! The recurrent dropout's two pieces ([`masked_state`], [`carry_through_u`]) serve the LSTM
//! (`lstm_cell.rs`) too.
//!
//! Shapes: `B` rows of `H` units, gate width `G = 3H`; `U (H, G)` row-major; each step's
//! `gi`, `gh` rows `(B, G)` and the paper form's `q = r ⊙ hu` rows `(B, H)` sit in buffers of
//! their own leading dimension ([`Rows`]).
use candle_core::Result;

use super::args::{self, AddRows, GatesBwd, GatesFwd, GradRows, MaskRows, ResetBwd, ResetFwd, StepRows};
use super::launch::{Addr, Gemm, Launch, View};
use super::norm_rows;
use crate::config::GruForm;

/// `B` rows at `.0` with leading dimension `.1` (elements).
pub(super) type Rows = (Addr, i64);

/// A `(m × n) = op(A) (m × k) · op(B) (k × n)` product, accumulated into `c` or not.
pub(super) fn gemm(m: usize, n: usize, k: usize, a: View, b: View, c: View, accumulate: bool) -> Gemm {
    Gemm { m, n, k, a, b, c, accumulate }
}

/// `dst (w) = Σ` of the `n` rows of `src (n, w)`, by a product with `ones (≥ n)`: a bias's
/// gradient over all steps.
pub(super) fn sum_rows<L: Launch>(l: &L, n: usize, w: usize, src: Addr, dst: Addr, ones: Addr) -> Result<()> {
    l.gemm(gemm(1, w, n, View::new(ones, n), View::new(src, w), View::new(dst, w), false))
}

/// A gate kernel's step fields: position `t` and the lengths, the rows of `gi` and `gh`.
pub(super) fn step_rows((t, lens): (usize, Addr), gi: Rows, gh: Rows) -> StepRows {
    StepRows { t: t as i64, lens, gi: gi.0, gi_ld: gi.1, gh: gh.0, gh_ld: gh.1 }
}

/// A backward gate kernel's gradient rows `dgi`, `dgh`.
pub(super) fn grad_rows(dgi: Rows, dgh: Rows) -> GradRows {
    GradRows { dgi: dgi.0, dgi_ld: dgi.1, dgh: dgh.0, dgh_ld: dgh.1 }
}

/// The states entering `U`: `hp ⊙ mask` written into `hub` (`B × H`, contiguous), or `hp`
/// itself without a mask (`mask` is [`Addr::NULL`]). `(b, h)`: rows and units.
pub(super) fn masked_state<L: Launch>(l: &L, (b, h): (usize, usize), mask: Addr, hp: Rows, hub: Addr) -> Result<Rows> {
    match mask {
        Addr::NULL => Ok(hp),
        m => {
            let a = MaskRows { dst: hub, dst_ld: h as i64, src: hp.0, src_ld: hp.1, mask: m, rows: b as i64, width: h as i64 };
            l.launch(&args::MASK_ROWS, b * h, a)?;
            Ok((hub, h as i64))
        }
    }
}

/// `carry += (dG op(U)ᵀ) ⊙ m`, the state's gradient through `U`: `dG (B, k)`, `ut` the
/// `(k, H)` view of `Uᵀ`, `carry` and the scratch `buf` (used under a mask) `B × H`.
pub(super) fn carry_through_u<L: Launch>(
    l: &L,
    (b, h): (usize, usize),
    mask: Addr,
    (dg, k, ut): (View, usize, View),
    (carry, buf): (Addr, Addr),
) -> Result<()> {
    match mask {
        Addr::NULL => l.gemm(gemm(b, h, k, dg, ut, View::new(carry, h), true)),
        m => {
            l.gemm(gemm(b, h, k, dg, ut, View::new(buf, h), false))?;
            let (rows, width, ld) = (b as i64, h as i64, h as i64);
            l.launch(&args::ADD_ROWS, b * h, AddRows { dst: carry, dst_ld: ld, src: buf, src_ld: ld, mask: m, rows, width })
        }
    }
}

/// The cell of one direction or decoder: its form, sizes, `U`, the recurrent-dropout mask
/// `(B, H)` on the state entering `U` (or [`Addr::NULL`]), the sentence lengths (a step
/// `t ≥ lens[b]` carries row `b`'s state forward and its gradient back) and, with layer
/// normalisation (the reset-after form only), the gain `γ_h (G)` of `LN(hu U)·γ_h + b_h`
/// (`norm_rows.rs`; [`Addr::NULL`] without).
#[derive(Clone, Copy, Debug)]
pub(super) struct Cell {
    pub form: GruForm,
    pub rows: usize,
    pub hidden: usize,
    pub u: Addr,
    pub mask: Addr,
    pub lens: Addr,
    pub gamma: Addr,
}

/// One step's rows: its position `t`, the input and recurrent pre-activations `gi`, `gh`
/// (`gh` holds `b_h` before the forward step), the paper form's `q`, the previous state; for
/// an LSTM (`lstm_cell.rs`) `q` is where its new cell states go and `cp` holds the previous ones
/// ([`NO_ROWS`] for a GRU); with layer normalisation `a` holds the raw product `hu U`
/// (`norm_rows.rs`; [`NO_ROWS`] without).
#[derive(Clone, Copy, Debug)]
pub(super) struct Step {
    pub t: usize,
    pub gi: Rows,
    pub gh: Rows,
    pub q: Rows,
    pub hp: Rows,
    pub cp: Rows,
    pub a: Rows,
}

/// No rows: a GRU step's `cp`.
pub(super) const NO_ROWS: Rows = (Addr::NULL, 0);

/// The backward step's gradient rows: `dgi`, `dgh` (written), and `B × H` contiguous buffers:
/// `carry` (in: the gradient reaching the new state from later steps; out: the one reaching
/// the previous state), the LSTM's `carry_c` (the same for its cell state; unused by a GRU),
/// scratch `dq` (a GRU's) and `buf`; with layer normalisation the rows `da` and `dyx` where
/// `norm_rows.rs` writes the raw product's gradient (which then reaches `U` and the carry) and
/// `dgh ⊙ x̂` ([`NO_ROWS`] without).
#[derive(Clone, Copy, Debug)]
pub(super) struct StepGrads {
    pub dgi: Rows,
    pub dgh: Rows,
    pub carry: Addr,
    pub carry_c: Addr,
    pub dq: Addr,
    pub buf: Addr,
    pub da: Rows,
    pub dyx: Rows,
}

impl Cell {
    fn g(&self) -> usize {
        3 * self.hidden
    }

    fn form_code(&self) -> i64 {
        match self.form {
            GruForm::Paper => args::PAPER,
            GruForm::ResetAfter => args::RESET_AFTER,
        }
    }

    /// The new state into `out` (rows): `gh += hu U`, the gates. `hub` is `B × H` scratch for
    /// the masked state under recurrent dropout.
    pub fn forward<L: Launch>(&self, l: &L, s: Step, out: Rows, hub: Addr) -> Result<()> {
        let (b, h, g) = (self.rows, self.hidden, self.g());
        let (hu, hu_ld) = masked_state(l, (b, h), self.mask, s.hp, hub)?;
        let (huv, ghv) = (View::new(hu, hu_ld as usize), View::new(s.gh.0, s.gh.1 as usize));
        match self.form {
            GruForm::ResetAfter => norm_rows::product(l, (b, g, h), (huv, View::new(self.u, g)), self.gamma, s.a, s.gh)?,
            GruForm::Paper => {
                l.gemm(gemm(b, 2 * h, h, huv, View::new(self.u, g), ghv, true))?;
                let (gi, gh, q) = (s.gi, s.gh, s.q);
                let a = ResetFwd {
                    gi: gi.0,
                    gi_ld: gi.1,
                    gh: gh.0,
                    gh_ld: gh.1,
                    hu,
                    hu_ld,
                    q: q.0,
                    q_ld: q.1,
                    rows: b as i64,
                    hidden: h as i64,
                };
                l.launch(&args::GRU_RESET_FWD, b * h, a)?;
                let ghn = View::new(gh.0.at(2 * h), gh.1 as usize);
                l.gemm(gemm(b, h, h, View::new(q.0, q.1 as usize), View::new(self.u.at(2 * h), g), ghn, true))?;
            }
        }
        let (rows, hidden) = (b as i64, h as i64);
        let (form, st) = (self.form_code(), step_rows((s.t, self.lens), s.gi, s.gh));
        let a = GatesFwd { form, s: st, hp: s.hp.0, hp_ld: s.hp.1, out: out.0, out_ld: out.1, rows, hidden };
        l.launch(&args::GRU_GATES_FWD, b * h, a)
    }

    /// One step back from `dh` (rows), the output's own gradient: writes `dgi`, `dgh` and
    /// turns `carry` into the gradient reaching the previous state.
    pub fn backward<L: Launch>(&self, l: &L, s: Step, dh: Rows, d: StepGrads) -> Result<()> {
        let (b, h, g) = (self.rows, self.hidden, self.g());
        let (rows, hidden, hp) = (b as i64, h as i64, s.hp);
        let (st, dg) = (step_rows((s.t, self.lens), s.gi, s.gh), grad_rows(d.dgi, d.dgh));
        let (form, carry) = (self.form_code(), d.carry);
        let a = GatesBwd { form, s: st, hp: hp.0, hp_ld: hp.1, dh: dh.0, dh_ld: dh.1, carry, dg, rows, hidden };
        l.launch(&args::GRU_GATES_BWD, b * h, a)?;
        let through_u = |dg: View, k: usize, ut: View| carry_through_u(l, (b, h), self.mask, (dg, k, ut), (d.carry, d.buf));
        let dgv = View::new(d.dgh.0, d.dgh.1 as usize);
        match self.form {
            GruForm::ResetAfter => {
                let dp = norm_rows::product_grad(l, (b, g), self.gamma, s.a, d.dgh, (d.da, d.dyx))?;
                through_u(View::new(dp.0, dp.1 as usize), g, View::new(self.u, g).t())
            }
            GruForm::Paper => {
                let dn = View::new(d.dgh.0.at(2 * h), d.dgh.1 as usize);
                l.gemm(gemm(b, h, h, dn, View::new(self.u.at(2 * h), g).t(), View::new(d.dq, h), false))?;
                let (mask, dq) = (self.mask, d.dq);
                let a = ResetBwd { s: st, hp: hp.0, hp_ld: hp.1, mask, dq, carry, dg, rows, hidden };
                l.launch(&args::GRU_RESET_BWD, b * h, a)?;
                through_u(dgv, 2 * h, View::new(self.u, g).t())
            }
        }
    }

    /// `dU (H, G)` at `du` from all `n` steps' rows: `H_prevᵀ dGH` (the paper form:
    /// `[H_prevᵀ dGH_rz | Qᵀ dGH_n]`), with `hprev (n, H)` the masked previous states, `q`
    /// `(n, H)` and `dgh (n, G)` contiguous (with layer normalisation: the `da` rows).
    pub fn u_grad<L: Launch>(&self, l: &L, n: usize, hprev: Addr, q: Addr, dgh: Addr, du: Addr) -> Result<()> {
        let (h, g) = (self.hidden, self.g());
        let (hpt, dgv) = (View::new(hprev, h).t(), View::new(dgh, g));
        match self.form {
            GruForm::ResetAfter => l.gemm(gemm(h, g, n, hpt, dgv, View::new(du, g), false)),
            GruForm::Paper => {
                l.gemm(gemm(h, 2 * h, n, hpt, dgv, View::new(du, g), false))?;
                let dn = View::new(dgh.at(2 * h), g);
                l.gemm(gemm(h, h, n, View::new(q, h).t(), dn, View::new(du.at(2 * h), g), false))
            }
        }
    }
}
