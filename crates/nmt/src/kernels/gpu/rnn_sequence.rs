//! One recurrent direction over a sequence, each sentence with its own recurrent term and
//! initial state, on a [`Launch`]: the GPU twin of `kernels::cpu::rnn_sequence::rnn_sequence` for the GRU
//! in either form and the LSTM, with recurrent dropout, padding and `reverse`, without layer
//! normalisation. It runs the one-direction encoders (RNNenc's, the seq2seq LSTM's) and the
//! summary decoders (RNNenc's, with `C c` as each sentence's recurrent term).
//!
//! Shapes as in `kernels::cpu::rnn_sequence`: `gi (B, S, G)` (or `(B·S, G)`), `u (H, G)`, `rows (B, G + H)`
//! = each sentence's `[ghb; h_0]` (the LSTM's `c_0` is zero); output `(B, S, H)`. The loops
//! are `direction.rs`'s, reading `h_0` in place in `rows`; around them, forward: `GH`'s rows
//! filled with their sentence's `ghb` (1 launch); backward: `drows = [Σ_t dGH_t; dh_0]`, the
//! first a sum over each sentence's steps (`nmt_sum_steps`), the second the carry left by the
//! loop (2 launches).
use candle_core::{bail, DType, Result, Shape, Tensor};

use super::args::{self, FillRows, MaskRows, SumSteps};
use super::direction::{Carries, Dims, Dir, Own};
use super::launch::{Addr, Launch};
use crate::kernels::fused_op::FusedOp;
use crate::kernels::shapes::rnn_dims::RnnSpec;

/// Runs the cell over `gi` with `u (H, G)` and `rows (B, G + H)` (`kernels::cpu::rnn_sequence`'s
/// contract, without layer normalisation); returns the states `(B, S, H)`. `f32` only.
pub fn rnn_sequence(gi: &Tensor, u: &Tensor, rows: &Tensor, reverse: bool, spec: RnnSpec<'_>) -> Result<Tensor> {
    let hidden = u.dim(0)?;
    let g = spec.kind.gates() * hidden;
    let fit = u.dims() == [hidden, g] && rows.dims() == [spec.lens.len(), g + hidden];
    let dims = spec.dims("gpu rnn_sequence", gi, hidden, reverse, 1, fit)?;
    if [gi.dtype(), u.dtype(), rows.dtype()] != [DType::F32; 3] {
        bail!("gpu rnn_sequence: f32 only, got {:?}", gi.dtype());
    }
    let d = Dims { batch: dims.batch, len: dims.len, hidden, kind: spec.kind, norm: false };
    let lens = dims.lens.iter().map(|&l| l as i64).collect();
    super::op::apply(Sequence { d, reverse, lens, mask: dims.mask }, gi, u, rows)
}

/// The op of `(gi, u, rows)`, with the host's lengths and mask.
struct Sequence {
    d: Dims,
    reverse: bool,
    lens: Vec<i64>,
    mask: Option<Vec<f32>>,
}

/// What the forward pass keeps: `GH (B, S, G)` and `Q (B, S, H)`.
struct Saved<F> {
    gh: F,
    q: F,
}

impl Sequence {
    /// The direction, with the lengths and the mask uploaded (the buffers must outlive the
    /// launches).
    fn dir<L: Launch>(&self, l: &L, u: Addr) -> Result<(Dir, L::Ints, Option<L::Floats>)> {
        let lens = l.upload_ints(&self.lens)?;
        let mask = self.mask.as_deref().map(|m| l.upload(m)).transpose()?;
        let m = mask.as_ref().map_or(Addr::NULL, |m| l.addr(m));
        Ok((Dir::new(self.d, (0, 1, self.reverse), u, (m, l.ints_addr(&lens)), Addr::NULL), lens, mask))
    }
}

impl<L: Launch> FusedOp<L> for Sequence {
    const NAME: &'static str = "gpu-rnn-sequence";
    type Saved = Saved<L::Floats>;

    fn out_shape(&self) -> Shape {
        Shape::from((self.d.batch, self.d.len, self.d.hidden))
    }

    fn forward(&self, l: &L, [gi, u, rows]: [Addr; 3]) -> Result<(L::Floats, Saved<L::Floats>)> {
        let (b, s, h, g) = (self.d.batch, self.d.len, self.d.hidden, self.d.g());
        let (dir, _lens, _mask) = self.dir(l, u)?;
        // Written before they are read (`Launch::scratch`), as in `birnn.rs`.
        let (out, gh, q) = (l.scratch(b * s * h)?, l.scratch(b * s * g)?, l.scratch(self.d.q_len())?);
        let (zeros, hub, ghp) = (l.zeros(b * h)?, l.scratch(b * h)?, l.addr(&gh));
        let (gi64, ld, si) = (g as i64, (g + h) as i64, s as i64);
        let fill = FillRows { dst: ghp, src: rows, src_ld: ld, rows: b as i64 * si, width: gi64, group: si };
        l.launch(&args::FILL_ROWS, b * s * g, fill)?;
        let own = Own { gh: ghp, q: l.addr(&q), a: Addr::NULL };
        dir.forward(l, gi, own, l.addr(&out), ((rows.at(g), ld), l.addr(&zeros), l.addr(&hub)))?;
        Ok((out, Saved { gh, q }))
    }

    fn backward(&self, l: &L, [gi, u, rows]: [Addr; 3], sv: Saved<L::Floats>, out: Addr, dout: Addr) -> Result<[L::Floats; 3]> {
        let (b, s, h, g) = (self.d.batch, self.d.len, self.d.hidden, self.d.g());
        let (dir, _lens, _mask) = self.dir(l, u)?;
        let (dgi, dgh, du, drows) = (l.zeros(b * s * g)?, l.zeros(b * s * g)?, l.zeros(h * g)?, l.zeros(b * (g + h))?);
        let (zeros, carry, carry_c) = (l.zeros(b * h)?, l.zeros(b * h)?, l.zeros(b * h)?);
        let (dq, buf, hprev) = (l.zeros(b * h)?, l.zeros(b * h)?, l.zeros(b * s * h)?);
        let (dghp, qp, drp, cp) = (l.addr(&dgh), l.addr(&sv.q), l.addr(&drows), l.addr(&carry));
        let (da, dyx) = (Addr::NULL, Addr::NULL);
        let c = Carries { carry: cp, carry_c: l.addr(&carry_c), dq: l.addr(&dq), buf: l.addr(&buf), da, dyx };
        let (h0, own) = ((rows.at(g), (g + h) as i64), Own { gh: l.addr(&sv.gh), q: qp, a: Addr::NULL });
        dir.backward(l, (gi, l.addr(&dgi)), (own, dghp), (out, dout), (h0, l.addr(&zeros)), c)?;
        dir.u_grad(l, (out, h0), (l.addr(&hprev), qp, dghp), l.addr(&du))?;
        let (bi, gi64, hi) = (b as i64, g as i64, h as i64);
        let sum = SumSteps { dst: drp, dst_ld: gi64 + hi, src: dghp, batch: bi, len: s as i64, width: gi64 };
        l.launch(&args::SUM_STEPS, b * g, sum)?;
        let dh0 = MaskRows { dst: drp.at(g), dst_ld: gi64 + hi, src: cp, src_ld: hi, mask: Addr::NULL, rows: bi, width: hi };
        l.launch(&args::MASK_ROWS, b * h, dh0)?;
        Ok([dgi, du, drows])
    }
}
