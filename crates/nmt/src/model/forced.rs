//! [`Seq2Seq`]'s teacher-forced loss: the one wiring of the layers for training and scoring.
//! Each layer's `forward` draws its own dropout masks at its sites (`regularizer::Site`, each
//! from its own stream of the update's key) and runs its fused form (`crate::kernels`) or its
//! composed candle form, as the model's [`Backend`](super::Backend) says; the composed forms
//! are the reference twin (`tests/fused_model.rs` checks loss and every gradient, f64 to
//! 1e-10, f32 to 2e-5).
//!
//! A batch flows: embeddings (`embedding.rs`) → encoder (`encoder.rs`) → the first decoder
//! layer over every target position (`attention_decoder.rs`, `summary_decoder.rs`) → the
//! layers above it (`upper.rs`) → the deep output's maxout layer and NLL (`output.rs`), or the
//! copy mixture (`copy.rs`). On the fused path that is a handful of graph nodes per batch
//! instead of a few per time step.
//!
//! Shapes: `B` sentences, `S`/`T` padded source/target lengths, `m` embedding, `n` hidden,
//! `l` maxout units.
use candle_core::Tensor;

use super::attention_decoder::ForcedIn;
use super::decoder::shift_outputs;
use super::encoder::Source;
use super::inputs::BatchTensors;
use super::output::Context;
use super::regularizer::Regularizer;
use super::{copy, embedding, Core, Seq2Seq};
use crate::config::OutputState;
use crate::error::Result;

impl Seq2Seq {
    /// Per-token negative log-likelihood `(B·T)`, zero at padding; label-smoothed and with
    /// dropout when training (`reg`).
    pub(super) fn token_nll(&self, batch: &BatchTensors, reg: Option<&mut Regularizer>) -> Result<Tensor> {
        let eps = reg.as_ref().map_or(0.0, |r| r.label_smoothing);
        let mut dropout = reg.map(|r| &mut r.dropout);
        let backend = self.backend;
        let (b, t) = batch.tgt_in.dims2()?;
        let (m, n) = (self.cfg.emb_dim, self.cfg.hidden_dim);
        let lens: Vec<usize> = batch.src_lengths.iter().map(|&l| l.max(1)).collect();
        let src = Source { mask: &batch.src_mask, lens: &lens };
        let src_mask = dropout.as_deref_mut().and_then(|d| d.source_mask(batch.src.elem_count(), m));
        let x = embedding::lookup(&self.src_emb, &batch.src, src_mask, backend)?;
        // A copy model's extended ids (past the vocabulary) enter the decoder as `<unk>`.
        let tgt_in = copy::vocab_ids(&batch.tgt_in, self.cfg.tgt_vocab)?;
        let tgt_mask = dropout.as_deref_mut().and_then(|d| d.target_mask(b * t, m));
        let ey = embedding::lookup(&self.tgt_emb, &tgt_in, tgt_mask, backend)?;
        let stacked = !self.upper.is_empty();
        // A stack shifts its top's outputs itself.
        let first_output = if stacked { OutputState::Current } else { self.cfg.output_state };
        let ey_rows = ey.reshape((b * t, m))?;
        match &self.core {
            Core::Search { enc, dec } => {
                let ann = enc.forward(&x, src, dropout.as_deref_mut(), backend)?;
                let x_dec = ForcedIn { ey: &ey, ann: &ann, src, output: first_output, want_alpha: self.copy.is_some() };
                let forced = dec.forward(&x_dec, dropout.as_deref_mut(), backend)?;
                let mut state_ctx = forced.state_ctx;
                if stacked {
                    let s1 = state_ctx.narrow(1, 0, n)?.reshape((b, t, n))?;
                    let top = self.upper.forward(&s1, &forced.start, dropout.as_deref_mut(), backend)?;
                    let states = shift_outputs(&top, &self.start_output(&forced.start)?, self.cfg.output_state)?.reshape((b * t, n))?;
                    state_ctx = Tensor::cat(&[&states, &state_ctx.narrow(1, n, 2 * n)?], 1)?;
                }
                let hidden = self.out.forward(Context::PerStep(&state_ctx), &ey_rows, dropout, backend)?;
                if let (Some(alpha), Some(gate)) = (forced.alpha, &self.copy) {
                    let g = gate.gate(&state_ctx.narrow(1, 0, n)?, &state_ctx.narrow(1, n, 2 * n)?, &ey_rows)?;
                    return self.copy_nll(batch, &self.out.logits(&hidden)?, &alpha, &g, eps);
                }
                Ok((self.out.nll(&hidden, &batch.tgt_out, eps, backend)? * &batch.tgt_mask)?)
            }
            Core::Enc { enc, dec } => {
                let last = enc.forward(&x, src, dropout.as_deref_mut(), backend)?;
                let (c, h0) = dec.summarise(&last)?;
                let mut cur = dec.forward(&ey, &c, &h0, dropout.as_deref_mut(), backend)?;
                if stacked {
                    cur = self.upper.forward(&cur, &h0, dropout.as_deref_mut(), backend)?;
                }
                let states = shift_outputs(&cur, &self.start_output(&h0)?, self.cfg.output_state)?;
                let hidden = self.out.forward(Context::PerSentence { states: &states, c: &c }, &ey_rows, dropout, backend)?;
                Ok((self.out.nll(&hidden, &batch.tgt_out, eps, backend)? * &batch.tgt_mask)?)
            }
        }
    }

    /// The copy mixture's NLL (`copy.rs`) from the vocabulary's `logits (B·T, K_y)`, the
    /// attention `alpha (B·T, S)` and the gate `(B·T, 1)`.
    fn copy_nll(&self, batch: &BatchTensors, logits: &Tensor, alpha: &Tensor, gate: &Tensor, eps: f64) -> Result<Tensor> {
        let Some(src_ext) = &batch.src_ext else {
            return Err(crate::Error::Input("a copy model's batch needs the extended source ids (Batch::set_source_ext)".into()));
        };
        let (b, s) = src_ext.dims2()?;
        let t = batch.tgt_in.dim(1)?;
        let rows = src_ext.unsqueeze(1)?.broadcast_as((b, t, s))?.contiguous()?.reshape((b * t, s))?;
        let mix = copy::Mixture { logits, alpha, gate, src_ext: &rows };
        Ok((copy::copy_nll(&mix, &batch.tgt_out, eps)? * &batch.tgt_mask)?)
    }

    /// What the deep output reads as `s_{i-1}` at the first step of a stack started from
    /// `h0`: `h0`, or with residual connections the sum over the `L` layers, `L·h0`.
    fn start_output(&self, h0: &Tensor) -> Result<Tensor> {
        if self.cfg.residual && !self.upper.is_empty() {
            Ok((h0 * self.cfg.dec_layers as f64)?)
        } else {
            Ok(h0.clone())
        }
    }
}
