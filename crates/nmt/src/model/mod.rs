//! The encoder-decoder: [`Seq2Seq`] selects RNNsearch or RNNenc from a [`ModelConfig`] and offers
//! what training, search and scoring need: `encode`, `decode_step`, `loss`, `sentence_log_probs`.
//!
//! Shapes: `B` sentences, `S` padded source length, `T` padded target length, `m` embedding,
//! `n` hidden, `l` maxout units, `K_y` target vocabulary.
pub mod attention;
pub mod copy;
pub mod decoder;
pub mod encoder;
mod fused;
pub mod grconv;
pub mod gru;
pub mod inputs;
pub mod lstm;
pub mod output;
pub mod params;
pub mod regularizer;
pub mod rnn;
pub mod upper;

use candle_core::{DType, Device, Tensor, D};

use crate::config::{Arch, EncoderKind, Impl, ModelConfig, OutputState};
use crate::error::Result;
use attention::logsumexp_last;
use decoder::{AttentionDecoder, DecoderDims, Encoded, Memory, StepOut, SummaryDecoder};
use encoder::{BiRnnEncoder, RnnEncoder, Stack, SummaryEncoder};
pub use inputs::BatchTensors;
use output::{DeepOutput, OutputDims};
use params::{Init, Params};
use regularizer::{Dropout, Regularizer};
use upper::UpperLayers;

enum Core {
    Search { enc: BiRnnEncoder, dec: AttentionDecoder },
    Enc { enc: SummaryEncoder, dec: SummaryDecoder },
}

/// A borrowed view of the encoder and decoder of either architecture.
pub enum Layers<'a> {
    Search { enc: &'a BiRnnEncoder, dec: &'a AttentionDecoder },
    Enc { enc: &'a SummaryEncoder, dec: &'a SummaryDecoder },
}

/// An RNN encoder-decoder with its parameters.
pub struct Seq2Seq {
    pub cfg: ModelConfig,
    pub params: Params,
    src_emb: Tensor,
    tgt_emb: Tensor,
    core: Core,
    /// The decoder's layers above the first (`model.dec_layers − 1`; usually none).
    upper: UpperLayers,
    /// The copy mixture's gate (`model.copy`).
    copy: Option<copy::CopyGate>,
    out: DeepOutput,
    /// How the training loss is computed (see [`Seq2Seq::set_impl`]).
    imp: Impl,
}

/// What teacher forcing computes ([`Seq2Seq::teacher_forced_logits`] is its first part).
struct Forced {
    logits: Tensor,
    alpha: Option<Tensor>,
    gate: Option<Tensor>,
}

/// Teacher-forced loss of a batch.
pub struct Loss {
    /// Mean negative log-likelihood per target token (scalar, differentiable).
    pub mean: Tensor,
    /// Number of target tokens (including `</s>`).
    pub tokens: usize,
}

/// One search step's result for `rows` hypotheses.
pub struct Step {
    /// New decoder state `(rows, n)` (the LSTM's `[s; cell]`: `(rows, 2n)`).
    pub state: Tensor,
    /// `log p(y_i | y_<i, x)` `(rows, K_y)`.
    pub log_probs: Tensor,
    /// Attention weights `(rows, S)` (RNNsearch only).
    pub alpha: Option<Tensor>,
}

impl Seq2Seq {
    /// A freshly initialised model (paper initialisation, seeded).
    pub fn fresh(cfg: &ModelConfig, seed: u64, dtype: DType, device: &Device) -> Result<Self> {
        let params = Params::fresh(seed, cfg.init_std, cfg.orthogonal_recurrent, dtype, device);
        Self::build(cfg, params)
    }

