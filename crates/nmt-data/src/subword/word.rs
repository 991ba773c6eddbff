//! Word-level vocabulary: whitespace tokens, the most frequent kept, the rest mapped to
//! `<unk>` — the setup of the original RNN encoder–decoder papers, kept for comparison with BPE.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::{BOS, EOS, PAD, SPECIALS, UNK};

/// A word list whose index is the token id; ids `0..4` are the special symbols.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct WordVocab {
    words: Vec<String>,
    /// Non-special words only, so that literal `<s>` in the text maps to UNK rather than BOS.
    index: HashMap<String, u32>,
}

impl WordVocab {
    /// Keeps the `vocab_size - 4` most frequent words seen at least `min_frequency` times.
    ///
    /// Ties in frequency are broken by the word's byte order so that training is
    /// deterministic regardless of hash-map iteration order.
    pub(crate) fn train(lines: &[String], vocab_size: usize, min_frequency: u32) -> Result<Self> {
        let mut counts: HashMap<&str, u64> = HashMap::new();
        for word in lines.iter().flat_map(|l| l.split_whitespace()) {
            if !SPECIALS.contains(&word) {
                *counts.entry(word).or_insert(0) += 1;
            }
        }
        if counts.is_empty() {
            return Err(Error::NoTrainingData("the training text contains no words".into()));
        }
        let mut ranked: Vec<(&str, u64)> = counts.into_iter().filter(|&(_, c)| c >= u64::from(min_frequency)).collect();
        ranked.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        ranked.truncate(vocab_size.saturating_sub(SPECIALS.len()));
        let words = SPECIALS.iter().copied().chain(ranked.into_iter().map(|(w, _)| w)).map(str::to_owned).collect();
        Self::from_words(words)
    }

    /// Rebuilds a vocabulary from its id-ordered word list, checking the invariants that
    /// `train` guarantees (specials first, no duplicates, no whitespace inside words).
    pub(crate) fn from_words(words: Vec<String>) -> Result<Self> {
        if words.len() < SPECIALS.len() || words[..SPECIALS.len()] != SPECIALS {
            return Err(Error::Json(format!("word vocabulary must start with {SPECIALS:?}")));
        }
        let mut index = HashMap::with_capacity(words.len());
        for (id, word) in words.iter().enumerate().skip(SPECIALS.len()) {
            if word.is_empty() || word.chars().any(char::is_whitespace) || SPECIALS.contains(&word.as_str()) {
                return Err(Error::Json(format!("invalid vocabulary word {word:?}")));
            }
            let id = u32::try_from(id).map_err(|_| Error::Json("vocabulary too large".into()))?;
            if index.insert(word.clone(), id).is_some() {
                return Err(Error::Json(format!("duplicate vocabulary word {word:?}")));
            }
        }
        Ok(Self { words, index })
    }

    /// The id-ordered word list (specials included).
    pub(crate) fn words(&self) -> &[String] {
        &self.words
    }

    pub(crate) fn len(&self) -> usize {
        self.words.len()
    }

    pub(crate) fn id_of(&self, word: &str) -> Option<u32> {
        self.index.get(word).copied()
    }

    pub(crate) fn encode(&self, text: &str) -> Vec<u32> {
        text.split_whitespace().map(|w| self.index.get(w).copied().unwrap_or(UNK)).collect()
    }

    pub(crate) fn decode(&self, ids: &[u32]) -> String {
        let words: Vec<&str> = ids.iter().filter(|&&id| id != PAD && id != BOS && id != EOS).map(|&id| self.piece(id)).collect();
        words.join(" ")
    }

    /// The word for `id`; ids outside the vocabulary render as `<unk>`.
    pub(crate) fn piece(&self, id: u32) -> &str {
        self.words.get(id as usize).map_or(SPECIALS[UNK as usize], String::as_str)
    }

    pub(crate) fn knows_word(&self, word: &str) -> bool {
        self.index.contains_key(word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn keeps_most_frequent_with_deterministic_ties() {
        let v = WordVocab::train(&lines(&["b a c", "a b d", "a e"]), 6, 1).unwrap();
        // a:3, b:2, then c/d/e tie at 1 -> "c" wins by byte order.
        assert_eq!(v.words()[4..], ["a", "b"]);
        let v = WordVocab::train(&lines(&["b a c", "a b d", "a e"]), 7, 1).unwrap();
        assert_eq!(v.words()[4..], ["a", "b", "c"]);
    }

    #[test]
    fn min_frequency_and_unk() {
        let v = WordVocab::train(&lines(&["x y", "x z"]), 100, 2).unwrap();
        assert_eq!(v.len(), 5);
        assert_eq!(v.encode("x  y\tx"), vec![4, UNK, 4]);
        assert_eq!(v.decode(&[BOS, 4, UNK, 4, EOS, PAD]), "x <unk> x");
        assert!(v.knows_word("x"));
        assert!(!v.knows_word("y"));
    }

    #[test]
    fn literal_specials_are_unknown() {
        let v = WordVocab::train(&lines(&["<s> a </s>", "a"]), 100, 1).unwrap();
        assert_eq!(v.encode("<s> a"), vec![UNK, 4]);
    }

    #[test]
    fn rejects_bad_word_lists() {
        assert!(WordVocab::from_words(vec!["a".into()]).is_err());
        let mut w: Vec<String> = SPECIALS.iter().map(|s| s.to_string()).collect();
        w.push("a".into());
        w.push("a".into());
        assert!(WordVocab::from_words(w).is_err());
    }

    #[test]
    fn empty_training_text_is_an_error() {
        assert!(WordVocab::train(&lines(&["", "  "]), 10, 1).is_err());
    }
}
