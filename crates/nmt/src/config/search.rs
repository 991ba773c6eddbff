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
    /// Score only the batch's lexical shortlist (Marian's `--shortlist`): the model file's
    /// translations of the batch's source tokens and the most frequent target tokens
    /// (`nmt_data::shortlist`); the distribution is normalised over them.
    pub shortlist: bool,
    /// Multiply in int8 (`kernels/cpu/engine/int8.rs`): weights quantised once per output row, activations
    /// per row on the fly. The fused CPU search only; `f32` elsewhere.
    pub int8: bool,
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
            shortlist: false,
            int8: false,
        }
    }
}

/// The largest beam (and so n-best list) any search takes: the CLI's `-b`/`--n-best`, a
/// config's `[search]`, a Python call; the server's own `--max-beam` is at most this. A beam's
/// cost grows with its width times the vocabulary, and `-b 5000` on a 4-word line ran for over
/// a minute (issue 44, row 2).
pub const MAX_BEAM: usize = 128;

/// A caller's changes to a model's search defaults: the CLI's flags, a server request, a
/// Python call. `None` keeps the model file's value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchRequest {
    pub beam_size: Option<usize>,
    /// Hypotheses kept per sentence (the beam is raised to it); `None`: the best one only.
    pub n_best: Option<usize>,
    pub normalize: Option<f64>,
    pub max_len_ratio: Option<f64>,
    pub batch_size: Option<usize>,
    pub max_source_len: Option<usize>,
    /// Never emit `<unk>` (in addition to the model's own setting).
    pub no_unk: bool,
    /// Score only the lexical shortlist / multiply in int8 (`None`: the model file's setting).
    pub shortlist: Option<bool>,
    pub int8: Option<bool>,
}

impl SearchRequest {
    /// `defaults` with this request's changes; counts must be at least 1 and the ratio and
    /// exponent finite and not negative.
    pub fn apply(&self, defaults: SearchConfig) -> crate::error::Result<SearchConfig> {
        let mut s = defaults;
        s.beam_size = self.beam_size.unwrap_or(s.beam_size);
        s.n_best = self.n_best.unwrap_or(1);
        s.normalize = self.normalize.unwrap_or(s.normalize);
        s.max_len_ratio = self.max_len_ratio.unwrap_or(s.max_len_ratio);
        s.batch_size = self.batch_size.unwrap_or(s.batch_size);
        s.max_source_len = self.max_source_len.unwrap_or(s.max_source_len);
        s.no_unk |= self.no_unk;
        s.shortlist = self.shortlist.unwrap_or(s.shortlist);
        s.int8 = self.int8.unwrap_or(s.int8);
        if s.beam_size == 0 || s.n_best == 0 || s.batch_size == 0 || s.max_source_len == 0 {
            return Err(crate::error::Error::Input("beam size, n-best, batch size and maximum length must be at least 1".into()));
        }
        s.beam_size = s.beam_size.max(s.n_best);
        if s.beam_size > MAX_BEAM {
            return Err(crate::error::Error::Input(format!(
                "beam size {} (or n-best {}) is above the maximum {MAX_BEAM}",
                s.beam_size, s.n_best
            )));
        }
        for (name, v) in [("normalize", s.normalize), ("max_len_ratio", s.max_len_ratio)] {
            if !v.is_finite() || v < 0.0 {
                return Err(crate::error::Error::Input(format!("{name} must be a finite number ≥ 0, not {v}")));
            }
        }
        Ok(s)
    }
}
