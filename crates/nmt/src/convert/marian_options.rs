//! Marian's `special:model.yml` (the options a model was trained with, stored in its `.npz`)
//! and the nmt [`ModelConfig`] that computes the same network.
//!
//! Marian's `s2s` (`src/models/s2s.h`, v1.12), and `amun` (the same network under Nematus'
//! names, `marian_amun.rs`), map onto RNNsearch with the conditional GRU
//! decoder, option for option:
//! - encoder: a bidirectional GRU (`enc-type: bidirectional`, `enc-depth: 1`), annotations
//!   `[→h; ←h]`;
//! - GRU cells (`rnn/cells.h`, `GRUFastForward`): `r, z = σ(xW + sU + b)`,
//!   `h~ = tanh(xWx + r ⊙ (sUx) + bx)` or, for the decoder's second cell (`final`),
//!   `tanh(xWx + r ⊙ (sUx + bx))`, and `s = (1 − z) h~ + z s_prev`. That is nmt's reset-after
//!   cell (`model.gru = "reset-after"`, `h~ = tanh(W x + b + r ⊙ (U h + b_h))`) with `bx` in `b`
//!   or in `b_h`, and nmt's `z` (`h = z ⊙ h_prev + (1 − z) ⊙ h~`, `model/gru.rs`) is Marian's;
//! - decoder start `tanh(mean(annotations) W + b)` (`ff_state`): `decoder_start = "mean"`;
//! - cell 1 on the previous word's embedding (zero before the first word, as nmt's BOS row is
//!   written), attention on its state with `att_dim = 2·dim-rnn`, cell 2 on the context;
//! - output `tanh(E y W0 + s W1 + c W2 + b0 + b1 + b2)` of `dim-emb` units (`ff_logit_l1`),
//!   then the softmax over `ff_logit_l2`, tied to the target embeddings or not:
//!   `output_layer = "tanh"`, `output_state = "current"`, `maxout_dim = dim-emb`;
//! - `--layer-normalization`: `model.layer_norm`, the same products normalised in the same
//!   places (`model/layer_norm.rs`).
//!
//! What nmt does not compute (LSTM cells, deep encoders and decoders,
//! skip connections, factors, right-to-left models, transition cells) is refused by name
//! ([`MarianOptions::check`]), never converted into a different network.
use serde::Deserialize;

use crate::config::{Arch, Cell, DecoderKind, GruForm, ModelConfig, OutputLayer, OutputState, StartState, WeightInit};
use crate::error::{Error, Result};

/// The options of `special:model.yml` that decide the network. Keys nmt has no use for (the
/// transformer's, the training's) are ignored; those that change an `s2s` network are read
/// and checked.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct MarianOptions {
    #[serde(rename = "type")]
    pub model_type: String,
    pub dim_emb: usize,
    pub dim_rnn: usize,
    pub dim_vocabs: Vec<usize>,
    #[serde(default = "bidirectional")]
    pub enc_type: String,
    #[serde(default = "gru")]
    pub enc_cell: String,
    #[serde(default = "one")]
    pub enc_cell_depth: usize,
    #[serde(default = "one")]
    pub enc_depth: usize,
    #[serde(default = "gru")]
    pub dec_cell: String,
    #[serde(default = "two")]
    pub dec_cell_base_depth: usize,
    #[serde(default = "one")]
    pub dec_depth: usize,
    #[serde(default)]
    pub layer_normalization: bool,
    #[serde(default)]
    pub skip: bool,
    #[serde(default)]
    pub tied_embeddings: bool,
    #[serde(default)]
    pub tied_embeddings_all: bool,
    #[serde(default)]
    pub tied_embeddings_src: bool,
    #[serde(default)]
    pub right_left: bool,
    #[serde(default)]
    pub output_omit_bias: bool,
    #[serde(default)]
    pub factors_dim_emb: usize,
    #[serde(default)]
    pub lemma_dim_emb: usize,
    #[serde(default)]
    pub ulr: bool,
    #[serde(default)]
    pub input_types: Vec<String>,
    #[serde(default)]
    pub original_type: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
}

fn bidirectional() -> String {
    "bidirectional".into()
}
fn gru() -> String {
    "gru".into()
}
fn one() -> usize {
    1
}
fn two() -> usize {
    2
}

/// A model nmt does not run, naming the option.
fn unsupported(option: &str, value: impl std::fmt::Display, why: &str) -> Error {
    Error::Input(format!("Marian option {option}: {value} is not supported: {why}"))
}

impl MarianOptions {
    /// Parses the YAML text of `special:model.yml`.
    ///
    /// # Errors
    /// [`Error::Input`] when it is not YAML or lacks a key the network needs.
    pub fn parse(yaml: &str) -> Result<Self> {
        serde_yaml_ng::from_str(yaml).map_err(|e| Error::Input(format!("Marian's special:model.yml: {e}")))
    }

