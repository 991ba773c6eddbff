//! The architectures between the embeddings and the scores: one type each, assembled once from
//! its layers, and the one place that lists them.
//!
//! * [`Rnnsearch`](super::rnnsearch::Rnnsearch) (`rnnsearch.rs`): bidirectional encoder,
//!   attention decoder, the decoder's upper layers, the copy gate, the deep output;
//! * [`Rnnenc`](super::rnnenc::Rnnenc) (`rnnenc.rs`): recurrent or grConv encoder, summary
//!   decoder, the upper layers, the deep output.
//!
//! Each implements [`Architecture`]: the teacher-forced `forward` (fused or composed, as
//! [`Backend`] says), the candle search's `encode` and `step`, and `host`, its snapshot for the
//! fused CPU search, which implements [`HostArchitecture`]. The loss (`Seq2Seq::token_nll`), the
//! candle scorer (`search/candle.rs`) and the host scorer (`search/host.rs`) call these and
//! wire no layer themselves. Adding a decoder means adding a type here (docs/ARCHITECTURE.md).
//!
//! Shapes: `B` sentences, `S`/`T` padded source/target lengths, `m` embedding, `n` hidden,
//! `w` one decoder layer's state (`n`, or the LSTM's `2n`), `L` decoder layers, `R` rows.
use candle_core::Tensor;

use super::backend::Backend;
use super::decoder::{Encoded, HostFeatures, HostMemory, HostStepIn};
use super::encoder::Source;
use super::inputs::BatchTensors;
use super::output::HostOutput;
use super::regularizer::Dropout;
use super::rnn::HostBatch;
use super::rnnenc::{HostRnnenc, Rnnenc};
use super::rnnsearch::{HostRnnsearch, Rnnsearch};
use super::StepScores;
use crate::config::ModelConfig;
use crate::error::Result;

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
}

/// What every architecture offers the loss and the searches.
pub trait Architecture {
    /// Its host snapshot.
    type Host: HostArchitecture;
    /// Per-token negative log-likelihood `(B·T)`, zero at padding.
    fn forward(&self, cfg: &ModelConfig, f: &Forced<'_>, dropout: Option<&mut Dropout>, backend: Backend) -> Result<Tensor>;
    /// The candle search's encoding of source embeddings `x (B, S, m)`.
    fn encode(&self, x: &Tensor, src: Source<'_>) -> Result<Encoded>;
    /// One candle search step for `R` rows: states `(R, L·w)`, the previous words' embeddings
    /// `ey (R, m)`.
    fn step(&self, cfg: &ModelConfig, enc: &Encoded, state: &Tensor, ey: &Tensor) -> Result<StepScores>;
    /// The snapshot of its weights the fused CPU search runs on (an `f32` CPU model).
    fn host(&self, cfg: &ModelConfig) -> Result<Self::Host>;
}

/// What every architecture's host snapshot offers the fused search.
pub trait HostArchitecture {
    /// The encoder over source embeddings `x (B, S, m)`: the decoder's memory of the batch and
    /// each sentence's start output `h_0 (B, n)`.
    fn encode(&self, cfg: &ModelConfig, x: &[f32], at: &HostBatch<'_>, threads: usize) -> Result<(HostMemory, Vec<f32>)>;
    /// One step up to the deep output's features, reading `mem` of sentences of true lengths
    /// `lens`.
    fn features(&self, cfg: &ModelConfig, mem: &HostMemory, lens: &[usize], x: &HostStepIn<'_>, want_alpha: bool) -> HostFeatures;
    /// From now on, the step's products in int8.
    fn quantize(&mut self);
    /// The deep output (its projection scores the features).
    fn output(&self) -> &HostOutput;
}

/// The architecture of a model.
#[derive(Clone, Debug)]
pub enum Network {
    Rnnsearch(Rnnsearch),
    Rnnenc(Rnnenc),
}

/// The host snapshot of a [`Network`].
pub enum HostNetwork {
    Rnnsearch(HostRnnsearch),
    Rnnenc(HostRnnenc),
}

impl Network {
    pub fn forward(&self, cfg: &ModelConfig, f: &Forced<'_>, dropout: Option<&mut Dropout>, backend: Backend) -> Result<Tensor> {
        match self {
            Network::Rnnsearch(a) => a.forward(cfg, f, dropout, backend),
            Network::Rnnenc(a) => a.forward(cfg, f, dropout, backend),
        }
    }

    pub fn encode(&self, x: &Tensor, src: Source<'_>) -> Result<Encoded> {
        match self {
            Network::Rnnsearch(a) => a.encode(x, src),
            Network::Rnnenc(a) => a.encode(x, src),
        }
    }

    pub fn step(&self, cfg: &ModelConfig, enc: &Encoded, state: &Tensor, ey: &Tensor) -> Result<StepScores> {
        match self {
            Network::Rnnsearch(a) => a.step(cfg, enc, state, ey),
            Network::Rnnenc(a) => a.step(cfg, enc, state, ey),
        }
    }

    pub fn host(&self, cfg: &ModelConfig) -> Result<HostNetwork> {
        Ok(match self {
            Network::Rnnsearch(a) => HostNetwork::Rnnsearch(a.host(cfg)?),
            Network::Rnnenc(a) => HostNetwork::Rnnenc(a.host(cfg)?),
        })
    }
}

impl HostNetwork {
    fn arch(&self) -> &dyn HostArchitecture {
        match self {
            HostNetwork::Rnnsearch(a) => a,
            HostNetwork::Rnnenc(a) => a,
        }
    }

    pub fn encode(&self, cfg: &ModelConfig, x: &[f32], at: &HostBatch<'_>, threads: usize) -> Result<(HostMemory, Vec<f32>)> {
        self.arch().encode(cfg, x, at, threads)
    }

    pub fn features(&self, cfg: &ModelConfig, mem: &HostMemory, lens: &[usize], x: &HostStepIn<'_>, want_alpha: bool) -> HostFeatures {
        self.arch().features(cfg, mem, lens, x, want_alpha)
    }

    pub fn quantize(&mut self) {
        match self {
            HostNetwork::Rnnsearch(a) => a.quantize(),
            HostNetwork::Rnnenc(a) => a.quantize(),
        }
    }

    pub fn output(&self) -> &HostOutput {
        self.arch().output()
    }

    /// The copy gate (RNNsearch with `model.copy`).
    pub fn copy(&self) -> Option<&super::copy::HostCopy> {
        match self {
            HostNetwork::Rnnsearch(a) => a.copy(),
            HostNetwork::Rnnenc(_) => None,
        }
    }

    /// Whether the decoder attends (and so can report alignments).
    pub fn attends(&self) -> bool {
        matches!(self, HostNetwork::Rnnsearch(_))
    }
}
