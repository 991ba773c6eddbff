//! What both RNNsearch decoders (`attention_decoder.rs`, `conditional_decoder.rs`) read of the
//! encoder, written once: the start state `s_0 = tanh(p W_s + b_s)` and the attention's memory
//! of a batch, in the candle form and the host form; and their composed teacher forcing
//! ([`forced_steps`], [`ForcedIn`], [`AttnForced`]) and the teacher-forced `forward` that picks
//! the fused or composed form ([`ForcedDecoder`]). `p` summarises the annotations as
//! `model.decoder_start` says (`kernels/cpu/start_pool.rs`): `←h_1`, the backward half of the first
//! annotation, which has read the whole sentence (Bahdanau et al. 2014, appendix A.2.2); `→h_len`;
//! or their mean over the sentence (Nematus, Marian's `s2s`). With layer normalisation
//! (`layer_norm.rs`) `s_0 = tanh(LN(p W_s)·γ_s + b_s)`, and the memory's keys are the
//! attention's normalised ones (`attention.rs`).
use candle_core::Tensor;

use super::attention::Attention;
use super::backend::Backend;
use super::decoder::{shift_outputs, AttentionMemory, HostAttnMemory, HostMemory, StepOut};
use super::encoder::Source;
use super::layer_norm::{ln_rows, maybe_norm};
use super::params::{Init, ParamBuilder};
use super::precomputed::ContextTerms;
use super::regularizer::{state_tensor, Dropout, Side, Site};
use crate::config::{CellKind, OutputState, Precision, StartState};
use crate::error::Result;
use crate::kernels::cpu::start_pool;
use crate::kernels::gemm::{matmul, Mat};
use crate::kernels::shapes::attn_dims::summary_width;
use crate::kernels::shapes::attn_dims::AttnDims;
use crate::model::dense::{affine, host, tanh_in_place};

/// `W_s (P, n)` and `b_s (n)`, registered as the decoder's `w_s`, `b_s`; `P` is `n_enc`, or
/// `2n_enc` for the mean; layer normalisation's `γ_s (n)` as `ln_s`.
#[derive(Clone, Debug)]
pub struct DecoderStart {
    pub(crate) kind: StartState,
    pub(crate) w_s: Tensor,
    pub(crate) b_s: Tensor,
    pub(crate) norm: Option<Tensor>,
}

impl DecoderStart {
    /// `norm`: with layer normalisation.
    pub fn new(enc: usize, hidden: usize, kind: StartState, norm: bool, pb: &ParamBuilder) -> Result<Self> {
        let p = summary_width(kind, 2 * enc);
        let (w_s, b_s) = (pb.get("w_s", &[p, hidden], Init::Normal)?, pb.get("b_s", &[hidden], Init::Zeros)?);
        let norm = if norm { Some(pb.get("ln_s", &[hidden], Init::Ones)?) } else { None };
        Ok(DecoderStart { kind, w_s, b_s, norm })
    }

    /// `s_0 = tanh(p W_s + b_s) (B, n)` from the annotations `(B, S, 2n_enc)` of `src`.
    pub fn output(&self, ann: &Tensor, src: Source<'_>) -> Result<Tensor> {
        let p = match self.kind {
            StartState::FirstBackward => {
                let e = self.w_s.dim(0)?;
                ann.narrow(1, 0, 1)?.squeeze(1)?.narrow(1, e, e)?.contiguous()?
            }
            kind => {
                // The positions' weights (B, 1, S): one at →h_len, or 1/len over the sentence.
                let (b, s, c) = ann.dims3()?;
                let mut w = vec![0f64; b * s];
                for (row, &len) in w.chunks_mut(s).zip(src.lens) {
                    match kind {
                        StartState::LastForward => row[len - 1] = 1.0,
                        _ => row[..len].fill(1.0 / len as f64),
                    }
                }
                let w = Tensor::from_vec(w, (b, 1, s), ann.device())?.to_dtype(ann.dtype())?;
                let pooled = w.matmul(ann)?.squeeze(1)?;
                match kind {
                    StartState::LastForward => pooled.narrow(1, 0, c / 2)?.contiguous()?,
                    _ => pooled,
                }
            }
        };
        Ok(maybe_norm(p.matmul(&self.w_s)?, self.norm.as_ref())?.broadcast_add(&self.b_s)?.tanh()?)
    }
}

/// What a step reads of a batch: `ann (B, S, 2n)`, `src_mask (B, S)` (1 at words).
pub fn attention_memory(att: &Attention, ann: &Tensor, src_mask: &Tensor) -> Result<AttentionMemory> {
    let uh = att.precompute(ann)?;
    let mask_bias = ((src_mask - 1.0)? * 1e9)?;
    Ok(AttentionMemory { annotations: ann.clone(), uh, mask_bias, src_ext: None, n_ext: 0, gpu: None })
}

