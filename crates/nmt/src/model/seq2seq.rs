//! [`Seq2Seq`], the encoder-decoder: the embeddings and one `Layers` (RNNsearch or RNNenc,
//! `layers.rs`), and what training, search and scoring need of them: `loss`,
//! `sentence_log_probs`, `encode`, `decode_step`. Moved out of `model/mod.rs` (issue 77) so that
//! the files that need a model (the recorded step's) stand below the folder's list, not above it.
use candle_core::{DType, Device, Tensor};

use super::architecture::Forced;
use super::backend::Backend;
use super::decoder::{Encoded, Memory, StepScores};
use super::encoder::Source;
use super::inputs::BatchTensors;
use super::layers::{HostLayers, Layers};
use super::params::{Init, Params};
use super::regularizer::Regularizer;
use super::{copy, embedding, rnnenc, rnnsearch};
use crate::config::{Arch, Impl, ModelConfig, Precision};
use crate::error::Result;

/// The checkpoint keys of the embedding tables (`quantize.rs` scales them by rows).
pub const SRC_EMB: &str = "src_emb";
pub const TGT_EMB: &str = "tgt_emb";
/// The checkpoint key of the output projection's bias `b_G (K_y)` (`nmt bench` sets `</s>`'s).
pub const OUTPUT_BIAS: &str = "output.b_g";

/// An RNN encoder-decoder with its parameters.
pub struct Seq2Seq {
    pub cfg: ModelConfig,
    pub params: Params,
    src_emb: Tensor,
    tgt_emb: Tensor,
    /// The layers between the embeddings and the scores.
    net: Layers,
    /// The form the loss runs in (see [`Seq2Seq::set_impl`]).
    backend: Backend,
}

/// Teacher-forced loss of a batch.
pub struct Loss {
    /// Mean negative log-likelihood per target token (scalar, differentiable).
    pub mean: Tensor,
    /// Number of target tokens (including `</s>`).
    pub(crate) tokens: usize,
}

impl Seq2Seq {
    /// A freshly initialised model (paper initialisation, seeded).
    pub fn fresh(cfg: &ModelConfig, seed: u64, dtype: DType, device: &Device) -> Result<Self> {
        let glorot = cfg.init == crate::config::WeightInit::Glorot;
        let params = Params::fresh(seed, cfg.init_std, cfg.orthogonal_recurrent, dtype, device).with_glorot(glorot);
        Self::build(cfg, params)
    }

    /// Builds the layers, creating or claiming every parameter from `params`.
    pub fn build(cfg: &ModelConfig, params: Params) -> Result<Self> {
        cfg.validate()?;
        let pb = params.builder();
        let m = cfg.emb_dim;
        let src_emb = pb.get(SRC_EMB, &[cfg.src_vocab, m], Init::Normal)?;
        let tgt_emb = pb.get(TGT_EMB, &[cfg.tgt_vocab, m], Init::Normal)?;
        let tied = cfg.tie_target_embeddings.then_some(&tgt_emb);
        let net = match cfg.arch {
            Arch::Rnnsearch { att_dim, copy, decoder, .. } => {
                Layers::Rnnsearch(rnnsearch::Rnnsearch::new(cfg, att_dim, copy, decoder, tied, &pb)?)
            }
            Arch::Rnnenc { encoder } => Layers::Rnnenc(rnnenc::Rnnenc::new(cfg, encoder, tied, &pb)?),
        };
        let unclaimed = params.unclaimed();
        if !unclaimed.is_empty() {
            return Err(crate::error::Error::Config(format!(
                "the model file has tensors this configuration does not use: {}",
                unclaimed.join(", ")
            )));
        }
        let backend = Backend::new(Impl::Fused, &params.device, params.dtype);
        Ok(Seq2Seq { cfg: cfg.clone(), params, src_emb, tgt_emb, net, backend })
    }

    pub fn device(&self) -> &Device {
        &self.params.device
    }

