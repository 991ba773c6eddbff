//! The checks of a [`ModelConfig`] before any tensor is built, so that mistakes are reported
//! by key.
use super::arch::{Arch, DecoderKind, EncoderKind};
use super::model::{Cell, GruForm, ModelConfig, StackKind};
use crate::error::{Error, Result};

impl ModelConfig {
    /// Checks sizes before any tensor is built, so mistakes are reported by name.
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("emb_dim", self.emb_dim),
            ("hidden_dim", self.hidden_dim),
            ("maxout_dim", self.maxout_dim),
            ("src_vocab", self.src_vocab),
            ("tgt_vocab", self.tgt_vocab),
        ];
        for (key, v) in positive {
            if v == 0 {
                return Err(Error::Config(format!("model.{key} must be > 0")));
            }
        }
        if self.enc_layers == 0 || self.dec_layers == 0 {
            return Err(Error::Config("model.enc_layers and model.dec_layers must be at least 1".into()));
        }
        let rnn_encoder = matches!(self.arch, Arch::Rnnenc { encoder: EncoderKind::Rnn });
        if self.stack == StackKind::GatedFeedback && self.dec_layers < 2 && !(rnn_encoder && self.enc_layers >= 2) {
            return Err(Error::Config(
                "model.stack = \"gated-feedback\" connects a stack's layers: it needs dec_layers ≥ 2 (or, for RNNenc's recurrent encoder, enc_layers ≥ 2)".into(),
            ));
        }
        if let Arch::Rnnsearch { att_dim: 0, .. } = self.arch {
            return Err(Error::Config("model.att_dim must be > 0 for rnnsearch".into()));
        }
        if self.arch.decoder() == DecoderKind::Conditional && self.cell != Cell::Gru {
            return Err(Error::Config("model.decoder = \"conditional\" is the conditional GRU: it needs model.cell = \"gru\"".into()));
        }
        for (key, p) in [("dropout", self.dropout), ("recurrent_dropout", self.recurrent_dropout)] {
            if !(0.0..1.0).contains(&p) {
                return Err(Error::Config(format!("model.{key} must be in [0, 1), got {p}")));
            }
        }
        if self.layer_norm {
            self.layer_norm_fits()?;
        }
        if self.tie_target_embeddings && self.maxout_dim != self.emb_dim {
            return Err(Error::Config(format!(
                "model.tie_target_embeddings needs maxout_dim = emb_dim (the softmax reads the deep output's units), got {} and {}",
                self.maxout_dim, self.emb_dim
            )));
        }
        Ok(())
    }

    /// `layer_norm` is Marian's `s2s` placement (`model/layer_norm.rs`): it is defined for the
    /// conditional GRU decoder over RNNsearch's bidirectional encoder, with the reset-after
    /// cell (its `h U` is normalised as one `3n` row, which the paper's cell, multiplying
    /// `r ⊙ h`, does not have), one layer each side and no copy mixture. Anything else is
    /// refused by name rather than normalised somewhere Marian does not.
    fn layer_norm_fits(&self) -> Result<()> {
        let refuse = |what: &str| Err(Error::Config(format!("model.layer_norm (Marian's s2s layer normalisation) needs {what}")));
        if !matches!(self.arch, Arch::Rnnsearch { copy: false, .. }) {
            return refuse("arch = \"rnnsearch\" without the copy mixture");
        }
        if self.arch.decoder() != DecoderKind::Conditional {
            return refuse("decoder = \"conditional\"");
        }
        if self.cell != Cell::Gru || self.gru != GruForm::ResetAfter {
            return refuse("cell = \"gru\" with gru = \"reset-after\"");
        }
        if self.enc_layers != 1 || self.dec_layers != 1 {
            return refuse("enc_layers = 1 and dec_layers = 1");
        }
        Ok(())
    }
}