/// The host form: `W_s (P, n)`, `b_s (n)`, `U_a (2n, A)` and `v_a (A)`; with layer
/// normalisation `γ_s`, and the keys' `γ_u` with `b_a`.
pub struct HostStart {
    pub(crate) kind: StartState,
    pub(crate) w_s: Vec<f32>,
    pub(crate) b_s: Vec<f32>,
    pub(crate) u_a: Vec<f32>,
    pub(crate) v_a: Vec<f32>,
    norm: Option<HostStartNorm>,
}

/// [`HostStart`]'s layer-normalisation gains and the keys' shift.
struct HostStartNorm {
    s: Vec<f32>,
    u: Vec<f32>,
    b_a: Vec<f32>,
}

impl HostStart {
    pub fn new(start: &DecoderStart, att: &Attention) -> Result<Self> {
        let norm = match (&start.norm, &att.norm) {
            (Some(s), Some(a)) => Some(HostStartNorm { s: host(s)?, u: host(&a.u)?, b_a: host(&att.b_a)? }),
            _ => None,
        };
        Ok(HostStart { kind: start.kind, w_s: host(&start.w_s)?, b_s: host(&start.b_s)?, u_a: host(&att.u_a)?, v_a: host(&att.v_a)?, norm })
    }

    /// The memory of a batch and `s_0 (B, n)`, from `ann (B, S, 2n)` of sentences of true
    /// lengths `lens`: `(B, S, 2n + A)` holding `[h_j ; U_a h_j]` at each position (the layout
    /// `kernels::cpu::bahdanau::attend_row` reads) and the decoder's `context` terms of each
    /// position ([`ContextTerms::per_position`]).
    pub fn memory(
        &self,
        ann: &[f32],
        (b, s): (usize, usize),
        lens: &[usize],
        context: &ContextTerms,
        threads: usize,
    ) -> (HostMemory, Vec<f32>) {
        let (n, a) = (self.b_s.len(), self.v_a.len());
        let ew = 2 * n + a;
        let mut mem = vec![0f32; b * s * ew];
        for (row, h) in mem.chunks_exact_mut(ew).zip(ann.chunks_exact(2 * n)) {
            row[..2 * n].copy_from_slice(h);
        }
        // p: ←h_1, the backward direction's state at each sentence's first position, or another
        // summary (`kernels::cpu::start_pool`).
        let p = match self.kind {
            StartState::FirstBackward => (0..b).flat_map(|r| ann[r * s * 2 * n + n..r * s * 2 * n + 2 * n].iter().copied()).collect(),
            kind => start_pool::pool(kind, ann, s, 2 * n, lens),
        };
        // U_a h_j for every position, written next to h_j.
        let annotations = Mat::strided(&mem, 0, b * s, 2 * n, ew);
        let mut uh = vec![0f32; b * s * a];
        matmul(&mut uh, 0, a, annotations, Mat::new(&self.u_a, 2 * n, a), false, threads);
        if let Some(g) = &self.norm {
            ln_rows(&mut uh, b * s, (a, 0), &g.u, Some(&g.b_a));
        }
        for (row, u) in mem.chunks_exact_mut(ew).zip(uh.chunks_exact(a)) {
            row[2 * n..].copy_from_slice(u);
        }
        let width = summary_width(self.kind, 2 * n);
        let mut h0 = match &self.norm {
            None => affine(&p, b, width, &self.w_s, &self.b_s, threads),
            Some(g) => {
                let mut h0 = vec![0f32; b * n];
                matmul(&mut h0, 0, n, Mat::new(&p, b, width), Mat::new(&self.w_s, width, n), false, threads);
                ln_rows(&mut h0, b, (n, 0), &g.s, Some(&self.b_s));
                h0
            }
        };
        tanh_in_place(&mut h0);
        (HostMemory::Attention(HostAttnMemory { mem, ctx_terms: context.per_position(ann, threads) }), h0)
    }
}

/// Either RNNsearch decoder's teacher forcing: its two forms, and `forward`, which draws the
/// recurrent dropout mask of the first layer's state (one per sentence, `(B, n)`) and runs
/// the form the backend says.
pub(crate) trait ForcedDecoder {
    /// The state size `n`.
    fn hidden(&self) -> usize;
    /// The composed form, `mask (B, n)` on the state where it enters the recurrence.
    fn forward_composed(&self, x: &ForcedIn, mask: Option<&Tensor>) -> Result<AttnForced>;
    /// The fused form (one op for all steps), with the same mask as host values, its large
    /// products in `products` (`Backend::products`).
    fn forward_fused(&self, x: &ForcedIn, state_mask: Option<Vec<f32>>, products: Precision) -> Result<AttnForced>;
    /// Whether this decoder has a GPU form (`kernels::gpu`).
    fn has_gpu_kernels(&self) -> bool {
        false
    }
    /// The GPU form, where [`Self::has_gpu_kernels`] says there is one.
    fn forward_gpu(&self, x: &ForcedIn, state_mask: Option<Vec<f32>>) -> Result<AttnForced> {
        let _ = (x, state_mask);
        Err(candle_core::Error::Msg("this decoder has no GPU form".into()).into())
    }

