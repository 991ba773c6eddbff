//! The decoder's layers above the first (`model.dec_layers > 1`): plain recurrent layers over
//! the outputs of the layer below. The first layer is the papers' conditioned decoder (it
//! reads attention's `c_i` or the summary `c`); the deep output reads the top.
//!
//! Layer `k ≥ 2` reads `x_k`, the output of layer `k − 1`, with unit dropout (training), and
//! outputs `o_k = h_k` or, with `model.residual`, `o_k = h_k + x_k` (Wu et al. 2016); `o_1 = s`.
//! Every layer starts from the decoder's start output `h_0` (`s_0`, or RNNenc's `h'_0`), as
//! Sutskever et al. start each decoder layer from the source. Upper layers do not feed back
//! into attention, so teacher forcing runs them over whole sequences after the first layer.
//!
//! Shapes: `B` sentences, `T` target positions, `n` hidden; a stacked decoder's state is the
//! layers' states side by side, `(rows, L·w)` with `w = n` (GRU) or `2n` (LSTM).
use candle_core::{Tensor, D};

use super::backend::Backend;
use super::encoder::{cell_name, layer_scope, Stack};
use super::feedback::{Feedback, FeedbackStack};
use super::params::ParamBuilder;
use super::regularizer::{masked, stack_masks, state_tensor, Dropout, LayerMasks, Side, StackShape};
use super::rnn::{self, Rnn};
use crate::config::{CellKind, OutputState, StackKind};
use crate::error::Result;
use crate::kernels::shapes::rnn_dims::RnnSpec;

/// Layers 2… of a decoder.
#[derive(Clone, Debug)]
pub struct UpperLayers {
    pub(crate) layers: Vec<Rnn>,
    pub(crate) residual: bool,
    /// Each layer's gated-feedback weights (`model.stack = "gated-feedback"`), or empty.
    pub(crate) feedback: Vec<Feedback>,
}

impl UpperLayers {
    /// The `stack.layers − 1` layers above the first, named `layer2`, `layer3`, … under the
    /// decoder (a gated-feedback layer's extra weights under `layerK.feedback`).
    pub fn new(hidden: usize, kind: CellKind, stack: Stack, pb: &ParamBuilder) -> Result<Self> {
        let count = stack.layers.saturating_sub(1);
        let layers =
            (1..=count).map(|k| Rnn::new(hidden, hidden, kind, false, &layer_scope(pb, k).pp(cell_name(kind)))).collect::<Result<_>>()?;
        let feedback = match stack.kind {
            StackKind::Plain => Vec::new(),
            StackKind::GatedFeedback => {
                (1..=count).map(|k| Feedback::new(hidden, stack.layers, k, &layer_scope(pb, k).pp("feedback"))).collect::<Result<_>>()?
            }
        };
        Ok(UpperLayers { layers, residual: stack.residual, feedback })
    }

    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// The layers as a gated-feedback stack, if they are one.
    pub fn feedback_stack(&self) -> Option<FeedbackStack<'_>> {
        (!self.feedback.is_empty()).then_some(FeedbackStack { layers: &self.layers, feedback: &self.feedback, residual: self.residual })
    }

    /// Teacher forcing: the first layer's outputs `s1 (B, T, n)`, the start output `h0 (B, n)`
    /// → the top outputs `(B, T, n)`, each layer's masks drawn from `dropout` at its sites, in
    /// the form `backend` says. A gated-feedback stack runs as a whole, all layers step by
    /// step (each reads the layers above it at `t − 1`, `feedback.rs`).
    pub fn forward(&self, s1: &Tensor, h0: &Tensor, dropout: Option<&mut Dropout>, backend: Backend) -> Result<Tensor> {
        let (b, _, n) = s1.dims3()?;
        let shape = StackShape {
            side: Side::Decoder,
            first: 1,
            layers: self.layers.len(),
            input_len: s1.elem_count(),
            rows: b,
            hidden: n,
            dirs: 1,
        };
        let masks = stack_masks(dropout, shape);
        if let Some(stack) = self.feedback_stack() {
            return match backend.fused() || backend.gpu() {
                true => stack.run_fused(s1, h0, &masks, backend),
                false => stack.run(s1, h0, &masks),
            };
        }
        match backend.fused() || backend.gpu() {
            true => self.forward_fused(s1, h0, &masks, backend),
            false => self.forward_composed(s1, h0, &masks),
        }
    }

    /// The composed form: each layer's recurrence step by step (`rnn.rs`).
    fn forward_composed(&self, s1: &Tensor, h0: &Tensor, masks: &[LayerMasks]) -> Result<Tensor> {
        let (b, t, _) = s1.dims3()?;
        let all = Tensor::ones((b, t), s1.dtype(), s1.device())?;
        let mut x = s1.clone();
        for (rnn, mk) in self.layers.iter().zip(masks) {
            let state_mask = state_tensor(mk.state.as_deref(), b, rnn.hidden(), s1)?;
            let (h, _) = rnn.run(&rnn.project(&masked(&x, &mk.input)?)?, &all, false, state_mask.as_ref(), Some(h0))?;
            x = if self.residual { (h + &x)? } else { h };
        }
        Ok(x)
    }

    /// The fused form (`kernels::cpu::rnn_sequence`, one sequence op per layer; on a GPU its twin).
    fn forward_fused(&self, s1: &Tensor, h0: &Tensor, masks: &[LayerMasks], backend: Backend) -> Result<Tensor> {
        let (b, t, n) = s1.dims3()?;
        let lens = vec![t; b];
        let mut x = s1.clone();
        for (rnn, mk) in self.layers.iter().zip(masks) {
            let gw = rnn.kind().gates() * n;
            let (w, bias) = rnn.input_weights();
            let gi = backend.linear(&masked(&x, &mk.input)?.reshape((b * t, n))?, w, bias)?.reshape((b, t, gw))?;
            let rows = Tensor::cat(&[&rnn.bias_h()?.unsqueeze(0)?.broadcast_as((b, gw))?, h0], 1)?;
            let spec = RnnSpec { kind: rnn.kind(), lens: &lens, state_mask: mk.state.as_deref(), products: backend.products() };
            let h = backend.rnn_sequence(&gi, &rnn.u_cat()?, &rows, false, spec)?;
            x = if self.residual { (h + x)? } else { h };
        }
        Ok(x)
    }

    /// One search step: `x` the first layer's new output `(rows, n)`, `h1_prev` its output
    /// at `t − 1` (which a gated-feedback stack reads), `states` the upper layers' states
    /// `(rows, (L−1)·w)` → their new states and the top output.
    pub fn step(&self, x: &Tensor, h1_prev: &Tensor, states: &Tensor) -> Result<(Tensor, Tensor)> {
        let w = states.dim(D::Minus1)? / self.layers.len().max(1);
        if let Some(stack) = self.feedback_stack() {
            let each = (0..self.layers.len()).map(|k| Ok(states.narrow(D::Minus1, k * w, w)?.contiguous()?)).collect::<Result<Vec<_>>>()?;
            let (new, top) = stack.step(x, h1_prev, &each)?;
            return Ok((Tensor::cat(&new, D::Minus1)?, top));
        }
        let mut x = x.clone();
        let mut new = Vec::with_capacity(self.layers.len());
        for (k, rnn) in self.layers.iter().enumerate() {
            let st = rnn.step(
                &x.matmul(rnn.input_weights().0)?.broadcast_add(rnn.input_weights().1)?,
                &states.narrow(D::Minus1, k * w, w)?,
                None,
            )?;
            let h = rnn.output(&st)?;
            x = if self.residual { (h + &x)? } else { h };
            new.push(st);
        }
        Ok((Tensor::cat(&new, D::Minus1)?, x))
    }

    /// The top output of a stack whose layers' outputs are `h1` (the first) and `states`
    /// (the upper layers'): what the deep output reads as `s_{i-1}`.
    pub fn top_output(&self, h1: &Tensor, states: &Tensor) -> Result<Tensor> {
        let w = states.dim(D::Minus1)? / self.layers.len().max(1);
        let mut x = h1.clone();
        for (k, rnn) in self.layers.iter().enumerate() {
            let h = rnn.output(&states.narrow(D::Minus1, k * w, w)?)?;
            x = if self.residual { (h + &x)? } else { h };
        }
        Ok(x)
    }
}

