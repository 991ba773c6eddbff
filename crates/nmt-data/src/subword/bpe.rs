//! Byte-pair encoding through the Hugging Face `tokenizers` crate.
//!
//! Words are pre-tokenised sentencepiece-style with `Metaspace` (each word is prefixed with
//! `'▁'`), so decoding restores word boundaries exactly: encode→decode returns the input with
//! its whitespace collapsed to single spaces. The trainer places the special symbols first, which
//! makes their ids PAD=0, UNK=1, BOS=2, EOS=3. After training the specials are *not* kept as
//! "added tokens": that would make a literal `<s>` in the text encode to BOS; instead they live
//! only in the model vocabulary, where `<unk>` serves as the BPE unknown token.

use tokenizers::models::bpe::{BpeTrainerBuilder, BPE};
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::{
    AddedToken, DecoderWrapper, ModelWrapper, NormalizerWrapper, PostProcessorWrapper, PreTokenizerWrapper, Tokenizer, TokenizerImpl,
};

use crate::error::{Error, Result};
use crate::{BOS, EOS, PAD, SPECIALS, UNK};

/// The word-boundary marker used by `Metaspace`.
const MARKER: char = '▁';

/// A trained BPE tokenizer with Metaspace pre-tokenisation and decoding.
#[derive(Clone, Debug)]
pub(crate) struct BpeModel {
    tokenizer: Tokenizer,
}

fn tok_err(e: impl std::fmt::Display) -> Error {
    Error::Tokenizer(e.to_string())
}

fn metaspace() -> Metaspace {
    Metaspace::new(MARKER, PrependScheme::Always, true)
}

/// Collapses runs of whitespace to single spaces and trims: the canonical form the
/// segmenter round-trips to (Metaspace itself only splits on `' '`).
pub(crate) fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl BpeModel {
    /// Learns merges from `lines` until the vocabulary (specials and alphabet included) has
    /// `vocab_size` entries or no pair occurs `min_frequency` times.
    pub(crate) fn train(lines: &[String], vocab_size: usize, min_frequency: u32) -> Result<Self> {
        let model = BPE::builder().unk_token(SPECIALS[UNK as usize].to_owned()).fuse_unk(true).build().map_err(tok_err)?;
        let mut trainer_tok: TokenizerImpl<BPE, NormalizerWrapper, PreTokenizerWrapper, PostProcessorWrapper, DecoderWrapper> =
            TokenizerImpl::new(model);
        trainer_tok.with_pre_tokenizer(Some(metaspace()));
        let mut trainer = BpeTrainerBuilder::new()
            .vocab_size(vocab_size)
            .min_frequency(u64::from(min_frequency))
            .show_progress(false)
            .special_tokens(SPECIALS.iter().map(|s| AddedToken::from(*s, true)).collect())
            .build();
        trainer_tok.train(&mut trainer, lines.iter().map(|l| normalise(l))).map_err(tok_err)?;
        let model = trainer_tok.get_model().clone();
        let mut tokenizer = Tokenizer::new(ModelWrapper::BPE(model));
        tokenizer.with_pre_tokenizer(Some(metaspace()));
        tokenizer.with_decoder(Some(metaspace()));
        Self::from_tokenizer(tokenizer)
    }

    /// Wraps a tokenizer after checking that the specials have their fixed ids.
    pub(crate) fn from_tokenizer(tokenizer: Tokenizer) -> Result<Self> {
        for (id, s) in SPECIALS.iter().enumerate() {
            let found = tokenizer.token_to_id(s);
            if found != Some(id as u32) {
                return Err(Error::Json(format!("special token {s:?} must have id {id}, found {found:?}")));
            }
        }
        Ok(Self { tokenizer })
    }

    /// The underlying tokenizer (for serialisation).
    pub(crate) fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    pub(crate) fn vocab_size(&self) -> usize {
        self.tokenizer.get_vocab_size(true)
    }

    pub(crate) fn encode(&self, text: &str) -> Vec<u32> {
        let text = normalise(text);
        if text.is_empty() {
            return Vec::new();
        }
        match self.tokenizer.encode_fast(text.as_str(), false) {
            Ok(enc) => enc.get_ids().to_vec(),
            Err(e) => {
                // BPE with an unknown token cannot fail on valid UTF-8; degrade rather than panic.
                tracing::warn!(error = %e, "BPE encoding failed; emitting <unk> per word");
                vec![UNK; text.split(' ').count()]
            }
        }
    }

    pub(crate) fn decode(&self, ids: &[u32]) -> String {
        let vocab = self.vocab_size();
        let ids: Vec<u32> =
            ids.iter().filter(|&&id| id != PAD && id != BOS && id != EOS).map(|&id| if (id as usize) < vocab { id } else { UNK }).collect();
        match self.tokenizer.decode(&ids, false) {
            Ok(text) => text,
            Err(e) => {
                tracing::warn!(error = %e, "BPE decoding failed; joining pieces");
                self.pieces(&ids).concat().replace(MARKER, " ").trim().to_owned()
            }
        }
    }

    /// Piece strings; ids outside the vocabulary render as `<unk>`.
    pub(crate) fn pieces(&self, ids: &[u32]) -> Vec<String> {
        ids.iter().map(|&id| self.tokenizer.id_to_token(id).unwrap_or_else(|| SPECIALS[UNK as usize].to_owned())).collect()
    }

    /// A word is "known" when every character is in the learned alphabet, i.e. it can be
    /// segmented without producing `<unk>`.
    pub(crate) fn knows_word(&self, word: &str) -> bool {
        let mut buf = [0u8; 4];
        !word.is_empty() && word.chars().all(|c| self.tokenizer.token_to_id(c.encode_utf8(&mut buf)).is_some())
    }
}
