//! The gated-feedback decoder stack (`model/feedback.rs`, Chung et al. 2015 eq. 12–15) over a
//! whole batch of sequences as one candle op, with a hand-written backward pass through time
//! (`feedback_backward.rs`): the stack's kernel variant, tested against its composed form
//! (`FeedbackStack::run`) by `tests/fused_model.rs` and `tests/gradcheck.rs`.
//!
//! Inputs: the first decoder layer's outputs `s1 (B, T, n)`, the start output `h0 (B, n)` (every
//! upper layer starts from it, and it is the first layer's output before step 0), and every
//! upper layer's weights in one flat vector ([`param_len`](crate::kernels::shapes::feedback_dims::param_len) each, in the order of
//! [`LayerOffsets`](crate::kernels::shapes::feedback_dims::LayerOffsets)). Output: the top outputs `(B, T, n)`.
//!
//! Each step runs the upper layers bottom-up on the sources `S_t = [h^1_{t−1}; …; h^L_{t−1}]`
//! `(B, L·n)`. With `ρ = r` for the reset-after GRU (else 1) and `ρ' = r` for the paper's GRU
//! (else 1), layer `j` (own source index `j − 1`) computes, for its masked input `x`:
//!
//! ```text
//! g    = σ(x W_g + S U_g)                                   (B, L)   the global reset gates
//! GH   = (m ⊙ h) U + b_h                                    (B, G)   the cell's own gates
//! V    = [g_own ρ' ⊙ (m ⊙ h) | g_i ρ' ⊙ S_i, i ≠ own]       (B, L·n)
//! R    = V [U_c ; U_other]                                  (B, n)
//! h~   = tanh(gi_c + ρ ⊙ (R + b_h,c))     gi = x W + b
//! GRU:  h' = h~ + z ⊙ (h − h~);   LSTM: c' = f ⊙ c + i ⊙ h~,  h' = o ⊙ tanh(c')
//! ```
//! which is `Feedback::step` written once for both GRU forms and the LSTM (`b_h` is zero for
//! the paper's GRU and the LSTM). The candidate block of `GH` is computed and not used: one
//! GEMM over all gates is simpler than three strided ones and costs `n²` of `G·n` per row.
//!
//! Layers read each other at `t − 1`, so the op steps all of them together; rows are not split
//! across threads (the GEMMs are, through `gemm::matmul`). The forward pass keeps every step's
//! products for the backward pass (about `(2G + L·n + 4n)` values per row, layer and step).
//!
//! The per-step forward pass and what it keeps are in `feedback_forward.rs`.
use candle_core::{Result, Shape, Tensor};

use super::feedback_backward::backward;
use super::feedback_forward::{forward, Saved};
use super::op::apply;
use crate::kernels::fused_op::{FusedOp, Host};
use crate::kernels::gemm::Real;
use crate::kernels::shapes::feedback_dims::{dims, FeedbackDims, FeedbackSpec};

/// Runs the gated-feedback stack over `s1 (B, T, n)` from `h0 (B, n)` with the upper layers'
/// flat weights `params ((L−1)·param_len)`; returns the top outputs `(B, T, n)`.
/// Differentiable with respect to all three inputs.
pub fn feedback_sequence(s1: &Tensor, h0: &Tensor, params: &Tensor, spec: FeedbackSpec<'_>) -> Result<Tensor> {
    let (batch, len, hidden) = s1.dims3()?;
    if h0.dims() != [batch, hidden] {
        candle_core::bail!("feedback_sequence: s1 {:?} but h0 {:?}", s1.dims(), h0.dims());
    }
    let d = dims((batch, len, hidden), params.elem_count(), &spec)?;
    apply(FeedbackSeq(d), s1, h0, params)
}

/// The same forward pass on host slices, without dropout and without autodiff: the host
/// encoder's (`HostModel::encode`), so that search runs the training kernel's own arithmetic.
/// `shape` is `(B, T, n)`. It keeps what a backward pass would read (about `T·(L−1)` times
/// `(2G + L·n + 4n)` values per sentence), which an encoder's batch affords.
pub fn feedback_host(s1: &[f32], h0: &[f32], params: &[f32], spec: FeedbackSpec<'_>, shape: (usize, usize, usize)) -> Result<Vec<f32>> {
    let (batch, len, hidden) = shape;
    if s1.len() != batch * len * hidden || h0.len() != batch * hidden {
        candle_core::bail!("feedback_host: {} inputs and {} start values for {shape:?}", s1.len(), h0.len());
    }
    let d = dims(shape, params.len(), &spec)?;
    Ok(forward(&d, s1, h0, params).0)
}

struct FeedbackSeq(FeedbackDims);

impl<T: Real> FusedOp<Host<T>> for FeedbackSeq {
    type Saved = Saved<T>;
    const NAME: &'static str = "fused-feedback-stack";
    const SLOTS: Option<(usize, usize)> = Some((0, 1));

    fn out_shape(&self) -> Shape {
        Shape::from((self.0.batch, self.0.len, self.0.hidden))
    }

    fn forward(&self, _: &Host<T>, [s1, h0, p]: [&[T]; 3]) -> Result<(Vec<T>, Saved<T>)> {
        Ok(forward(&self.0, s1, h0, p))
    }

    fn backward(&self, _: &Host<T>, [s1, h0, p]: [&[T]; 3], sv: Saved<T>, _top: &[T], dtop: &[T]) -> Result<[Vec<T>; 3]> {
        Ok(backward(&self.0, &sv, s1, h0, p, dtop))
    }
}
