//! The conditional GRU decoder (Sennrich et al. 2017, "Nematus", §2.3; Marian's `s2s`), the
//! `model.decoder = "conditional"` choice of RNNsearch, in its three forms. At step `i`:
//!
//! ```text
//! s'_i = GRU₁(E y_{i-1}, s_{i-1})          (B, n)   the word just emitted, before attending
//! c_i  = attention(s'_i, h)                (B, 2n)  `attention.rs`, queried by s'_i
//! s_i  = GRU₂(c_i, s'_i)                   (B, n)   GRU₂'s input projection reads c_i alone
//! ```
//! from `s_0 = tanh(←h_1 W_s + b_s)` (`attention_memory.rs`); the deep output reads
//! `s_i`, `E y_{i-1}` and `c_i` as for Bahdanau's decoder. Bahdanau's attention at step `i`
//! is queried by `s_{i-1}`, which has not read `y_{i-1}`: here the query has. Both cells are
//! GRUs in the `model.gru` form (`model.cell = "lstm"` is refused by `ModelConfig::validate`).
//! Recurrent dropout masks `s_{i-1}` where it enters `U₁`.
//!
//! - [`ConditionalDecoder::step`]: the composed candle step (the candle search, the GPU);
//! - [`ConditionalDecoder::forward`]: teacher forcing, in one kernel (`kernels::cpu::conditional`
//!   through `kernels::cpu::attention_op`), its GPU twin (`decoder_gpu.rs`, with or without layer
//!   normalisation) or step by step on composed ops (the reference twin);
//! - [`HostConditional::step`](super::conditional_host::HostConditional::step): one search
//!   step for `R` rows on host slices (`conditional_host.rs`).
use candle_core::Tensor;

use super::attention::Attention;
use super::attention_memory::{attention_memory, forced_steps, AttnForced, DecoderStart, ForcedDecoder, ForcedIn};
use super::decoder::{shift_outputs, AttentionMemory, DecoderDims, StepOut};
use super::encoder::Source;
use super::params::ParamBuilder;
use super::regularizer::state_tensor;
use super::rnn::Rnn;
use super::{decoder_gpu, decoder_loop_gpu};
use crate::config::{CellKind, OutputState, Precision, StartState};
use crate::error::{Error, Result};
use crate::kernels::cpu::{attention_op, linear, norm_rows};
use crate::kernels::shapes::attn_dims::AttnDims;

/// The conditional GRU decoder: `decoder.gru.*` (GRU₁, input `E y`), `decoder.gru2.*` (GRU₂,
/// input `c`), `decoder.attention.*`, `decoder.w_s`, `decoder.b_s`.
#[derive(Clone, Debug)]
pub struct ConditionalDecoder {
    pub(crate) rnn1: Rnn,
    pub(crate) rnn2: Rnn,
    pub(crate) start: DecoderStart,
    pub(crate) att: Attention,
}

impl ConditionalDecoder {
    /// `norm`: with layer normalisation in every layer (Marian's `s2s`, `layer_norm.rs`).
    pub fn new(dims: DecoderDims, att: usize, start: StartState, norm: bool, pb: &ParamBuilder) -> Result<Self> {
        let DecoderDims { emb, enc, hidden, kind } = dims;
        if kind == CellKind::Lstm {
            return Err(Error::Config("model.decoder = \"conditional\" is the conditional GRU: it needs model.cell = \"gru\"".into()));
        }
        Ok(ConditionalDecoder {
            rnn1: Rnn::new(emb, hidden, kind, norm, &pb.pp("gru"))?,
            rnn2: Rnn::new(2 * enc, hidden, kind, norm, &pb.pp("gru2"))?,
            start: DecoderStart::new(enc, hidden, start, norm, pb)?,
            att: Attention::new(hidden, 2 * enc, att, norm, &pb.pp("attention"))?,
        })
    }

