//! RNNsearch (Bahdanau et al. 2014, appendix A.2): the bidirectional encoder's annotations
//! `h_j = [→h_j; ←h_j] (B, S, 2n)`, the attention decoder (`attention_decoder.rs`, eq. A.2.2:
//! `c_i = Σ_j α_ij h_j`, `s_i = GRU(E y_{i-1}, s_{i-1}, c_i)`), the decoder's layers above the
//! first (`upper.rs`), the copy mixture's gate (`copy.rs`, `model.copy`) and the deep output
//! (`output.rs`, `t~_i = O_h s + O_y E y_{i-1} + O_c c_i`, maxout, `softmax(G t_i)`).
//! docs/MODELS.md gives every equation with its shapes.
//!
//! This file is the one place that lists RNNsearch's layers: the teacher-forced loss, the
//! candle step and the host snapshot below all read them from [`Rnnsearch`].
use candle_core::Tensor;

use super::architecture::{widen, Architecture, Forced, HostArchitecture};
use super::attention::logsumexp_last;
use super::attention_decoder::{AttentionDecoder, HostAttention};
use super::attention_memory::{AttnForced, ForcedDecoder, ForcedIn};
use super::backend::Backend;
use super::conditional_decoder::ConditionalDecoder;
use super::conditional_host::HostConditional;
use super::copy::{self, CopyGate, HostCopy, MixIn};
use super::decoder::{
    shift_outputs, AttentionMemory, DecoderDims, Encoded, HostEncoded, HostFeatures, HostMemory, HostRows, Memory, StepOut, StepScores,
};
use super::decoder_loop_gpu::{LoopWeights, StepMemory};
use super::embedding_launch;
use super::encoder::{BiRnnEncoder, Source, Stack};
use super::inputs::BatchTensors;
use super::launch_tape::{take_mask, MaskSizes, Param, StepBatch, Tape};
use super::output::{Context, DeepOutput, HostOutput, OutputDims};
use super::params::ParamBuilder;
use super::regularizer::Dropout;
use super::rnn::{host_stack, HostBatch, HostRnn};
use super::upper::UpperLayers;
use super::upper_host::HostUpper;
use crate::config::{DecoderKind, ModelConfig, OutputState, StackKind};
use crate::error::{Error, Result};
use crate::kernels::cpu::row_best::RowBest;
use crate::kernels::gpu::args::{WeightedSum, WEIGHTED_SUM};
use crate::kernels::gpu::launch::{Addr, Launch, Staged};

/// RNNsearch's layers, named as in the model file (`encoder.*`, `decoder.*`, `copy.*`,
/// `output.*`).
#[derive(Clone, Debug)]
pub struct Rnnsearch {
    pub(crate) enc: BiRnnEncoder,
    pub(crate) dec: Decoder,
    /// The decoder's layers above the first (`model.dec_layers − 1`; usually none).
    pub(crate) upper: UpperLayers,
    /// The copy mixture's gate (`model.copy`).
    pub(crate) copy: Option<CopyGate>,
    pub(crate) out: DeepOutput,
}

impl Rnnsearch {
    /// The layers for `cfg` (attention size `att`, a copy gate when `copy`), their parameters
    /// created or claimed from `pb`; `decoder`: Bahdanau's or the conditional GRU; `tied`: the
    /// target embeddings when the output projection is tied to them.
    pub fn new(cfg: &ModelConfig, att: usize, copy: bool, decoder: DecoderKind, tied: Option<&Tensor>, pb: &ParamBuilder) -> Result<Self> {
        let (m, n, kind) = (cfg.emb_dim, cfg.hidden_dim, cfg.cell_kind());
        // Gated feedback reaches RNNenc's recurrent encoder, not this bidirectional one
        // (`encoder.rs`).
        let stack = Stack { layers: cfg.enc_layers, residual: cfg.residual, kind: StackKind::Plain };
        let dec_stack = Stack { layers: cfg.dec_layers, residual: cfg.residual, kind: cfg.stack };
        let dims = OutputDims {
            state: n,
            emb: m,
            ctx: 2 * n,
            maxout: cfg.maxout_dim,
            vocab: cfg.tgt_vocab,
            layer: cfg.output_layer,
            norm: cfg.layer_norm,
        };
        let dec_dims = DecoderDims { emb: m, enc: n, hidden: n, kind };
        let dec_pb = pb.pp("decoder");
        Ok(Rnnsearch {
            enc: BiRnnEncoder::new(m, n, kind, stack, cfg.layer_norm, &pb.pp("encoder"))?,
            dec: match decoder {
                DecoderKind::Bahdanau => Decoder::Bahdanau(AttentionDecoder::new(dec_dims, att, cfg.arch.start(), &dec_pb)?),
                DecoderKind::Conditional => {
                    Decoder::Conditional(ConditionalDecoder::new(dec_dims, att, cfg.arch.start(), cfg.layer_norm, &dec_pb)?)
                }
            },
            upper: UpperLayers::new(n, kind, dec_stack, &pb.pp("decoder"))?,
            copy: if copy { Some(CopyGate::new(n + 2 * n + m, &pb.pp("copy"))?) } else { None },
            out: DeepOutput::new(dims, tied, &pb.pp("output"))?,
        })
    }
}

