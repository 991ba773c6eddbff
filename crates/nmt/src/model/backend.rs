//! Which form of the layers runs: decided once, here, from the requested [`Impl`], the device
//! and the dtype, and asked by each layer's teacher-forcing `forward` (the loss, `model/layers.rs`), the optimiser's update
//! (`train/optim.rs`) and the search (`search/mod.rs`, `snapshot::HostModel::supports`).
//!
//! How each training update runs is decided here too ([`Backend::training_step`]): the layers'
//! forms under candle's backward pass, or RNNsearch's recorded GPU step (`train.cuda_graph`,
//! `train/graph.rs`). Every refusal of a form, with its reason, is in this file.
//!
//! The fused kernels of `crate::kernels` read host memory in `f32` or `f64`; the host search's
//! snapshot and the optimiser's in-place update are written for `f32` only (f64 is the
//! gradient checks' precision, where speed does not matter). Everything else, and
//! `impl = "composed"` everywhere, runs the composed candle ops: the reference twin and the GPU path.
use candle_core::{DType, Device, Result, Tensor};

use crate::config::{Arch, Impl, ModelConfig, OutputLayer, OutputState, TrainConfig};
use crate::kernels::cpu::engine::products::{self, Precision};
use crate::kernels::cpu::{deep_output, feedback_op, linear, lookup, proj_nll, rnn_sequence};
use crate::kernels::gpu;
use crate::kernels::shapes::feedback_dims::FeedbackSpec;
use crate::kernels::shapes::proj_weight::ProjWeight;
use crate::kernels::shapes::rnn_dims::RnnSpec;

/// How a training update runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrainStep {
    /// Candle's loss and backward pass over the layers' forms (the model's [`Backend`]), then
    /// the optimiser's update.
    Layers,
    /// RNNsearch's recorded GPU step, replayed as a CUDA graph per batch shape (`train.cuda_graph`).
    Recorded,
}

/// The form that runs, and for the forms with fused products, their precision
/// (`train.precision`, set by `Seq2Seq::set_products`; `F32` until then, and always in search).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Composed candle ops: autodiff, any device and dtype.
    Composed,
    /// The fused kernels for the loss; search and the update stay composed (a CPU `f64` model,
    /// whose products are never rounded).
    FusedF64,
    /// The fused kernels for the loss, the in-place update and the host search (a CPU `f32`
    /// model); the training step's large products in the given precision, `Bf16` only where
    /// this CPU runs them faster (`kernels::cpu::engine::products::in_effect`).
    FusedF32(Precision),
    /// An `f32` model on a GPU: the layers that have GPU kernels (`kernels::gpu`: the
    /// recurrent encoders, RNNenc's and the seq2seq decoders' recurrences, the decoders' upper
    /// layers and gated-feedback stacks, the RNNsearch decoders' loops, GRU or LSTM,
    /// layer-normalised or not, the embedding lookups, RNNsearch's deep output and the
    /// projection's loss) run them, the others their composed candle ops (RNNsearch's start
    /// `s_0`, whose twin `kernels::gpu::start_pool` only the recorded step runs, and RNNenc's
    /// per-sentence output layer); search runs candle's search. `impl = "composed"` on a GPU is
    /// [`Backend::Composed`] throughout. The input projections' products in the given
    /// precision (`kernels::gpu::linear`: cuBLAS multiplies bf16 on every GPU the build targets).
    Gpu(Precision),
}

impl Backend {
    /// The form for `imp` on `device` in `dtype`, its products in `f32`.
    pub fn new(imp: Impl, device: &Device, dtype: DType) -> Self {
        match (imp, device.is_cpu(), dtype) {
            (Impl::Fused, true, DType::F32) => Backend::FusedF32(Precision::F32),
            (Impl::Fused, true, DType::F64) => Backend::FusedF64,
            (Impl::Fused, false, DType::F32) if device.is_cuda() => Backend::Gpu(Precision::F32),
            _ => Backend::Composed,
        }
    }

    /// This form with its large products in `p` where it has fused products and `p` is in
    /// effect there: on the CPU `Bf16` only where [`products::in_effect`] says so, on a GPU
    /// always. The composed forms multiply in their dtype whatever is asked.
    pub fn with_products(self, p: Precision) -> Self {
        match self {
            Backend::FusedF32(_) => Backend::FusedF32(products::in_effect(p)),
            Backend::Gpu(_) => Backend::Gpu(p),
            other => other,
        }
    }

    /// The precision of the large products this form runs (`F32` for the composed forms and
    /// `f64`): what the fused ops are given.
    pub fn products(self) -> Precision {
        match self {
            Backend::FusedF32(p) | Backend::Gpu(p) => p,
            Backend::Composed | Backend::FusedF64 => Precision::F32,
        }
    }