    /// Builds the layers, creating or claiming every parameter from `params`.
    pub fn build(cfg: &ModelConfig, params: Params) -> Result<Self> {
        cfg.validate()?;
        let pb = params.builder();
        let (m, n) = (cfg.emb_dim, cfg.hidden_dim);
        let src_emb = pb.get("src_emb", &[cfg.src_vocab, m], Init::Normal)?;
        let tgt_emb = pb.get("tgt_emb", &[cfg.tgt_vocab, m], Init::Normal)?;
        let kind = cfg.cell_kind();
        let dims = DecoderDims { emb: m, enc: n, hidden: n, kind };
        let stack = Stack { layers: cfg.enc_layers, residual: cfg.residual };
        let (core, ctx_dim) = match cfg.arch {
            Arch::Rnnsearch => (
                Core::Search {
                    enc: BiRnnEncoder::new(m, n, kind, stack, &pb.pp("encoder"))?,
                    dec: AttentionDecoder::new(dims, cfg.att_dim, &pb.pp("decoder"))?,
                },
                2 * n,
            ),
            Arch::Rnnenc => (
                Core::Enc {
                    enc: match cfg.encoder {
                        EncoderKind::Rnn => SummaryEncoder::Rnn(RnnEncoder::new(m, n, kind, stack, &pb.pp("encoder"))?),
                        EncoderKind::Grconv => SummaryEncoder::GrConv(grconv::GrConv::new(m, n, &pb.pp("encoder").pp("grconv"))?),
                    },
                    dec: SummaryDecoder::new(dims, &pb.pp("decoder"))?,
                },
                n,
            ),
        };
        let upper = UpperLayers::new(n, kind, cfg.dec_layers - 1, cfg.residual, &pb.pp("decoder"))?;
        let copy = if cfg.copy { Some(copy::CopyGate::new(n + 2 * n + m, &pb.pp("copy"))?) } else { None };
        let tied = cfg.tie_target_embeddings.then_some(&tgt_emb);
        let dims = OutputDims { state: n, emb: m, ctx: ctx_dim, maxout: cfg.maxout_dim, vocab: cfg.tgt_vocab };
        let out = DeepOutput::new(dims, tied, &pb.pp("output"))?;
        let unclaimed = params.unclaimed();
        if !unclaimed.is_empty() {
            return Err(crate::Error::Config(format!(
                "the model file has tensors this configuration does not use: {}",
                unclaimed.join(", ")
            )));
        }
        Ok(Seq2Seq { cfg: cfg.clone(), params, src_emb, tgt_emb, core, upper, copy, out, imp: Impl::Fused })
    }

    pub fn device(&self) -> &Device {
        &self.params.device
    }

    pub fn dtype(&self) -> DType {
        self.params.dtype
    }

    /// A recurrent-dropout mask `(rows, n)` as a tensor of the model's dtype (composed path).
    fn state_mask(&self, dropout: Option<&mut Dropout>, rows: usize) -> Result<Option<Tensor>> {
        let n = self.cfg.hidden_dim;
        match dropout.and_then(|d| d.recurrent(rows, n)) {
            Some(m) => Ok(Some(Tensor::from_vec(m, (rows, n), self.device())?.to_dtype(self.dtype())?)),
            None => Ok(None),
        }
    }

    /// Encodes a padded source batch `src: (B, S)` u32 with `mask: (B, S)` (1 at words).
    pub fn encode(&self, src: &Tensor, mask: &Tensor, mut dropout: Option<&mut Dropout>) -> Result<Encoded> {
        let (b, s) = src.dims2()?;
        let mut x = self.src_emb.index_select(&src.flatten_all()?, 0)?.reshape((b, s, self.cfg.emb_dim))?;
        if let Some(d) = dropout.as_deref_mut() {
            x = d.source(&x)?;
        }
        match &self.core {
            Core::Search { enc, dec } => {
                let (annotations, back_first) = enc.forward(&x, mask, dropout)?;
                let uh = dec.att.precompute(&annotations)?;
                let mask_bias = ((mask - 1.0)? * 1e9)?;
                let init = self.stack_start(&dec.init_state(&back_first)?)?;
                Ok(Encoded { memory: Memory::Attention { annotations, uh, mask_bias, src_ext: None, n_ext: 0 }, init })
            }
            Core::Enc { enc, dec } => {
                let last = enc.forward(&x, mask, dropout)?;
                let (c, h0) = dec.summarise(&last)?;
                let gate_ctx = c.matmul(&dec.c)?;
                let out_ctx = self.out.project_context(&c)?;
                Ok(Encoded { memory: Memory::Summary { c, gate_ctx, out_ctx }, init: self.stack_start(&dec.start(&h0)?)? })
            }
        }
    }

    /// The width `w` of one decoder layer's state: `n`, or the LSTM's `2n`.
    pub fn layer_state_width(&self) -> usize {
        match self.cfg.cell_kind() {
            crate::config::CellKind::Gru(_) => self.cfg.hidden_dim,
            crate::config::CellKind::Lstm => 2 * self.cfg.hidden_dim,
        }
    }

    /// The whole decoder's start state `(B, L·w)` from the first layer's: every layer starts
    /// from the same state (`upper.rs`).
    fn stack_start(&self, first: &Tensor) -> Result<Tensor> {
        if self.upper.is_empty() {
            return Ok(first.clone());
        }
        Ok(Tensor::cat(&vec![first; self.cfg.dec_layers], D::Minus1)?)
    }

    /// The first layer's part of a stacked decoder state, and the upper layers' part.
    fn split_state(&self, state: &Tensor) -> Result<(Tensor, Option<Tensor>)> {
        if self.upper.is_empty() {
            return Ok((state.clone(), None));
        }
        let w = self.layer_state_width();
        let rest = state.dim(D::Minus1)? - w;
        Ok((state.narrow(D::Minus1, 0, w)?.contiguous()?, Some(state.narrow(D::Minus1, w, rest)?.contiguous()?)))
    }

