//! The architectures between the embeddings and the scores: one type each, assembled once from
//! its layers, and the one place that lists them.
//!
//! * [`Rnnsearch`](super::rnnsearch::Rnnsearch) (`rnnsearch.rs`): bidirectional encoder,
//!   attention decoder, the decoder's upper layers, the copy gate, the deep output;
//! * [`Rnnenc`](super::rnnenc::Rnnenc) (`rnnenc.rs`): recurrent or grConv encoder, summary
//!   decoder, the upper layers, the deep output.
//!
//! Each implements [`Architecture`] (`architecture.rs`): the teacher-forced `forward` (fused or composed, as
//! [`Backend`] says), the candle search's `encode` and `step`, and `host`, its snapshot for the
//! fused CPU search, which implements [`HostArchitecture`]. The loss (`Seq2Seq::token_nll`), the
//! candle scorer (`search/candle.rs`) and the host scorer (`search/host.rs`) call these and
//! wire no layer themselves. Adding a decoder means adding a type here (docs/ARCHITECTURE.md).
//!
//! Shapes: `B` sentences, `S`/`T` padded source/target lengths, `m` embedding, `n` hidden,
//! `w` one decoder layer's state (`n`, or the LSTM's `2n`), `L` decoder layers, `R` rows.
use candle_core::Tensor;

use super::architecture::{Architecture, Forced, HostArchitecture};
use super::backend::Backend;
use super::decoder::{Encoded, HostFeatures, HostMemory, HostStepIn, StepScores};
use super::encoder::Source;
use super::output::HostOutput;
use super::regularizer::Dropout;
use super::rnn::HostBatch;
use super::rnnenc::{HostRnnenc, Rnnenc};
use super::rnnsearch::{HostRnnsearch, Rnnsearch};
use crate::config::ModelConfig;
use crate::error::Result;

/// The architecture of a model.
#[derive(Clone, Debug)]
pub enum Network {
    Rnnsearch(Rnnsearch),
    Rnnenc(Rnnenc),
}

/// The host snapshot of a [`Network`] (boxed: the architectures' snapshots differ in size).
pub enum HostNetwork {
    Rnnsearch(Box<HostRnnsearch>),
    Rnnenc(Box<HostRnnenc>),
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
            Network::Rnnsearch(a) => HostNetwork::Rnnsearch(Box::new(a.host(cfg)?)),
            Network::Rnnenc(a) => HostNetwork::Rnnenc(Box::new(a.host(cfg)?)),
        })
    }
}

impl HostNetwork {
    fn arch(&self) -> &dyn HostArchitecture {
        match self {
            HostNetwork::Rnnsearch(a) => a.as_ref(),
            HostNetwork::Rnnenc(a) => a.as_ref(),
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
