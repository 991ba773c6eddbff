//! The decoder side of [`Seq2Seq`] in search: a (stacked) decoder's states and one step
//! (`decode_step`, the candle search's; the host search steps the layers' host forms, and
//! teacher forcing is `forced.rs`). Shapes as in `mod.rs`.
use candle_core::{Tensor, D};

use super::attention::logsumexp_last;
use super::decoder::{AttentionMemory, Encoded, Memory, StepOut};
use super::{copy, rnn, Core, Seq2Seq, Step};
use crate::config::OutputState;
use crate::error::Result;

impl Seq2Seq {
    /// The width `w` of one decoder layer's state: `n`, or the LSTM's `2n`.
    pub fn layer_state_width(&self) -> usize {
        self.cfg.layer_state_width()
    }

    /// The whole decoder's start state `(B, L·w)` from the first layer's: every layer starts
    /// from the same state (`upper.rs`).
    pub(super) fn stack_start(&self, first: &Tensor) -> Result<Tensor> {
        if self.upper.is_empty() {
            return Ok(first.clone());
        }
        Ok(Tensor::cat(&vec![first; self.cfg.dec_layers], D::Minus1)?)
    }

    /// The first layer's part of a stacked decoder state, and the upper layers' part.
    pub(super) fn split_state(&self, state: &Tensor) -> Result<(Tensor, Option<Tensor>)> {
        if self.upper.is_empty() {
            return Ok((state.clone(), None));
        }
        let w = self.layer_state_width();
        let rest = state.dim(D::Minus1)? - w;
        Ok((state.narrow(D::Minus1, 0, w)?.contiguous()?, Some(state.narrow(D::Minus1, w, rest)?.contiguous()?)))
    }

    /// The output the deep output reads from a (stacked) decoder state: the top layer's.
    pub(super) fn top_output(&self, state: &Tensor) -> Result<Tensor> {
        let (first, rest) = self.split_state(state)?;
        let h1 = self.dec_output(&first)?;
        match rest {
            None => Ok(h1),
            Some(r) => self.upper.top_output(&h1, &r),
        }
    }

    pub(super) fn project_targets(&self, ey: &Tensor) -> Result<Tensor> {
        match &self.core {
            Core::Search { dec, .. } => dec.rnn.project(ey),
            Core::Enc { dec, .. } => dec.project(ey),
        }
    }

    /// The decoder output `s (rows, n)` of a decoder state (all of it for the GRU; the LSTM's
    /// `h` part).
    pub(super) fn dec_output(&self, state: &Tensor) -> Result<Tensor> {
        rnn::state_output(state, self.cfg.hidden_dim)
    }

    /// The first layer's step. The architecture decides the memory (`Seq2Seq::encode`); an
    /// `Encoded` of another model is the caller's error.
    fn dec_step(&self, memory: &Memory, gi: &Tensor, s: &Tensor) -> Result<StepOut> {
        match (&self.core, memory) {
            (Core::Search { dec, .. }, Memory::Attention(mem)) => dec.step(mem, gi, s, None),
            (Core::Enc { dec, .. }, Memory::Summary(mem)) => dec.step(&mem.gate_ctx, gi, s, None),
            _ => Err(crate::Error::Config("an encoded batch of another architecture".into())),
        }
    }

    /// `O_c c` for the deep output: per step for RNNsearch (`ctx` rows), per sentence for RNNenc.
    pub(super) fn output_context(&self, memory: &Memory, ctx: Option<&Tensor>, rows: usize) -> Result<Tensor> {
        match (memory, ctx) {
            (_, Some(c)) => self.out.project_context(c),
            (Memory::Summary(mem), None) => {
                let (b, k) = mem.out_ctx.dims2()?;
                let per = rows / b.max(1);
                Ok(mem.out_ctx.unsqueeze(1)?.broadcast_as((b, per, k))?.reshape((rows, k))?)
            }
            (Memory::Attention(_), None) => Err(crate::Error::Config("attention decoder produced no context".into())),
        }
    }

    /// One decoding step for `rows` hypotheses: `state (rows, n)`, previous words `y (rows)` u32.
    pub fn decode_step(&self, enc: &Encoded, state: &Tensor, y_prev: &Tensor) -> Result<Step> {
        let ey = self.tgt_emb.index_select(&copy::vocab_ids(y_prev, self.cfg.tgt_vocab)?, 0)?;
        let gi = self.project_targets(&ey.unsqueeze(1)?)?.squeeze(1)?;
        let (first, rest) = self.split_state(state)?;
        let mut out = self.dec_step(&enc.memory, &gi, &first)?;
        let mut top = self.dec_output(&out.state)?;
        if let Some(r) = rest {
            let (new_rest, new_top) = self.upper.step(&top, &self.dec_output(&first)?, &r)?;
            out.state = Tensor::cat(&[&out.state, &new_rest], D::Minus1)?;
            top = new_top;
        }
        let s_out = match self.cfg.output_state {
            OutputState::Previous => self.top_output(state)?,
            OutputState::Current => top,
        };
        let rows = ey.dim(0)?;
        let ctx_proj = self.output_context(&enc.memory, out.ctx.as_ref(), rows)?;
        let logits = self.out.logits(&self.out.hidden(&s_out, &ey, &ctx_proj)?)?;
        let log_probs = match (&self.copy, &enc.memory, &out.alpha, &out.ctx) {
            (Some(g), Memory::Attention(AttentionMemory { src_ext: Some(src_ext), n_ext, .. }), Some(alpha), Some(c)) => {
                let gate = g.gate(&s_out, c, &ey)?;
                copy::copy_log_probs(&copy::Mixture { logits: &logits, alpha, gate: &gate, src_ext }, *n_ext)?
            }
            (Some(_), ..) => {
                return Err(crate::Error::Input("a copy model searches with the extended source ids (Seq2Seq::attach_copy_source)".into()))
            }
            _ => logits.broadcast_sub(&logsumexp_last(&logits)?)?,
        };
        Ok(Step { state: out.state, log_probs, alpha: out.alpha })
    }

    /// Gives an encoded batch its extended source ids `(B, S)` (copy models' search).
    pub fn attach_copy_source(&self, enc: &mut Encoded, ext: &Tensor) -> Result<()> {
        if let Memory::Attention(mem) = &mut enc.memory {
            mem.n_ext = copy::extended_count(ext, self.cfg.tgt_vocab)?;
            mem.src_ext = Some(ext.clone());
        }
        Ok(())
    }
}