    pub fn dtype(&self) -> DType {
        self.params.dtype
    }

    /// Encodes a batch's source side for the candle search: on composed ops, the encoder's GPU
    /// kernels on a GPU (`Backend::Gpu`: forward only, the same op as training's).
    pub fn encode(&self, batch: &nmt_data::batch::Batch) -> Result<Encoded> {
        let (src, mask) = BatchTensors::source(batch, self.dtype(), self.device())?;
        let x = embedding::lookup(&self.src_emb, &src, None, Backend::Composed)?;
        let lens: Vec<usize> = batch.src_lengths.iter().map(|&l| l.max(1)).collect();
        let backend = if self.backend.gpu() { self.backend } else { Backend::Composed };
        self.net.encode(&x, Source { mask: &mask, lens: &lens }, backend)
    }

    /// One decoding step for `rows` hypotheses: `state (rows, L·w)`, previous words `y (rows)`
    /// u32 (a copy model's extended ids past the vocabulary enter the decoder as `<unk>`).
    pub fn decode_step(&self, enc: &Encoded, state: &Tensor, y_prev: &Tensor) -> Result<StepScores> {
        let ey = self.tgt_emb.index_select(&copy::vocab_ids(y_prev, self.cfg.tgt_vocab)?, 0)?;
        self.net.step(&self.cfg, enc, state, &ey)
    }

    /// Gives an encoded batch its extended source ids `(B, S)` (copy models' search).
    pub fn attach_copy_source(&self, enc: &mut Encoded, ext: &Tensor) -> Result<()> {
        if let Memory::Attention(mem) = &mut enc.memory {
            mem.n_ext = copy::extended_count(ext, self.cfg.tgt_vocab)?;
            mem.src_ext = Some(ext.clone());
        }
        Ok(())
    }

    /// Per-token negative log-likelihood `(B·T)`, zero at padding; label-smoothed and with
    /// dropout when training (`reg`). Each layer draws its own dropout masks at its sites
    /// (`regularizer::Site`) and runs its fused or composed form as [`Backend`] says; the
    /// composed forms are the reference twin (`tests/fused_model.rs`).
    fn token_nll(&self, batch: &BatchTensors, reg: Option<&mut Regularizer>) -> Result<Tensor> {
        let (eps, cands, mut dropout) = match reg {
            Some(r) => (r.label_smoothing, r.candidates.as_ref(), Some(&mut r.dropout)),
            None => (0.0, None, None),
        };
        let (b, t) = batch.tgt_in.dims2()?;
        let m = self.cfg.emb_dim;
        let lens: Vec<usize> = batch.src_lengths.iter().map(|&l| l.max(1)).collect();
        let src_mask = dropout.as_deref_mut().and_then(|d| d.source_mask(batch.src.elem_count(), m));
        let x = embedding::lookup(&self.src_emb, &batch.src, src_mask, self.backend)?;
        // A copy model's extended ids (past the vocabulary) enter the decoder as `<unk>`.
        let tgt_in = copy::vocab_ids(&batch.tgt_in, self.cfg.tgt_vocab)?;
        let tgt_mask = dropout.as_deref_mut().and_then(|d| d.target_mask(b * t, m));
        let ey = embedding::lookup(&self.tgt_emb, &tgt_in, tgt_mask, self.backend)?;
        let ey_rows = ey.reshape((b * t, m))?;
        let f = Forced { batch, x, src: Source { mask: &batch.src_mask, lens: &lens }, ey, ey_rows, eps, cands };
        self.net.forward(&self.cfg, &f, dropout, self.backend)
    }

    /// The host snapshot of the layers (the fused CPU search's, `snapshot::HostModel`).
    pub(crate) fn host_layers(&self) -> Result<HostLayers> {
        self.net.host(&self.cfg)
    }

