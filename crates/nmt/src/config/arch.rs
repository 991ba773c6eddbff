//! The architecture (`model.arch`): which encoder-decoder, with the settings only it has.
//!
//! In the TOML file (and the config stored in a model file) these stay flat keys of `[model]`:
//! `arch = "rnnsearch" | "rnnenc"`, `att_dim`, `copy`, `encoder`, `decoder`, `decoder_start`. In memory they are one
//! [`Arch`], so a model cannot be both RNNenc and a copy model, or RNNsearch over a grConv
//! summary: [`Arch::from_keys`] refuses such a file by name, and nothing past it checks again.
//! Sizes, `att_dim` among them, are checked with the others by `ModelConfig::validate`.
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The architecture's name alone: the value of the `model.arch` key.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ArchName {
    /// Cho et al. 2014 (RNNenc): the decoder reads a fixed summary of the source.
    Rnnenc,
    /// Bahdanau et al. 2014 (RNNsearch): the decoder attends over the source's annotations.
    Rnnsearch,
}

impl ArchName {
    /// The name the config file spells (`"rnnsearch"`).
    pub fn name(self) -> &'static str {
        match self {
            ArchName::Rnnenc => "rnnenc",
            ArchName::Rnnsearch => "rnnsearch",
        }
    }
}

/// What RNNenc's summary is computed by (the `model.encoder` key).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum EncoderKind {
    /// Recurrent layers (`model.cell`, `model.enc_layers`): the last state.
    #[default]
    Rnn,
    /// The gated recursive convolutional encoder (Properties §3): the top node of its tree.
    Grconv,
}

/// RNNsearch's decoder (the `model.decoder` key).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum DecoderKind {
    /// Bahdanau et al. 2014, appendix A.2.2: attention over `s_{i-1}`, then one GRU reading
    /// `[E y_{i-1}; c_i]` (`model/attention_decoder.rs`).
    #[default]
    Bahdanau,
    /// The conditional GRU of Nematus and Marian's `s2s` (Sennrich et al. 2017, §2.3):
    /// `s' = GRU₁(E y_{i-1}, s_{i-1})`, attention over `s'`, `s_i = GRU₂(c_i, s')`
    /// (`model/conditional_decoder.rs`). The attention sees the word just emitted.
    Conditional,
}

impl DecoderKind {
    /// Whether this is the default, [`DecoderKind::Bahdanau`].
    pub fn is_bahdanau(&self) -> bool {
        *self == DecoderKind::Bahdanau
    }
}

/// What RNNsearch's decoder starts from (the `model.decoder_start` key):
/// `s_0 = tanh(p W_s + b_s)` for a summary `p` of the annotations (`kernels/cpu/start_pool.rs`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum StartState {
    /// `←h_1`, the backward RNN's state after the whole sentence (Bahdanau et al., A.2.2).
    #[default]
    FirstBackward,
    /// `→h_len`, the forward RNN's state after the whole sentence.
    LastForward,
    /// The mean of the annotations over the sentence (Nematus, Marian's `s2s`).
    Mean,
}

impl StartState {
    /// Whether this is the default, [`StartState::FirstBackward`].
    pub fn is_first_backward(&self) -> bool {
        *self == StartState::FirstBackward
    }
}

/// The architecture with its own settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// Cho et al. 2014 (RNNenc): an encoder whose summary `c = tanh(V h_T)` the decoder sees at
    /// every step (appendix A).
    Rnnenc {
        /// Recurrent layers or grConv (`model.encoder`).
        encoder: EncoderKind,
    },
    /// Bahdanau et al. 2014 (RNNsearch): a bidirectional encoder and additive attention
    /// (appendix A.1.2).
    Rnnsearch {
        /// The alignment model's hidden size `n'` (`model.att_dim`).
        att_dim: usize,
        /// The pointer/copy mixture over the attention (`model.copy`; See et al. 2017).
        copy: bool,
        /// Bahdanau's decoder or the conditional GRU (`model.decoder`).
        decoder: DecoderKind,
        /// What the decoder starts from (`model.decoder_start`).
        start: StartState,
    },
}

impl Arch {
    /// RNNsearch with attention size `att_dim`, no copy mixture.
    pub fn rnnsearch(att_dim: usize) -> Self {
        Arch::Rnnsearch { att_dim, copy: false, decoder: DecoderKind::Bahdanau, start: StartState::FirstBackward }
    }

    /// RNNenc over recurrent layers.
    pub fn rnnenc() -> Self {
        Arch::Rnnenc { encoder: EncoderKind::Rnn }
    }

    /// Its name ([`ArchName`]).
    pub fn name(&self) -> ArchName {
        match self {
            Arch::Rnnenc { .. } => ArchName::Rnnenc,
            Arch::Rnnsearch { .. } => ArchName::Rnnsearch,
        }
    }

