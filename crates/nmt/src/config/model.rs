//! `[model]`: the network's architecture and sizes, its named presets, and which
//! implementation runs its maths.
use serde::{Deserialize, Serialize};

use super::arch::{Arch, ArchName, DecoderKind, EncoderKind, StartState};
use super::output_keys::{OutputLayer, OutputState};
use crate::error::{Error, Result};

fn one() -> usize {
    1
}

fn is_false(b: &bool) -> bool {
    !b
}

/// Where the GRU's reset gate acts on the recurrent term (the `model.gru` key).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum GruForm {
    /// As the papers write it (docs/MODELS.md#gru): the candidate is `tanh(W x + U (r ⊙ h))`.
    /// RNNenc's decoder is written `tanh(W' e + r ⊙ (U' h + C c))` in its paper and keeps that.
    #[default]
    Paper,
    /// cuDNN's and PyTorch's cell: `tanh(W x + b + r ⊙ (U h + b_h))`, with a recurrent bias `b_h`
    /// on every gate (bench-rnnsearch's reference; one `(n, 3n)` GEMM per step instead of two).
    ResetAfter,
}

/// The recurrent cell of every layer (the `model.cell` key).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Cell {
    /// The gated recurrent unit of Cho et al. 2014 (the papers' cell), in the form `model.gru`.
    #[default]
    Gru,
    /// The LSTM (Hochreiter & Schmidhuber 1997, forget gate of Gers et al. 2000), as in
    /// Sutskever et al. 2014 and the lecture notes: `[i | f | g | o]` gates, a cell state.
    Lstm,
}

/// How the decoder's stacked layers connect in time (the `model.stack` key).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum StackKind {
    /// Each layer reads its own state at `t − 1` and the layer below at `t` (Sutskever et
    /// al., Wu et al.).
    #[default]
    Plain,
    /// Chung et al. 2015: each of the decoder's layers above the first also reads every
    /// layer's state at `t − 1`, through global reset gates (`model/feedback.rs`).
    GatedFeedback,
}

/// How the weights that are not recurrent start (the `model.init` key; an ablation of issue 40).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum WeightInit {
    /// The papers' N(0, σ²) with `init_std` (σ = 0.01).
    #[default]
    Paper,
    /// Glorot & Bengio 2010's uniform `U(−a, a)`, `a = √(6 / (fan_in + fan_out))` of each
    /// matrix (a vector: `fan_out = 1`), as Marian, Nematus and JoeyNMT start theirs. Biases
    /// stay zero and recurrent matrices orthogonal (`orthogonal_recurrent`).
    Glorot,
}

impl WeightInit {
    /// Whether this is the default, [`WeightInit::Paper`].
    pub fn is_paper(&self) -> bool {
        *self == WeightInit::Paper
    }
}

impl StackKind {
    /// Whether this is the default, [`StackKind::Plain`].
    pub fn is_plain(&self) -> bool {
        *self == StackKind::Plain
    }
}

/// A layer's cell as the kernels run it: `model.cell` with, for the GRU, `model.gru`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellKind {
    Gru(GruForm),
    Lstm,
}

impl CellKind {
    /// Gate blocks per unit: the width of `gi`, `gh` and `U` is `gates() · H`.
    pub fn gates(self) -> usize {
        match self {
            CellKind::Gru(_) => 3,
            CellKind::Lstm => 4,
        }
    }
}

/// Which implementation runs a model's maths: the fused CPU kernels or composed candle ops
/// (`train.impl`, `nmt train --impl`, `nmt translate --impl`, `nmt bench --impl`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Impl {
    /// The fused kernels of `crate::kernels` and the host search (`model/snapshot.rs`) (CPU, f32
    /// and f64); on a GPU in f32, the GPU kernels (`kernels::gpu`) of the layers that have
    /// them; elsewhere (other layers on a GPU, another dtype) the candle ops.
    #[default]
    Fused,
    /// Composed candle ops step by step: the reference twin, on a GPU too. One word for
    /// this form everywhere ("composed": `Backend::Composed`, the docs); `ops`, its name
    /// before, is still read from configs and flags.
    #[serde(alias = "ops")]
    Composed,
}

impl std::str::FromStr for Impl {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "fused" => Ok(Impl::Fused),
            "composed" | "ops" => Ok(Impl::Composed),
            other => Err(Error::Config(format!("unknown implementation {other:?} (known: fused, composed)"))),
        }
    }
}