    /// Chooses the loss's implementation. `Fused` (the default) runs the kernels for a model on
    /// the CPU in f32 or f64; on another device or dtype the composed ops run whatever is set
    /// ([`Backend::new`] decides).
    pub fn set_impl(&mut self, imp: Impl) {
        let products = self.backend.products();
        self.backend = Backend::new(imp, self.device(), self.dtype()).with_products(products);
    }

    /// Sets the precision of the training step's large products (`train.precision`) and returns
    /// the one in effect: `Bf16` only where the form has fused products and, on the CPU, where
    /// they are faster than f32 (`Backend::with_products`); the caller says which, once. The
    /// search never reads it (its snapshot multiplies in f32).
    pub fn set_products(&mut self, p: Precision) -> Precision {
        self.backend = self.backend.with_products(p);
        self.backend.products()
    }

    /// Runs the loss in its GPU form on the CPU ([`Backend::Gpu`], its products' precision kept: the `kernels::gpu` ops
    /// emulated, the other layers composed), as a GPU would run it. For tests: what a GPU runs,
    /// checked on any machine (`tests/gpu_layouts.rs`). An `f32` model only; others are left alone.
    #[doc(hidden)]
    pub fn emulate_gpu(&mut self) {
        if self.dtype() == candle_core::DType::F32 {
            self.backend = Backend::Gpu(self.backend.products());
        }
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

    /// Source and target embeddings `(K_x, m)`, `(K_y, m)`.
    pub fn embeddings(&self) -> (&Tensor, &Tensor) {
        (&self.src_emb, &self.tgt_emb)
    }

    /// grConv's gates `[ω_c, ω_l, ω_r]` over one source sentence `ids` (in the order the
    /// encoder reads them, `</s>` included): `gates[t − 1][j]` for node `j` of level `t`
    /// (`nmt plot grconv`). An error for other encoders.
    pub fn grconv_gates(&self, ids: &[u32]) -> Result<Vec<Vec<[f32; 3]>>> {
        let Some(g) = (match &self.net {
            Layers::Rnnenc(a) => a.grconv(),
            Layers::Rnnsearch(_) => None,
        }) else {
            return Err(crate::error::Error::Config("this model has no grConv encoder".into()));
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

    /// The output layer's parameters with one slice per target word and the stride of each
    /// (`DeepOutput::word_params`): what `train.candidates.scale_moments` scales.
    pub(crate) fn word_params(&self) -> Result<[(&Tensor, usize); 2]> {
        self.net.output().word_params()
    }

    /// This model's RNNsearch layers, if it is one (the recorded GPU step reads them).
    pub(crate) fn rnnsearch(&self) -> Option<&rnnsearch::Rnnsearch> {
        match &self.net {
            Layers::Rnnsearch(a) => Some(a),
            Layers::Rnnenc(_) => None,
        }
    }

    /// A model of the same configuration whose parameters are `f(name, parameter)`: packing
    /// one built of another model's gradients packs those gradients (`launch_arena.rs`).
    pub(crate) fn with_params(&self, f: impl Fn(&str, &Tensor) -> Result<Tensor>) -> Result<Seq2Seq> {
        self.with_params_in(self.dtype(), f)
    }

    /// [`Seq2Seq::with_params`] with parameters of `dtype`.
    pub(crate) fn with_params_in(&self, dtype: DType, f: impl Fn(&str, &Tensor) -> Result<Tensor>) -> Result<Seq2Seq> {
        let mut map = std::collections::BTreeMap::new();
        for (name, v) in self.params.named_vars() {
            let t = f(&name, v.as_tensor())?;
            map.insert(name, t);
        }
        Seq2Seq::build(&self.cfg, Params::from_tensors(map, dtype, self.device()))
    }

    /// Whether the model has attention weights to report (RNNsearch).
    pub fn has_attention(&self) -> bool {
        matches!(self.net, Layers::Rnnsearch(_))
    }

    /// Total number of trainable scalars.
    pub fn num_parameters(&self) -> usize {
        self.params.named_vars().iter().map(|(_, v)| v.elem_count()).sum()
    }
}
