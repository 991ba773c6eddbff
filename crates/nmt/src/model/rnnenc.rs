//! RNNenc (Cho et al. 2014, appendix A): an encoder that reads the source into one summary
//! `c = tanh(V h^(T))` (a recurrent encoder, `encoder.rs`, plain or gated-feedback, or grConv,
//! `grconv.rs`), the summary decoder (`summary_decoder.rs`: `c` enters every gate and the deep
//! output), the decoder's layers above the first (`upper.rs`) and the deep output (`output.rs`).
//! docs/MODELS.md gives every equation with its shapes.
//!
//! This file is the one place that lists RNNenc's layers: the teacher-forced loss, the candle
//! step and the host snapshot below all read them from [`Rnnenc`].
use candle_core::Tensor;

use super::architecture::{Architecture, Forced, HostArchitecture};
use super::attention::logsumexp_last;
use super::backend::Backend;
use super::decoder::{shift_outputs, DecoderDims, Encoded, HostEncoded, HostFeatures, HostMemory, HostRows, Memory, StepScores};
use super::encoder::{RnnEncoder, Source, Stack, SummaryEncoder};
use super::feedback_fused::HostFeedbackStack;
use super::grconv::{GrConv, HostGrConv};
use super::output::{Context, DeepOutput, HostOutput, OutputDims};
use super::params::ParamBuilder;
use super::regularizer::Dropout;
use super::rnn::{host_stack, HostBatch, HostRnn};
use super::summary_decoder::{HostSummary, SummaryDecoder};
use super::upper::UpperLayers;
use super::upper_host::HostUpper;
use crate::config::{EncoderKind, ModelConfig};
use crate::error::{Error, Result};

/// RNNenc's layers, named as in the model file (`encoder.*`, `decoder.*`, `output.*`).
#[derive(Clone, Debug)]
pub struct Rnnenc {
    enc: SummaryEncoder,
    dec: SummaryDecoder,
    /// The decoder's layers above the first (`model.dec_layers − 1`; usually none).
    upper: UpperLayers,
    pub(crate) out: DeepOutput,
}

impl Rnnenc {
    /// The layers for `cfg` with the `encoder` asked for, their parameters created or claimed
    /// from `pb`; `tied` as for [`Rnnsearch::new`](super::rnnsearch::Rnnsearch::new).
    pub fn new(cfg: &ModelConfig, encoder: EncoderKind, tied: Option<&Tensor>, pb: &ParamBuilder) -> Result<Self> {
        let (m, n, kind) = (cfg.emb_dim, cfg.hidden_dim, cfg.cell_kind());
        // Gated feedback reaches this recurrent encoder too (`model.stack`).
        let enc_stack = Stack { layers: cfg.enc_layers, residual: cfg.residual, kind: cfg.stack };
        let dec_stack = Stack { layers: cfg.dec_layers, residual: cfg.residual, kind: cfg.stack };
        let dims =
            OutputDims { state: n, emb: m, ctx: n, maxout: cfg.maxout_dim, vocab: cfg.tgt_vocab, layer: cfg.output_layer, norm: false };
        Ok(Rnnenc {
            enc: match encoder {
                EncoderKind::Rnn => SummaryEncoder::Rnn(RnnEncoder::new(m, n, kind, enc_stack, &pb.pp("encoder"))?),
                EncoderKind::Grconv => SummaryEncoder::GrConv(GrConv::new(m, n, &pb.pp("encoder").pp("grconv"))?),
            },
            dec: SummaryDecoder::new(DecoderDims { emb: m, enc: n, hidden: n, kind }, &pb.pp("decoder"))?,
            upper: UpperLayers::new(n, kind, dec_stack, &pb.pp("decoder"))?,
            out: DeepOutput::new(dims, tied, &pb.pp("output"))?,
        })
    }

    /// The grConv encoder, if this model has one (`nmt plot grconv`).
    pub(crate) fn grconv(&self) -> Option<&GrConv> {
        match &self.enc {
            SummaryEncoder::GrConv(g) => Some(g),
            SummaryEncoder::Rnn(_) => None,
        }
    }
}

impl Architecture for Rnnenc {
    type Host = HostRnnenc;

    fn forward(&self, cfg: &ModelConfig, f: &Forced<'_>, mut dropout: Option<&mut Dropout>, backend: Backend) -> Result<Tensor> {
        let last = self.enc.forward(&f.x, f.src, dropout.as_deref_mut(), backend)?;
        let (c, h0) = self.dec.summarise(&last)?;
        let mut cur = self.dec.forward(&f.ey, &c, &h0, dropout.as_deref_mut(), backend)?;
        if !self.upper.is_empty() {
            cur = self.upper.forward(&cur, &h0, dropout.as_deref_mut(), backend)?;
        }
        let states = shift_outputs(&cur, &self.upper.start_output(&h0)?, cfg.output_state)?;
        let hidden = self.out.forward(Context::PerSentence { states: &states, c: &c }, &f.ey_rows, dropout, backend)?;
        Ok((self.out.nll(&hidden, &f.batch.tgt_out, f.eps, f.cands, backend)? * &f.batch.tgt_mask)?)
    }