    /// Whether the layers' teacher-forcing passes (the loss) run their fused forms (each
    /// layer's `forward` chooses inside; each architecture wires them, `model/rnnsearch.rs` and `model/rnnenc.rs`).
    pub fn fused(self) -> bool {
        matches!(self, Backend::FusedF64 | Backend::FusedF32(_))
    }

    /// Whether search runs on the host snapshot (`model/snapshot.rs`) and the optimiser updates in
    /// place (`kernels::cpu::optim_step`).
    pub fn host(self) -> bool {
        matches!(self, Backend::FusedF32(_))
    }

    /// Whether the layers with GPU kernels (`kernels::gpu`) run them.
    pub fn gpu(self) -> bool {
        matches!(self, Backend::Gpu(_))
    }

    /// `x (n, k) W (k, m) + b (m)`, the fused forms' input projections: the CPU op
    /// (`kernels::cpu::linear`, its products in [`Self::products`]); on a GPU candle's product
    /// (cuBLAS) and add, or with the products in bf16 the GPU twin (`kernels::gpu::linear`), its
    /// three products in bf16 with f32 sums.
    pub(crate) fn linear(self, x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
        match self {
            Backend::Gpu(Precision::Bf16) => gpu::linear::linear(x, w, b, Precision::Bf16),
            Backend::Gpu(Precision::F32) => Ok(x.matmul(w)?.broadcast_add(b)?),
            _ => linear::linear(x, w, b, self.products()),
        }
    }

    /// The gated-feedback stack over the first layer's outputs (`kernels::cpu::feedback_op`'s
    /// contract): the fused CPU op, or on a GPU its twin (`kernels::gpu::feedback_op::feedback_sequence`).
    pub(crate) fn feedback_sequence(self, s1: &Tensor, h0: &Tensor, params: &Tensor, spec: FeedbackSpec<'_>) -> Result<Tensor> {
        match self.gpu() {
            true => gpu::feedback_op::feedback_sequence(s1, h0, params, spec),
            false => feedback_op::feedback_sequence(s1, h0, params, spec),
        }
    }

    /// One recurrent direction with each sentence's `[ghb; h_0]` (`kernels::cpu::rnn_sequence`'s
    /// contract): the fused CPU op, or on a GPU its twin (`kernels::gpu::rnn_sequence::rnn_sequence`).
    pub(crate) fn rnn_sequence(self, gi: &Tensor, u: &Tensor, rows: &Tensor, reverse: bool, spec: RnnSpec<'_>) -> Result<Tensor> {
        match self.gpu() {
            true => gpu::rnn_sequence::rnn_sequence(gi, u, rows, reverse, spec),
            false => rnn_sequence::rnn_sequence(gi, u, rows, reverse, spec),
        }
    }

    /// Whether the layers' teacher-forcing passes run their own ops, on the CPU ([`Self::fused`])
    /// or as their GPU twins ([`Self::gpu`]), rather than composed candle ops.
    pub fn kernels(self) -> bool {
        self.fused() || self.gpu()
    }

    /// The embedding lookup `x_r = E[id_r] ⊙ m_r` (`kernels::cpu::lookup`'s contract): the CPU
    /// op, or on a GPU its twin (`kernels::gpu::lookup`).
    pub(crate) fn lookup(self, table: &Tensor, ids: &[u32], mask: Option<&[f32]>) -> Result<Tensor> {
        match self.gpu() {
            true => gpu::lookup::lookup_op(table, ids, mask),
            false => lookup::lookup_op(table, ids, mask),
        }
    }

    /// RNNsearch's deep output over `[s; c]` and `E y` with the packed `[O_h; O_c; O_y; b]`
    /// (`kernels::cpu::deep_output`'s contract): the CPU op, or on a GPU its twin.
    pub(crate) fn deep_output(self, sc: &Tensor, ey: &Tensor, wb: &Tensor, layer: OutputLayer, mask: Option<&[f32]>) -> Result<Tensor> {
        match self.gpu() {
            true => gpu::deep_output::deep_output(sc, ey, wb, layer, mask),
            false => deep_output::deep_output(sc, ey, wb, layer, mask, self.products()),
        }
    }

    /// The projection's label-smoothed NLL per row (`kernels::cpu::proj_nll`'s contract): the
    /// CPU op, or on a GPU its twin (`kernels::gpu::proj_nll`, its products f32).
    pub(crate) fn proj_nll(self, x: &Tensor, w: ProjWeight<'_>, b: &Tensor, targets: &[u32], eps: f64) -> Result<Tensor> {
        match self.gpu() {
            true => gpu::proj_nll::proj_nll(x, w, b, targets, eps),
            false => proj_nll::proj_nll(x, w, b, targets, eps, self.products()),
        }
    }