    /// `s_0 (B, n)`, the start state (a GRU's state is its output).
    pub fn init_state(&self, ann: &Tensor, src: Source<'_>) -> Result<Tensor> {
        self.start.output(ann, src)
    }

    pub fn memory(&self, ann: &Tensor, src_mask: &Tensor) -> Result<AttentionMemory> {
        attention_memory(&self.att, ann, src_mask)
    }

    /// `gi = E y_{i-1} W₁ + b₁` `(B, T, G)` from `ey (B, T, m)`.
    pub fn project(&self, ey: &Tensor) -> Result<Tensor> {
        self.rnn1.project(ey)
    }

    /// One step from `gi (batch, G)` and `s_{i-1} (batch, n)`: `s_i`, `c_i`, `α_i`.
    pub fn step(&self, mem: &AttentionMemory, gi: &Tensor, s: &Tensor, state_mask: Option<&Tensor>) -> Result<StepOut> {
        let s1 = self.rnn1.step(gi, s, state_mask)?;
        let (ctx, alpha) = self.att.attend(&s1, &mem.annotations, &mem.uh, &mem.mask_bias)?;
        let gi2 = self.rnn2.project(&ctx.unsqueeze(1)?)?.squeeze(1)?;
        let state = self.rnn2.step(&gi2, &s1, None)?;
        Ok(StepOut { state, ctx: Some(ctx), alpha: Some(alpha) })
    }
}

impl ForcedDecoder for ConditionalDecoder {
    fn hidden(&self) -> usize {
        self.rnn1.hidden()
    }

    fn forward_composed(&self, x: &ForcedIn, mask: Option<&Tensor>) -> Result<AttnForced> {
        let mem = self.memory(x.ann, x.src.mask)?;
        let s0 = self.start.output(x.ann, x.src)?;
        let gi = self.project(x.ey)?;
        forced_steps(x, s0.clone(), s0, |i, s| self.step(&mem, &gi.narrow(1, i, 1)?.squeeze(1)?, s, mask), |s| Ok(s.clone()))
    }

    /// The fused form: `s_0`, `U_a h_j` and all steps in one op (`kernels::cpu::conditional`).
    /// The copy mixture's `α` is recomputed: `s'_i` from the op's `s_{i-1}` rows in one batched
    /// GRU₁ step (composed), then the weights (one op, `kernels::cpu::attention_weights`).
    fn forward_fused(&self, x: &ForcedIn, state_mask: Option<Vec<f32>>, products: Precision) -> Result<AttnForced> {
        let (b, t, m) = x.ey.dims3()?;
        let sizes =
            x.attn_dims(self.rnn1.hidden(), self.att.u_a.dim(1)?, self.rnn1.kind(), self.start.kind, state_mask.clone(), products)?;
        let dims = AttnDims { conditional: true, norm: self.start.norm.is_some(), ..sizes };
        let (w1, b1) = self.rnn1.input_weights();
        // `E y W₁` over the whole sequence: with layer normalisation `LN(E y W₁)·γ + b₁`, composed.
        let ey = x.ey.reshape((b * t, m))?;
        let gie = match self.rnn1.norm() {
            None => linear::linear(&ey, w1, b1, products)?,
            Some(g) => norm_rows::layer_norm_op(&ey.matmul(w1)?, &g.x)?.broadcast_add(b1)?,
        };
        let (att, (w2, b2)) = (&self.att, self.rnn2.input_weights());
        let (u2, bh2, u1, bh1) = (self.rnn2.u_cat()?, self.rnn2.bias_h()?, self.rnn1.u_cat()?, self.rnn1.bias_h()?);
        let mut parts = vec![&att.w_a, &att.b_a, &att.v_a, w2, &u2, &bh2, &u1, &bh1, b2];
        // The gains, where `AttnDims::woff` places them.
        let gains = match (self.rnn1.norm(), self.rnn2.norm(), &att.norm, &self.start.norm) {
            (Some(g1), Some(g2), Some(ga), Some(gs)) => Some(([&g1.h, &g2.x, &g2.h, &ga.w], [&ga.u, gs])),
            (None, None, None, None) => None,
            _ => return Err(Error::Config("layer normalisation in some of the conditional decoder's layers only".into())),
        };
        parts.extend(gains.iter().flat_map(|g| g.0));
        parts.extend([&att.u_a, &self.start.w_s, &self.start.b_s]);
        parts.extend(gains.iter().flat_map(|g| g.1));
        let packed = parts.iter().map(|p| p.flatten_all()).collect::<candle_core::Result<Vec<_>>>()?;
        let state_ctx = attention_op::attention_decoder(&gie, x.ann, &Tensor::cat(&packed, 0)?, dims)?;
        let s0 = self.start.output(x.ann, x.src)?;
        let alpha = self.forced_alpha(x, &state_ctx, &s0, &gie, (state_mask, true))?;
        Ok(AttnForced { state_ctx, alpha, start: s0 })
    }

