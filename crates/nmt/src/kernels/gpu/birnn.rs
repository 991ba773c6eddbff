//! The bidirectional RNN layer (Bahdanau et al. 2014, §3.2: `h_j = [→h_j; ←h_j]`) on a
//! [`Launch`]: the GPU twin of `kernels::birnn` for the GRU in either form and the LSTM, with
//! recurrent dropout and padding, without layer normalisation (that layer stays composed on a
//! GPU).
//!
//! Shapes as in `kernels::birnn`: `gi (B·S, 2G)` = `[x W_f + b_f | x W_b + b_b]` with
//! `G = 3H` (the LSTM: `4H`), `u (2, H, G)`, `bh (2, G)`, each sentence's length, an optional
//! recurrent-dropout mask `(2, B, H)`; output `(B, S, 2H)`. Per direction and step, the GRU
//! (`rnn_cell.rs`'s equations; the LSTM's step is `lstm.rs`'s, the same pattern):
//! - forward: `GH_t += HU_{t−1} U` on cuBLAS (paper form: `[h U_rz]`, the reset kernel
//!   `q = r ⊙ hu`, then `q U_n`), then `nmt_gru_gates_fwd`;
//! - backward: `nmt_gru_gates_bwd`, then the carry's `dGH_t Uᵀ` (paper form: `dq = dGH_n U_nᵀ`,
//!   `nmt_gru_reset_bwd`, then `dGH_rz U_rzᵀ`), times the mask under dropout;
//! - after the loop: `dU = H_prevᵀ dGH` (paper: `[H_prevᵀ dGH_rz | Qᵀ dGH_n]`) and
//!   `db_h = 1ᵀ dGH`, one product each over all `B·S` rows.
//!
//! The directions run one after the other on one stream.
use candle_core::{bail, DType, Result, Shape, Tensor};

use super::args::{self, FillRows, PrevStates};
use super::cell::{gemm, Cell, Rows, Step, StepGrads};
use super::lstm::{Lstm, LstmGrads, LstmStep};
use super::op::GpuOp;
use super::{Addr, Launch, View};
use crate::config::{CellKind, GruForm};
use crate::kernels::rnn_op::RnnSpec;

/// The layer's sizes and cell.
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    pub batch: usize,
    pub len: usize,
    pub hidden: usize,
    pub kind: CellKind,
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

/// What the forward pass keeps per direction: `GH (B, S, G)` and `Q (B, S, H)`: the paper
/// form's `r ⊙ hu`, the LSTM's cell states (where `kernels::birnn` keeps them too).
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

/// A direction's cell.
enum DirCell {
    Gru(Cell),
    Lstm(Lstm),
}

impl DirCell {
    fn mask(&self) -> Addr {
        match self {
            DirCell::Gru(c) => c.mask,
            DirCell::Lstm(c) => c.mask,
        }
    }
}

