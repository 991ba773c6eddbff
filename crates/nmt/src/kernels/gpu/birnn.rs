//! The bidirectional RNN layer (Bahdanau et al. 2014, §3.2: `h_j = [→h_j; ←h_j]`) on a
//! [`Launch`]: the GPU twin of `kernels::cpu::birnn` for the GRU in either form and the LSTM, with
//! recurrent dropout and padding, and for the reset-after GRU with layer normalisation
//! (Marian's `s2s`: `LN(h U)·γ_h + b_h`, `norm_rows.rs`).
//!
//! Shapes as in `kernels::cpu::birnn`: `gi (B·S, 2G)` = `[x W_f + b_f | x W_b + b_b]` with
//! `G = 3H` (the LSTM: `4H`), `u (2, H, G)`, `bh (2, G)` (with layer normalisation `(2, 2G)`,
//! each direction's `[b_h | γ_h]`), each sentence's length, an optional recurrent-dropout mask
//! `(2, B, H)`; output `(B, S, 2H)`. Per direction and step, the GRU
//! (`rnn_cell.rs`'s equations; the LSTM's step is `lstm_cell.rs`'s, the same pattern):
//! - forward: `GH_t += HU_{t−1} U` on cuBLAS (paper form: `[h U_rz]`, the reset kernel
//!   `q = r ⊙ hu`, then `q U_n`), then `nmt_gru_gates_fwd`;
//! - backward: `nmt_gru_gates_bwd`, then the carry's `dGH_t Uᵀ` (paper form: `dq = dGH_n U_nᵀ`,
//!   `nmt_gru_reset_bwd`, then `dGH_rz U_rzᵀ`), times the mask under dropout;
//! - after the loop: `dU = H_prevᵀ dGH` (paper: `[H_prevᵀ dGH_rz | Qᵀ dGH_n]`) and
//!   `db_h = 1ᵀ dGH`, one product each over all `B·S` rows.
//!
//! The directions run one after the other on one stream; each is a `direction.rs` loop.
use candle_core::{bail, DType, Result, Shape, Tensor};

use super::args::{self, FillRows};
pub use super::direction::Dims;
use super::direction::{Carries, Dir, Own};
use super::gru_cell::sum_rows;
use super::launch::{Addr, Launch, Staged};
use crate::config::{CellKind, GruForm};
use crate::kernels::fused_op::{Device, FusedOp};
use crate::kernels::shapes::rnn_dims::RnnSpec;

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
/// form's `r ⊙ hu`, the LSTM's cell states (where `kernels::cpu::birnn` keeps them too); with
/// layer normalisation the raw products `A (B, S, G)` (one element without).
pub struct Saved<F> {
    pub gh: [F; 2],
    pub q: [F; 2],
    pub a: [F; 2],
}

/// The gradients of `(gi, u, bh)`.
pub struct Grads<F> {
    pub dgi: F,
    pub du: F,
    pub dbh: F,
}

/// Direction `dir` (0 forward, 1 backward) of the layer.
fn dir(d: Dims, x: &Inputs, dir: usize) -> Dir {
    let (b, h, g) = (d.batch, d.hidden, d.g());
    let mask = if x.mask == Addr::NULL { Addr::NULL } else { x.mask.at(dir * b * h) };
    let gamma = if d.norm { x.bh.at(dir * 2 * g + g) } else { Addr::NULL };
    Dir::new(d, (dir, 2, dir == 1), x.u.at(dir * h * g), (mask, x.lens), gamma)
}

/// The width of a direction's row of `bh`: `b_h`, or `[b_h | γ_h]`.
fn bias_width(d: Dims) -> usize {
    if d.norm {
        2 * d.g()
    } else {
        d.g()
    }
}

/// Elements of a normalisation buffer `(B, S, G)`, one without layer normalisation.
fn normed_len(d: Dims) -> usize {
    if d.norm {
        d.batch * d.len * d.g()
    } else {
        1
    }
}