    fn forward(&self, x: &ForcedIn, dropout: Option<&mut Dropout>, backend: Backend) -> Result<AttnForced> {
        let (b, n) = (x.ey.dim(0)?, self.hidden());
        let state_mask = dropout.and_then(|d| d.recurrent(Site::State { side: Side::Decoder, layer: 0, dir: 0 }, b, n));
        match backend.fused() {
            true => self.forward_fused(x, state_mask, backend.products()),
            false if backend.gpu() && self.has_gpu_kernels() => self.forward_gpu(x, state_mask),
            false => self.forward_composed(x, state_tensor(state_mask.as_deref(), b, n, x.ey)?.as_ref()),
        }
    }
}

/// The composed teacher forcing of either RNNsearch decoder: `step(i, state)` from `init` at
/// each target position; `output` reads a state's `s`. Stacks the outputs (shifted as
/// `x.output` says, `s_0` first), the contexts and, when asked, the weights.
pub(crate) fn forced_steps(
    x: &ForcedIn,
    s0: Tensor,
    init: Tensor,
    step: impl Fn(usize, &Tensor) -> Result<StepOut>,
    output: impl Fn(&Tensor) -> Result<Tensor>,
) -> Result<AttnForced> {
    let (b, t, _) = x.ey.dims3()?;
    let n = s0.dim(1)?;
    let (mut s, mut outs, mut ctxs, mut alphas) = (init, Vec::with_capacity(t), Vec::with_capacity(t), Vec::new());
    for i in 0..t {
        let out = step(i, &s)?;
        outs.push(output(&out.state)?);
        ctxs.extend(out.ctx);
        if x.want_alpha {
            alphas.extend(out.alpha);
        }
        s = out.state;
    }
    let states = shift_outputs(&Tensor::stack(&outs, 1)?, &s0, x.output)?;
    let state_ctx = Tensor::cat(&[&states, &Tensor::stack(&ctxs, 1)?], 2)?.reshape((b * t, 3 * n))?;
    let alpha = match x.want_alpha {
        true => Some(Tensor::stack(&alphas, 1)?.reshape((b * t, x.ann.dim(1)?))?),
        false => None,
    };
    Ok(AttnForced { state_ctx, alpha, start: s0 })
}

/// What teacher forcing gives the attention decoder: `ey (B, T, m)` the target embeddings,
/// `ann (B, S, 2n)` the annotations of `src`, which output each position gives (`output`: a
/// stack takes `Current` and shifts its top itself), and whether to return `α`.
pub struct ForcedIn<'a> {
    pub(crate) ey: &'a Tensor,
    pub(crate) ann: &'a Tensor,
    pub(crate) src: Source<'a>,
    pub(crate) output: OutputState,
    pub(crate) want_alpha: bool,
}

impl ForcedIn<'_> {
    /// The fused op's sizes (`kernels::cpu::bahdanau`) for this batch and a decoder of `hidden`
    /// units, attention of `att` and first cell `kind`, started by `start`, with recurrent
    /// dropout's `state_mask`: Bahdanau's step without layer normalisation (the conditional GRU
    /// sets `conditional` and `norm`).
    pub(crate) fn attn_dims(
        &self,
        hidden: usize,
        att: usize,
        kind: CellKind,
        start: StartState,
        state_mask: Option<Vec<f32>>,
        products: Precision,
    ) -> Result<AttnDims> {
        let (batch, tgt_len, _) = self.ey.dims3()?;
        let (_, src_len, ctx) = self.ann.dims3()?;
        let lens = self.src.lens.to_vec();
        let (output, conditional, norm) = (self.output, false, false);
        Ok(AttnDims { batch, tgt_len, src_len, hidden, ctx, att, lens, kind, output, state_mask, conditional, start, norm, products })
    }
}

/// What the attention decoder's teacher forcing returns.
pub struct AttnForced {
    /// `[s; c] (B·T, n + 2n)`: the first layer's output as `output` said, and the context `c_i`.
    pub(crate) state_ctx: Tensor,
    /// `α_i (B·T, S)`, when asked (the copy mixture reads it).
    pub(crate) alpha: Option<Tensor>,
    /// `s_0 (B, n)`, the start output (the layers above start from it).
    pub(crate) start: Tensor,
}
