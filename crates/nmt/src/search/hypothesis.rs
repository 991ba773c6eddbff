//! The search's output type, its options, length normalisation and limits; the beam
//! bookkeeping that ranks hypotheses is `beams.rs`.
//!
//! Hypotheses are ranked by `log p(y|x) / len^α` (Cho et al. 2014b's length normalisation for
//! α = 1; `len` counts `</s>`). A hypothesis's `log_prob` is exactly the sum of the per-step
//! log-probabilities the model assigned, i.e. the teacher-forced `log p(y </s> | x)`.
use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::{Impl, SearchConfig};

/// One output sentence.
#[derive(Clone, Debug, PartialEq)]
pub struct Hypothesis {
    /// Target ids without `<s>` and `</s>`.
    pub tokens: Vec<u32>,
    /// `log p(tokens [</s>] | x)`.
    pub log_prob: f64,
    /// `log_prob / len^α`, what hypotheses are ranked by.
    pub score: f64,
    /// Whether it ended with `</s>` (false: cut at the length limit).
    pub finished: bool,
    /// Attention weights, one row `(src_len)` per output token including `</s>` (RNNsearch only,
    /// when asked for).
    pub alignment: Option<Vec<Vec<f32>>>,
}

/// What to search for and what to keep.
#[derive(Clone, Debug)]
pub struct SearchOptions {
    pub cfg: SearchConfig,
    /// Record attention weights.
    pub alignments: bool,
    /// `Fused`: the host kernels (`model/snapshot.rs`) when the model is `f32` on the CPU (else
    /// the candle ops); `Ops`: the candle ops of `Seq2Seq::decode_step`, the reference and the
    /// path for GPUs and other dtypes.
    pub imp: Impl,
}

/// Length-normalised score.
pub fn normalized(log_prob: f64, len: usize, alpha: f64) -> f64 {
    if alpha == 0.0 {
        log_prob
    } else {
        log_prob / (len.max(1) as f64).powf(alpha)
    }
}

/// Output length limit for a source of `src_len` tokens (its `</s>` included).
pub fn max_output_len(src_len: usize, cfg: &SearchConfig) -> usize {
    let words = src_len.saturating_sub(1) as f64;
    (cfg.max_len_ratio * words).ceil() as usize + cfg.max_len_extra
}

static ROW_STEPS: AtomicU64 = AtomicU64::new(0);

/// Counts `rows` hypotheses advanced by one decoder step (both searches count).
pub(crate) fn count_row_steps(rows: usize) {
    ROW_STEPS.fetch_add(rows as u64, Ordering::Relaxed);
}

/// The decoder's work since the last call: hypothesis rows × steps computed, process-wide.
/// Unlike output tokens it does not depend on when hypotheses end, so it compares search
/// implementations (`nmt translate --stats`, docs/PERF.md, "int8 and the lexical shortlist").
pub fn take_row_steps() -> u64 {
    ROW_STEPS.swap(0, Ordering::Relaxed)
}