/// The forward pass: the annotations `(B, S, 2H)` and what the backward pass needs.
pub fn forward<L: Launch>(l: &L, d: Dims, x: Inputs) -> Result<(L::Floats, Saved<L::Floats>)> {
    let (b, s, h, g) = (d.batch, d.len, d.hidden, d.g());
    // Written before they are read (`Launch::scratch`): each direction writes its block of
    // every position, its `GH` rows start as `b_h`, `Q` and `A` are kernels' and products'.
    let out = l.scratch(b * s * 2 * h)?;
    let (zeros, hub) = (l.zeros(b * h)?, l.scratch(b * h)?);
    let (o, z0, hu) = (l.addr(&out), l.addr(&zeros), l.addr(&hub));
    let (rows, width) = ((b * s) as i64, g as i64);
    let run = |k: usize| -> Result<[L::Floats; 3]> {
        let (gh, q, a) = (l.scratch(b * s * g)?, l.scratch(d.q_len())?, l.scratch(normed_len(d))?);
        let own = Own { gh: l.addr(&gh), q: l.addr(&q), a: if d.norm { l.addr(&a) } else { Addr::NULL } };
        let fill = FillRows { dst: own.gh, src: x.bh.at(k * bias_width(d)), src_ld: width, rows, width, group: rows };
        l.launch(&args::FILL_ROWS, b * s * g, fill)?;
        dir(d, &x, k).forward(l, x.gi, own, o, ((z0, h as i64), z0, hu))?;
        Ok([gh, q, a])
    };
    let ([gf, qf, af], [gb, qb, ab]) = (run(0)?, run(1)?);
    Ok((out, Saved { gh: [gf, gb], q: [qf, qb], a: [af, ab] }))
}

/// The backward pass from the forward pass's output `out (B, S, 2H)`, what it kept and the
/// output's gradient `dout (B, S, 2H)`.
pub fn backward<L: Launch>(l: &L, d: Dims, x: Inputs, saved: &Saved<L::Floats>, out: Addr, dout: Addr) -> Result<Grads<L::Floats>> {
    let (b, s, h, g) = (d.batch, d.len, d.hidden, d.g());
    let (bw, nl) = (bias_width(d), normed_len(d));
    let (dgi, du, dbh) = (l.zeros(b * s * 2 * g)?, l.zeros(2 * h * g)?, l.zeros(2 * bw)?);
    let (zeros, ones) = (l.zeros(b * h)?, l.scratch(b * s)?);
    // Written, not uploaded: a recorded step must not copy from the host (`recording.rs`).
    l.fill(l.addr(&ones), b * s, 1.0)?;
    let (dq, buf, hprev) = (l.zeros(b * h)?, l.zeros(b * h)?, l.zeros(b * s * h)?);
    // Every address once, before the loops (on a GPU a lookup is driver calls: `cuda.rs`).
    let (dgip, z0, hpp) = (l.addr(&dgi), l.addr(&zeros), l.addr(&hprev));
    for k in 0..2 {
        let r = dir(d, &x, k);
        // The gradients reaching the states before the current step: zero after the last.
        let (dgh, carry, carry_c) = (l.zeros(b * s * g)?, l.zeros(b * h)?, l.zeros(b * h)?);
        let (da, dyx) = (l.zeros(nl)?, l.zeros(nl)?);
        let normed = |f: &L::Floats| if d.norm { l.addr(f) } else { Addr::NULL };
        let (dghp, qp, one) = (l.addr(&dgh), l.addr(&saved.q[k]), l.addr(&ones));
        let own = Own { gh: l.addr(&saved.gh[k]), q: qp, a: normed(&saved.a[k]) };
        let (dap, dyxp) = (normed(&da), normed(&dyx));
        let c = Carries { carry: l.addr(&carry), carry_c: l.addr(&carry_c), dq: l.addr(&dq), buf: l.addr(&buf), da: dap, dyx: dyxp };
        r.backward(l, (x.gi, dgip), (own, dghp), (out, dout), ((z0, h as i64), z0), c)?;
        // With layer normalisation `U` was multiplied into the raw product: its gradient is `dA`.
        let dprod = if d.norm { dap } else { dghp };
        r.u_grad(l, (out, (Addr::NULL, 0)), (hpp, qp, dprod), l.addr(&du).at(k * h * g))?;
        sum_rows(l, b * s, g, dghp, l.addr(&dbh).at(k * bw), one)?;
        if d.norm {
            sum_rows(l, b * s, g, dyxp, l.addr(&dbh).at(k * bw + g), one)?;
        }
    }
    Ok(Grads { dgi, du, dbh })
}

