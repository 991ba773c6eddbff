//! What both decoders share: the memory they read of the source, the encoded batch, a step's
//! result and the decoder sizes, in the candle forms (`Memory`, `Encoded`, `StepOut`) and the
//! host forms the search steps on (`HostMemory`, `HostEncoded`, `HostRows`, `HostStepIn`,
//! `HostStepOut`, `HostFeatures`).
//!
//! * `attention_decoder.rs`: RNNsearch's decoder (appendix A.2.2), attention over `s_{i-1}`;
//! * `summary_decoder.rs`: RNNenc's decoder (appendix A), conditioned on the summary `c`.
//!
//! Each holds its composed step, its fused teacher-forcing pass and its host step.
use std::borrow::Cow;

use candle_core::Tensor;

use super::copy::CopySource;
use super::decoder_loop_gpu::StepMemory;
use super::output::BatchShortlist;
use crate::config::{CellKind, OutputState};
use crate::error::Result;

/// RNNsearch's memory of a batch: annotations `(B, S, 2n)`, `U_a h_j` `(B, S, n')`, the mask
/// bias `(B, S)` (0 at words, −1e9 at padding); a copy model's extended source ids `(B, S)` u32
/// and how many ids they add past the vocabulary (search only); on a GPU, what the decoder's
/// GPU step reads (`decoder_gpu::StepMemory`; search only).
#[derive(Clone, Debug)]
pub struct AttentionMemory {
    pub(crate) annotations: Tensor,
    pub(crate) uh: Tensor,
    pub(crate) mask_bias: Tensor,
    pub(crate) src_ext: Option<Tensor>,
    pub(crate) n_ext: usize,
    pub(crate) gpu: Option<StepMemory>,
}

/// RNNenc's memory of a batch: the summary `c (B, n)`, its gate term `C c (B, G)` and its
/// deep-output term `O_c c (B, 2l)`.
#[derive(Clone, Debug)]
pub struct SummaryMemory {
    pub(crate) c: Tensor,
    pub(crate) gate_ctx: Tensor,
    pub(crate) out_ctx: Tensor,
}

/// What the decoder reads of the source, computed once per batch by `Seq2Seq::encode`: each
/// decoder's step takes its own variant's type.
#[derive(Clone, Debug)]
pub enum Memory {
    Attention(AttentionMemory),
    Summary(SummaryMemory),
}

/// Encoder output plus the decoder's initial state `(batch, n)` (the LSTM's: `(batch, 2n)`).
#[derive(Clone, Debug)]
pub struct Encoded {
    pub(crate) memory: Memory,
    pub init: Tensor,
}

impl Encoded {
    /// Rows `rows` of everything (beam search: expand to `batch·beam`, reorder after a step).
    pub fn select(&self, rows: &[usize]) -> Result<Encoded> {
        let ids: Vec<u32> = rows.iter().map(|&i| i as u32).collect();
        let idx = &Tensor::from_vec(ids, rows.len(), self.init.device())?;
        let s = |t: &Tensor| t.index_select(idx, 0);
        let memory = match &self.memory {
            Memory::Attention(m) => Memory::Attention(AttentionMemory {
                annotations: s(&m.annotations)?,
                uh: s(&m.uh)?,
                mask_bias: s(&m.mask_bias)?,
                src_ext: m.src_ext.as_ref().map(s).transpose()?,
                n_ext: m.n_ext,
                gpu: m.gpu.as_ref().map(|g| g.select(idx, rows)).transpose()?,
            }),
            Memory::Summary(m) => Memory::Summary(SummaryMemory { c: s(&m.c)?, gate_ctx: s(&m.gate_ctx)?, out_ctx: s(&m.out_ctx)? }),
        };
        Ok(Encoded { memory, init: s(&self.init)? })
    }
}

