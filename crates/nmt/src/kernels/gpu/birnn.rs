//! The bidirectional GRU layer (Bahdanau et al. 2014, §3.2: `h_j = [→h_j; ←h_j]`) on a
//! [`Launch`]: the GPU twin of `kernels::birnn` for the GRU in either form, with recurrent
//! dropout and padding, without layer normalisation (that layer stays composed on a GPU).
//!
//! Shapes as in `kernels::birnn`: `gi (B·S, 2G)` = `[x W_f + b_f | x W_b + b_b]` with
//! `G = 3H`, `u (2, H, G)`, `bh (2, G)`, each sentence's length, an optional recurrent-dropout
//! mask `(2, B, H)`; output `(B, S, 2H)`. Per direction and step (`rnn_cell.rs`'s equations):
//! - forward: `GH_t += HU_{t−1} U` on cuBLAS (paper form: `[h U_rz]`, the reset kernel
//!   `q = r ⊙ hu`, then `q U_n`), then `nmt_gru_gates_fwd`;
//! - backward: `nmt_gru_gates_bwd`, then the carry's `dGH_t Uᵀ` (paper form: `dq = dGH_n U_nᵀ`,
//!   `nmt_gru_reset_bwd`, then `dGH_rz U_rzᵀ`), times the mask under dropout;
//! - after the loop: `dU = H_prevᵀ dGH` (paper: `[H_prevᵀ dGH_rz | Qᵀ dGH_n]`) and
//!   `db_h = 1ᵀ dGH`, one product each over all `B·S` rows.
//!
//! The directions run one after the other on one stream.
use candle_core::Result;

use super::args::{self, AddMasked, FillRows, GatesBwd, GatesFwd, MaskRows, PrevStates, ResetBwd, ResetFwd};
use super::{Addr, Gemm, Launch, View};
use crate::config::GruForm;

/// The layer's sizes and cell form.
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    pub batch: usize,
    pub len: usize,
    pub hidden: usize,
    pub form: GruForm,
}

/// The op's inputs on the launcher: `gi`, `u`, `bh` as above, the lengths (`i64`, `B`) and
/// the mask (or [`Addr::NULL`]).
#[derive(Clone, Copy, Debug)]
pub struct Inputs {
    pub gi: Addr,
    pub u: Addr,
    pub bh: Addr,
    pub lens: Addr,
    pub mask: Addr,
}

/// What the forward pass keeps per direction: `GH (B, S, G)` and the paper form's
/// `Q = r ⊙ hu (B, S, H)`.
pub struct Saved<F> {
    pub gh: [F; 2],
    pub q: [F; 2],
}

/// The gradients of `(gi, u, bh)`.
pub struct Grads<F> {
    pub dgi: F,
    pub du: F,
    pub dbh: F,
}

/// One direction's view of the layer: where its columns and steps are.
struct Dir {
    dir: usize,
    d: Dims,
}

impl Dir {
    fn g(&self) -> usize {
        3 * self.d.hidden
    }
    /// The position of the `step`-th step processed.
    fn pos(&self, step: usize) -> usize {
        if self.dir == 1 {
            self.d.len - 1 - step
        } else {
            step
        }
    }
    /// `gi`'s rows of step `t` and their leading dimension.
    fn gi(&self, gi: Addr, t: usize) -> (Addr, i64) {
        (gi.at(t * 2 * self.g() + self.dir * self.g()), (self.d.len * 2 * self.g()) as i64)
    }
    /// The `(B, S, 2H)` output's rows of step `t` (this direction's half).
    fn out(&self, out: Addr, t: usize) -> (Addr, i64) {
        let h = self.d.hidden;
        (out.at(t * 2 * h + self.dir * h), (self.d.len * 2 * h) as i64)
    }
    /// The previous states of the `step`-th step: the output of the step before, or `h_0 = 0`.
    fn prev(&self, out: Addr, zeros: Addr, step: usize) -> (Addr, i64) {
        match step {
            0 => (zeros, self.d.hidden as i64),
            _ => self.out(out, self.pos(step - 1)),
        }
    }
    fn form(&self) -> i64 {
        match self.d.form {
            GruForm::Paper => args::PAPER,
            GruForm::ResetAfter => args::RESET_AFTER,
        }
    }
}

fn gemm(m: usize, n: usize, k: usize, a: View, b: View, c: View, accumulate: bool) -> Gemm {
    Gemm { m, n, k, a, b, c, accumulate }
}