    fn encode(&self, x: &Tensor, src: Source<'_>, backend: Backend) -> Result<Encoded> {
        let last = self.enc.forward(x, src, None, backend)?;
        let (c, h0) = self.dec.summarise(&last)?;
        let memory = self.dec.memory(&c, self.out.project_context(&c)?)?;
        Ok(Encoded { memory: Memory::Summary(memory), init: self.upper.stack_start(&self.dec.start(&h0)?)? })
    }

    fn step(&self, cfg: &ModelConfig, enc: &Encoded, state: &Tensor, ey: &Tensor) -> Result<StepScores> {
        let Memory::Summary(mem) = &enc.memory else {
            return Err(Error::Config("an encoded batch of another architecture".into()));
        };
        let gi = self.dec.project(&ey.unsqueeze(1)?)?.squeeze(1)?;
        let (first, rest) = self.upper.split_state(state, cfg.layer_state_width())?;
        let out = self.dec.step(&mem.gate_ctx, &gi, &first, None)?;
        let (new_state, s_out) = self.upper.step_above(state, &first, rest, out.state, cfg.output_state, cfg.hidden_dim)?;
        // `O_c c` once per sentence, broadcast to the sentence's rows.
        let rows = ey.dim(0)?;
        let (b, k) = mem.out_ctx.dims2()?;
        let ctx_proj = mem.out_ctx.unsqueeze(1)?.broadcast_as((b, rows / b.max(1), k))?.reshape((rows, k))?;
        let logits = self.out.logits(&self.out.hidden(&s_out, ey, &ctx_proj)?)?;
        let log_probs = logits.broadcast_sub(&logsumexp_last(&logits)?)?;
        Ok(StepScores { state: new_state, log_probs, alpha: None })
    }

    fn host(&self, cfg: &ModelConfig) -> Result<HostRnnenc> {
        let n = cfg.hidden_dim;
        // Under a gated-feedback stack the first layer runs alone, then the stack.
        let (plain, feedback) = match &self.enc {
            SummaryEncoder::Rnn(e) => match e.feedback_stack() {
                Some(stack) => (&e.layers[..1], Some(HostFeedbackStack::new(&stack)?)),
                None => (&e.layers[..], None),
            },
            SummaryEncoder::GrConv(_) => (&[][..], None),
        };
        let enc_in = |k: usize| if k == 0 { cfg.emb_dim } else { n };
        Ok(HostRnnenc {
            enc: plain.iter().enumerate().map(|(k, l)| HostRnn::new(&[l], enc_in(k))).collect::<Result<_>>()?,
            feedback,
            grconv: self.grconv().map(HostGrConv::new).transpose()?,
            dec: HostSummary::new(&self.dec, n)?,
            upper: HostUpper::new(&self.upper, cfg.cell_kind(), n)?,
            out: HostOutput::new(&self.out)?,
        })
    }
}

/// RNNenc's host snapshot: the same layers' host forms.
pub struct HostRnnenc {
    /// The recurrent encoder's plain layers (the first only, under a gated-feedback stack;
    /// none for grConv).
    enc: Vec<HostRnn>,
    feedback: Option<HostFeedbackStack>,
    grconv: Option<HostGrConv>,
    dec: HostSummary,
    upper: HostUpper,
    out: HostOutput,
}

impl HostArchitecture for HostRnnenc {
    fn encode(&self, cfg: &ModelConfig, x: &[f32], at: &HostBatch<'_>, threads: usize) -> Result<(HostMemory, Vec<f32>)> {
        let (s, n) = (at.len, cfg.hidden_dim);
        let mut out = host_stack(&self.enc, x, at, 1, cfg.residual, threads);
        if let Some(stack) = &self.feedback {
            out = stack.run(&out, at.batch)?;
        }
        let last: Vec<f32> = match &self.grconv {
            Some(g) => g.summaries(x, at.lens, threads),
            // Each sentence's top output at its last word (`encoder::last_outputs`).
            None => at.lens.iter().enumerate().flat_map(|(r, &l)| out[(r * s + l.min(s) - 1) * n..][..n].iter().copied()).collect(),
        };
        let (memory, h0) = self.dec.memory(&last, &self.out, threads);
        Ok((memory, self.upper.stack_start(h0)))
    }

    fn features(&self, cfg: &ModelConfig, enc: &HostEncoded, rows: &HostRows<'_>, _want_alpha: bool) -> HostFeatures {
        let HostMemory::Summary { gate_ctx, out_ctx } = &enc.memory else {
            unreachable!("`encode` builds the memory of the model's own decoder");
        };
        let s_prev = rows.prev_outputs(self.upper.state_width(), cfg.hidden_dim);
        let x = rows.step_in(&s_prev, self.upper.state_width(), self.upper.first_output(cfg.output_state));
        let first = self.dec.step(gate_ctx, out_ctx, &x, &self.out);
        let (state, pre, s_out) = self.upper.above(&x, first.state, first.pre, &self.out, cfg.output_state, false);
        HostFeatures { state, t: self.out.activate(&pre), alpha: None, s_out, ctx: Vec::new() }
    }

    fn quantize(&mut self) {
        self.out.quantize();
        self.dec.quantize();
        for layer in self.enc.iter_mut().chain(&mut self.upper.layers) {
            layer.w.quantize();
        }
    }

    fn tabulate(&mut self, emb: &[f32], threads: usize) {
        self.dec.words.tabulate(emb, threads);
    }

    fn output(&self) -> &HostOutput {
        &self.out
    }
}