/// The network: sizes and architecture. Stored in the model file, as the flat `[model]` table
/// of `ModelToml` (a file's keys do not depend on how the code groups them).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(try_from = "ModelToml", into = "ModelToml")]
pub struct ModelConfig {
    /// Named preset this config started from (informational once resolved).
    pub preset: Option<String>,
    /// RNNsearch (with its attention size and copy mixture) or RNNenc (with its encoder).
    pub arch: Arch,
    /// Word embedding size `m` (source and target).
    pub emb_dim: usize,
    /// GRU hidden units `n` (per direction in the RNNsearch encoder; the decoder has `n`).
    pub hidden_dim: usize,
    /// Units `l` of the deep output's hidden layer (maxout's pre-activation has `2l`); the
    /// key keeps the papers' name for the tanh layer too.
    pub maxout_dim: usize,
    /// Deep output reads the previous or the current decoder state.
    pub output_state: OutputState,
    /// The deep output's hidden layer: the papers' maxout or Nematus' and Marian's tanh.
    pub output_layer: OutputLayer,
    /// The recurrent cell of every layer: `gru` (the papers', the default) or `lstm`.
    pub cell: Cell,
    /// `paper` (reset gate before `U`, the default) or `reset-after` (cuDNN's cell with `b_h`).
    pub gru: GruForm,
    /// Dropout on embeddings and on the maxout output during training (0 = off, as in the papers).
    pub dropout: f64,
    /// Recurrent dropout during training: each GRU layer's state, where it enters `U`, times a
    /// mask drawn once per sentence and kept for every step (Gal & Ghahramani 2016; Nematus'
    /// `dropout_hidden`). 0 = off, as in the papers.
    pub recurrent_dropout: f64,
    /// Share the target embedding matrix `E (K_y, m)` with the output projection (`G = Eᵀ`,
    /// Press & Wolf 2017). Needs `maxout_dim = emb_dim`. Off in the papers.
    pub tie_target_embeddings: bool,
    /// Layer normalisation as Marian's `s2s --layer-normalization` places it (Ba et al. 2016;
    /// `model/layer_norm.rs`): on each product of a GRU, the attention, the start state and the
    /// deep output, before its bias. Off in the papers; needs the conditional decoder and the
    /// reset-after GRU, one layer each side.
    pub layer_norm: bool,
    /// Recurrent layers of the encoder (each bidirectional for RNNsearch) and of the decoder
    /// (the first one conditioned on the source, the others reading the layer below).
    /// 1 in the papers.
    pub enc_layers: usize,
    pub dec_layers: usize,
    /// Residual connections between stacked layers: a layer's output adds its input, from the
    /// second layer on (Wu et al. 2016). Unit dropout (`dropout`) applies to each upper layer's
    /// input either way.
    pub residual: bool,
    /// `plain` (the default) or `gated-feedback` (Chung et al. 2015): the layers above the
    /// first of the decoder and of RNNenc's recurrent encoder read every layer of their stack
    /// at `t − 1` through global reset gates. Needs such a stack of at least 2 layers.
    /// RNNsearch's bidirectional encoder stays plain (feedback there closes a cycle,
    /// `model/encoder.rs`). Fused training runs the stacks as one kernel
    /// (`kernels/cpu/feedback_op.rs`); search steps the decoder's (`HostFeedback`) and runs the
    /// encoder's with the same kernel (`model/feedback.rs`, `feedback_fused.rs`).
    pub stack: StackKind,
    /// Read the source backwards (Sutskever et al. 2014): each sentence's tokens, before its
    /// `</s>`, enter the encoder in reverse order. Done on the ids (`nmt_data::reverse_source`)
    /// wherever a source enters the model, so every encoder, kernel and search sees it alike;
    /// attention weights are mapped back to the source's own order. Off in the papers.
    pub reverse_source: bool,
    /// How non-recurrent weights start: the papers' N(0, σ²) or Glorot's uniform.
    pub init: WeightInit,
    /// Standard deviation of the N(0, σ²) initialisation of non-recurrent weights (paper: 0.01).
    pub init_std: f64,
    /// Recurrent matrices initialised as random orthogonal matrices (paper: true).
    pub orthogonal_recurrent: bool,
    /// Source and target vocabulary sizes; filled in from the trained subword models.
    pub src_vocab: usize,
    pub tgt_vocab: usize,
}

