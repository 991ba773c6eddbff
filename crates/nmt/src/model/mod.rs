//! The encoder-decoder: [`Seq2Seq`] selects RNNsearch or RNNenc from a [`ModelConfig`] and offers
//! what training, search and scoring need: `encode`, `decode_step`, `loss`, `sentence_log_probs`.
//!
//! Shapes: `B` sentences, `S` padded source length, `T` padded target length, `m` embedding,
//! `n` hidden, `l` maxout units, `K_y` target vocabulary.
pub mod attention;
pub mod attention_decoder;
pub mod backend;
pub mod copy;
pub mod decoder;
mod decoding;
pub mod embedding;
pub mod encoder;
pub mod feedback;
pub mod feedback_fused;
mod forced;
pub mod grconv;
pub mod gru;
pub mod inputs;
pub mod lstm;
pub mod output;
pub mod params;
pub mod regularizer;
pub mod rnn;
mod scorer;
pub mod summary_decoder;
pub mod upper;

use candle_core::{DType, Device, Tensor};

use crate::config::{Arch, EncoderKind, Impl, ModelConfig, StackKind};
use crate::error::Result;
use attention_decoder::AttentionDecoder;
pub use backend::Backend;
use decoder::{DecoderDims, Encoded, Memory};
use encoder::{BiRnnEncoder, RnnEncoder, Stack, SummaryEncoder};
pub use inputs::BatchTensors;
use output::{DeepOutput, OutputDims};
use params::{Init, Params};
use regularizer::Regularizer;
use summary_decoder::SummaryDecoder;
use upper::UpperLayers;

enum Core {
    Search { enc: BiRnnEncoder, dec: AttentionDecoder },
    Enc { enc: SummaryEncoder, dec: SummaryDecoder },
}

/// A borrowed view of the encoder and decoder of either architecture.
pub enum Layers<'a> {
    Search { enc: &'a BiRnnEncoder, dec: &'a AttentionDecoder },
    Enc { enc: &'a SummaryEncoder, dec: &'a SummaryDecoder },
}

/// The checkpoint keys of the embedding tables (`quantize.rs` scales them by rows).
pub const SRC_EMB: &str = "src_emb";
pub const TGT_EMB: &str = "tgt_emb";

/// An RNN encoder-decoder with its parameters.
pub struct Seq2Seq {
    pub cfg: ModelConfig,
    pub params: Params,
    src_emb: Tensor,
    tgt_emb: Tensor,
    core: Core,
    /// The decoder's layers above the first (`model.dec_layers − 1`; usually none).
    upper: UpperLayers,
    /// The copy mixture's gate (`model.copy`).
    copy: Option<copy::CopyGate>,
    out: DeepOutput,
    /// The form the loss runs in (see [`Seq2Seq::set_impl`]).
    backend: Backend,
}

/// Teacher-forced loss of a batch.
pub struct Loss {
    /// Mean negative log-likelihood per target token (scalar, differentiable).
    pub mean: Tensor,
    /// Number of target tokens (including `</s>`).
    pub tokens: usize,
}

/// One search step's result for `rows` hypotheses.
pub struct Step {
    /// New decoder state `(rows, n)` (the LSTM's `[s; cell]`: `(rows, 2n)`).
    pub state: Tensor,
    /// `log p(y_i | y_<i, x)` `(rows, K_y)`.
    pub log_probs: Tensor,
    /// Attention weights `(rows, S)` (RNNsearch only).
    pub alpha: Option<Tensor>,
}

impl Seq2Seq {
    /// A freshly initialised model (paper initialisation, seeded).
    pub fn fresh(cfg: &ModelConfig, seed: u64, dtype: DType, device: &Device) -> Result<Self> {
        let params = Params::fresh(seed, cfg.init_std, cfg.orthogonal_recurrent, dtype, device);
        Self::build(cfg, params)
    }

