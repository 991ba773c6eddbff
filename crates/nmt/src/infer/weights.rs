//! A [`Seq2Seq`]'s parameters copied to host `f32` slices once per search call, laid out for
//! the search kernels: matrices stay `(in, out)` row-major (the per-step products `x W` read
//! them as they are), and the output projection is pre-transposed for column-major scores.
//! The architecture gives its own snapshot (`Architecture::host`, `model/network.rs`): this
//! file only adds the embeddings.
use crate::config::{Impl, ModelConfig};
use crate::error::{Error, Result};
use crate::kernels::dense::host;
use crate::model::network::HostNetwork;
use crate::model::{Backend, Seq2Seq};

/// Everything search needs, on the host.
pub struct HostModel {
    pub cfg: ModelConfig,
    pub src_emb: Vec<f32>,
    pub tgt_emb: Vec<f32>,
    /// The architecture's layers, in their host forms.
    pub net: HostNetwork,
}

impl HostModel {
    /// This snapshot with its products in int8 (`kernels/int8.rs`, `kernels::dense::Dense`):
    /// the output projection, the decoder's and the deep output's, and the recurrent layers'
    /// input products. `f32` stay: the recurrent products inside the training kernels that run
    /// the encoder (`kernels::birnn`, `kernels::rnn_op`), the encoder-side attention `U_a h` and
    /// summaries (once per batch), grConv, the gated-feedback step and the copy gate.
    pub fn quantized(mut self) -> Self {
        self.net.quantize();
        self
    }

    /// Copies `model`'s parameters. Only `f32` CPU models are supported; the caller falls back
    /// to the candle search for anything else (see [`HostModel::supports`]).
    pub fn new(model: &Seq2Seq) -> Result<Self> {
        if !Self::supports(model) {
            return Err(Error::Config("fused search needs an f32 model on the CPU".into()));
        }
        let (src_emb, tgt_emb) = model.embeddings();
        Ok(HostModel { src_emb: host(src_emb)?, tgt_emb: host(tgt_emb)?, cfg: model.cfg.clone(), net: model.host_network()? })
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