/// The recorded GPU step's form (`launch_step.rs`, issue 77): each layer's launch form, listed
/// here as [`Architecture::forward`] lists the layers, with the gradients' fan-in stated once.
/// The step runs one encoder and one decoder layer, no copy gate (`Backend::recorded_refusal`).
impl Rnnsearch {
    /// The arena's slots, in order: the source embedding, the layers' own, the target embedding.
    pub(crate) fn launch_slots(&self, src: &Tensor, tgt: &Tensor) -> Result<Vec<(Param, Tensor)>> {
        let mut slots = vec![(Param::SrcEmb, src.clone())];
        slots.extend(self.enc.launch_slots()?.into_iter().chain(self.dec.launch_slots()?).chain(self.out.launch_slots()?));
        slots.push((Param::TgtEmb, tgt.clone()));
        Ok(slots)
    }

    /// A batch's dropout masks `(B, S, T)`, in the order [`Rnnsearch::launch`] takes them, drawn
    /// at the composed model's sites (each its own stream, so the same masks).
    pub(crate) fn launch_masks(mut d: Option<&mut Dropout>, (b, s, t): (usize, usize, usize), z: MaskSizes) -> Vec<Option<Vec<f32>>> {
        vec![
            embedding_launch::mask(d.as_deref_mut(), true, b * s, z.emb),
            BiRnnEncoder::launch_mask(d.as_deref_mut(), b, z.hidden),
            embedding_launch::mask(d.as_deref_mut(), false, b * t, z.emb),
            Decoder::launch_mask(d.as_deref_mut(), b, z.hidden),
            DeepOutput::launch_mask(d, b * t, z.units),
        ]
    }

    /// The loss `Σ_r nll_r · w_r` into `loss`, then every gradient into the tape's arena.
    pub(crate) fn launch<L: Launch>(t: &Tape<'_, L>, x: &StepBatch<Staged<i64>, Staged<f32>>, loss: Addr) -> candle_core::Result<()> {
        let ((b, s, tl), z, l) = (x.shape, t.sizes, t.l);
        let masks = &mut x.masks.iter();
        let src = embedding_launch::forward(t, Param::SrcEmb, x.ints.src.clone(), take_mask(masks), b * s, z.src_vocab)?;
        let enc = BiRnnEncoder::launch(t, x, src.at(l), take_mask(masks))?;
        let tgt = embedding_launch::forward(t, Param::TgtEmb, x.ints.tgt_in.clone(), take_mask(masks), b * tl, z.tgt_vocab)?;
        let dec = Decoder::launch(t, x, (enc.at(l), tgt.at(l)), take_mask(masks))?;
        let out = DeepOutput::launch(t, x, (dec.at(l), tgt.at(l)), take_mask(masks))?;
        let (w, _held) = x.weights.addr(l)?;
        l.launch(&WEIGHTED_SUM, 1, WeightedSum { out: loss, x: out.at(l), w, n: (b * tl) as i64 })?;
        // Backward. The embedded targets feed the decoder and the output layer; with tied
        // embeddings the projection's gradient joins the target embedding's.
        let g = out.backward(t, w)?;
        let (dann, dey) = dec.backward(t, x, l.addr(&g.dsc))?;
        t.add_rows((l.addr(&g.dey), z.emb), (l.addr(&dey), z.emb), b * tl, z.emb)?;
        tgt.backward(t, l.addr(&g.dey))?;
        if let Some(dproj) = &g.tied {
            t.add(Param::TgtEmb, dproj)?;
        }
        let dxs = enc.backward(t, l.addr(&dann))?;
        src.backward(t, l.addr(&dxs))
    }
}

impl Architecture for Rnnsearch {
    type Host = HostRnnsearch;

