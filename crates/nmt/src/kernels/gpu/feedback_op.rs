//! The gated-feedback stack's GPU twin as a candle op (`op.rs`'s plumbing): the forward pass
//! is `feedback_forward.rs`, the backward pass `feedback_backward.rs`.
use candle_core::{bail, DType, Result, Shape, Tensor};

use super::feedback_backward::backward;
use super::feedback_forward::{forward, Saved, Stack};
use super::launch::{Addr, Launch};
use crate::kernels::fused_op::FusedOp;
use crate::kernels::shapes::feedback_dims::{dims, FeedbackSpec};

/// Runs the stack over `s1 (B, T, n)` from `h0 (B, n)` with the flat weights `params`
/// (`kernels::cpu::feedback_op::feedback_sequence`'s contract); returns the top outputs `(B, T, n)`.
/// `f32` only.
pub fn feedback_sequence(s1: &Tensor, h0: &Tensor, params: &Tensor, spec: FeedbackSpec<'_>) -> Result<Tensor> {
    let (batch, len, hidden) = s1.dims3()?;
    if h0.dims() != [batch, hidden] {
        bail!("gpu feedback_sequence: s1 {:?} but h0 {:?}", s1.dims(), h0.dims());
    }
    if [s1.dtype(), h0.dtype(), params.dtype()] != [DType::F32; 3] {
        bail!("gpu feedback_sequence: f32 only, got {:?}", s1.dtype());
    }
    let d = dims((batch, len, hidden), params.elem_count(), &spec)?;
    super::op::apply(Stack { d }, s1, h0, params)
}

impl<L: Launch> FusedOp<L> for Stack {
    const NAME: &'static str = "gpu-feedback-stack";
    type Saved = Saved<L::Floats>;

    fn out_shape(&self) -> Shape {
        let z = self.sz();
        Shape::from((z.b, z.t, z.n))
    }

    fn forward(&self, l: &L, x: [Addr; 3]) -> Result<(L::Floats, Saved<L::Floats>)> {
        forward(self, l, x)
    }

    fn backward(&self, l: &L, x: [Addr; 3], sv: Saved<L::Floats>, _out: Addr, dtop: Addr) -> Result<[L::Floats; 3]> {
        backward(self, l, x, &sv, dtop)
    }
}