/// The forward pass: the annotations `(B, S, 2H)` and what the backward pass needs.
pub fn forward<L: Launch>(l: &L, d: Dims, x: Inputs) -> Result<(L::Floats, Saved<L::Floats>)> {
    let (b, s, h) = (d.batch, d.len, d.hidden);
    let out = l.zeros(b * s * 2 * h)?;
    let zeros = l.zeros(b * h)?;
    let hu_buf = l.zeros(b * h)?;
    let bufs = (l.addr(&out), l.addr(&zeros), l.addr(&hu_buf));
    let (f, bw) = (forward_dir(l, d, x, 0, bufs)?, forward_dir(l, d, x, 1, bufs)?);
    Ok((out, Saved { gh: [f.0, bw.0], q: [f.1, bw.1] }))
}

/// Direction `dir`'s forward pass into `o`, the `(B, S, 2H)` output, with `z0` zeros `(B, H)`
/// and `hub` scratch `(B, H)`: its `GH` and `Q`.
fn forward_dir<L: Launch>(l: &L, d: Dims, x: Inputs, dir: usize, (o, z0, hub): (Addr, Addr, Addr)) -> Result<(L::Floats, L::Floats)> {
    let (b, s, h) = (d.batch, d.len, d.hidden);
    let r = Dir { dir, d };
    let g = r.g();
    let gh = l.zeros(b * s * g)?;
    let q = l.zeros(if d.form == GruForm::Paper { b * s * h } else { 1 })?;
    let (ghp, qp, ud) = (l.addr(&gh), l.addr(&q), x.u.at(dir * h * g));
    let mask = if x.mask == Addr::NULL { Addr::NULL } else { x.mask.at(dir * b * h) };
    let (rows, width) = ((b * s) as i64, g as i64);
    l.launch(&args::FILL_ROWS, b * s * g, FillRows { dst: ghp, src: x.bh.at(dir * g), rows, width })?;
    for step in 0..s {
        let t = r.pos(step);
        let (hp, hp_ld) = r.prev(o, z0, step);
        let (hu, hu_ld) = match mask {
            Addr::NULL => (hp, hp_ld),
            m => {
                let a = MaskRows { dst: hub, dst_ld: h as i64, src: hp, src_ld: hp_ld, mask: m, rows: b as i64, width: h as i64 };
                l.launch(&args::MASK_ROWS, b * h, a)?;
                (hub, h as i64)
            }
        };
        let (gh_t, gh_ld) = (ghp.at(t * g), (s * g) as i64);
        let (gi_t, gi_ld) = r.gi(x.gi, t);
        let (huv, ghv) = (View::new(hu, hu_ld as usize), View::new(gh_t, gh_ld as usize));
        match d.form {
            GruForm::ResetAfter => l.gemm(gemm(b, g, h, huv, View::new(ud, g), ghv, true))?,
            GruForm::Paper => {
                l.gemm(gemm(b, 2 * h, h, huv, View::new(ud, g), ghv, true))?;
                let (q_t, q_ld) = (qp.at(t * h), (s * h) as i64);
                let a = ResetFwd { gi: gi_t, gi_ld, gh: gh_t, gh_ld, hu, hu_ld, q: q_t, q_ld, rows: b as i64, hidden: h as i64 };
                l.launch(&args::GRU_RESET_FWD, b * h, a)?;
                let ghn = View::new(gh_t.at(2 * h), gh_ld as usize);
                l.gemm(gemm(b, h, h, View::new(q_t, q_ld as usize), View::new(ud.at(2 * h), g), ghn, true))?;
            }
        }
        let (out_t, out_ld) = r.out(o, t);
        let a = GatesFwd {
            form: r.form(),
            t: t as i64,
            lens: x.lens,
            gi: gi_t,
            gi_ld,
            gh: gh_t,
            gh_ld,
            hp,
            hp_ld,
            out: out_t,
            out_ld,
            rows: b as i64,
            hidden: h as i64,
        };
        l.launch(&args::GRU_GATES_FWD, b * h, a)?;
    }
    Ok((gh, q))
}