impl Dir {
    fn g(&self) -> usize {
        self.d.kind.gates() * self.d.hidden
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
    /// The direction's cell.
    fn cell(&self, x: &Inputs) -> DirCell {
        let (b, h) = (self.d.batch, self.d.hidden);
        let mask = if x.mask == Addr::NULL { Addr::NULL } else { x.mask.at(self.dir * b * h) };
        let u = x.u.at(self.dir * h * self.g());
        match self.d.kind {
            CellKind::Gru(form) => DirCell::Gru(Cell { form, rows: b, hidden: h, u, mask, lens: x.lens }),
            CellKind::Lstm => DirCell::Lstm(Lstm { rows: b, hidden: h, u, mask, lens: x.lens }),
        }
    }
    /// The LSTM's view of step `step`'s rows `st`: its cell states are `Q`'s rows at `q`, the
    /// previous ones those of the step before, or `c_0 = 0`.
    fn lstm(&self, st: Step, q: Addr, zeros: Addr, step: usize) -> LstmStep {
        let (s, h) = (self.d.len, self.d.hidden);
        let cp: Rows = match step {
            0 => (zeros, h as i64),
            _ => (q.at(self.pos(step - 1) * h), (s * h) as i64),
        };
        LstmStep { t: st.t, gi: st.gi, gh: st.gh, hp: st.hp, cp, c: st.q }
    }
    /// Step `step`'s rows, with `GH` at `gh` and `Q` at `q` `(B, S, ·)`.
    fn step(&self, x: &Inputs, (gh, q): (Addr, Addr), (out, zeros): (Addr, Addr), step: usize) -> Step {
        let (s, h, g) = (self.d.len, self.d.hidden, self.g());
        let t = self.pos(step);
        Step {
            t,
            gi: self.gi(x.gi, t),
            gh: (gh.at(t * g), (s * g) as i64),
            q: (q.at(t * h), (s * h) as i64),
            hp: self.prev(out, zeros, step),
        }
    }
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
    let q = l.zeros(if d.kind == CellKind::Gru(GruForm::ResetAfter) { 1 } else { b * s * h })?;
    let (ghp, qp) = (l.addr(&gh), l.addr(&q));
    let cell = r.cell(&x);
    let (rows, width) = ((b * s) as i64, g as i64);
    l.launch(&args::FILL_ROWS, b * s * g, FillRows { dst: ghp, src: x.bh.at(dir * g), rows, width })?;
    for step in 0..s {
        let st = r.step(&x, (ghp, qp), (o, z0), step);
        match &cell {
            DirCell::Gru(c) => c.forward(l, st, r.out(o, st.t), hub)?,
            DirCell::Lstm(c) => c.forward(l, r.lstm(st, qp, z0, step), r.out(o, st.t), hub)?,
        }
    }
    Ok((gh, q))
}

/// The backward pass from the forward pass's output `out (B, S, 2H)`, what it kept and the
/// output's gradient `dout (B, S, 2H)`.
pub fn backward<L: Launch>(l: &L, d: Dims, x: Inputs, saved: &Saved<L::Floats>, out: Addr, dout: Addr) -> Result<Grads<L::Floats>> {
    let (b, s, h) = (d.batch, d.len, d.hidden);
    let g = d.kind.gates() * h;
    let (dgi, du, dbh) = (l.zeros(b * s * 2 * g)?, l.zeros(2 * h * g)?, l.zeros(2 * g)?);
    let (zeros, ones) = (l.zeros(b * h)?, l.upload(&vec![1.0; b * s])?);
    let (dq, buf, hprev) = (l.zeros(b * h)?, l.zeros(b * h)?, l.zeros(b * s * h)?);
    // Every address once, before the loops (on a GPU a lookup is driver calls: `cuda.rs`).
    let (dgip, z0, hpp, dqp, bufp) = (l.addr(&dgi), l.addr(&zeros), l.addr(&hprev), l.addr(&dq), l.addr(&buf));
    for dir in 0..2 {
        let r = Dir { dir, d };
        let cell = r.cell(&x);
        // The gradients reaching the states before the current step (the LSTM's cell state's
        // too): zero after the last.
        let (dgh, carry) = (l.zeros(b * s * g)?, l.zeros(b * h)?);
        let carry_c = l.zeros(if d.kind == CellKind::Lstm { b * h } else { 1 })?;
        let (dghp, ghp, qp, cp) = (l.addr(&dgh), l.addr(&saved.gh[dir]), l.addr(&saved.q[dir]), l.addr(&carry));
        let ccp = l.addr(&carry_c);
        for step in (0..s).rev() {
            let st = r.step(&x, (ghp, qp), (out, z0), step);
            let (dgi_t, dgh_t) = (r.gi(dgip, st.t), (dghp.at(st.t * g), (s * g) as i64));
            match &cell {
                DirCell::Gru(c) => {
                    let grads = StepGrads { dgi: dgi_t, dgh: dgh_t, carry: cp, dq: dqp, buf: bufp };
                    c.backward(l, st, r.out(dout, st.t), grads)?
                }
                DirCell::Lstm(c) => {
                    let grads = LstmGrads { dgi: dgi_t, dgh: dgh_t, carry: cp, carry_c: ccp, buf: bufp };
                    c.backward(l, r.lstm(st, qp, z0, step), r.out(dout, st.t), grads)?
                }
            }
        }
        let a = PrevStates {
            dst: hpp,
            out: out.at(dir * h),
            out_ld: (2 * h) as i64,
            init: Addr::NULL,
            mask: cell.mask(),
            batch: b as i64,
            len: s as i64,
            hidden: h as i64,
            reverse: dir as i64,
        };
        l.launch(&args::PREV_STATES, b * s * h, a)?;
        let n = b * s;
        let dup = l.addr(&du).at(dir * h * g);
        match &cell {
            DirCell::Gru(c) => c.u_grad(l, n, hpp, qp, dghp, dup)?,
            DirCell::Lstm(c) => c.u_grad(l, n, hpp, dghp, dup)?,
        }
        l.gemm(gemm(1, g, n, View::new(l.addr(&ones), n), View::new(dghp, g), View::new(l.addr(&dbh).at(dir * g), g), false))?;
    }
    Ok(Grads { dgi, du, dbh })
}

/// Runs both directions of a GRU or an LSTM over `gi (B·S, 2G)` with `u (2, H, G)` and
/// `bh (2, G)` (`kernels::birnn::birnn_sequence`'s contract, without layer normalisation);
/// returns `(B, S, 2H)`. `f32` only.
pub fn birnn_sequence(gi: &Tensor, u: &Tensor, bh: &Tensor, spec: RnnSpec<'_>) -> Result<Tensor> {
    let hidden = u.dim(1)?;
    let g = spec.kind.gates() * hidden;
    let fit = u.dims() == [2, hidden, g] && bh.dims() == [2, g];
    let dims = spec.dims("gpu birnn_sequence", gi, hidden, false, 2, fit)?;
    if [gi.dtype(), u.dtype(), bh.dtype()] != [DType::F32; 3] {
        bail!("gpu birnn_sequence: f32 only, got {:?}", gi.dtype());
    }
    let d = Dims { batch: dims.batch, len: dims.len, hidden, kind: spec.kind };
    super::op::apply(BiGru { d, lens: dims.lens.iter().map(|&l| l as i64).collect(), mask: dims.mask }, gi, u, bh)
}

/// [`forward`] and [`backward`] as a [`GpuOp`] of `(gi, u, bh)`, with the host's lengths and mask.
struct BiGru {
    d: Dims,
    lens: Vec<i64>,
    mask: Option<Vec<f32>>,
}

impl BiGru {
    /// The inputs with the lengths and mask uploaded (the buffers must outlive the launches).
    fn inputs<L: Launch>(&self, l: &L, [gi, u, bh]: [Addr; 3]) -> Result<(Inputs, L::Ints, Option<L::Floats>)> {
        let lens = l.upload_ints(&self.lens)?;
        let mask = self.mask.as_deref().map(|m| l.upload(m)).transpose()?;
        let m = mask.as_ref().map_or(Addr::NULL, |m| l.addr(m));
        Ok((Inputs { gi, u, bh, lens: l.ints_addr(&lens), mask: m }, lens, mask))
    }
}

impl GpuOp for BiGru {
    const NAME: &'static str = "gpu-bidirectional-gru";
    type Saved<F: Send + Sync + 'static> = Saved<F>;

    fn out_shape(&self) -> Shape {
        Shape::from((self.d.batch, self.d.len, 2 * self.d.hidden))
    }

    fn forward<L: Launch>(&self, l: &L, x: [Addr; 3]) -> Result<(L::Floats, Saved<L::Floats>)> {
        let (x, _lens, _mask) = self.inputs(l, x)?;
        forward(l, self.d, x)
    }

    fn backward<L: Launch>(&self, l: &L, x: [Addr; 3], saved: Saved<L::Floats>, out: Addr, dout: Addr) -> Result<[L::Floats; 3]> {
        let (x, _lens, _mask) = self.inputs(l, x)?;
        let g = backward(l, self.d, x, &saved, out, dout)?;
        Ok([g.dgi, g.du, g.dbh])
    }
}