    /// The implementation this amounts to, as the options of a search or a bench name it.
    pub fn imp(self) -> Impl {
        match self {
            Backend::Composed => Impl::Composed,
            Backend::FusedF64 | Backend::FusedF32(_) | Backend::Gpu(_) => Impl::Fused,
        }
    }

    /// How `t`'s updates run for `model` on `device` with `ranks` processes, or why they cannot
    /// (said before the corpus is read). Every field of [`TrainConfig`] is named, with no `..`
    /// (issue 77): a field added to the training settings does not compile until this answers it.
    pub fn training_step(model: &ModelConfig, t: &TrainConfig, device: &Device, ranks: usize) -> std::result::Result<TrainStep, String> {
        let TrainConfig {
            cuda_graph,
            imp,        // the recorded step is the GPU kernels' form: "composed" refuses it
            precision,  // its products are f32 only
            candidates, // no candidate softmax in the recorded step; none with a copy mixture
            // The optimiser (Adam or Adadelta), its schedule, clipping and the rescaled update
            // run in both steps (`kernels::gpu::optim_step` in the recorded one).
            optimizer: _,
            lr: _,
            warmup: _,
            lr_cooldown: _, // the host's rate, given to the recorded step before each update
            adadelta_rho: _,
            adadelta_eps: _,
            adam_betas: _,
            adam_eps: _,
            clip_norm: _,
            normalize_updates: _,
            lr_decay: _,
            lr_patience: _,
            // Batching, word dropout and label smoothing act on the batch and the loss, which
            // both steps take alike (word dropout before the batch reaches either).
            batch: _,
            gpu_batch: _,
            src_word_dropout: _,
            tgt_word_dropout: _,
            label_smoothing: _,
            seed: _,
            // The loop's schedule, validation and files: outside the step.
            valid_every: _,
            log_every: _,
            patience: _,
            max_steps: _,
            max_epochs: _,
            max_minutes: _,
            valid_bleu_sentences: _,
            valid_beam_size: _,
            average_last: _,
            shortlist: _,
        } = t;
        if candidates.is_some() && model.copy() {
            return Err("train.candidates with model.copy: the copy mixture normalises over the whole vocabulary".into());
        }
        if candidates.is_some_and(|c| c.scale_moments) && ranks != 1 {
            return Err("train.candidates.scale_moments with several ranks: each rank draws its own list, \
                        so no one set of factors fits the summed gradient (train/moment_scale.rs); \
                        --set train.candidates.scale_moments=false trains the plain list"
                .into());
        }
        if !*cuda_graph {
            return Ok(TrainStep::Layers);
        }
        // The settings first, then the processes, then the device: each refusal is reachable,
        // and tested, on a CPU.
        let refuse = |why: &str| Err(format!("train.cuda_graph {why}"));
        if *imp == Impl::Composed {
            return refuse("with impl = \"composed\": the recorded step is the GPU kernels' form; leave one of them off");
        }
        if *precision == Precision::Bf16 {
            return refuse(
                "with train.precision = \"bf16\": the recorded GPU step multiplies in f32 only; \
                 set train.precision = \"f32\", or leave train.cuda_graph off for the bf16 products",
            );
        }
        if candidates.is_some() {
            return refuse("with train.candidates: the recorded GPU step has no candidate softmax yet");
        }
        if let Some(why) = Backend::recorded_refusal(model, DType::F32) {
            return Err(format!("train.cuda_graph: the recorded GPU step {why}"));
        }
        if ranks != 1 {
            return refuse("runs one process, not data-parallel ranks");
        }
        if !(device.is_cuda() && cfg!(feature = "cuda")) {
            return refuse("needs a GPU: `nmt train --gpu`, built with --features cuda");
        }
        Ok(TrainStep::Recorded)
    }

