//! The gated-feedback stack's kernel forms (`feedback.rs` holds the equations and the composed
//! reference twin): [`FeedbackStack::run_fused`] for fused training, one op over the whole
//! sequence with a hand-written backward pass (`kernels/cpu/feedback_op.rs`), and
//! [`HostFeedbackStack`], the same kernel's forward pass on host slices for the encoder that
//! search runs (`HostModel::encode`, `snapshot.rs`). A decoder's stack in search steps with
//! [`super::feedback::layer_step`] instead: search advances one target position at a time.
//!
//! Both hand the kernel every upper layer's weights as one flat vector, in the order of
//! `kernels::cpu::feedback_op::param_len`'s layout: `W (n, G)`, `b (G)`, `U (n, G)`, `b_h (G)`,
//! `w_g (n, L)`, `u_g (L·n, L)`, `u_other ((L−1)·n, n)`, layer after layer.
use candle_core::Tensor;

use super::backend::Backend;
use super::feedback::FeedbackStack;
use super::regularizer::LayerMasks;
use super::rnn::Rnn;
use crate::config::CellKind;
use crate::error::{Error, Result};
use crate::kernels::cpu::feedback_op::feedback_host;
use crate::kernels::shapes::feedback_dims::{FeedbackSpec, LayerDropout};

impl FeedbackStack<'_> {
    /// The upper layers' weights as the kernel's flat vector (`cat` sends each weight its own
    /// gradient).
    fn flat_params(&self) -> Result<Tensor> {
        let mut parts = Vec::with_capacity(7 * self.layers.len());
        for (rnn, fb) in self.layers.iter().zip(self.feedback) {
            let (w, b) = rnn.input_weights();
            parts.extend([w.flatten_all()?, b.clone(), rnn.u_cat()?.flatten_all()?, rnn.bias_h()?]);
            parts.extend([fb.w_g.flatten_all()?, fb.u_g.flatten_all()?, fb.u_other.flatten_all()?]);
        }
        Ok(Tensor::cat(&parts, 0)?)
    }

    /// The cell of the stack's layers.
    fn kind(&self) -> Result<CellKind> {
        self.layers.first().map(Rnn::kind).ok_or_else(|| Error::Config("a gated-feedback stack needs an upper layer".into()))
    }

    /// The fused form of [`FeedbackStack::run`]: the same inputs and masks, the stack as one
    /// op (`kernels::cpu::feedback_op::feedback_sequence`, or on a GPU its twin: `backend`).
    pub fn run_fused(&self, s1: &Tensor, h0: &Tensor, masks: &[LayerMasks], backend: Backend) -> Result<Tensor> {
        let dropout: Vec<LayerDropout<'_>> = (0..self.layers.len())
            .map(|k| {
                masks.get(k).map_or_else(LayerDropout::default, |m| LayerDropout { input: m.input.as_deref(), state: m.state.as_deref() })
            })
            .collect();
        let spec = FeedbackSpec { kind: self.kind()?, layers: self.layers.len() + 1, residual: self.residual, dropout: &dropout };
        Ok(backend.feedback_sequence(s1, h0, &self.flat_params()?, spec)?)
    }
}

/// A gated-feedback stack's weights on the host, for a whole-sequence forward pass (the
/// encoder's in search).
pub struct HostFeedbackStack {
    params: Vec<f32>,
    kind: CellKind,
    /// The stack's layer count `L`, its first (plain) layer included.
    layers: usize,
    residual: bool,
    hidden: usize,
}

impl HostFeedbackStack {
    pub fn new(stack: &FeedbackStack<'_>) -> Result<Self> {
        let kind = stack.kind()?;
        let params = stack.flat_params()?.to_dtype(candle_core::DType::F32)?.to_vec1::<f32>()?;
        let hidden = stack.layers[0].hidden();
        Ok(HostFeedbackStack { params, kind, layers: stack.layers.len() + 1, residual: stack.residual, hidden })
    }

    /// The first layer's outputs `s1 (B, T, n)`, every layer starting from zero → the top
    /// outputs `(B, T, n)`.
    pub fn run(&self, s1: &[f32], batch: usize) -> Result<Vec<f32>> {
        let n = self.hidden;
        let len = s1.len() / (batch * n).max(1);
        let none = vec![LayerDropout::default(); self.layers - 1];
        let spec = FeedbackSpec { kind: self.kind, layers: self.layers, residual: self.residual, dropout: &none };
        Ok(feedback_host(s1, &vec![0.0; batch * n], &self.params, spec, (batch, len, n))?)
    }
}
