//! `[search]`: beam, length normalisation and limits of translation and validation BLEU.
use serde::{Deserialize, Serialize};

/// Search settings (translate, validation BLEU).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SearchConfig {
    /// 1 = greedy.
    pub beam_size: usize,
    /// Length normalisation exponent α: hypotheses are ranked by `log p / len^α` (Cho et al.
    /// 2014b use α = 1; 0 = raw log-probability). `len` counts the `</s>` token.
    pub normalize: f64,
    /// Output at most `max_len_ratio × source length + max_len_extra` tokens.
    pub max_len_ratio: f64,
    pub max_len_extra: usize,
    /// Never emit `<unk>`.
    pub no_unk: bool,
    /// Keep this many hypotheses per sentence (≤ beam size) for n-best output.
    pub n_best: usize,
    /// Sentences per batch (sorted by length, order restored).
    pub batch_size: usize,
    /// Longest source translated, in tokens: a longer one is cropped to this length, with a
    /// warning naming its line (Marian's `--max-length` with `--max-length-crop`). Bounds the
    /// memory a single line can take.
    pub max_source_len: usize,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            beam_size: 5,
            normalize: 1.0,
            max_len_ratio: 2.0,
            max_len_extra: 10,
            no_unk: false,
            n_best: 1,
            batch_size: 32,
            max_source_len: 1000,
        }
    }
}
