//! The decoder side of [`Seq2Seq`]: a (stacked) decoder's states, teacher forcing over a whole
//! target sequence, and one search step (`decode_step`, which both searches' candle path and
//! the reference twin use). Shapes as in `mod.rs`.
use candle_core::{Tensor, D};

use super::attention::logsumexp_last;
use super::decoder::{Encoded, Memory, StepOut};
use super::regularizer::{Dropout, Site};
use super::{copy, rnn, Core, Forced, Seq2Seq, Step};
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

    pub(super) fn dec_step(&self, memory: &Memory, gi: &Tensor, s: &Tensor, state_mask: Option<&Tensor>) -> Result<StepOut> {
        match &self.core {
            Core::Search { dec, .. } => dec.step(memory, gi, s, state_mask),
            Core::Enc { dec, .. } => dec.step(memory, gi, s, state_mask),
        }
    }

    /// `O_c c` for the deep output: per step for RNNsearch (`ctx` rows), per sentence for RNNenc.
    pub(super) fn output_context(&self, memory: &Memory, ctx: Option<&Tensor>, rows: usize) -> Result<Tensor> {
        match (memory, ctx) {
            (_, Some(c)) => self.out.project_context(c),
            (Memory::Summary { out_ctx, .. }, None) => {
                let (b, k) = out_ctx.dims2()?;
                let per = rows / b.max(1);
                Ok(out_ctx.unsqueeze(1)?.broadcast_as((b, per, k))?.reshape((rows, k))?)
            }
            (Memory::Attention { .. }, None) => Err(crate::Error::Config("attention decoder produced no context".into())),
        }
    }

    /// Teacher forcing: the logits and, for a copy model, the attention `(B·T, S)` and the
    /// gate `(B·T, 1)` (`copy.rs`).
    pub(super) fn teacher_forced(&self, enc: &Encoded, tgt_in: &Tensor, mut dropout: Option<&mut Dropout>) -> Result<Forced> {
        let (b, t) = tgt_in.dims2()?;
        let m = self.cfg.emb_dim;
        let tgt_in = copy::vocab_ids(tgt_in, self.cfg.tgt_vocab)?;
        let mut ey = self.tgt_emb.index_select(&tgt_in.flatten_all()?, 0)?.reshape((b, t, m))?;
        if let Some(d) = dropout.as_deref_mut() {
            ey = d.target(&ey)?;
        }
        let gi = self.project_targets(&ey)?;
        let state_mask = self.state_mask(dropout.as_deref_mut(), b)?;
        // The first layer step by step; the layers above it over the whole sequence after.
        let (mut s, _) = self.split_state(&enc.init)?;
        let h0 = self.dec_output(&s)?;
        let (mut firsts, mut ctxs, mut alphas) = (Vec::with_capacity(t), Vec::with_capacity(t), Vec::new());
        for i in 0..t {
            let out = self.dec_step(&enc.memory, &gi.narrow(1, i, 1)?.squeeze(1)?, &s, state_mask.as_ref())?;
            firsts.push(self.dec_output(&out.state)?);
            if let Some(c) = out.ctx {
                ctxs.push(c);
            }
            if let (Some(a), Some(_)) = (out.alpha, &self.copy) {
                alphas.push(a);
            }
            s = out.state;
        }
        let n = self.cfg.hidden_dim;
        let mut top = Tensor::stack(&firsts, 1)?;
        if !self.upper.is_empty() {
            top = self.upper.run(&top, &h0, dropout.as_deref_mut())?;
        }
        let states = match self.cfg.output_state {
            OutputState::Current => top,
            OutputState::Previous => {
                let start = self.top_output(&enc.init)?.unsqueeze(1)?;
                Tensor::cat(&[&start, &top.narrow(1, 0, t - 1)?], 1)?
            }
        }
        .reshape((b * t, n))?;
        let ctx = if ctxs.is_empty() {
            None
        } else {
            let c = Tensor::stack(&ctxs, 1)?;
            let d = c.dim(2)?;
            Some(c.reshape((b * t, d))?)
        };
        let ctx_proj = self.output_context(&enc.memory, ctx.as_ref(), b * t)?;
        let ey = ey.reshape((b * t, m))?;
        let mut hidden = self.out.hidden(&states, &ey, &ctx_proj)?;
        if let Some(d) = dropout {
            hidden = d.apply(Site::Maxout, &hidden)?;
        }
        let logits = self.out.logits(&hidden)?;
        let (alpha, gate) = match (&self.copy, ctx) {
            (Some(g), Some(c)) => {
                let a = Tensor::stack(&alphas, 1)?;
                let s_len = a.dim(2)?;
                (Some(a.reshape((b * t, s_len))?), Some(g.gate(&states, &c, &ey)?))
            }
            _ => (None, None),
        };
        Ok(Forced { logits, alpha, gate })
    }

    /// One decoding step for `rows` hypotheses: `state (rows, n)`, previous words `y (rows)` u32.
    pub fn decode_step(&self, enc: &Encoded, state: &Tensor, y_prev: &Tensor) -> Result<Step> {
        let ey = self.tgt_emb.index_select(&copy::vocab_ids(y_prev, self.cfg.tgt_vocab)?, 0)?;
        let gi = self.project_targets(&ey.unsqueeze(1)?)?.squeeze(1)?;
        let (first, rest) = self.split_state(state)?;
        let mut out = self.dec_step(&enc.memory, &gi, &first, None)?;
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
            (Some(g), Memory::Attention { src_ext: Some(src_ext), n_ext, .. }, Some(alpha), Some(c)) => {
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
        if let Memory::Attention { src_ext, n_ext, .. } = &mut enc.memory {
            *n_ext = copy::extended_count(ext, self.cfg.tgt_vocab)?;
            *src_ext = Some(ext.clone());
        }
        Ok(())
    }
}