    /// Builds the layers, creating or claiming every parameter from `params`.
    pub fn build(cfg: &ModelConfig, params: Params) -> Result<Self> {
        cfg.validate()?;
        let pb = params.builder();
        let (m, n) = (cfg.emb_dim, cfg.hidden_dim);
        let src_emb = pb.get(SRC_EMB, &[cfg.src_vocab, m], Init::Normal)?;
        let tgt_emb = pb.get(TGT_EMB, &[cfg.tgt_vocab, m], Init::Normal)?;
        let kind = cfg.cell_kind();
        let dims = DecoderDims { emb: m, enc: n, hidden: n, kind };
        // Gated feedback reaches RNNenc's recurrent encoder, not RNNsearch's bidirectional one
        // (`encoder.rs`).
        let stack = Stack { layers: cfg.enc_layers, residual: cfg.residual, kind: StackKind::Plain };
        let enc_stack = Stack { kind: cfg.stack, ..stack };
        let (core, ctx_dim) = match cfg.arch {
            Arch::Rnnsearch { att_dim, .. } => (
                Core::Search {
                    enc: BiRnnEncoder::new(m, n, kind, stack, &pb.pp("encoder"))?,
                    dec: AttentionDecoder::new(dims, att_dim, &pb.pp("decoder"))?,
                },
                2 * n,
            ),
            Arch::Rnnenc { encoder } => (
                Core::Enc {
                    enc: match encoder {
                        EncoderKind::Rnn => SummaryEncoder::Rnn(RnnEncoder::new(m, n, kind, enc_stack, &pb.pp("encoder"))?),
                        EncoderKind::Grconv => SummaryEncoder::GrConv(grconv::GrConv::new(m, n, &pb.pp("encoder").pp("grconv"))?),
                    },
                    dec: SummaryDecoder::new(dims, &pb.pp("decoder"))?,
                },
                n,
            ),
        };
        let dec_stack = Stack { layers: cfg.dec_layers, residual: cfg.residual, kind: cfg.stack };
        let upper = UpperLayers::new(n, kind, dec_stack, &pb.pp("decoder"))?;
        let copy = if cfg.copy() { Some(copy::CopyGate::new(n + 2 * n + m, &pb.pp("copy"))?) } else { None };
        let tied = cfg.tie_target_embeddings.then_some(&tgt_emb);
        let dims = OutputDims { state: n, emb: m, ctx: ctx_dim, maxout: cfg.maxout_dim, vocab: cfg.tgt_vocab };
        let out = DeepOutput::new(dims, tied, &pb.pp("output"))?;
        let unclaimed = params.unclaimed();
        if !unclaimed.is_empty() {
            return Err(crate::Error::Config(format!(
                "the model file has tensors this configuration does not use: {}",
                unclaimed.join(", ")
            )));
        }
        let backend = Backend::new(Impl::Fused, &params.device, params.dtype);
        Ok(Seq2Seq { cfg: cfg.clone(), params, src_emb, tgt_emb, core, upper, copy, out, backend })
    }

    pub fn device(&self) -> &Device {
        &self.params.device
    }

    pub fn dtype(&self) -> DType {
        self.params.dtype
    }

    /// Encodes a batch's source side for the candle search, on composed ops.
    pub fn encode(&self, batch: &nmt_data::batch::Batch) -> Result<Encoded> {
        let (src, mask) = BatchTensors::source(batch, self.dtype(), self.device())?;
        let backend = Backend::Composed;
        let x = embedding::lookup(&self.src_emb, &src, None, backend)?;
        let lens: Vec<usize> = batch.src_lengths.iter().map(|&l| l.max(1)).collect();
        let source = encoder::Source { mask: &mask, lens: &lens };
        match &self.core {
            Core::Search { enc, dec } => {
                let ann = enc.forward(&x, source, None, backend)?;
                let init = self.stack_start(&dec.init_state(&ann)?)?;
                Ok(Encoded { memory: Memory::Attention(dec.memory(&ann, &mask)?), init })
            }
            Core::Enc { enc, dec } => {
                let last = enc.forward(&x, source, None, backend)?;
                let (c, h0) = dec.summarise(&last)?;
                let memory = dec.memory(&c, self.out.project_context(&c)?)?;
                Ok(Encoded { memory: Memory::Summary(memory), init: self.stack_start(&dec.start(&h0)?)? })
            }
        }
    }

    /// Chooses the loss's implementation. `Fused` (the default) runs the kernels for a model on
    /// the CPU in f32 or f64; on another device or dtype the composed ops run whatever is set
    /// ([`Backend::new`] decides).
    pub fn set_impl(&mut self, imp: Impl) {
        self.backend = Backend::new(imp, self.device(), self.dtype());
    }