    /// Refuses every option whose network nmt would not compute exactly, naming it.
    ///
    /// # Errors
    /// [`Error::Input`] naming the first such option and its value.
    pub fn check(&self) -> Result<()> {
        let m = self;
        let refuse = |cond: bool, option: &str, value: String, why: &str| if cond { Err(unsupported(option, value, why)) } else { Ok(()) };
        refuse(
            m.model_type != "s2s" && m.model_type != "amun",
            "--type",
            m.model_type.clone(),
            "only s2s and amun models convert (nematus and transformers do not)",
        )?;
        refuse(m.enc_type != "bidirectional", "--enc-type", m.enc_type.clone(), "only the bidirectional encoder converts")?;
        refuse(m.enc_cell != "gru", "--enc-cell", m.enc_cell.clone(), "only GRU cells convert")?;
        refuse(m.dec_cell != "gru", "--dec-cell", m.dec_cell.clone(), "only GRU cells convert")?;
        refuse(
            m.enc_depth != 1,
            "--enc-depth",
            m.enc_depth.to_string(),
            "Marian stacks each direction apart; nmt's deep encoder stacks bidirectional layers",
        )?;
        refuse(m.enc_cell_depth != 1, "--enc-cell-depth", m.enc_cell_depth.to_string(), "transition cells are not implemented")?;
        refuse(
            m.dec_cell_base_depth != 2,
            "--dec-cell-base-depth",
            m.dec_cell_base_depth.to_string(),
            "the conditional GRU has exactly two cells",
        )?;
        refuse(m.dec_depth != 1, "--dec-depth", m.dec_depth.to_string(), "decoder layers above the conditional GRU do not convert yet")?;
        refuse(
            m.layer_normalization && m.model_type == "amun",
            "--layer-normalization",
            "true with --type amun".into(),
            "Nematus' layer normalisation (with its own shifts) is not Marian's s2s one",
        )?;
        refuse(m.skip, "--skip", "true".into(), "skip connections are not implemented")?;
        refuse(m.right_left, "--right-left", "true".into(), "right-to-left models are not implemented")?;
        refuse(m.output_omit_bias, "--output-omit-bias", "true".into(), "the output layer always has a bias")?;
        refuse(
            m.tied_embeddings_all || m.tied_embeddings_src,
            "--tied-embeddings-all/-src",
            "true".into(),
            "source and target embeddings are separate in nmt",
        )?;
        refuse(
            m.factors_dim_emb != 0 || m.lemma_dim_emb != 0,
            "--factors-dim-emb/--lemma-dim-emb",
            "non-zero".into(),
            "factored vocabularies are not implemented",
        )?;
        refuse(m.ulr, "--ulr", "true".into(), "universal lexical representations are not implemented")?;
        refuse(!m.input_types.is_empty(), "--input-types", m.input_types.join(","), "only sequence inputs are implemented")?;
        refuse(
            m.original_type.is_some(),
            "original-type",
            m.original_type.clone().unwrap_or_default(),
            "models converted into Marian (Nematus) do not convert yet",
        )?;
        refuse(m.dim_vocabs.len() != 2, "--dim-vocabs", format!("{:?}", m.dim_vocabs), "one source and one target vocabulary are needed")?;
        Ok(())
    }

    /// nmt's config for this network, with nmt's vocabulary sizes (the specials nmt adds
    /// included).
    pub fn model_config(&self, src_vocab: usize, tgt_vocab: usize) -> Result<ModelConfig> {
        let mut c = ModelConfig::preset("rnnsearch-small")?;
        c.preset = None;
        c.arch = Arch::Rnnsearch { att_dim: 2 * self.dim_rnn, copy: false, decoder: DecoderKind::Conditional, start: StartState::Mean };
        c.emb_dim = self.dim_emb;
        c.hidden_dim = self.dim_rnn;
        c.maxout_dim = self.dim_emb;
        c.output_state = OutputState::Current;
        c.output_layer = OutputLayer::Tanh;
        c.cell = Cell::Gru;
        c.gru = GruForm::ResetAfter;
        c.tie_target_embeddings = self.tied_embeddings;
        c.layer_norm = self.layer_normalization;
        // Marian's initialisation, should the converted model be trained further.
        c.init = WeightInit::Glorot;
        c.src_vocab = src_vocab;
        c.tgt_vocab = tgt_vocab;
        c.validate()?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S2S: &str = "type: s2s\ndim-emb: 16\ndim-rnn: 8\ndim-vocabs:\n  - 30\n  - 40\nenc-type: bidirectional\n\
                       layer-normalization: false\ntied-embeddings: true\ntransformer-heads: 8\nversion: v1.12.42 x\n";

    #[test]
    fn s2s_options_give_the_conditional_rnnsearch() {
        let m = MarianOptions::parse(S2S).unwrap();
        m.check().unwrap();
        let c = m.model_config(32, 42).unwrap();
        assert_eq!(c.arch, Arch::Rnnsearch { att_dim: 16, copy: false, decoder: DecoderKind::Conditional, start: StartState::Mean });
        assert_eq!((c.emb_dim, c.hidden_dim, c.maxout_dim, c.src_vocab, c.tgt_vocab), (16, 8, 16, 32, 42));
        assert!(c.tie_target_embeddings && c.gru == GruForm::ResetAfter && c.output_layer == OutputLayer::Tanh);
    }

    #[test]
    fn unsupported_options_are_named() {
        for (change, option) in [
            ("type: transformer", "--type"),
            ("enc-cell: lstm", "--enc-cell"),
            ("dec-depth: 2", "--dec-depth"),
            ("enc-type: alternating", "--enc-type"),
            ("skip: true", "--skip"),
            ("right-left: true", "--right-left"),
        ] {
            let key = change.split(':').next().unwrap();
            let text: String =
                S2S.lines().filter(|l| !l.starts_with(&format!("{key}:"))).map(|l| format!("{l}\n")).collect::<String>() + change + "\n";
            let e = MarianOptions::parse(&text).unwrap().check().unwrap_err().to_string();
            assert!(e.contains(option), "{change}: {e}");
        }
        let ln = S2S.replace("layer-normalization: false", "layer-normalization: true");
        assert!(MarianOptions::parse(&ln).unwrap().model_config(32, 42).unwrap().layer_norm, "s2s with layer normalisation converts");
        let e = MarianOptions::parse(&ln.replace("type: s2s", "type: amun")).unwrap().check().unwrap_err().to_string();
        assert!(e.contains("--layer-normalization"), "amun with layer normalisation: {e}");
    }
}
