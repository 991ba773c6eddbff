//! A [`Seq2Seq`]'s parameters copied to host `f32` slices once per search call, laid out for
//! the search kernels: matrices stay `(in, out)` row-major (the per-step products `x W` read
//! them as they are), and the output projection is pre-transposed for column-major scores.
//! The weights are read from the model's typed layers ([`Seq2Seq::layers`]), never by name.
use super::dense::host;
use crate::config::{Impl, ModelConfig};
use crate::error::{Error, Result};
use crate::kernels::projection::Projection;
use crate::model::attention_decoder::HostAttention;
use crate::model::copy::HostCopy;
use crate::model::encoder::SummaryEncoder;
use crate::model::feedback_fused::HostFeedbackStack;
use crate::model::grconv::HostGrConv;
use crate::model::output::HostOutput;
use crate::model::rnn::HostRnn;
use crate::model::summary_decoder::HostSummary;
use crate::model::upper::HostUpper;
use crate::model::{Backend, Layers, Seq2Seq};

/// The encoder and decoder of one architecture.
pub enum HostCore {
    /// RNNsearch: the bidirectional encoder's layers, attention decoder.
    Search { enc: Vec<HostRnn>, dec: Box<HostAttention> },
    /// RNNenc: the encoder's plain layers (the first only, under a gated-feedback stack),
    /// the stack, summary decoder.
    Enc { enc: Vec<HostRnn>, feedback: Option<HostFeedbackStack>, dec: Box<HostSummary> },
}

/// Everything search needs, on the host.
pub struct HostModel {
    pub cfg: ModelConfig,
    pub src_emb: Vec<f32>,
    pub tgt_emb: Vec<f32>,
    pub core: HostCore,
    /// The decoder's layers above the first (`model/upper.rs`).
    pub upper: HostUpper,
    /// RNNenc's grConv encoder (`model.encoder = "grconv"`; then the core has no RNN layers).
    pub grconv: Option<HostGrConv>,
    /// RNNsearch's copy gate (`model.copy`).
    pub copy: Option<HostCopy>,
    pub out: HostOutput,
}

impl HostModel {
    /// This snapshot with its products in int8 (`kernels/int8.rs`, `infer::dense::Dense`): the
    /// output projection, the decoder's and the deep output's, and the recurrent layers' input
    /// products. `f32` stay: the recurrent products inside the training kernels that run the
    /// encoder (`kernels::birnn`, `kernels::rnn`), the encoder-side attention `U_a h` and
    /// summaries (once per batch), grConv, the gated-feedback step and the copy gate.
    pub fn quantized(mut self) -> Self {
        let proj = std::mem::replace(&mut self.out.proj, Projection::new(&[], &[]));
        self.out.proj = proj.quantized();
        self.out.o_h.quantize();
        self.out.o_y.quantize();
        let enc = match &mut self.core {
            HostCore::Search { enc, dec } => {
                dec.quantize();
                enc
            }
            HostCore::Enc { enc, dec, .. } => {
                dec.quantize();
                enc
            }
        };
        // The encoder's input products (once per batch, over every source position) and the
        // plain upper layers' (a gated-feedback layer's step stays `f32`).
        for layer in enc.iter_mut().chain(&mut self.upper.layers) {
            layer.w.quantize();
        }
        self
    }

    /// Copies `model`'s parameters. Only `f32` CPU models are supported; the caller falls back
    /// to the candle search for anything else (see [`HostModel::supports`]).
    pub fn new(model: &Seq2Seq) -> Result<Self> {
        if !Self::supports(model) {
            return Err(Error::Config("fused search needs an f32 model on the CPU".into()));
        }
        let cfg = model.cfg.clone();
        let out = HostOutput::new(model.output())?;
        let core = match model.layers() {
            Layers::Search { enc, dec } => HostCore::Search {
                enc: enc
                    .layers
                    .iter()
                    .enumerate()
                    .map(|(k, l)| HostRnn::new(&[&l.fwd, &l.bwd], if k == 0 { cfg.emb_dim } else { 2 * cfg.hidden_dim }))
                    .collect::<Result<_>>()?,
                dec: Box::new(HostAttention::new(dec, &cfg, &out)?),
            },
            Layers::Enc { enc, dec } => {
                let (plain, feedback) = match enc {
                    SummaryEncoder::Rnn(e) => match e.feedback_stack() {
                        Some(stack) => (&e.layers[..1], Some(HostFeedbackStack::new(&stack)?)),
                        None => (&e.layers[..], None),
                    },
                    SummaryEncoder::GrConv(_) => (&[][..], None),
                };
                HostCore::Enc {
                    enc: plain
                        .iter()
                        .enumerate()
                        .map(|(k, l)| HostRnn::new(&[l], if k == 0 { cfg.emb_dim } else { cfg.hidden_dim }))
                        .collect::<Result<_>>()?,
                    feedback,
                    dec: Box::new(HostSummary::new(dec, cfg.hidden_dim)?),
                }
            }
        };
        let upper = HostUpper::new(model.upper_layers(), cfg.cell_kind(), cfg.hidden_dim)?;
        let (src_emb, tgt_emb) = model.embeddings();
        let grconv = match model.layers() {
            Layers::Enc { enc: SummaryEncoder::GrConv(g), .. } => Some(HostGrConv::new(g)?),
            _ => None,
        };
        let copy = model.copy_gate().map(HostCopy::new).transpose()?;
        Ok(HostModel { src_emb: host(src_emb)?, tgt_emb: host(tgt_emb)?, cfg, core, upper, grconv, copy, out })
    }

    /// Whether the fused search can run `model`: `f32` parameters in host memory (every
    /// architecture, cell, encoder and stack), as [`Backend`] decides.
    pub fn supports(model: &Seq2Seq) -> bool {
        Backend::new(Impl::Fused, model.device(), model.dtype()).host()
    }

    /// The width `w` of one decoder layer's state: `n`, or the LSTM's `[s; cell]`, `2n`.
    pub fn layer_width(&self) -> usize {
        self.cfg.layer_state_width()
    }

    /// The width of a decoder state row: every layer's state side by side, `L·w`.
    pub fn state_width(&self) -> usize {
        self.cfg.dec_layers * self.layer_width()
    }
}