    /// Whether the output mixes in copies of source words (`model.copy`).
    pub fn copy(&self) -> bool {
        matches!(self, Arch::Rnnsearch { copy: true, .. })
    }

    /// Pairs the flat keys of a `[model]` table. `att_dim` is RNNsearch's alone: RNNenc
    /// ignores it (presets and old model files give RNNenc models one), and writes 0.
    pub fn from_keys(name: ArchName, att_dim: usize, copy: bool, encoder: EncoderKind, decoder: (DecoderKind, StartState)) -> Result<Self> {
        let (decoder, start) = decoder;
        match name {
            ArchName::Rnnenc if !start.is_first_backward() => Err(Error::Config(
                "model.decoder_start summarises RNNsearch's annotations: RNNenc's decoder starts from its summary (arch = \"rnnsearch\")"
                    .into(),
            )),
            ArchName::Rnnenc if !decoder.is_bahdanau() => {
                Err(Error::Config("model.decoder = \"conditional\" attends over the source: it needs arch = \"rnnsearch\"".into()))
            }
            ArchName::Rnnsearch if encoder == EncoderKind::Grconv => {
                Err(Error::Config("model.encoder = \"grconv\" gives a summary vector: it needs arch = \"rnnenc\"".into()))
            }
            ArchName::Rnnsearch => Ok(Arch::Rnnsearch { att_dim, copy, decoder, start }),
            ArchName::Rnnenc if copy => Err(Error::Config("model.copy copies through attention: it needs arch = \"rnnsearch\"".into())),
            ArchName::Rnnenc => Ok(Arch::Rnnenc { encoder }),
        }
    }

    /// RNNsearch's decoder (Bahdanau's for RNNenc, which has no choice).
    pub fn decoder(&self) -> DecoderKind {
        match *self {
            Arch::Rnnsearch { decoder, .. } => decoder,
            Arch::Rnnenc { .. } => DecoderKind::Bahdanau,
        }
    }

    /// What RNNsearch's decoder starts from (the default for RNNenc, which has no choice).
    pub fn start(&self) -> StartState {
        match *self {
            Arch::Rnnsearch { start, .. } => start,
            Arch::Rnnenc { .. } => StartState::FirstBackward,
        }
    }

    /// The flat keys `(arch, att_dim, copy, encoder, (decoder, decoder_start))` this
    /// architecture is written as.
    pub fn keys(&self) -> (ArchName, usize, bool, EncoderKind, (DecoderKind, StartState)) {
        match *self {
            Arch::Rnnenc { encoder } => (ArchName::Rnnenc, 0, false, encoder, (DecoderKind::Bahdanau, StartState::FirstBackward)),
            Arch::Rnnsearch { att_dim, copy, decoder, start } => (ArchName::Rnnsearch, att_dim, copy, EncoderKind::Rnn, (decoder, start)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_valid_architecture_survives_its_keys() {
        let cond = Arch::Rnnsearch { att_dim: 3, copy: true, decoder: DecoderKind::Conditional, start: StartState::Mean };
        for arch in [Arch::rnnsearch(7), cond, Arch::rnnenc(), Arch::Rnnenc { encoder: EncoderKind::Grconv }] {
            let (f, a, c, e, d) = arch.keys();
            assert_eq!(Arch::from_keys(f, a, c, e, d).unwrap(), arch);
        }
    }

    #[test]
    fn keys_no_architecture_has_are_refused_by_name() {
        let plain = (DecoderKind::Bahdanau, StartState::FirstBackward);
        let err = |f, a, c, e| Arch::from_keys(f, a, c, e, plain).unwrap_err().to_string();
        assert!(err(ArchName::Rnnenc, 0, true, EncoderKind::Rnn).contains("model.copy"));
        assert!(err(ArchName::Rnnsearch, 4, false, EncoderKind::Grconv).contains("model.encoder"));
        let cond = Arch::from_keys(ArchName::Rnnenc, 0, false, EncoderKind::Rnn, (DecoderKind::Conditional, StartState::FirstBackward));
        assert!(cond.unwrap_err().to_string().contains("model.decoder"));
        let mean = Arch::from_keys(ArchName::Rnnenc, 0, false, EncoderKind::Rnn, (DecoderKind::Bahdanau, StartState::Mean));
        assert!(mean.unwrap_err().to_string().contains("model.decoder_start"));
        // A size of 0 is `validate`'s to refuse, with the other sizes.
        let zero = crate::config::Config::from_toml_str("[model]\narch = \"rnnsearch\"\natt_dim = 0", &[]).unwrap_err();
        assert!(zero.to_string().contains("model.att_dim"));
        // RNNenc has no attention: a preset's or an old file's att_dim is dropped.
        assert_eq!(Arch::from_keys(ArchName::Rnnenc, 256, false, EncoderKind::Rnn, plain).unwrap(), Arch::rnnenc());
    }
}
