//! The architectures between the embeddings and the scores: one type each, assembled once from
//! its layers, and the one place that lists them.
//!
//! * [`Rnnsearch`](super::rnnsearch::Rnnsearch) (`rnnsearch.rs`): bidirectional encoder,
//!   attention decoder, the decoder's upper layers, the copy gate, the deep output;
//! * [`Rnnenc`](super::rnnenc::Rnnenc) (`rnnenc.rs`): recurrent or grConv encoder, summary
//!   decoder, the upper layers, the deep output.
//!
//! Each implements [`Architecture`] (`architecture.rs`): the teacher-forced `forward` (fused or
//! composed, as [`Backend`] says), the candle search's `encode` and `step`, and `host`, its
//! snapshot for the fused CPU search, which implements [`HostArchitecture`]. The loss
//! (`Seq2Seq::token_nll`), the candle step (`Seq2Seq::decode_step`) and the host step
//! (`HostModel::step`, `snapshot.rs`) call these and wire no layer themselves. Adding a
//! decoder means adding a type here (docs/ARCHITECTURE.md).
//!
//! Shapes: `B` sentences, `S`/`T` padded source/target lengths, `m` embedding, `n` hidden,
//! `w` one decoder layer's state (`n`, or the LSTM's `2n`), `L` decoder layers, `R` rows.
use candle_core::Tensor;

use super::architecture::{Architecture, Forced, HostArchitecture};
use super::backend::Backend;
use super::decoder::{Encoded, HostEncoded, HostFeatures, HostMemory, HostRows, StepScores};
use super::encoder::Source;
use super::output::{DeepOutput, HostOutput};
use super::regularizer::Dropout;
use super::rnn::HostBatch;
use super::rnnenc::{HostRnnenc, Rnnenc};
use super::rnnsearch::{HostRnnsearch, Rnnsearch};
use crate::config::ModelConfig;
use crate::error::Result;
use crate::kernels::cpu::row_best::RowBest;

/// The layers of a model's architecture (`model.arch`).
#[derive(Clone, Debug)]
pub enum Layers {
    Rnnsearch(Rnnsearch),
    Rnnenc(Rnnenc),
}

/// The host snapshot of a [`Layers`] (boxed: the architectures' snapshots differ in size).
pub enum HostLayers {
    Rnnsearch(Box<HostRnnsearch>),
    Rnnenc(Box<HostRnnenc>),
}

impl Layers {
    pub fn forward(&self, cfg: &ModelConfig, f: &Forced<'_>, dropout: Option<&mut Dropout>, backend: Backend) -> Result<Tensor> {
        match self {
            Layers::Rnnsearch(a) => a.forward(cfg, f, dropout, backend),
            Layers::Rnnenc(a) => a.forward(cfg, f, dropout, backend),
        }
    }

    pub fn encode(&self, x: &Tensor, src: Source<'_>, backend: Backend) -> Result<Encoded> {
        match self {
            Layers::Rnnsearch(a) => a.encode(x, src, backend),
            Layers::Rnnenc(a) => a.encode(x, src, backend),
        }
    }

    pub fn step(&self, cfg: &ModelConfig, enc: &Encoded, state: &Tensor, ey: &Tensor) -> Result<StepScores> {
        match self {
            Layers::Rnnsearch(a) => a.step(cfg, enc, state, ey),
            Layers::Rnnenc(a) => a.step(cfg, enc, state, ey),
        }
    }

    /// The deep output, the last layer of both architectures.
    pub fn output(&self) -> &DeepOutput {
        match self {
            Layers::Rnnsearch(a) => &a.out,
            Layers::Rnnenc(a) => &a.out,
        }
    }

    pub fn host(&self, cfg: &ModelConfig) -> Result<HostLayers> {
        Ok(match self {
            Layers::Rnnsearch(a) => HostLayers::Rnnsearch(Box::new(a.host(cfg)?)),
            Layers::Rnnenc(a) => HostLayers::Rnnenc(Box::new(a.host(cfg)?)),
        })
    }
}

impl HostLayers {
    fn arch(&self) -> &dyn HostArchitecture {
        match self {
            HostLayers::Rnnsearch(a) => a.as_ref(),
            HostLayers::Rnnenc(a) => a.as_ref(),
        }
    }

    pub fn encode(&self, cfg: &ModelConfig, x: &[f32], at: &HostBatch<'_>, threads: usize) -> Result<(HostMemory, Vec<f32>)> {
        self.arch().encode(cfg, x, at, threads)
    }

    pub fn features(&self, cfg: &ModelConfig, enc: &HostEncoded, rows: &HostRows<'_>, want_alpha: bool) -> HostFeatures {
        self.arch().features(cfg, enc, rows, want_alpha)
    }

    pub fn best(&self, enc: &HostEncoded, f: &HostFeatures, rows: &HostRows<'_>, want: &[usize], skip: &[u32]) -> RowBest {
        self.arch().best(enc, f, rows, want, skip)
    }

    pub fn full(&self, enc: &HostEncoded, f: &HostFeatures, rows: &HostRows<'_>, width: usize) -> Vec<f32> {
        self.arch().full(enc, f, rows, width)
    }

    pub fn quantize(&mut self) {
        match self {
            HostLayers::Rnnsearch(a) => a.quantize(),
            HostLayers::Rnnenc(a) => a.quantize(),
        }
    }

    /// Tables of what the step computes from the previous word alone, over the target
    /// embeddings `emb (K_y, m)` (`precomputed::WordTerms`).
    pub fn tabulate(&mut self, emb: &[f32], threads: usize) {
        match self {
            HostLayers::Rnnsearch(a) => a.tabulate(emb, threads),
            HostLayers::Rnnenc(a) => a.tabulate(emb, threads),
        }
    }

    pub fn output(&self) -> &HostOutput {
        self.arch().output()
    }

    /// Whether the decoder attends (and so can report alignments).
    pub fn has_attention(&self) -> bool {
        matches!(self, HostLayers::Rnnsearch(_))
    }
}
