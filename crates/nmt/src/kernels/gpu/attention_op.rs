//! The RNNsearch decoders' loops (`bahdanau.rs`, `conditional.rs`, on the layout of
//! `attention_kernels.rs`) as candle ops: `attention_loop`, the differentiable teacher-forced loop
//! (`op.rs`'s plumbing), and `attention_step`, one search step of the same loop for the
//! candle search on a GPU (no gradient; the weights `α` with the output).
use candle_core::{bail, DType, Result, Shape, Tensor};

use super::args::{self, MaskRows};
use super::attention_kernels::{At, Inputs, Saved};
use super::launch::{Addr, Launch, Staged};
use crate::config::{CellKind, GruForm};
use crate::kernels::fused_op::Device;
use crate::kernels::fused_op::FusedOp;
use crate::kernels::shapes::attn_dims::AttnDims;

/// Runs the decoder loop of `d` (the CPU op's sizes: a GRU, or for Bahdanau's step an LSTM;
/// layer normalisation for the conditional GRU in the reset-after form, `w` then ending with
/// the loop's gains; its `output` and `start` are the caller's, before and after the loop);
/// see `attention_kernels.rs`.
/// Returns `(B·T, H + C)`, each step's `[s_i; c_i]`.
pub fn attention_loop(seq: &Tensor, enc: &Tensor, w: &Tensor, d: AttnDims) -> Result<Tensor> {
    checked(seq, enc, w, &d, false)?;
    super::op::apply(AttnOp::host(d, false), seq, enc, w)
}

/// One step of the loop for `R = d.batch` rows (`d.tgt_len` = 1): from `seq = [gie (R, G);
/// s_{i-1} (R, H)]` (an LSTM: `[gie; s_{i-1}; m_{i-1}]`, its cell states after its outputs),
/// each row's `enc (R, S, C + A)` and `w` as for [`attention_loop`], `(R, H + C + S)`: each
/// row's `[s_i; c_i; α_i]` (an LSTM: `[s_i; c_i; α_i; m_i]`). Outside the autodiff graph. On
/// a GPU the step is the loop's launches (7 for Bahdanau's reset-after GRU, 9 for the
/// conditional GRU, and the bias rows) and two copies (an LSTM: three), where the composed
/// step launches one kernel per op.
pub fn attention_step(seq: &Tensor, enc: &Tensor, w: &Tensor, d: AttnDims) -> Result<Tensor> {
    if d.tgt_len != 1 || d.state_mask.is_some() {
        bail!("gpu attention_step: one step without dropout, not {d:?}");
    }
    let m0 = d.kind == CellKind::Lstm;
    checked(seq, enc, w, &d, m0)?;
    super::op::apply_no_bwd(StepOp(AttnOp::host(d, m0)), seq, enc, w)
}

/// Checks the inputs against `d`; `m0`: `seq` ends with an LSTM's initial cell states.
fn checked(seq: &Tensor, enc: &Tensor, w: &Tensor, d: &AttnDims, m0: bool) -> Result<()> {
    if d.kind == CellKind::Lstm && d.conditional {
        bail!("gpu attention_loop: the conditional GRU's cells are GRUs, not {:?}", d.kind);
    }
    // Marian's placement (`config/checks.rs`): the reset-after form's `h U` is one row.
    if d.norm && !(d.conditional && d.kind == CellKind::Gru(GruForm::ResetAfter)) {
        bail!("gpu attention_loop: layer normalisation is the conditional GRU's in the reset-after form, not {:?}", d.kind);
    }
    let (bt, g) = (d.batch * d.tgt_len, d.g());
    let states = if m0 { 2 } else { 1 };
    let ok = seq.elem_count() == bt * g + states * d.batch * d.hidden
        && enc.dims() == [d.batch, d.src_len, d.enc_w()]
        && w.elem_count() == d.woff().end
        && d.lens.len() == d.batch
        && d.lens.iter().all(|&l| (1..=d.src_len).contains(&l))
        && d.state_mask.as_ref().is_none_or(|m| m.len() == d.batch * d.hidden);
    if !ok {
        bail!("gpu attention_loop: inputs {:?} {:?} {:?} do not fit {d:?}", seq.dims(), enc.dims(), w.dims());
    }
    if [seq.dtype(), enc.dtype(), w.dtype()] != [DType::F32; 3] {
        bail!("gpu attention_loop: f32 only, got {:?}", seq.dtype());
    }
    Ok(())
}

/// The buffers uploaded for one pass (the source lengths, the target lengths, the mask), kept
/// while its launches run.
type Uploaded<L> = (Option<<L as Launch>::Ints>, Option<<L as Launch>::Ints>, Option<<L as Device>::Floats>);