    fn forward(&self, cfg: &ModelConfig, f: &Forced<'_>, mut dropout: Option<&mut Dropout>, backend: Backend) -> Result<Tensor> {
        let (b, t) = f.batch.tgt_in.dims2()?;
        let n = cfg.hidden_dim;
        let stacked = !self.upper.is_empty();
        // A stack shifts its top's outputs itself.
        let first_output = if stacked { OutputState::Current } else { cfg.output_state };
        let ann = self.enc.forward(&f.x, f.src, dropout.as_deref_mut(), backend)?;
        let x_dec = ForcedIn { ey: &f.ey, ann: &ann, src: f.src, output: first_output, want_alpha: self.copy.is_some() };
        let forced = self.dec.forward(&x_dec, dropout.as_deref_mut(), backend)?;
        let mut state_ctx = forced.state_ctx;
        if stacked {
            let s1 = state_ctx.narrow(1, 0, n)?.reshape((b, t, n))?;
            let top = self.upper.forward(&s1, &forced.start, dropout.as_deref_mut(), backend)?;
            let states = shift_outputs(&top, &self.upper.start_output(&forced.start)?, cfg.output_state)?.reshape((b * t, n))?;
            state_ctx = Tensor::cat(&[&states, &state_ctx.narrow(1, n, 2 * n)?], 1)?;
        }
        let hidden = self.out.forward(Context::PerStep(&state_ctx), &f.ey_rows, dropout, backend)?;
        if let (Some(alpha), Some(gate)) = (forced.alpha, &self.copy) {
            let g = gate.gate(&state_ctx.narrow(1, 0, n)?, &state_ctx.narrow(1, n, 2 * n)?, &f.ey_rows)?;
            return copy_nll(f.batch, &self.out.stats(&hidden, &f.batch.tgt_out, backend)?, (&alpha, &g), cfg.tgt_vocab, f.eps);
        }
        Ok((self.out.nll(&hidden, &f.batch.tgt_out, f.eps, f.cands, backend)? * &f.batch.tgt_mask)?)
    }

    fn encode(&self, x: &Tensor, src: Source<'_>, backend: Backend) -> Result<Encoded> {
        let ann = self.enc.forward(x, src, None, backend)?;
        let init = self.upper.stack_start(&self.dec.init_state(&ann, src)?)?;
        let mut mem = self.dec.memory(&ann, src.mask)?;
        // On a GPU the search steps the first decoder layer with the GPU's kernels.
        if backend.gpu() && self.dec.has_gpu_kernels() {
            mem.gpu = Some(StepMemory::new(self.dec.loop_weights(), &ann, &mem.uh, src.lens)?);
        }
        Ok(Encoded { memory: Memory::Attention(mem), init })
    }

    fn step(&self, cfg: &ModelConfig, enc: &Encoded, state: &Tensor, ey: &Tensor) -> Result<StepScores> {
        let Memory::Attention(mem) = &enc.memory else {
            return Err(Error::Config("an encoded batch of another architecture".into()));
        };
        let gi = self.dec.project(&ey.unsqueeze(1)?)?.squeeze(1)?;
        let (first, rest) = self.upper.split_state(state, cfg.layer_state_width())?;
        let out = self.dec.step(mem, &gi, &first)?;
        let (new_state, s_out) = self.upper.step_above(state, &first, rest, out.state, cfg.output_state, cfg.hidden_dim)?;
        let (Some(ctx), Some(alpha)) = (out.ctx, out.alpha) else {
            return Err(Error::Config("attention decoder produced no context".into()));
        };
        let logits = self.out.logits(&self.out.hidden(&s_out, ey, &self.out.project_context(&ctx)?)?)?;
        let log_probs = match (&self.copy, &mem.src_ext) {
            (Some(g), Some(src_ext)) => {
                let gate = g.gate(&s_out, &ctx, ey)?;
                copy::copy_log_probs(&copy::Mixture { logits: &logits, alpha: &alpha, gate: &gate, src_ext }, mem.n_ext)?
            }
            (Some(_), None) => {
                return Err(Error::Input("a copy model searches with the extended source ids (Seq2Seq::attach_copy_source)".into()))
            }
            (None, _) => logits.broadcast_sub(&logsumexp_last(&logits)?)?,
        };
        Ok(StepScores { state: new_state, log_probs, alpha: Some(alpha) })
    }