    /// What of `cfg` in `dtype` the recorded step does not run, if anything: one encoder layer
    /// without layer normalisation, one decoder layer reading `s_i`, no copy mixture, f32.
    ///
    /// Every field of [`ModelConfig`] is named, with no `..` (issue 77): a field added to the
    /// configuration does not compile until this answers it, runs it or refuses it, so the
    /// recorded step cannot silently train another model than the one asked for.
    pub(crate) fn recorded_refusal(cfg: &ModelConfig, dtype: DType) -> Option<String> {
        let ModelConfig {
            preset: _,  // a name only
            arch,       // RNNsearch only; its decoder, start and attention size run
            emb_dim: _, // sizes: the arena takes them from the layers
            hidden_dim: _,
            maxout_dim: _,
            output_state,             // `s_i` only
            output_layer: _,          // maxout and tanh both run (`deep_output.rs`)
            cell: _,                  // GRU and LSTM cells both run
            gru: _,                   // both GRU forms run
            dropout: _,               // unit dropout runs (its masks are staged per batch)
            recurrent_dropout: _,     // runs
            tie_target_embeddings: _, // runs (the projection reads the embeddings' slot)
            layer_norm,
            enc_layers,
            dec_layers,
            residual: _,       // between stacked layers only, which are refused
            stack: _,          // a feedback stack needs stacked layers, refused
            reverse_source: _, // done on the ids before the model (`nmt_data::reverse_source`)
            init: _,           // initialisation: the arena packs the weights as they are
            init_std: _,
            orthogonal_recurrent: _,
            src_vocab: _,
            tgt_vocab: _,
        } = cfg;
        let Arch::Rnnsearch { att_dim: _, copy, decoder: _, start: _ } = arch else {
            return Some("runs RNNsearch only".into());
        };
        let not_yet = |what: &str| Some(format!("does not run {what} yet"));
        if *layer_norm {
            return not_yet("layer normalisation");
        }
        if (*enc_layers, *dec_layers) != (1, 1) {
            return not_yet("stacked layers");
        }
        if *copy {
            return not_yet("the copy mixture");
        }
        if *output_state != OutputState::Current {
            return not_yet("a deep output on s_{i-1}");
        }
        if dtype != DType::F32 {
            return not_yet("a model that is not f32");
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CandidatesConfig, Config, Precision};

    fn recipe() -> Config {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/rnnsearch-s2s.toml");
        Config::from_file(&path, &[]).unwrap()
    }

    /// Every refusal of a training step's form is `Backend::training_step`'s, with its reason,
    /// and each is reached on a CPU: bf16 products, `impl = "composed"`, candidates, a model the
    /// recorded step does not run, ranks, the device; candidates with a copy model, and scaled
    /// moments with ranks, whatever the step. Without `train.cuda_graph` every other setting
    /// trains candle's step.
    #[test]
    fn the_backend_alone_refuses_a_training_step_with_its_reason() {
        let c = recipe();
        let cpu = Device::Cpu;
        let (m, t) = (&c.model, TrainConfig { precision: Precision::F32, candidates: None, ..c.train.clone() });
        let step = |m: &ModelConfig, t: &TrainConfig, ranks| Backend::training_step(m, t, &cpu, ranks);
        let why = |m: &ModelConfig, t: &TrainConfig, ranks| step(m, t, ranks).unwrap_err();
        assert_eq!(step(m, &t, 1), Ok(TrainStep::Layers));
        let bf16 = TrainConfig { precision: Precision::Bf16, ..t.clone() };
        assert_eq!(step(m, &bf16, 4), Ok(TrainStep::Layers));
        let on = TrainConfig { cuda_graph: true, ..t.clone() };
        assert!(why(m, &on, 1).contains("needs a GPU"), "{}", why(m, &on, 1));
        assert!(why(m, &on, 2).contains("one process"));
        let bf16 = TrainConfig { precision: Precision::Bf16, ..on.clone() };
        assert!(why(m, &bf16, 1).contains("f32 only") && why(m, &bf16, 1).contains("train.precision"));
        assert!(why(m, &TrainConfig { imp: Impl::Composed, ..on.clone() }, 1).contains("composed"));
        let cands = Some(CandidatesConfig::default());
        assert!(why(m, &TrainConfig { candidates: cands, ..on.clone() }, 1).contains("candidate softmax"));
        let normed = ModelConfig { layer_norm: true, ..m.clone() };
        assert!(why(&normed, &on, 1).contains("layer normalisation"));
        let mut copy = m.clone();
        if let Arch::Rnnsearch { copy: c, .. } = &mut copy.arch {
            *c = true;
        }
        assert!(why(&copy, &TrainConfig { candidates: cands, ..t.clone() }, 1).contains("copy mixture normalises"));
        assert!(why(&copy, &on, 1).contains("copy mixture"));
        let scaled = Some(CandidatesConfig { scale_moments: true, ..CandidatesConfig::default() });
        assert!(why(m, &TrainConfig { candidates: scaled, ..t.clone() }, 2).contains("several ranks"));
        assert_eq!(step(m, &TrainConfig { candidates: scaled, ..t.clone() }, 1), Ok(TrainStep::Layers));
        assert!(Backend::recorded_refusal(m, DType::F64).unwrap_or_default().contains("not f32"));
        assert_eq!(Backend::recorded_refusal(m, DType::F32), None);
    }
}
