//! What every architecture offers the loss and the searches: [`Architecture`] (the candle
//! forms) and [`HostArchitecture`] (its host snapshot), implemented by `rnnsearch.rs` and
//! `rnnenc.rs`, each the one place that lists its layers; `layers.rs` holds the enum that
//! chooses between them.
//!
//! Shapes: `B` sentences, `S`/`T` padded source/target lengths, `m` embedding, `n` hidden,
//! `w` one decoder layer's state (`n`, or the LSTM's `2n`), `L` decoder layers, `R` rows.
use candle_core::Tensor;

use super::backend::Backend;
use super::decoder::{Encoded, HostEncoded, HostFeatures, HostMemory, HostRows, StepScores};
use super::encoder::Source;
use super::inputs::BatchTensors;
use super::output::HostOutput;
use super::regularizer::Dropout;
use super::rnn::HostBatch;
use crate::config::ModelConfig;
use crate::error::Result;
use crate::kernels::cpu::row_best::RowBest;

/// A teacher-forced batch, embedded: what an architecture's `forward` reads.
pub struct Forced<'a> {
    pub(crate) batch: &'a BatchTensors,
    /// Source embeddings `(B, S, m)` (dropout applied).
    pub(crate) x: Tensor,
    pub(crate) src: Source<'a>,
    /// The previous target words' embeddings `(B, T, m)` and the same as rows `(B·T, m)`.
    pub(crate) ey: Tensor,
    pub(crate) ey_rows: Tensor,
    /// Label smoothing (0 outside training).
    pub(crate) eps: f64,
    /// The training softmax's candidate list (`None` outside training: the full softmax).
    pub(crate) cands: Option<&'a super::candidates::Candidates>,
}

/// What every architecture offers the loss and the searches.
pub trait Architecture {
    /// Its host snapshot.
    type Host: HostArchitecture;
    /// Per-token negative log-likelihood `(B·T)`, zero at padding.
    fn forward(&self, cfg: &ModelConfig, f: &Forced<'_>, dropout: Option<&mut Dropout>, backend: Backend) -> Result<Tensor>;
    /// The candle search's encoding of source embeddings `x (B, S, m)`, its encoder in the form
    /// `backend` says (`Composed`, or `Gpu` for a model on a GPU).
    fn encode(&self, x: &Tensor, src: Source<'_>, backend: Backend) -> Result<Encoded>;
    /// One candle search step for `R` rows: states `(R, L·w)`, the previous words' embeddings
    /// `ey (R, m)`.
    fn step(&self, cfg: &ModelConfig, enc: &Encoded, state: &Tensor, ey: &Tensor) -> Result<StepScores>;
    /// The snapshot of its weights the fused CPU search runs on (an `f32` CPU model).
    fn host(&self, cfg: &ModelConfig) -> Result<Self::Host>;
}

/// What every architecture's host snapshot offers the fused search: the twin of
/// [`Architecture`]'s `encode` and `step`, from the embeddings to the scores.
pub trait HostArchitecture {
    /// The encoder over source embeddings `x (B, S, m)`: the decoder's memory of the batch and
    /// its start states `(B, L·w)`.
    fn encode(&self, cfg: &ModelConfig, x: &[f32], at: &HostBatch<'_>, threads: usize) -> Result<(HostMemory, Vec<f32>)>;
    /// One step for `rows` of `enc` up to the deep output's features.
    fn features(&self, cfg: &ModelConfig, enc: &HostEncoded, rows: &HostRows<'_>, want_alpha: bool) -> HostFeatures;
    /// Per row, the `want[r]` best tokens outside `skip` of the step's distribution, as
    /// `z − lse` (the deep output's softmax; a copy model mixes in its copy distribution).
    fn best(&self, enc: &HostEncoded, f: &HostFeatures, rows: &HostRows<'_>, want: &[usize], skip: &[u32]) -> RowBest {
        self.output().best(enc.shortlist.as_ref(), &f.t, want, skip, rows.threads)
    }
    /// The step's whole distribution `log p (R, width)`, `width ≥ K_y` (an ensemble's; −∞
    /// where this model gives a column no mass).
    fn full(&self, enc: &HostEncoded, f: &HostFeatures, rows: &HostRows<'_>, width: usize) -> Vec<f32> {
        widen(&self.output().log_probs(enc.shortlist.as_ref(), &f.t, rows.sent.len()), self.output().proj.vocab_size(), width)
    }
    /// From now on, the step's products in int8.
    fn quantize(&mut self);
    /// Tables of the step's products of the previous word over the target embeddings
    /// `emb (K_y, m)` (`precomputed::WordTerms`); none by default.
    fn tabulate(&mut self, _emb: &[f32], _threads: usize) {}
    /// The deep output (its projection scores the features).
    fn output(&self) -> &HostOutput;
}

/// Rows of `log p` over the vocabulary `(R, vocab)` → `(R, width)`, −∞ past the vocabulary.
pub(crate) fn widen(lp: &[f32], vocab: usize, width: usize) -> Vec<f32> {
    lp.chunks_exact(vocab).flat_map(|row| row.iter().copied().chain(std::iter::repeat_n(f32::NEG_INFINITY, width - vocab))).collect()
}
