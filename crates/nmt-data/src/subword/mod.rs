//! Subword segmentation: turns sentences into token ids and back for one language side.
//!
//! Two kinds exist: byte-pair encoding (the default; open vocabulary, see [`bpe`]) and a plain
//! word vocabulary (closed, as in the early RNN encoder–decoder papers, see [`word`]). Both
//! share the special ids [`PAD`](crate::PAD), [`UNK`](crate::UNK), [`BOS`](crate::BOS),
//! [`EOS`](crate::EOS) so the model never needs to know which kind it was trained with.
//! A [`Segmenter`] serialises to self-contained JSON that is stored in the model file.

mod bpe;
mod foreign;
mod spm;
mod word;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::SPECIALS;
use bpe::BpeModel;
use word::WordVocab;

pub use foreign::ForeignVocab;

/// A sentence's ids with their whitespace words ([`Segmenter::encode_words`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WordIds {
    /// The sentence's whitespace-separated words.
    pub words: Vec<String>,
    /// Its ids, as [`Segmenter::encode`] gives them (no `</s>`).
    pub ids: Vec<u32>,
    /// For each id, the index in `words` of the word it belongs to.
    pub word_of: Vec<usize>,
}

/// Which segmentation algorithm a [`Segmenter`] uses.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum SubwordKind {
    /// Byte-pair encoding learned from the training text.
    #[default]
    Bpe,
    /// Whitespace-separated words; rare words become `<unk>`.
    Word,
    /// A SentencePiece model file (`model = "spm.model"`), imported as it is (unigram or BPE).
    Sentencepiece,
}

/// How to learn a [`Segmenter`]. Missing fields take their defaults, so a config file may
/// give only what it changes; unknown fields are rejected to catch typos.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SubwordConfig {
    /// `bpe` (default): byte-pair encoding learned from the training text; `word`: whitespace
    /// words, the most frequent `vocab_size` kept, the rest mapped to `<unk>` (as in the papers).
    pub kind: SubwordKind,
    /// Vocabulary size including the 4 special symbols (default 8000).
    pub vocab_size: usize,
    /// Minimum count for a token/merge to enter the vocabulary (default 2).
    pub min_frequency: u32,
    /// `sentencepiece` only: the `.model` file (its vocabulary replaces `vocab_size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<PathBuf>,
}

impl Default for SubwordConfig {
    fn default() -> Self {
        Self { kind: SubwordKind::Bpe, vocab_size: 8000, min_frequency: 2, model: None }
    }
}

/// The internal representation, one per kind.
#[derive(Clone, Debug)]
enum Inner {
    Bpe(Box<BpeModel>),
    /// An imported SentencePiece model, run by the same `tokenizers` wrapper as BPE.
    Spm(Box<BpeModel>),
    Word(WordVocab),
}

/// A trained segmenter + vocabulary for ONE language side. Ids `0..4` are PAD, UNK, BOS, EOS.
#[derive(Clone, Debug)]
pub struct Segmenter {
    inner: Inner,
}

/// Current version of the JSON layout written by [`Segmenter::to_json`].
const JSON_VERSION: u32 = 1;

/// The on-disk JSON: a version number plus the kind-tagged payload.
#[derive(Serialize, Deserialize)]
struct Stored {
    version: u32,
    #[serde(flatten)]
    payload: Payload,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum Payload {
    /// The full `tokenizers` JSON (model, merges, pre-tokenizer, decoder).
    Bpe { tokenizer: serde_json::Value },
    /// The id-ordered word list, specials included.
    Word { words: Vec<String> },
    /// An imported SentencePiece model as `tokenizers` JSON.
    Sentencepiece { tokenizer: serde_json::Value },
}

impl Segmenter {
    /// Learns a segmenter from training sentences.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when `vocab_size` cannot hold the specials,
    /// [`Error::NoTrainingData`] when `lines` contain no words, [`Error::Tokenizer`] when
    /// BPE training fails.
    pub fn train(lines: &[String], cfg: &SubwordConfig) -> Result<Self> {
        if cfg.kind == SubwordKind::Sentencepiece {
            let path =
                cfg.model.as_deref().ok_or_else(|| Error::InvalidConfig("kind = \"sentencepiece\" needs model = \"FILE.model\"".into()))?;
            let seg = Self { inner: Inner::Spm(Box::new(BpeModel::from_tokenizer(spm::import(path)?)?)) };
            tracing::info!(model = %path.display(), vocab_size = seg.vocab_size(), "imported SentencePiece model");
            return Ok(seg);
        }
        if cfg.vocab_size <= SPECIALS.len() {
            return Err(Error::InvalidConfig(format!("vocab_size {} must exceed the {} special symbols", cfg.vocab_size, SPECIALS.len())));
        }
        if lines.iter().all(|l| l.trim().is_empty()) {
            return Err(Error::NoTrainingData("the training text contains no words".into()));
        }
        let inner = match cfg.kind {
            SubwordKind::Bpe => Inner::Bpe(Box::new(BpeModel::train(lines, cfg.vocab_size, cfg.min_frequency)?)),
            SubwordKind::Word => Inner::Word(WordVocab::train(lines, cfg.vocab_size, cfg.min_frequency)?),
            SubwordKind::Sentencepiece => unreachable!("imported above"),
        };
        let seg = Self { inner };
        tracing::info!(kind = ?seg.kind(), vocab_size = seg.vocab_size(), "trained segmenter");
        Ok(seg)
    }