    fn host(&self, cfg: &ModelConfig) -> Result<HostRnnsearch> {
        let out = HostOutput::new(&self.out)?;
        let enc_in = |k: usize| if k == 0 { cfg.emb_dim } else { 2 * cfg.hidden_dim };
        Ok(HostRnnsearch {
            enc: self.enc.layers.iter().enumerate().map(|(k, l)| HostRnn::new(&[&l.fwd, &l.bwd], enc_in(k))).collect::<Result<_>>()?,
            dec: match &self.dec {
                Decoder::Bahdanau(d) => HostDecoder::Bahdanau(Box::new(HostAttention::new(d, cfg, &out)?)),
                Decoder::Conditional(d) => HostDecoder::Conditional(Box::new(HostConditional::new(d, cfg, &out)?)),
            },
            upper: HostUpper::new(&self.upper, cfg.cell_kind(), cfg.hidden_dim)?,
            copy: self.copy.as_ref().map(HostCopy::new).transpose()?,
            out,
        })
    }
}

/// RNNsearch's decoder (`model.decoder`): the layer the architecture calls, either way.
#[derive(Clone, Debug)]
pub(crate) enum Decoder {
    Bahdanau(AttentionDecoder),
    Conditional(ConditionalDecoder),
}

impl Decoder {
    pub(crate) fn forward(&self, x: &ForcedIn, dropout: Option<&mut Dropout>, backend: Backend) -> Result<AttnForced> {
        match self {
            Decoder::Bahdanau(d) => d.forward(x, dropout, backend),
            Decoder::Conditional(d) => d.forward(x, dropout, backend),
        }
    }

    fn init_state(&self, ann: &Tensor, src: Source<'_>) -> Result<Tensor> {
        match self {
            Decoder::Bahdanau(d) => d.init_state(ann, src),
            Decoder::Conditional(d) => d.init_state(ann, src),
        }
    }

    fn memory(&self, ann: &Tensor, src_mask: &Tensor) -> Result<AttentionMemory> {
        match self {
            Decoder::Bahdanau(d) => d.memory(ann, src_mask),
            Decoder::Conditional(d) => d.memory(ann, src_mask),
        }
    }

    /// The first cell's input terms `E y W + b` `(B, T, G)`.
    fn project(&self, ey: &Tensor) -> Result<Tensor> {
        match self {
            Decoder::Bahdanau(d) => d.rnn.project(ey),
            Decoder::Conditional(d) => d.project(ey),
        }
    }

    fn has_gpu_kernels(&self) -> bool {
        match self {
            Decoder::Bahdanau(d) => d.has_gpu_kernels(),
            Decoder::Conditional(d) => d.has_gpu_kernels(),
        }
    }

    fn loop_weights(&self) -> LoopWeights<'_> {
        match self {
            Decoder::Bahdanau(d) => d.loop_weights(),
            Decoder::Conditional(d) => d.loop_weights(),
        }
    }

    /// A search step: on the GPU's kernels where the encoding holds their memory.
    fn step(&self, mem: &AttentionMemory, gi: &Tensor, s: &Tensor) -> Result<StepOut> {
        if let Some(g) = &mem.gpu {
            let [state, ctx, alpha] = g.step(gi, s)?;
            return Ok(StepOut { state, ctx: Some(ctx), alpha: Some(alpha) });
        }
        match self {
            Decoder::Bahdanau(d) => d.step(mem, gi, s, None),
            Decoder::Conditional(d) => d.step(mem, gi, s, None),
        }
    }
}

/// The host form of [`Decoder`] (boxed: the two differ in size by half a kilobyte).
enum HostDecoder {
    Bahdanau(Box<HostAttention>),
    Conditional(Box<HostConditional>),
}

/// The copy mixture's NLL (`copy.rs`) from the `stats (B·T, 3)` of the logits over `k_y` words,
/// the attention `alpha (B·T, S)` and the gate `(B·T, 1)`.
fn copy_nll(batch: &BatchTensors, stats: &Tensor, (alpha, gate): (&Tensor, &Tensor), k_y: usize, eps: f64) -> Result<Tensor> {
    let Some(src_ext) = &batch.src_ext else {
        return Err(Error::Input("a copy model's batch needs the extended source ids (Batch::set_source_ext)".into()));
    };
    let (b, s) = src_ext.dims2()?;
    let t = batch.tgt_in.dim(1)?;
    let rows = src_ext.unsqueeze(1)?.broadcast_as((b, t, s))?.contiguous()?.reshape((b * t, s))?;
    Ok((copy::copy_nll(stats, k_y, alpha, gate, &rows, &batch.tgt_out, eps)? * &batch.tgt_mask)?)
}

/// RNNsearch's host snapshot: the same layers' host forms.
pub struct HostRnnsearch {
    enc: Vec<HostRnn>,
    dec: HostDecoder,
    upper: HostUpper,
    copy: Option<HostCopy>,
    out: HostOutput,
}