/// `(B, T, n)` outputs `s_1 … s_T` → the ones the deep output reads at each step: themselves
/// (`Current`), or `s_0 … s_{T-1}` with `start (B, n)` as `s_0` (`Previous`).
pub fn shift_outputs(cur: &Tensor, start: &Tensor, which: OutputState) -> Result<Tensor> {
    match which {
        OutputState::Current => Ok(cur.clone()),
        OutputState::Previous => {
            let t = cur.dim(1)?;
            Ok(Tensor::cat(&[&start.unsqueeze(1)?, &cur.narrow(1, 0, t - 1)?], 1)?)
        }
    }
}

/// The result of one decoder step.
pub struct StepOut {
    /// New state `s_i` `(batch, n)`.
    pub(crate) state: Tensor,
    /// RNNsearch's context `c_i` `(batch, 2n)` and weights `α_i` `(batch, src_len)`.
    pub(crate) ctx: Option<Tensor>,
    pub(crate) alpha: Option<Tensor>,
}

/// Sizes and cell of a decoder: embedding `m`, encoder state `n_enc`, hidden `n`.
#[derive(Clone, Copy, Debug)]
pub struct DecoderDims {
    pub(crate) emb: usize,
    pub(crate) enc: usize,
    pub(crate) hidden: usize,
    pub(crate) kind: CellKind,
}

/// The host form of [`Memory`], computed once per batch by the encoder pass of the search
/// (`HostModel::encode`, `snapshot.rs`): an encoded batch holds the one its architecture's
/// decoder reads.
pub enum HostMemory {
    /// RNNsearch (`HostAttention::memory`, `HostConditional::memory`).
    Attention(HostAttnMemory),
    /// RNNenc: `C c (+ b_h)` `(B, G)` and `O_c c` `(B, 2l)` (`HostSummary::memory`).
    Summary { gate_ctx: Vec<f32>, out_ctx: Vec<f32> },
}

/// What an attention decoder's host step reads of a batch of `B` sentences padded to `S`.
pub struct HostAttnMemory {
    /// `(B, S, 2n + A)`: position `j` of sentence `b` holds `[h_j ; U_a h_j]`.
    pub(crate) mem: Vec<f32>,
    /// `h_j · [C | O_c]` `(B, S, G + 2l)`, the context's terms before the weighted sum
    /// (`precomputed::ContextTerms`).
    pub(crate) ctx_terms: Vec<f32>,
}

/// The host form of [`Encoded`]: a batch of `B` sentences, padded to `S` positions.
pub struct HostEncoded {
    /// What the decoder reads of the sources (its architecture's form).
    pub(crate) memory: HostMemory,
    /// The decoder's start states `(B, L·w)` (every layer from `h_0`; the LSTM's `[h_0; 0]`).
    pub(crate) init: Vec<f32>,
    /// A copy model's extended source ids `(B, S)` (`Batch::src_ext`; empty otherwise).
    pub(crate) src_ext: Vec<u32>,
    /// True source lengths (`</s>` included) and the padded length `S`.
    pub(crate) lens: Vec<usize>,
    pub(crate) src_len: usize,
    /// The batch's lexical shortlist (`None`: the whole vocabulary is scored).
    pub(crate) shortlist: Option<BatchShortlist>,
}

impl HostEncoded {
    /// The start states `(R, width)` of one row per sentence in `sent`.
    pub(crate) fn start_states(&self, sent: &[usize], width: usize) -> Vec<f32> {
        sent.iter().flat_map(|&b| self.init[b * width..(b + 1) * width].iter().copied()).collect()
    }

    /// The sources as the copy mixture reads them.
    pub(crate) fn copy_source(&self) -> CopySource<'_> {
        CopySource { ext: &self.src_ext, lens: &self.lens, len: self.src_len }
    }
}

/// A host step's live rows, as the architecture's step reads them: the stacked states
/// `(R, L·w)`, the previous words (ids in the vocabulary, a copy model's extended ids read as
/// `<unk>`) and their embeddings `(R, m)`, and each row's sentence.
pub struct HostRows<'a> {
    pub(crate) state: &'a [f32],
    pub(crate) y: &'a [u32],
    pub(crate) ey: &'a [f32],
    pub(crate) sent: &'a [usize],
    pub(crate) threads: usize,
}