/// The loop as a [`FusedOp`] of `(seq, enc, w)`, with the source lengths `(B)`, the target
/// lengths (`T` for every row: the loop's `all`) and the recurrent dropout mask `(B, H)` from
/// the host, or already on the device (a recorded step's: `recording.rs`).
pub(crate) struct AttnOp {
    pub d: AttnDims,
    /// Whether `seq` ends with the LSTM's `m_0 (B, H)` (else it starts from zero).
    pub m0: bool,
    pub lens: Staged<i64>,
    pub all: Staged<i64>,
    pub mask: Option<Staged<f32>>,
}

impl AttnOp {
    /// The loop over `d`'s host lengths and mask, uploaded when it runs.
    fn host(d: AttnDims, m0: bool) -> Self {
        let lens = Staged::Host(d.lens.iter().map(|&n| n as i64).collect());
        let all = Staged::Host(vec![d.tgt_len as i64; d.batch]);
        let mask = d.state_mask.clone().map(Staged::Host);
        AttnOp { d, m0, lens, all, mask }
    }

    /// The loop's view of the inputs, with what came from the host uploaded (the buffers must
    /// outlive the launches).
    fn at<L: Launch>(&self, l: &L, [seq, enc, w]: [Addr; 3]) -> Result<(At<'_>, Uploaded<L>)> {
        let d = &self.d;
        let (lens, held_lens) = self.lens.addr(l)?;
        let (all, held_all) = self.all.addr(l)?;
        let (mask, held_mask) = match &self.mask {
            Some(m) => m.addr(l)?,
            None => (Addr::NULL, None),
        };
        let m0 = if self.m0 { seq.at(d.batch * (d.tgt_len * d.g() + d.hidden)) } else { Addr::NULL };
        let x = Inputs { seq, enc, w, lens, all, mask, m0 };
        Ok((At { d, x }, (held_lens, held_all, held_mask)))
    }
}

impl<L: Launch> FusedOp<L> for AttnOp {
    const NAME: &'static str = "gpu-attention-decoder";
    type Saved = Saved<L::Floats>;

    fn out_shape(&self) -> Shape {
        Shape::from((self.d.batch * self.d.tgt_len, self.d.out_w()))
    }

    fn forward(&self, l: &L, x: [Addr; 3]) -> Result<(L::Floats, Saved<L::Floats>)> {
        let (at, _held) = self.at(l, x)?;
        match self.d.conditional {
            true => super::conditional::forward(l, &at),
            false => super::bahdanau::forward(l, &at),
        }
    }

    fn backward(&self, l: &L, x: [Addr; 3], saved: Saved<L::Floats>, out: Addr, dout: Addr) -> Result<[L::Floats; 3]> {
        let (at, _held) = self.at(l, x)?;
        match self.d.conditional {
            true => super::conditional::backward(l, &at, &saved, (out, dout)),
            false => super::bahdanau::backward(l, &at, &saved, (out, dout)),
        }
    }
}

/// [`attention_step`]: the loop's forward pass over one step, its output, weights and (an
/// LSTM's) cell states copied side by side.
struct StepOp(AttnOp);

impl StepOp {
    /// The width of a row of the result.
    fn width(&self) -> usize {
        let d = &self.0.d;
        d.out_w() + d.src_len + if self.0.m0 { d.hidden } else { 0 }
    }
}

impl<L: Launch> FusedOp<L> for StepOp {
    const NAME: &'static str = "gpu-attention-step";
    type Saved = ();

    fn out_shape(&self) -> Shape {
        Shape::from((self.0.d.batch, self.width()))
    }

    fn forward(&self, l: &L, x: [Addr; 3]) -> Result<(L::Floats, ())> {
        let (out, saved) = self.0.forward(l, x)?;
        let d = &self.0.d;
        let (r, ow, s, rw) = (d.batch, d.out_w(), d.src_len, self.width());
        let res = l.scratch(r * rw)?;
        let dst = l.addr(&res);
        let mut parts = vec![(0, l.addr(&out), ow), (ow, l.addr(&saved.alpha), s)];
        if self.0.m0 {
            parts.push((ow + s, l.addr(&saved.q), d.hidden));
        }
        for (at, src, width) in parts {
            let (dst_ld, rows, width) = (rw as i64, r as i64, width as i64);
            let a = MaskRows { dst: dst.at(at), dst_ld, src, src_ld: width, mask: Addr::NULL, rows, width };
            l.launch(&args::MASK_ROWS, r * width as usize, a)?;
        }
        Ok((res, ()))
    }

    /// Never called: the search's step runs outside the autodiff graph (`op::apply_no_bwd`).
    fn backward(&self, _: &L, _: [Addr; 3], _: (), _: Addr, _: Addr) -> Result<[L::Floats; 3]> {
        bail!("the search's decoder step has no gradient")
    }
}