/// Runs both directions of a GRU or an LSTM over `gi (B·S, 2G)` with `u (2, H, G)` and
/// `bh (2, G)`, or for the reset-after GRU with layer normalisation `(2, 2G)`
/// (`kernels::cpu::birnn::birnn_sequence`'s contract); returns `(B, S, 2H)`. `f32` only.
pub fn birnn_sequence(gi: &Tensor, u: &Tensor, bh: &Tensor, spec: RnnSpec<'_>) -> Result<Tensor> {
    let hidden = u.dim(1)?;
    let g = spec.kind.gates() * hidden;
    let norm = spec.kind == CellKind::Gru(GruForm::ResetAfter) && bh.dims() == [2, 2 * g];
    let fit = u.dims() == [2, hidden, g] && (bh.dims() == [2, g] || norm);
    let dims = spec.dims("gpu birnn_sequence", gi, hidden, false, 2, fit)?;
    if [gi.dtype(), u.dtype(), bh.dtype()] != [DType::F32; 3] {
        bail!("gpu birnn_sequence: f32 only, got {:?}", gi.dtype());
    }
    let d = Dims { batch: dims.batch, len: dims.len, hidden, kind: spec.kind, norm };
    let lens = Staged::Host(dims.lens.iter().map(|&l| l as i64).collect());
    super::op::apply(BiRnn { d, lens, mask: dims.mask.map(Staged::Host) }, gi, u, bh)
}

/// [`forward`] and [`backward`] as a [`FusedOp`] of `(gi, u, bh)`, with the lengths `(B)` and
/// the recurrent dropout mask `(2, B, H)` from the host or already on the device (a recorded
/// step's: `recording.rs`).
pub(crate) struct BiRnn {
    pub d: Dims,
    pub lens: Staged<i64>,
    pub mask: Option<Staged<f32>>,
}

/// The buffers uploaded for one pass (kept while its launches run).
type Held<L> = (Option<<L as Launch>::Ints>, Option<<L as Device>::Floats>);

impl BiRnn {
    /// The inputs' addresses, with the lengths and mask uploaded when they came from the host.
    fn inputs<L: Launch>(&self, l: &L, [gi, u, bh]: [Addr; 3]) -> Result<(Inputs, Held<L>)> {
        let (lens, held_lens) = self.lens.addr(l)?;
        let (mask, held_mask) = match &self.mask {
            Some(m) => m.addr(l)?,
            None => (Addr::NULL, None),
        };
        Ok((Inputs { gi, u, bh, lens, mask }, (held_lens, held_mask)))
    }
}

impl<L: Launch> FusedOp<L> for BiRnn {
    const NAME: &'static str = "gpu-bidirectional-gru";
    type Saved = Saved<L::Floats>;

    fn out_shape(&self) -> Shape {
        Shape::from((self.d.batch, self.d.len, 2 * self.d.hidden))
    }

    fn forward(&self, l: &L, x: [Addr; 3]) -> Result<(L::Floats, Saved<L::Floats>)> {
        let (x, _held) = self.inputs(l, x)?;
        forward(l, self.d, x)
    }

    fn backward(&self, l: &L, x: [Addr; 3], saved: Saved<L::Floats>, out: Addr, dout: Addr) -> Result<[L::Floats; 3]> {
        let (x, _held) = self.inputs(l, x)?;
        let g = backward(l, self.d, x, &saved, out, dout)?;
        Ok([g.dgi, g.du, g.dbh])
    }
}