    /// The form the loss runs in, given the implementation set, the device and the dtype.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Mean token NLL of a batch; with dropout and label smoothing (`reg`) for training.
    pub fn loss(&self, batch: &BatchTensors, reg: Option<&mut Regularizer>) -> Result<Loss> {
        let nll = self.token_nll(batch, reg)?;
        let mean = (nll.sum_all()? / batch.tokens.max(1) as f64)?;
        Ok(Loss { mean, tokens: batch.tokens })
    }

    /// Each target token's `log p(y_i | y_<i, x)` for every sentence pair of the batch
    /// (teacher-forced; `</s>` included, padding left out).
    pub fn token_log_probs(&self, batch: &BatchTensors) -> Result<Vec<Vec<f64>>> {
        let nll = self.token_nll(batch, None)?;
        let (b, t) = batch.tgt_in.dims2()?;
        let nll = nll.reshape((b, t))?.to_dtype(DType::F64)?.to_vec2::<f64>()?;
        let mask = batch.tgt_mask.reshape((b, t))?.to_dtype(DType::F64)?.to_vec2::<f64>()?;
        Ok(nll.iter().zip(&mask).map(|(row, m)| row.iter().zip(m).filter(|(_, &k)| k > 0.0).map(|(x, _)| -x).collect()).collect())
    }

    /// `log p(y | x)` of each sentence pair of the batch (teacher-forced, `</s>` included).
    pub fn sentence_log_probs(&self, batch: &BatchTensors) -> Result<Vec<f64>> {
        let nll = self.token_nll(batch, None)?;
        let (b, t) = batch.tgt_in.dims2()?;
        let per = nll.reshape((b, t))?.sum(1)?.to_dtype(DType::F64)?.to_vec1::<f64>()?;
        Ok(per.into_iter().map(|x| -x).collect())
    }

    /// The deep output layer's weights (the host search reads them).
    pub fn output(&self) -> &DeepOutput {
        &self.out
    }

    /// The encoder and decoder layers, typed: the host search reads its weights from them.
    pub fn layers(&self) -> Layers<'_> {
        match &self.core {
            Core::Search { enc, dec } => Layers::Search { enc, dec },
            Core::Enc { enc, dec } => Layers::Enc { enc, dec },
        }
    }

    /// The copy mixture's gate, if the model has one (the host search reads it).
    pub fn copy_gate(&self) -> Option<&copy::CopyGate> {
        self.copy.as_ref()
    }

    /// The decoder's layers above the first (the host search reads their weights).
    pub fn upper_layers(&self) -> &UpperLayers {
        &self.upper
    }

    /// Source and target embeddings `(K_x, m)`, `(K_y, m)`.
    pub fn embeddings(&self) -> (&Tensor, &Tensor) {
        (&self.src_emb, &self.tgt_emb)
    }

    /// grConv's gates `[ω_c, ω_l, ω_r]` over one source sentence `ids` (in the order the
    /// encoder reads them, `</s>` included): `gates[t − 1][j]` for node `j` of level `t`
    /// (`nmt plot grconv`). An error for other encoders.
    pub fn grconv_gates(&self, ids: &[u32]) -> Result<Vec<Vec<[f32; 3]>>> {
        let Core::Enc { enc: SummaryEncoder::GrConv(g), .. } = &self.core else {
            return Err(crate::Error::Config("this model has no grConv encoder".into()));
        };
        let ids = Tensor::from_vec(ids.to_vec(), ids.len(), self.device())?;
        let x = self.src_emb.index_select(&ids, 0)?.unsqueeze(0)?;
        let (_, tree) = g.run(&x, &[ids.dim(0)?], true)?;
        tree.gates
            .iter()
            .map(|level| {
                let v = level.squeeze(0)?.to_dtype(DType::F32)?.to_vec2::<f32>()?;
                Ok(v.into_iter().map(|r| [r[0], r[1], r[2]]).collect())
            })
            .collect()
    }

    /// Whether the model has attention weights to report (RNNsearch).
    pub fn has_attention(&self) -> bool {
        matches!(self.core, Core::Search { .. })
    }

    /// Total number of trainable scalars.
    pub fn num_parameters(&self) -> usize {
        self.params.named_vars().iter().map(|(_, v)| v.elem_count()).sum()
    }
}