impl<'a> HostRows<'a> {
    /// The first layer's previous outputs `s_{i-1} (R, n)` of stacked states `(R, width)`:
    /// the states themselves (one GRU layer), or each row's first `n` values.
    pub(crate) fn prev_outputs(&self, width: usize, n: usize) -> Cow<'a, [f32]> {
        if width == n {
            Cow::Borrowed(self.state)
        } else {
            Cow::Owned(self.state.chunks_exact(width).flat_map(|r| r[..n].iter().copied()).collect())
        }
    }

    /// The first layer's step input over these rows, its previous outputs `s_prev`.
    pub(crate) fn step_in<'b>(&'b self, s_prev: &'b [f32], width: usize, out_state: Option<OutputState>) -> HostStepIn<'b> {
        HostStepIn { s_prev, state: self.state, width, y: self.y, ey: self.ey, sent: self.sent, out_state, threads: self.threads }
    }
}

/// What a first decoder layer's host step reads, for `R` live rows.
pub struct HostStepIn<'a> {
    /// The previous outputs `s_{i-1} (R, n)`.
    pub(crate) s_prev: &'a [f32],
    /// The previous state rows `(R, width)`: the LSTM's cell is at `[n, 2n)` of each.
    pub(crate) state: &'a [f32],
    pub(crate) width: usize,
    /// The previous words (vocabulary ids) and their embeddings `(R, m)`.
    pub(crate) y: &'a [u32],
    pub(crate) ey: &'a [f32],
    /// Each row's sentence in the encoded batch.
    pub(crate) sent: &'a [usize],
    /// Which state the deep output's `O_h` term reads, added by the step for a one-layer
    /// decoder; `None` for a stack, whose top layer's term is added after the upper layers.
    pub(crate) out_state: Option<OutputState>,
    pub(crate) threads: usize,
}

/// A first decoder layer's host step.
pub struct HostStepOut {
    /// The layer's new states `(R, w)` (`w = n`, or the LSTM's `2n`).
    pub(crate) state: Vec<f32>,
    /// The deep output's pre-activation `t~ (R, 2l)`, the state term included unless the
    /// decoder is a stack.
    pub(crate) pre: Vec<f32>,
    /// RNNsearch's contexts `c_i (R, 2n)` (the copy gate reads them; empty for RNNenc).
    pub(crate) ctx: Vec<f32>,
    /// Attention weights `(R, S)`, zero at padding (RNNsearch, when asked for).
    pub(crate) alpha: Option<Vec<f32>>,
}

/// A host step up to the deep output's features, for `R` rows: what a scorer turns into the
/// best tokens (`Projection::best`) or, for an ensemble, whole distributions.
pub struct HostFeatures {
    /// The new decoder states `(R, L·w)`.
    pub(crate) state: Vec<f32>,
    /// The deep output's maxout features `t (R, l)`.
    pub(crate) t: Vec<f32>,
    /// Attention weights `(R, S)` (RNNsearch, when asked for, and always for a copy model).
    pub(crate) alpha: Option<Vec<f32>>,
    /// What the copy gate reads (a copy model; empty otherwise): the state the deep output read
    /// `(R, n)` and the contexts `(R, 2n)`.
    pub(crate) s_out: Vec<f32>,
    pub(crate) ctx: Vec<f32>,
}

/// One candle search step's result for `rows` hypotheses (`Seq2Seq::decode_step`).
pub struct StepScores {
    /// New decoder state `(rows, n)` (the LSTM's `[s; cell]`: `(rows, 2n)`).
    pub state: Tensor,
    /// `log p(y_i | y_<i, x)` `(rows, K_y)`.
    pub log_probs: Tensor,
    /// Attention weights `(rows, S)` (RNNsearch only).
    pub(crate) alpha: Option<Tensor>,
}
