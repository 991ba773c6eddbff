//! Models of other toolkits as nmt model files (`nmt convert --from marian`).
//!
//! A Marian `s2s` model (`model.npz` with its `special:model.yml`, and its two vocabularies)
//! becomes an ordinary nmt model: the same network in nmt's layers (`marian_options.rs` says
//! which option is which key), the weights renamed and its vocabulary rows moved to nmt's ids
//! (`marian_weights.rs`), the vocabularies imported (`nmt_data::ForeignVocab`). Every search,
//! int8, the shortlist, ensembles, `nmt serve` and the Python package then run it as they run
//! models trained by nmt. What nmt does not compute is refused by name, not approximated.
pub mod marian_amun;
pub mod marian_options;
pub mod marian_weights;
pub mod npz;

use std::path::Path;

use nmt_data::ForeignVocab;

use crate::config::SearchConfig;
use crate::error::{Error, Result};
use crate::languages::Languages;
use crate::model_file::{meta_map, to_safetensors, write_atomic, ModelMeta};
pub use marian_options::MarianOptions;

/// Marian's decoder defaults (`marian-decoder`, v1.12) as the converted model's search
/// defaults, so that `nmt translate -m CONVERTED` searches as `marian-decoder -m MODEL` does:
/// beam 12, no length normalisation (`--normalize 0`), `<unk>` never produced (`--allow-unk`
/// off), and at most `3 × (source length + 1)` target tokens (`--max-length-factor 3` times
/// the source with its `</s>`: 3 per word plus 3; Marian takes the longest source of its
/// mini-batch, nmt each sentence's own, so the two agree where Marian decodes one sentence
/// per batch or the batch's sources have one length).
pub fn marian_search() -> SearchConfig {
    SearchConfig { beam_size: 12, normalize: 0.0, max_len_ratio: 3.0, max_len_extra: 3, no_unk: true, ..SearchConfig::default() }
}

/// What [`marian`] made: the options it read and the file's size.
#[derive(Debug)]
pub struct Converted {
    pub options: MarianOptions,
    pub bytes: usize,
    /// Where the model came from, as the model file records it (`ModelMeta::converted_from`).
    pub converted_from: String,
}

/// Converts a Marian model (`npz`, with its source and target vocabularies) into the nmt model
/// file `out` (written atomically).
///
/// # Errors
/// [`Error::Input`] naming the Marian option, the array or the vocabulary that does not fit
/// (an unsupported option; a vocabulary of another size than `dim-vocabs`; an array of a
/// layer nmt does not have); [`Error::Io`] for files that cannot be read or written.
pub fn marian(npz_path: &Path, vocabs: [&Path; 2], languages: Option<Languages>, out: &Path) -> Result<Converted> {
    let archive = npz::read(npz_path)?;
    let yml = archive.bytes.get("special:model.yml").ok_or_else(|| {
        Error::Input(format!("{}: no special:model.yml (a Marian model file stores its options there)", npz_path.display()))
    })?;
    // cnpy stores the YAML with a trailing NUL.
    let text = String::from_utf8_lossy(yml);
    let options = MarianOptions::parse(text.trim_end_matches('\0'))?;
    options.check()?;
    let [src, tgt] = [ForeignVocab::read_marian(vocabs[0])?, ForeignVocab::read_marian(vocabs[1])?];
    for (side, v, path, dim) in [("source", &src, vocabs[0], options.dim_vocabs[0]), ("target", &tgt, vocabs[1], options.dim_vocabs[1])] {
        if v.ours.len() != dim {
            return Err(Error::Input(format!(
                "{}: the {side} vocabulary has {} entries, the model's dim-vocabs says {dim}",
                path.display(),
                v.ours.len()
            )));
        }
    }
    let config = options.model_config(src.segmenter.vocab_size(), tgt.segmenter.vocab_size())?;
    let arrays = match options.model_type.as_str() {
        "amun" => marian_amun::to_s2s_names(archive.floats),
        _ => archive.floats,
    };
    let weights = marian_weights::Weights::new(arrays);
    let shapes = marian_weights::Shapes {
        emb: options.dim_emb,
        hidden: options.dim_rnn,
        src_ours: &src.ours,
        tgt_ours: &tgt.ours,
        src_vocab: config.src_vocab,
        tgt_vocab: config.tgt_vocab,
        tied: options.tied_embeddings,
        norm: options.layer_normalization,
    };
    let tensors = marian_weights::convert(&weights, &shapes)?;
    let untaken = weights.untaken();
    if !untaken.is_empty() {
        return Err(Error::Input(format!(
            "{}: arrays of a network nmt does not convert: {} (an option that model.yml does not show?)",
            npz_path.display(),
            untaken.join(", ")
        )));
    }
    let converted_from =
        format!("Marian {} {}: {}", options.version.as_deref().unwrap_or("(version unknown)"), options.model_type, npz_path.display());
    let meta = ModelMeta {
        config,
        search: marian_search(),
        src: src.segmenter,
        tgt: tgt.segmenter,
        step: 0,
        languages,
        shortlist: None,
        converted_from: Some(converted_from.clone()),
    };
    let bytes = to_safetensors(&tensors, meta_map(&meta)?)?;
    // The file must load as an nmt model before it replaces anything.
    crate::model_file::load_bytes(&bytes, out, candle_core::DType::F32, &candle_core::Device::Cpu)?;
    write_atomic(out, &bytes)?;
    Ok(Converted { options, bytes: bytes.len(), converted_from })
}
