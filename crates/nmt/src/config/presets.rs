//! `[model] preset = "…"`: the named shapes, from the papers' sizes to CPU-sized ones and the
//! tests' tiny models. A config file's own keys override the preset's (`Config::from_toml_str`).
use super::arch::{Arch, EncoderKind};
use super::model::{Cell, GruForm, ModelConfig, StackKind, WeightInit};
use super::output_keys::{OutputLayer, OutputState};
use crate::error::{Error, Result};

impl ModelConfig {
    /// A named preset: `rnnsearch`, `rnnenc` (the papers' sizes), `rnnsearch-small`,
    /// `rnnenc-small` (sizes a 2-core CPU can train in minutes), `bench-rnnsearch` (the speed
    /// benchmark's model), `tiny` (tests).
    pub fn preset(name: &str) -> Result<Self> {
        // `arch`, embedding `m`, hidden `n`, maxout `l`, vocabularies.
        let base = |arch: Arch, emb, hid, maxout, vocab| ModelConfig {
            preset: Some(name.to_string()),
            arch,
            emb_dim: emb,
            hidden_dim: hid,
            maxout_dim: maxout,
            output_state: match arch {
                Arch::Rnnsearch { .. } => OutputState::Previous,
                Arch::Rnnenc { .. } => OutputState::Current,
            },
            output_layer: OutputLayer::Maxout,
            cell: Cell::Gru,
            gru: GruForm::Paper,
            dropout: 0.0,
            recurrent_dropout: 0.0,
            layer_norm: false,
            tie_target_embeddings: false,
            enc_layers: 1,
            dec_layers: 1,
            residual: false,
            stack: StackKind::Plain,
            reverse_source: false,
            init: WeightInit::Paper,
            init_std: 0.01,
            orthogonal_recurrent: true,
            src_vocab: vocab,
            tgt_vocab: vocab,
        };
        Ok(match name {
            // Bahdanau et al. 2014, appendix A.2: m = 620, n = n' = 1000, l = 500, 30 000 words.
            "rnnsearch" => base(Arch::rnnsearch(1000), 620, 1000, 500, 30_000),
            // Cho et al. 2014, appendix A: 1000 hidden, 500-d embeddings, 500 maxout, 15 000 words.
            "rnnenc" => base(Arch::rnnenc(), 500, 1000, 500, 15_000),
            "rnnsearch-small" => base(Arch::rnnsearch(256), 256, 256, 256, 8000),
            // No attention: the summary vector carries everything, so a wider GRU.
            "rnnenc-small" => base(Arch::rnnenc(), 256, 512, 256, 8000),
            // The speed benchmark's model (`nmt bench`, bench/pytorch/): rnnsearch-small's sizes
            // with the reset-after GRU (PyTorch's cell, with `b_h`) and the deep output on `s_i`.
            "bench-rnnsearch" => ModelConfig {
                gru: GruForm::ResetAfter,
                output_state: OutputState::Current,
                ..base(Arch::rnnsearch(256), 256, 256, 256, 8000)
            },
            // Sutskever et al. 2014: 4-layer LSTMs of 1000 cells, 1000-d embeddings, the source
            // read backwards, no attention; 80 000 output words. Here the decoder starts from
            // RNNenc's summary bridge and keeps the maxout deep output (`lstm-seq2seq-small`'s
            // notes in configs/).
            "lstm-seq2seq" => ModelConfig {
                cell: Cell::Lstm,
                enc_layers: 4,
                dec_layers: 4,
                reverse_source: true,
                ..base(Arch::rnnenc(), 1000, 1000, 500, 80_000)
            },
            // The lecture's seq2seq at CPU size: 2-layer LSTMs of 384 cells, reversed source.
            "lstm-seq2seq-small" => ModelConfig {
                cell: Cell::Lstm,
                enc_layers: 2,
                dec_layers: 2,
                reverse_source: true,
                ..base(Arch::rnnenc(), 256, 384, 256, 8000)
            },
            // Properties §3: grConv's summary under RNNenc's decoder; CPU sizes.
            "grconv-small" => base(Arch::Rnnenc { encoder: EncoderKind::Grconv }, 256, 512, 256, 8000),
            "tiny" => base(Arch::rnnsearch(16), 16, 16, 16, 32),
            "tiny-rnnenc" => base(Arch::rnnenc(), 16, 16, 16, 32),
            other => {
                return Err(Error::Config(format!(
                    "unknown model preset {other:?} (known: rnnsearch, rnnenc, lstm-seq2seq, rnnsearch-small, rnnenc-small, lstm-seq2seq-small, grconv-small, bench-rnnsearch, tiny, tiny-rnnenc)"
                )))
            }
        })
    }
}