impl HostRnnsearch {
    /// What the copy gate reads of a step (`copy.rs`): its features, embeddings and sources.
    fn mix_in<'a>(
        enc: &'a HostEncoded,
        f: &'a HostFeatures,
        rows: &'a HostRows<'_>,
        want: &'a [usize],
        skip: &'a [u32],
    ) -> Option<MixIn<'a>> {
        let alpha = f.alpha.as_deref()?;
        Some(MixIn { t: &f.t, s_out: &f.s_out, ctx: &f.ctx, ey: rows.ey, alpha, rows: rows.sent, want, skip, src: enc.copy_source() })
    }
}

impl HostArchitecture for HostRnnsearch {
    fn encode(&self, cfg: &ModelConfig, x: &[f32], at: &HostBatch<'_>, threads: usize) -> Result<(HostMemory, Vec<f32>)> {
        let ann = host_stack(&self.enc, x, at, 2, cfg.residual, threads);
        let (memory, h0) = match &self.dec {
            HostDecoder::Bahdanau(d) => d.memory(&ann, (at.batch, at.len), at.lens, threads),
            HostDecoder::Conditional(d) => d.memory(&ann, (at.batch, at.len), at.lens, threads),
        };
        Ok((memory, self.upper.stack_start(h0)))
    }

    fn features(&self, cfg: &ModelConfig, enc: &HostEncoded, rows: &HostRows<'_>, want_alpha: bool) -> HostFeatures {
        let HostMemory::Attention(mem) = &enc.memory else {
            unreachable!("`encode` builds the memory of the model's own decoder");
        };
        let s_prev = rows.prev_outputs(self.upper.state_width(), cfg.hidden_dim);
        let x = rows.step_in(&s_prev, self.upper.state_width(), self.upper.first_output(cfg.output_state));
        // The copy mixture reads the attention weights whether or not they are reported.
        let want_alpha = want_alpha || self.copy.is_some();
        let first = match &self.dec {
            HostDecoder::Bahdanau(d) => d.step(mem, &enc.lens, &x, &self.out, want_alpha),
            HostDecoder::Conditional(d) => d.step(mem, &enc.lens, &x, &self.out, want_alpha),
        };
        let (state, pre, s_out) = self.upper.above(&x, first.state, first.pre, &self.out, cfg.output_state, self.copy.is_some());
        HostFeatures { state, t: self.out.activate(&pre), alpha: first.alpha, s_out, ctx: first.ctx }
    }

    /// With the copy gate, the vocabulary's best tokens mixed with the source's words
    /// (`HostCopy::mix`, the twin of `copy::copy_log_probs` in [`Architecture::step`]).
    fn best(&self, enc: &HostEncoded, f: &HostFeatures, rows: &HostRows<'_>, want: &[usize], skip: &[u32]) -> RowBest {
        let best = self.out.best(enc.shortlist.as_ref(), &f.t, want, skip, rows.threads);
        match (&self.copy, Self::mix_in(enc, f, rows, want, skip)) {
            (Some(copy), Some(x)) => copy.mix(&self.out.proj, &best, &x),
            _ => best,
        }
    }

    fn full(&self, enc: &HostEncoded, f: &HostFeatures, rows: &HostRows<'_>, width: usize) -> Vec<f32> {
        let vocab = self.out.proj.vocab_size();
        let lp = self.out.log_probs(enc.shortlist.as_ref(), &f.t, rows.sent.len());
        match (&self.copy, Self::mix_in(enc, f, rows, &[], &[])) {
            (Some(copy), Some(x)) => copy.full(&lp, width, &x),
            _ => widen(&lp, vocab, width),
        }
    }

    fn quantize(&mut self) {
        self.out.quantize();
        match &mut self.dec {
            HostDecoder::Bahdanau(d) => d.quantize(),
            HostDecoder::Conditional(d) => d.quantize(),
        }
        // The encoder's input products (once per batch, over every source position) and the
        // plain upper layers' (a gated-feedback layer's step stays `f32`).
        for layer in self.enc.iter_mut().chain(&mut self.upper.layers) {
            layer.w.quantize();
        }
    }

    fn tabulate(&mut self, emb: &[f32], threads: usize) {
        match &mut self.dec {
            HostDecoder::Bahdanau(d) => d.words.tabulate(emb, threads),
            HostDecoder::Conditional(d) => d.words.tabulate(emb, threads),
        }
    }

    fn output(&self) -> &HostOutput {
        &self.out
    }
}
