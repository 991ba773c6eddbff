//! The RNNsearch decoders' loops (`bahdanau.rs`, `conditional.rs`, on the layout of
//! `attention.rs`) as one differentiable candle op, `attention_loop` (`op.rs`'s plumbing).
use candle_core::{bail, DType, Result, Shape, Tensor};

use super::attention::{AttnLoop, Inputs, Saved};
use super::op::GpuOp;
use super::{Addr, Launch};

/// Runs the decoder loop; see the module docs. Returns `(B·T, H + C)`, each step's `[s_i; c_i]`.
pub fn attention_loop(seq: &Tensor, enc: &Tensor, w: &Tensor, d: AttnLoop) -> Result<Tensor> {
    let (bt, g) = (d.batch * d.tgt_len, d.g());
    let ok = seq.elem_count() == bt * g + d.batch * d.hidden
        && enc.dims() == [d.batch, d.src_len, d.ew()]
        && w.elem_count() == d.weights_len()
        && d.lens.len() == d.batch
        && d.lens.iter().all(|&l| (1..=d.src_len).contains(&l))
        && d.state_mask.as_ref().is_none_or(|m| m.len() == d.batch * d.hidden);
    if !ok {
        bail!("gpu attention_loop: inputs {:?} {:?} {:?} do not fit {d:?}", seq.dims(), enc.dims(), w.dims());
    }
    if [seq.dtype(), enc.dtype(), w.dtype()] != [DType::F32; 3] {
        bail!("gpu attention_loop: f32 only, got {:?}", seq.dtype());
    }
    super::op::apply(AttnOp(d), seq, enc, w)
}

/// The host data uploaded for a call: the lengths (source, target) and the mask.
type Uploaded<L> = ([<L as Launch>::Ints; 2], Option<<L as Launch>::Floats>);

/// The loop as a [`GpuOp`] of `(seq, enc, w)`.
struct AttnOp(AttnLoop);

impl AttnOp {
    /// The inputs with the lengths and mask uploaded (the buffers must outlive the launches).
    fn inputs<L: Launch>(&self, l: &L, [seq, enc, w]: [Addr; 3]) -> Result<(Inputs, Uploaded<L>)> {
        let d = &self.0;
        let lens = l.upload_ints(&d.lens.iter().map(|&n| n as i64).collect::<Vec<_>>())?;
        let all = l.upload_ints(&vec![d.tgt_len as i64; d.batch])?;
        let mask = d.state_mask.as_deref().map(|m| l.upload(m)).transpose()?;
        let m = mask.as_ref().map_or(Addr::NULL, |m| l.addr(m));
        Ok((Inputs { seq, enc, w, lens: l.ints_addr(&lens), all: l.ints_addr(&all), mask: m }, ([lens, all], mask)))
    }
}

impl GpuOp for AttnOp {
    const NAME: &'static str = "gpu-attention-decoder";
    type Saved<F: Send + Sync + 'static> = Saved<F>;

    fn out_shape(&self) -> Shape {
        Shape::from((self.0.batch * self.0.tgt_len, self.0.ow()))
    }

    fn forward<L: Launch>(&self, l: &L, x: [Addr; 3]) -> Result<(L::Floats, Saved<L::Floats>)> {
        let (x, _held) = self.inputs(l, x)?;
        match self.0.conditional {
            true => super::conditional::forward(l, &self.0, x),
            false => super::bahdanau::forward(l, &self.0, x),
        }
    }

    fn backward<L: Launch>(&self, l: &L, x: [Addr; 3], saved: Saved<L::Floats>, out: Addr, dout: Addr) -> Result<[L::Floats; 3]> {
        let (x, _held) = self.inputs(l, x)?;
        match self.0.conditional {
            true => super::conditional::backward(l, &self.0, x, &saved, (out, dout)),
            false => super::bahdanau::backward(l, &self.0, x, &saved, (out, dout)),
        }
    }
}