    /// Text → ids (no BOS/EOS added). Whitespace is collapsed; unknown pieces → UNK.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        match &self.inner {
            Inner::Bpe(m) | Inner::Spm(m) => m.encode(text),
            Inner::Word(v) => v.encode(text),
        }
    }

    /// [`Segmenter::encode`] with the whitespace word each id came from: UNK replacement needs
    /// the source word under a target `<unk>`'s attention, and `<unk>` itself has no surface.
    /// Each word is encoded alone; both kinds split at whitespace first (BPE's metaspace
    /// pre-tokenizer marks every word), so the ids equal `encode(text)` (tested).
    pub fn encode_words(&self, text: &str) -> WordIds {
        let words: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
        let (mut ids, mut word_of) = (Vec::new(), Vec::new());
        for (w, word) in words.iter().enumerate() {
            let piece_ids = self.encode(word);
            word_of.extend(std::iter::repeat_n(w, piece_ids.len()));
            ids.extend(piece_ids);
        }
        WordIds { words, ids, word_of }
    }

    /// The id of a piece (a word, for word vocabularies; `▁`-marked for BPE), if the vocabulary
    /// has it.
    pub fn id_of(&self, piece: &str) -> Option<u32> {
        match &self.inner {
            Inner::Bpe(m) | Inner::Spm(m) => m.tokenizer().token_to_id(piece),
            Inner::Word(v) => v.id_of(piece),
        }
    }

    /// Ids → plain text, desegmented: subwords joined, PAD/BOS/EOS dropped, UNK (and any id
    /// outside the vocabulary) rendered as `<unk>`.
    pub fn decode(&self, ids: &[u32]) -> String {
        match &self.inner {
            Inner::Bpe(m) | Inner::Spm(m) => m.decode(ids),
            Inner::Word(v) => v.decode(ids),
        }
    }

    /// Ids → the piece strings, specials included (for alignment pictures and debugging).
    pub fn pieces(&self, ids: &[u32]) -> Vec<String> {
        match &self.inner {
            Inner::Bpe(m) | Inner::Spm(m) => m.pieces(ids),
            Inner::Word(v) => ids.iter().map(|&id| v.piece(id).to_owned()).collect(),
        }
    }

    /// Number of ids, specials included: valid ids are `0..vocab_size()`.
    pub fn vocab_size(&self) -> usize {
        match &self.inner {
            Inner::Bpe(m) | Inner::Spm(m) => m.vocab_size(),
            Inner::Word(v) => v.len(),
        }
    }

    /// Which algorithm this segmenter uses.
    pub fn kind(&self) -> SubwordKind {
        match &self.inner {
            Inner::Bpe(_) => SubwordKind::Bpe,
            Inner::Spm(_) => SubwordKind::Sentencepiece,
            Inner::Word(_) => SubwordKind::Word,
        }
    }

    /// For the "No UNK" evaluation: does this whitespace word belong to the vocabulary?
    /// Word kind: it is in the word list. BPE kind: every character of it is known, so it
    /// segments without `<unk>`.
    pub fn knows_word(&self, word: &str) -> bool {
        match &self.inner {
            Inner::Bpe(m) | Inner::Spm(m) => m.knows_word(word),
            Inner::Word(v) => v.knows_word(word),
        }
    }

    /// Self-contained JSON (stored in the model file's metadata).
    ///
    /// # Errors
    /// [`Error::Json`] if serialisation fails (not expected for a trained segmenter).
    pub fn to_json(&self) -> Result<String> {
        let payload = match &self.inner {
            Inner::Bpe(m) => Payload::Bpe { tokenizer: serde_json::to_value(m.tokenizer()).map_err(|e| Error::Json(e.to_string()))? },
            Inner::Spm(m) => {
                Payload::Sentencepiece { tokenizer: serde_json::to_value(m.tokenizer()).map_err(|e| Error::Json(e.to_string()))? }
            }
            Inner::Word(v) => Payload::Word { words: v.words().to_vec() },
        };
        serde_json::to_string(&Stored { version: JSON_VERSION, payload }).map_err(|e| Error::Json(e.to_string()))
    }

    /// Parses JSON written by [`Segmenter::to_json`].
    ///
    /// # Errors
    /// [`Error::Json`] when the text is not such JSON, has an unsupported version, or its
    /// vocabulary does not put the specials at ids `0..4`.
    pub fn from_json(s: &str) -> Result<Self> {
        let stored: Stored = serde_json::from_str(s).map_err(|e| Error::Json(e.to_string()))?;
        if stored.version != JSON_VERSION {
            return Err(Error::Json(format!("unsupported segmenter version {} (expected {JSON_VERSION})", stored.version)));
        }
        let inner = match stored.payload {
            Payload::Bpe { tokenizer } => {
                let tokenizer = serde_json::from_value(tokenizer).map_err(|e| Error::Json(e.to_string()))?;
                Inner::Bpe(Box::new(BpeModel::from_tokenizer(tokenizer)?))
            }
            Payload::Word { words } => Inner::Word(WordVocab::from_words(words)?),
            Payload::Sentencepiece { tokenizer } => {
                let tokenizer = serde_json::from_value(tokenizer).map_err(|e| Error::Json(e.to_string()))?;
                Inner::Spm(Box::new(BpeModel::from_tokenizer(tokenizer)?))
            }
        };
        Ok(Self { inner })
    }
}