    /// The output the deep output reads from a (stacked) decoder state: the top layer's.
    fn top_output(&self, state: &Tensor) -> Result<Tensor> {
        let (first, rest) = self.split_state(state)?;
        let h1 = self.dec_output(&first)?;
        match rest {
            None => Ok(h1),
            Some(r) => self.upper.top_output(&h1, &r),
        }
    }

    fn project_targets(&self, ey: &Tensor) -> Result<Tensor> {
        match &self.core {
            Core::Search { dec, .. } => dec.rnn.project(ey),
            Core::Enc { dec, .. } => dec.project(ey),
        }
    }

    /// The decoder output `s (rows, n)` of a decoder state (all of it for the GRU; the LSTM's
    /// `h` part).
    fn dec_output(&self, state: &Tensor) -> Result<Tensor> {
        rnn::state_output(state, self.cfg.hidden_dim)
    }

    fn dec_step(&self, memory: &Memory, gi: &Tensor, s: &Tensor, state_mask: Option<&Tensor>) -> Result<StepOut> {
        match &self.core {
            Core::Search { dec, .. } => dec.step(memory, gi, s, state_mask),
            Core::Enc { dec, .. } => dec.step(memory, gi, s, state_mask),
        }
    }

    /// `O_c c` for the deep output: per step for RNNsearch (`ctx` rows), per sentence for RNNenc.
    fn output_context(&self, memory: &Memory, ctx: Option<&Tensor>, rows: usize) -> Result<Tensor> {
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

    /// Logits of every target position, teacher-forced: `tgt_in: (B, T)` → `(B·T, K_y)`.
    pub fn teacher_forced_logits(&self, enc: &Encoded, tgt_in: &Tensor, dropout: Option<&mut Dropout>) -> Result<Tensor> {
        Ok(self.teacher_forced(enc, tgt_in, dropout)?.logits)
    }

    /// Teacher forcing: the logits and, for a copy model, the attention `(B·T, S)` and the
    /// gate `(B·T, 1)` (`copy.rs`).
    fn teacher_forced(&self, enc: &Encoded, tgt_in: &Tensor, mut dropout: Option<&mut Dropout>) -> Result<Forced> {
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
            hidden = d.apply(&hidden)?;
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

    /// Chooses the loss's implementation. `Fused` (the default) runs the kernels for a model on
    /// the CPU in f32 or f64; on another device or dtype the composed ops run whatever is set.
    pub fn set_impl(&mut self, imp: Impl) {
        self.imp = imp;
    }

    /// The implementation the loss runs on, given the device and dtype.
    pub fn loss_impl(&self) -> Impl {
        let host = self.device().is_cpu() && matches!(self.dtype(), DType::F32 | DType::F64);
        if self.imp == Impl::Fused && host {
            Impl::Fused
        } else {
            Impl::Ops
        }
    }

    /// Per-token negative log-likelihood `(B·T)`, zero at padding; label-smoothed and with
    /// dropout when training (`reg`).
    fn token_nll(&self, batch: &BatchTensors, reg: Option<&mut Regularizer>) -> Result<Tensor> {
        let eps = reg.as_ref().map_or(0.0, |r| r.label_smoothing);
        let mut dropout = reg.map(|r| &mut r.dropout);
        if self.loss_impl() == Impl::Fused {
            return self.token_nll_fused(batch, dropout, eps);
        }
        let enc = self.encode(&batch.src, &batch.src_mask, dropout.as_deref_mut())?;
        let forced = self.teacher_forced(&enc, &batch.tgt_in, dropout)?;
        if let (Some(alpha), Some(gate)) = (&forced.alpha, &forced.gate) {
            let Some(src_ext) = &batch.src_ext else {
                return Err(crate::Error::Input("a copy model's batch needs the extended source ids (Batch::set_source_ext)".into()));
            };
            let (b, s) = src_ext.dims2()?;
            let t = batch.tgt_in.dim(1)?;
            let rows = src_ext.unsqueeze(1)?.broadcast_as((b, t, s))?.contiguous()?.reshape((b * t, s))?;
            let mix = copy::Mixture { logits: &forced.logits, alpha, gate, src_ext: &rows };
            return Ok((copy::copy_nll(&mix, &batch.tgt_out, eps)? * &batch.tgt_mask)?);
        }
        let logits = forced.logits;
        // log p(y) = logit_y − logsumexp(logits): no (B·T, K_y) log-softmax tensor is built.
        let picked = logits.gather(&batch.tgt_out.unsqueeze(1)?, 1)?.squeeze(1)?;
        let lse = logsumexp_last(&logits)?.squeeze(D::Minus1)?;
        let nll = if eps > 0.0 {
            // Cross-entropy against (1−ε)·onehot + ε/K_y: lse − (1−ε) z_y − ε mean(z).
            let mean = logits.mean(D::Minus1)?;
            ((lse - (picked * (1.0 - eps))?)? - (mean * eps)?)?
        } else {
            (lse - picked)?
        };
        Ok((nll * &batch.tgt_mask)?)
    }

    /// Mean token NLL of a batch; with dropout and label smoothing (`reg`) for training.
    pub fn loss(&self, batch: &BatchTensors, reg: Option<&mut Regularizer>) -> Result<Loss> {
        let nll = self.token_nll(batch, reg)?;
        let mean = (nll.sum_all()? / batch.tokens.max(1) as f64)?;
        Ok(Loss { mean, tokens: batch.tokens })
    }

    /// `log p(y | x)` of each sentence pair of the batch (teacher-forced, `</s>` included).
    pub fn sentence_log_probs(&self, batch: &BatchTensors) -> Result<Vec<f64>> {
        let nll = self.token_nll(batch, None)?;
        let (b, t) = batch.tgt_in.dims2()?;
        let per = nll.reshape((b, t))?.sum(1)?.to_dtype(DType::F64)?.to_vec1::<f64>()?;
        Ok(per.into_iter().map(|x| -x).collect())
    }

    /// One decoding step for `rows` hypotheses: `state (rows, n)`, previous words `y (rows)` u32.
    pub fn decode_step(&self, enc: &Encoded, state: &Tensor, y_prev: &Tensor) -> Result<Step> {
        let ey = self.tgt_emb.index_select(&copy::vocab_ids(y_prev, self.cfg.tgt_vocab)?, 0)?;
        let gi = self.project_targets(&ey.unsqueeze(1)?)?.squeeze(1)?;
        let (first, rest) = self.split_state(state)?;
        let mut out = self.dec_step(&enc.memory, &gi, &first, None)?;
        let mut top = self.dec_output(&out.state)?;
        if let Some(r) = rest {
            let (new_rest, new_top) = self.upper.step(&top, &r)?;
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

    /// The deep output layer's weights (the host search reads them).
    pub fn output(&self) -> &DeepOutput {
        &self.out
    }

    /// The encoder and decoder layers, typed: the host search reads its weights from them.
    pub fn layers(&self) -> Layers<'_> {
        match &self.core {
            Core::Search { enc, dec } => Layers::Search { enc, dec },
            Core::Enc { enc, dec } => Layers::Enc { enc, dec },
        }
    }

    /// The copy mixture's gate, if the model has one (the host search reads it).
    pub fn copy_gate(&self) -> Option<&copy::CopyGate> {
        self.copy.as_ref()
    }

    /// The decoder's layers above the first (the host search reads their weights).
    pub fn upper_layers(&self) -> &UpperLayers {
        &self.upper
    }

    /// Source and target embeddings `(K_x, m)`, `(K_y, m)`.
    pub fn embeddings(&self) -> (&Tensor, &Tensor) {
        (&self.src_emb, &self.tgt_emb)
    }

    /// grConv's gates `[ω_c, ω_l, ω_r]` over one source sentence `ids` (in the order the
    /// encoder reads them, `</s>` included): `gates[t − 1][j]` for node `j` of level `t`
    /// (`nmt plot grconv`). An error for other encoders.
    pub fn grconv_gates(&self, ids: &[u32]) -> Result<Vec<Vec<[f32; 3]>>> {
        let Core::Enc { enc: SummaryEncoder::GrConv(g), .. } = &self.core else {
            return Err(crate::Error::Config("this model has no grConv encoder".into()));
        };
        let ids = Tensor::from_vec(ids.to_vec(), ids.len(), self.device())?;
        let x = self.src_emb.index_select(&ids, 0)?.unsqueeze(0)?;
        let (_, tree) = g.run(&x, &[ids.dim(0)?], true)?;
        tree.gates
            .iter()
            .map(|level| {
                let v = level.squeeze(0)?.to_dtype(DType::F32)?.to_vec2::<f32>()?;
                Ok(v.into_iter().map(|r| [r[0], r[1], r[2]]).collect())
            })
            .collect()
    }

    /// Whether the model has attention weights to report (RNNsearch).
    pub fn has_attention(&self) -> bool {
        matches!(self.core, Core::Search { .. })
    }

    /// Total number of trainable scalars.
    pub fn num_parameters(&self) -> usize {
        self.params.named_vars().iter().map(|(_, v)| v.elem_count()).sum()
    }
}