/// The `[model]` table as written: [`ModelConfig`]'s fields with the architecture's settings as
/// keys of their own (`arch`, `att_dim`, `copy`, `encoder`, `decoder`, `decoder_start`;
/// [`Arch::from_keys`] pairs them).
/// The keys added after the first model files have defaults, so those files still load.
/// A twin rather than `#[serde(flatten)]` of the `Arch` keys: serde cannot refuse unknown keys
/// (`deny_unknown_fields`) in a struct that flattens, and `serde_ignored` would refuse them only
/// where a caller parses through its wrapper, not in the model file's JSON metadata.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelToml {
    preset: Option<String>,
    arch: ArchName,
    emb_dim: usize,
    hidden_dim: usize,
    att_dim: usize,
    maxout_dim: usize,
    output_state: OutputState,
    /// Not written when the papers' maxout, as `stack`.
    #[serde(default, skip_serializing_if = "OutputLayer::is_maxout")]
    output_layer: OutputLayer,
    #[serde(default)]
    cell: Cell,
    #[serde(default)]
    encoder: EncoderKind,
    #[serde(default)]
    gru: GruForm,
    dropout: f64,
    #[serde(default)]
    recurrent_dropout: f64,
    #[serde(default)]
    tie_target_embeddings: bool,
    /// Not written when off, as `stack`.
    #[serde(default, skip_serializing_if = "is_false")]
    layer_norm: bool,
    #[serde(default = "one")]
    enc_layers: usize,
    #[serde(default = "one")]
    dec_layers: usize,
    #[serde(default)]
    residual: bool,
    /// Not written when plain, so a plain model's file stays readable by builds from before
    /// the key existed (they refuse unknown keys).
    #[serde(default, skip_serializing_if = "StackKind::is_plain")]
    stack: StackKind,
    /// Off in the papers.
    #[serde(default)]
    copy: bool,
    #[serde(default)]
    reverse_source: bool,
    /// Not written when Bahdanau's, as `stack`.
    #[serde(default, skip_serializing_if = "DecoderKind::is_bahdanau")]
    decoder: DecoderKind,
    /// Not written when the paper's, as `stack`.
    #[serde(default, skip_serializing_if = "StartState::is_first_backward")]
    decoder_start: StartState,
    /// Not written when the papers', as `stack`.
    #[serde(default, skip_serializing_if = "WeightInit::is_paper")]
    init: WeightInit,
    init_std: f64,
    orthogonal_recurrent: bool,
    src_vocab: usize,
    tgt_vocab: usize,
}

impl TryFrom<ModelToml> for ModelConfig {
    type Error = Error;
    fn try_from(t: ModelToml) -> Result<Self> {
        Ok(ModelConfig {
            preset: t.preset,
            arch: Arch::from_keys(t.arch, t.att_dim, t.copy, t.encoder, (t.decoder, t.decoder_start))?,
            emb_dim: t.emb_dim,
            hidden_dim: t.hidden_dim,
            maxout_dim: t.maxout_dim,
            output_state: t.output_state,
            output_layer: t.output_layer,
            cell: t.cell,
            gru: t.gru,
            dropout: t.dropout,
            recurrent_dropout: t.recurrent_dropout,
            tie_target_embeddings: t.tie_target_embeddings,
            layer_norm: t.layer_norm,
            enc_layers: t.enc_layers,
            dec_layers: t.dec_layers,
            residual: t.residual,
            stack: t.stack,
            reverse_source: t.reverse_source,
            init: t.init,
            init_std: t.init_std,
            orthogonal_recurrent: t.orthogonal_recurrent,
            src_vocab: t.src_vocab,
            tgt_vocab: t.tgt_vocab,
        })
    }
}

impl From<ModelConfig> for ModelToml {
    fn from(c: ModelConfig) -> Self {
        let (arch, att_dim, copy, encoder, (decoder, decoder_start)) = c.arch.keys();
        ModelToml {
            preset: c.preset,
            arch,
            emb_dim: c.emb_dim,
            hidden_dim: c.hidden_dim,
            att_dim,
            maxout_dim: c.maxout_dim,
            output_state: c.output_state,
            output_layer: c.output_layer,
            cell: c.cell,
            encoder,
            gru: c.gru,
            dropout: c.dropout,
            recurrent_dropout: c.recurrent_dropout,
            tie_target_embeddings: c.tie_target_embeddings,
            layer_norm: c.layer_norm,
            enc_layers: c.enc_layers,
            dec_layers: c.dec_layers,
            residual: c.residual,
            stack: c.stack,
            copy,
            reverse_source: c.reverse_source,
            decoder,
            decoder_start,
            init: c.init,
            init_std: c.init_std,
            orthogonal_recurrent: c.orthogonal_recurrent,
            src_vocab: c.src_vocab,
            tgt_vocab: c.tgt_vocab,
        }
    }
}

impl ModelConfig {
    /// Whether the output mixes in copies of source words (`model.copy`, RNNsearch only).
    pub fn copy(&self) -> bool {
        self.arch.copy()
    }

    /// The width of one decoder layer's state: `n`, or the LSTM's `[h; c]`, `2n`.
    pub fn layer_state_width(&self) -> usize {
        match self.cell {
            Cell::Gru => self.hidden_dim,
            Cell::Lstm => 2 * self.hidden_dim,
        }
    }

    /// The cell the kernels run: `cell`, with `gru`'s form for the GRU.
    pub fn cell_kind(&self) -> CellKind {
        match self.cell {
            Cell::Gru => CellKind::Gru(self.gru),
            Cell::Lstm => CellKind::Lstm,
        }
    }

    /// Puts an `</s>`-terminated source sentence's ids in the order the encoder reads them
    /// (reversed under `reverse_source`). Applied again, it restores the source's own order,
    /// which is how attention rows over the read order are mapped back.
    pub fn order_source<T>(&self, xs: &mut [T]) {
        if self.reverse_source {
            nmt_data::reverse_source(xs, true);
        }
    }
}
