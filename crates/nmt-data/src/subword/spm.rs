//! SentencePiece models imported as they are (`kind = "sentencepiece", model = "spm.model"`),
//! so that a model shares its vocabulary with other toolkits (JoeyNMT, Marian, fairseq).
//!
//! The `.model` protobuf is parsed by the `sentencepiece-model` crate and rebuilt as a
//! `tokenizers` pipeline, as Hugging Face's converters do: the model's own normaliser (its
//! precompiled `nmt_nfkc` character map), `▁` word marking, and the model itself — a unigram
//! model with the piece scores, or BPE with the merges that SentencePiece's scores imply (a
//! piece of score `s` is made by merging two pieces at rank `−s`). The pieces keep their
//! SentencePiece order, but the ids are this project's: PAD, UNK, BOS, EOS first (the model's
//! own control and unknown symbols are mapped onto them), then every other piece.
use std::collections::HashMap;
use std::path::Path;

use sentencepiece_model::{ModelType, SentencePieceModel, Type};
use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::models::unigram::Unigram;
use tokenizers::normalizers::Precompiled;
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::{DecoderWrapper, ModelWrapper, NormalizerWrapper, Tokenizer};

use crate::error::{Error, Result};
use crate::{SPECIALS, UNK};

fn bad(path: &Path, reason: impl std::fmt::Display) -> Error {
    Error::Tokenizer(format!("{}: not a usable SentencePiece model: {reason}", path.display()))
}

/// Reads a SentencePiece `.model` file into a tokenizer with the project's special ids.
///
/// # Errors
/// [`Error::Io`] when the file cannot be read, [`Error::Tokenizer`] naming it when it is not a
/// SentencePiece model, or one of a kind this importer does not handle (word, char).
pub(crate) fn import(path: &Path) -> Result<Tokenizer> {
    tokenizer(&read(path)?, path)
}

/// Parses a SentencePiece `.model` file.
///
/// # Errors
/// [`Error::Io`] when the file cannot be read, [`Error::Tokenizer`] naming it when it is not a
/// SentencePiece model.
pub(crate) fn read(path: &Path) -> Result<SentencePieceModel> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    SentencePieceModel::from_slice(&bytes).map_err(|e| bad(path, e))
}

/// A parsed model (from `path`, named in errors) as a tokenizer with the project's special ids.
///
/// # Errors
/// As [`import`], for a model of a kind this importer does not handle.
pub(crate) fn tokenizer(model: &SentencePieceModel, path: &Path) -> Result<Tokenizer> {
    let trainer = model.trainer().ok_or_else(|| bad(path, "no trainer spec"))?;
    let byte_fallback = trainer.byte_fallback();
    // Pieces in their order, the specials first; the model's own specials dropped.
    let mut pieces: Vec<(String, f64)> = SPECIALS.iter().map(|s| (s.to_string(), 0.0)).collect();
    for p in model.pieces() {
        let piece = p.piece().to_owned();
        match p.r#type() {
            Type::Normal | Type::UserDefined | Type::Byte if !SPECIALS.contains(&piece.as_str()) => {
                pieces.push((piece, f64::from(p.score())))
            }
            _ => {}
        }
    }
    if pieces.len() == SPECIALS.len() {
        return Err(bad(path, "no pieces"));
    }
    let wrapper = match trainer.model_type() {
        ModelType::Unigram => ModelWrapper::Unigram(Unigram::from(pieces, Some(UNK as usize), byte_fallback).map_err(|e| bad(path, e))?),
        ModelType::Bpe => ModelWrapper::BPE(bpe(&pieces, byte_fallback).map_err(|e| bad(path, e))?),
        other => return Err(bad(path, format!("model type {other:?} (unigram and bpe are supported)"))),
    };
    let mut tokenizer = Tokenizer::new(wrapper);
    let charsmap = model.normalizer().map(|n| n.precompiled_charsmap().to_vec()).unwrap_or_default();
    if !charsmap.is_empty() {
        let normalizer = Precompiled::from(&charsmap).map_err(|e| bad(path, e))?;
        tokenizer.with_normalizer(Some(NormalizerWrapper::Precompiled(normalizer))).map_err(|e| bad(path, e))?;
    }
    let metaspace = Metaspace::new('▁', PrependScheme::Always, true);
    tokenizer.with_pre_tokenizer(Some(metaspace.clone()));
    let decoder = match byte_fallback {
        true => DecoderWrapper::Sequence(Sequence::new(vec![
            DecoderWrapper::ByteFallback(ByteFallback::new()),
            DecoderWrapper::Fuse(Fuse::new()),
            DecoderWrapper::Metaspace(metaspace),
        ])),
        false => DecoderWrapper::Metaspace(metaspace),
    };
    tokenizer.with_decoder(Some(decoder));
    Ok(tokenizer)
}

/// The model's pieces in its own id order, each with whether it is the unknown symbol: the
/// order other toolkits (Marian) use as ids ([`super::foreign`]).
pub(crate) fn pieces(model: &SentencePieceModel) -> Vec<(String, bool)> {
    model.pieces().iter().map(|p| (p.piece().to_owned(), p.r#type() == Type::Unknown)).collect()
}

/// SentencePiece BPE as `tokenizers` BPE: every split of a piece into two pieces is a merge,
/// ranked by the merged piece's score (higher first), ties by the parts' ids (Hugging Face's
/// `SentencePieceExtractor`).
fn bpe(pieces: &[(String, f64)], byte_fallback: bool) -> std::result::Result<BPE, Box<dyn std::error::Error + Send + Sync>> {
    let ids: HashMap<&str, u32> = pieces.iter().enumerate().map(|(i, (p, _))| (p.as_str(), i as u32)).collect();
    let mut merges: Vec<(f64, u32, u32, String, String)> = Vec::new();
    for (piece, score) in pieces.iter().skip(SPECIALS.len()) {
        for (cut, _) in piece.char_indices().skip(1) {
            let (l, r) = piece.split_at(cut);
            if let (Some(&a), Some(&b)) = (ids.get(l), ids.get(r)) {
                merges.push((*score, a, b, l.to_owned(), r.to_owned()));
            }
        }
    }
    merges.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let vocab: Vocab = pieces.iter().enumerate().map(|(i, (p, _))| (p.clone(), i as u32)).collect();
    let merges = merges.into_iter().map(|m| (m.3, m.4)).collect();
    BPE::builder()
        .vocab_and_merges(vocab, merges)
        .unk_token(SPECIALS[UNK as usize].to_owned())
        .fuse_unk(true)
        .byte_fallback(byte_fallback)
        .build()
        .map_err(|e| e.to_string().into())
}