    /// Always: both cells are GRUs (`new` refuses the LSTM), and the loop and the search's
    /// step run them with or without layer normalisation (`kernels/gpu/conditional.rs`).
    fn has_gpu_kernels(&self) -> bool {
        true
    }

    /// The GPU form (`decoder_gpu.rs`).
    fn forward_gpu(&self, x: &ForcedIn, state_mask: Option<Vec<f32>>) -> Result<AttnForced> {
        let s0 = self.start.output(x.ann, x.src)?;
        let mask = x.want_alpha.then(|| state_mask.clone()).flatten();
        let (state_ctx, gie) = decoder_gpu::forced_loop(x, self.loop_weights(), &s0, state_mask)?;
        let alpha = self.forced_alpha(x, &state_ctx, &s0, &gie, (mask, false))?;
        Ok(AttnForced { state_ctx, alpha, start: s0 })
    }
}

impl ConditionalDecoder {
    /// The weights as the GPU's loop and step pack them: GRU₂ reads the context.
    pub(crate) fn loop_weights(&self) -> decoder_loop_gpu::LoopWeights<'_> {
        decoder_loop_gpu::LoopWeights { att: &self.att, cell: &self.rnn2, wc: self.rnn2.input_weights().0, first: Some(&self.rnn1) }
    }

    /// The copy mixture's `α (B·T, S)` when asked: `s'_i` from the teacher-forced `s_{i-1}` rows
    /// (`state_ctx`, `s_0`) in one batched GRU₁ step (composed) from `gie (B·T, G)`, then the
    /// weights (one op on the CPU kernels, `fused`; composed on a GPU).
    fn forced_alpha(
        &self,
        x: &ForcedIn,
        state_ctx: &Tensor,
        s0: &Tensor,
        gie: &Tensor,
        (state_mask, fused): (Option<Vec<f32>>, bool),
    ) -> Result<Option<Tensor>> {
        if !x.want_alpha {
            return Ok(None);
        }
        let (b, t, _) = x.ey.dims3()?;
        let (s, n) = (x.ann.dim(1)?, self.rnn1.hidden());
        let s_out = state_ctx.narrow(1, 0, n)?.reshape((b, t, n))?;
        let prev = match x.output {
            OutputState::Previous => s_out,
            OutputState::Current => shift_outputs(&s_out, s0, OutputState::Previous)?,
        };
        // The mask of each sentence at each of its steps.
        let mask_rows = state_mask.map(|m| m.chunks(n).flat_map(|row| std::iter::repeat_n(row, t).flatten().copied()).collect::<Vec<_>>());
        let mask = state_tensor(mask_rows.as_deref(), b * t, n, x.ey)?;
        let s1 = self.rnn1.step(gie, &prev.reshape((b * t, n))?, mask.as_ref())?;
        let mem = self.memory(x.ann, x.src.mask)?;
        Ok(Some(self.att.weights_all(&s1.reshape((b, t, n))?, &mem.uh, (&mem.mask_bias, x.src.lens), fused)?.reshape((b * t, s))?))
    }
}