/// The backward pass from the forward pass's output `out (B, S, 2H)`, what it kept and the
/// output's gradient `dout (B, S, 2H)`.
pub fn backward<L: Launch>(l: &L, d: Dims, x: Inputs, saved: &Saved<L::Floats>, out: Addr, dout: Addr) -> Result<Grads<L::Floats>> {
    let (b, s, h) = (d.batch, d.len, d.hidden);
    let g = 3 * h;
    let (dgi, du, dbh) = (l.zeros(b * s * 2 * g)?, l.zeros(2 * h * g)?, l.zeros(2 * g)?);
    let (zeros, ones) = (l.zeros(b * h)?, l.upload(&vec![1.0; b * s])?);
    let (dq, buf, hprev) = (l.zeros(b * h)?, l.zeros(b * h)?, l.zeros(b * s * h)?);
    let (dgip, z0, dqp, bufp, hpp) = (l.addr(&dgi), l.addr(&zeros), l.addr(&dq), l.addr(&buf), l.addr(&hprev));
    let (rows, hid) = (b as i64, h as i64);
    for dir in 0..2 {
        let r = Dir { dir, d };
        // The gradient reaching the state before the current step: zero after the last.
        let (dgh, carry) = (l.zeros(b * s * g)?, l.zeros(b * h)?);
        let (dghp, cp, ghp, qp) = (l.addr(&dgh), l.addr(&carry), l.addr(&saved.gh[dir]), l.addr(&saved.q[dir]));
        let ud = x.u.at(dir * h * g);
        let mask = if x.mask == Addr::NULL { Addr::NULL } else { x.mask.at(dir * b * h) };
        // carry += (dG op(U)ᵀ) ⊙ m: dG is `(B, k)` at `dg`, `ut` the `(k, H)` view of Uᵀ.
        let through_u = |dg: View, k: usize, ut: View| -> Result<()> {
            match mask {
                Addr::NULL => l.gemm(gemm(b, h, k, dg, ut, View::new(cp, h), true)),
                m => {
                    l.gemm(gemm(b, h, k, dg, ut, View::new(bufp, h), false))?;
                    l.launch(&args::ADD_MASKED, b * h, AddMasked { dst: cp, src: bufp, mask: m, n: (b * h) as i64 })
                }
            }
        };
        for step in (0..s).rev() {
            let t = r.pos(step);
            let (hp, hp_ld) = r.prev(out, z0, step);
            let (gh_t, gh_ld) = (ghp.at(t * g), (s * g) as i64);
            let (dgh_t, dgh_ld) = (dghp.at(t * g), gh_ld);
            let (gi_t, gi_ld) = r.gi(x.gi, t);
            let (dgi_t, dgi_ld) = r.gi(dgip, t);
            let (dh_t, dh_ld) = r.out(dout, t);
            let (tt, lens) = (t as i64, x.lens);
            let a = GatesBwd {
                form: r.form(),
                t: tt,
                lens,
                gi: gi_t,
                gi_ld,
                gh: gh_t,
                gh_ld,
                hp,
                hp_ld,
                dh: dh_t,
                dh_ld,
                carry: cp,
                dgi: dgi_t,
                dgi_ld,
                dgh: dgh_t,
                dgh_ld,
                rows,
                hidden: hid,
            };
            l.launch(&args::GRU_GATES_BWD, b * h, a)?;
            let dgv = View::new(dgh_t, dgh_ld as usize);
            match d.form {
                GruForm::ResetAfter => through_u(dgv, g, View::new(ud, g).t())?,
                GruForm::Paper => {
                    let dn = View::new(dgh_t.at(2 * h), dgh_ld as usize);
                    l.gemm(gemm(b, h, h, dn, View::new(ud.at(2 * h), g).t(), View::new(dqp, h), false))?;
                    let a = ResetBwd {
                        t: tt,
                        lens,
                        gi: gi_t,
                        gi_ld,
                        gh: gh_t,
                        gh_ld,
                        hp,
                        hp_ld,
                        mask,
                        dq: dqp,
                        carry: cp,
                        dgi: dgi_t,
                        dgi_ld,
                        dgh: dgh_t,
                        dgh_ld,
                        rows,
                        hidden: hid,
                    };
                    l.launch(&args::GRU_RESET_BWD, b * h, a)?;
                    through_u(dgv, 2 * h, View::new(ud, g).t())?;
                }
            }
        }
        let a = PrevStates {
            dst: hpp,
            out: out.at(dir * h),
            out_ld: (2 * h) as i64,
            mask,
            batch: rows,
            len: s as i64,
            hidden: hid,
            reverse: dir as i64,
        };
        l.launch(&args::PREV_STATES, b * s * h, a)?;
        let (dud, n) = (l.addr(&du).at(dir * h * g), b * s);
        let (hpt, dgv) = (View::new(hpp, h).t(), View::new(dghp, g));
        match d.form {
            GruForm::ResetAfter => l.gemm(gemm(h, g, n, hpt, dgv, View::new(dud, g), false))?,
            GruForm::Paper => {
                l.gemm(gemm(h, 2 * h, n, hpt, dgv, View::new(dud, g), false))?;
                let dn = View::new(dghp.at(2 * h), g);
                l.gemm(gemm(h, h, n, View::new(qp, h).t(), dn, View::new(dud.at(2 * h), g), false))?;
            }
        }
        l.gemm(gemm(1, g, n, View::new(l.addr(&ones), n), dgv, View::new(l.addr(&dbh).at(dir * g), g), false))?;
    }
    Ok(Grads { dgi, du, dbh })
}