impl UpperLayers {
    /// The whole decoder's start state `(B, L·w)` from the first layer's `(B, w)`: every layer
    /// starts from the same state.
    pub fn stack_start(&self, first: &Tensor) -> Result<Tensor> {
        if self.is_empty() {
            return Ok(first.clone());
        }
        Ok(Tensor::cat(&vec![first; self.layers.len() + 1], D::Minus1)?)
    }

    /// What the deep output reads as `s_{i-1}` at the first step of a stack started from
    /// `h0 (B, n)`: `h0`, or with residual connections the sum over the `L` layers, `L·h0`.
    pub fn start_output(&self, h0: &Tensor) -> Result<Tensor> {
        if self.residual && !self.is_empty() {
            Ok((h0 * (self.layers.len() + 1) as f64)?)
        } else {
            Ok(h0.clone())
        }
    }

    /// A decoder state `(rows, L·w)` split into the first layer's `(rows, w)` and the upper
    /// layers' `(rows, (L−1)·w)` (none without a stack).
    pub fn split_state(&self, state: &Tensor, w: usize) -> Result<(Tensor, Option<Tensor>)> {
        if self.is_empty() {
            return Ok((state.clone(), None));
        }
        let rest = state.dim(D::Minus1)? - w;
        Ok((state.narrow(D::Minus1, 0, w)?.contiguous()?, Some(state.narrow(D::Minus1, w, rest)?.contiguous()?)))
    }

    /// The output `(rows, n)` the deep output reads of a whole decoder state `(rows, L·w)`.
    fn state_top(&self, state: &Tensor, w: usize, n: usize) -> Result<Tensor> {
        let (first, rest) = self.split_state(state, w)?;
        let h1 = rnn::state_output(&first, n)?;
        match rest {
            None => Ok(h1),
            Some(r) => self.top_output(&h1, &r),
        }
    }

    /// A search step above the first layer: `prev (rows, L·w)` the decoder state before the
    /// step, `first` and `rest` its split ([`Self::split_state`]), `new_first (rows, w)` the
    /// first layer's new state, `n` the hidden size → the whole new state `(rows, L·w)` and the
    /// output the deep output reads (`which`: the top output before or after the step).
    pub fn step_above(
        &self,
        prev: &Tensor,
        first: &Tensor,
        rest: Option<Tensor>,
        new_first: Tensor,
        which: OutputState,
        n: usize,
    ) -> Result<(Tensor, Tensor)> {
        let w = first.dim(D::Minus1)?;
        let mut state = new_first;
        let mut top = rnn::state_output(&state, n)?;
        if let Some(r) = rest {
            let (new_rest, new_top) = self.step(&top, &rnn::state_output(first, n)?, &r)?;
            state = Tensor::cat(&[&state, &new_rest], D::Minus1)?;
            top = new_top;
        }
        let s_out = match which {
            OutputState::Previous => self.state_top(prev, w, n)?,
            OutputState::Current => top,
        };
        Ok((state, s_out))
    }
}
