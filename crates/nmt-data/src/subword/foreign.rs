//! Another toolkit's vocabulary, imported with its own id order kept beside ours.
//!
//! A model converted from Marian (`nmt convert --from marian`) has its embedding rows and its
//! output biases in Marian's id order; [`ForeignVocab::ours`] says which of this project's ids
//! each of them becomes. Marian's vocabularies are read as Marian reads them:
//! - a SentencePiece model (`.spm`, the `.model` protobuf): Marian's ids are the pieces'
//!   positions in the model (`SentencePieceVocab`: `PieceToId`), `</s>` = 0 and `<unk>` = 1 as
//!   Marian trains them; the segmenter is the SentencePiece import of [`super::spm`];
//! - a word vocabulary (`.yml`, `.yaml` or `.json`: `word: id`, as `marian-vocab` writes it): the
//!   ids are the file's; the segmenter is a word vocabulary with the same words.
//!
//! The foreign control symbols map onto ours (`</s>` → EOS, `<s>` → BOS, `<unk>` and the model's
//! unknown piece → UNK); this project's PAD (and BOS, where the other toolkit has none) are ids
//! the foreign model never had, which the converter fills in.
use std::collections::BTreeMap;
use std::path::Path;

use super::{spm, word::WordVocab, BpeModel, Inner, Segmenter};
use crate::error::{Error, Result};
use crate::{BOS, EOS, SPECIALS, UNK};

/// A vocabulary in another toolkit's id order.
#[derive(Clone, Debug)]
pub struct ForeignVocab {
    /// The segmenter, with this project's ids (PAD, UNK, BOS, EOS first).
    pub segmenter: Segmenter,
    /// `ours[i]`: this project's id for the other toolkit's id `i` (every foreign id has one;
    /// distinct ids map to distinct ids, except that several unknown symbols may all map to UNK).
    pub ours: Vec<u32>,
}

fn bad(path: &Path, reason: impl std::fmt::Display) -> Error {
    Error::Tokenizer(format!("{}: not a Marian vocabulary: {reason}", path.display()))
}

/// This project's id for a foreign special symbol, if `piece` is one.
fn special(piece: &str) -> Option<u32> {
    match piece {
        "</s>" => Some(EOS),
        "<s>" => Some(BOS),
        "<unk>" => Some(UNK),
        _ => None,
    }
}

impl ForeignVocab {
    /// Reads a Marian vocabulary: SentencePiece (`.spm`, `.model`) or words (`.yml`, `.yaml`,
    /// `.json`), by the file's extension as Marian decides.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read; [`Error::Tokenizer`] naming the file when it
    /// is not such a vocabulary (an unknown extension, ids that are not `0..n` exactly once, a
    /// word that cannot be a whitespace word, a piece the import does not know).
    pub fn read_marian(path: &Path) -> Result<Self> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        match ext.as_str() {
            "spm" | "model" => Self::sentencepiece(path),
            "yml" | "yaml" | "json" => Self::words(path, ext == "json"),
            _ => Err(bad(path, "expected a SentencePiece model (.spm) or a word vocabulary (.yml, .json)")),
        }
    }

    fn sentencepiece(path: &Path) -> Result<Self> {
        let model = spm::read(path)?;
        let segmenter = Segmenter { inner: Inner::Spm(Box::new(BpeModel::from_tokenizer(spm::tokenizer(&model, path)?)?)) };
        let ours = spm::pieces(&model)
            .into_iter()
            .map(|(piece, unknown)| match unknown {
                true => Ok(UNK),
                false => special(&piece)
                    .or_else(|| segmenter.id_of(&piece))
                    .ok_or_else(|| bad(path, format!("piece {piece:?} lost in the import"))),
            })
            .collect::<Result<Vec<u32>>>()?;
        Ok(Self { segmenter, ours })
    }

    fn words(path: &Path, json: bool) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        // Plain YAML scalars are read as their text (`yes`, `1.0` stay words), as yaml-cpp gives
        // them to Marian.
        let map: BTreeMap<String, u32> = match json {
            true => serde_json::from_str(&text).map_err(|e| bad(path, e))?,
            false => serde_yaml_ng::from_str(&text).map_err(|e| bad(path, e))?,
        };
        let n = map.len();
        let mut by_id: Vec<Option<String>> = vec![None; n];
        for (word, id) in map {
            let slot = by_id.get_mut(id as usize).ok_or_else(|| bad(path, format!("id {id} of {word:?} is not below the size {n}")))?;
            if let Some(other) = slot.replace(word.clone()) {
                return Err(bad(path, format!("id {id} given to both {other:?} and {word:?}")));
            }
        }
        let foreign: Vec<String> = by_id.into_iter().map(|w| w.expect("n distinct ids below n fill every slot")).collect();
        let words: Vec<String> =
            SPECIALS.iter().map(|s| s.to_string()).chain(foreign.iter().filter(|w| special(w).is_none()).cloned()).collect();
        let vocab = WordVocab::from_words(words).map_err(|e| bad(path, e))?;
        let segmenter = Segmenter { inner: Inner::Word(vocab) };
        let ours = foreign.iter().map(|w| special(w).or_else(|| segmenter.id_of(w)).expect("every word was added")).collect();
        Ok(Self { segmenter, ours })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_vocab_keeps_marian_ids_beside_ours() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("vocab.yml");
        std::fs::write(&p, "</s>: 0\n<unk>: 1\nthe: 2\n\"\\\"\": 3\nyes: 4\n1.0: 5\n").unwrap();
        let v = ForeignVocab::read_marian(&p).unwrap();
        assert_eq!(v.ours.len(), 6);
        assert_eq!(&v.ours[..2], &[EOS, UNK]);
        for (marian, word) in [(2, "the"), (3, "\""), (4, "yes"), (5, "1.0")] {
            assert_eq!(v.segmenter.id_of(word), Some(v.ours[marian]), "{word}");
        }
        assert_eq!(v.segmenter.encode("the yes 1.0 zzz"), vec![v.ours[2], v.ours[4], v.ours[5], UNK]);
    }

    #[test]
    fn bad_word_vocabs_are_refused_with_the_file() {
        let dir = tempfile::tempdir().unwrap();
        for (name, text, why) in [
            ("gap.yml", "</s>: 0\nthe: 2\n", "not below"),
            ("twice.json", "{\"a\": 0, \"b\": 0}", "given to both"),
            ("space.yml", "</s>: 0\n\"a b\": 1\n", "invalid vocabulary word"),
            ("vocab.txt", "a\n", "expected a SentencePiece"),
        ] {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            let e = ForeignVocab::read_marian(&p).unwrap_err().to_string();
            assert!(e.contains(name) && e.contains(why), "{name}: {e}");
        }
    }
}
