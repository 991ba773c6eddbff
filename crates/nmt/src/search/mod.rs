//! Generation: greedy and beam search over batches of sentences.
//!
//! Both return, per sentence, hypotheses ranked by `log p(y|x) / len^α` (Cho et al. 2014b's
//! length normalisation for α = 1; `len` counts `</s>`). A hypothesis's `log_prob` is exactly the
//! sum of the per-step log-probabilities the model assigned, i.e. the teacher-forced
//! `log p(y </s> | x)`.
pub mod beam;
pub mod greedy;

use candle_core::Tensor;
use nmt_data::batch::Batch;

use crate::config::SearchConfig;
use crate::error::Result;
use crate::model::{BatchTensors, Seq2Seq};

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

/// Which implementation runs the search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// The host kernels of [`crate::infer`] when the model is `f32` on the CPU (the default),
    /// otherwise the candle ops.
    #[default]
    Fused,
    /// The candle ops of [`Seq2Seq::decode_step`]: the reference, and the path for GPUs and
    /// other dtypes.
    Ops,
}

/// What to search for and what to keep.
#[derive(Clone, Debug)]
pub struct SearchOptions {
    pub cfg: SearchConfig,
    /// Record attention weights.
    pub alignments: bool,
    pub engine: Engine,
}

static ROW_STEPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts `rows` hypotheses advanced by one decoder step (both engines count).
pub(crate) fn count_row_steps(rows: usize) {
    ROW_STEPS.fetch_add(rows as u64, std::sync::atomic::Ordering::Relaxed);
}

/// The decoder's work since the last call: hypothesis rows × steps computed, process-wide.
/// Unlike output tokens it does not depend on when hypotheses end, so it compares search
/// implementations (`nmt translate --stats`, docs/PERF.md).
pub fn take_row_steps() -> u64 {
    ROW_STEPS.swap(0, std::sync::atomic::Ordering::Relaxed)
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

/// Translates one batch (source side of `batch`) with the candle ops; returns up to `n_best` hypotheses per row,
/// best first, in the batch's row order.
pub fn search_batch(model: &Seq2Seq, batch: &Batch, opts: &SearchOptions) -> Result<Vec<Vec<Hypothesis>>> {
    let (src, mask) = BatchTensors::source(batch, model.dtype(), model.device())?;
    let enc = model.encode(&src, &mask, None)?;
    let limits: Vec<usize> = batch.src_lengths.iter().map(|&l| max_output_len(l, &opts.cfg)).collect();
    if opts.cfg.beam_size <= 1 {
        Ok(greedy::greedy(model, &enc, &limits, opts)?.into_iter().map(|h| vec![h]).collect())
    } else {
        beam::beam(model, &enc, &limits, opts)
    }
}

/// Host copy of a `(rows, k)` float tensor.
pub(crate) fn to_rows(t: &Tensor) -> Result<Vec<Vec<f32>>> {
    Ok(t.to_dtype(candle_core::DType::F32)?.to_vec2::<f32>()?)
}

/// Translates many source id sequences (each ending with `</s>`): sorted by length into batches
/// of `opts.cfg.batch_size` sentences, searched with `opts.engine`, and returned in the input
/// order.
pub fn search_all(model: &Seq2Seq, srcs: &[Vec<u32>], opts: &SearchOptions) -> Result<Vec<Vec<Hypothesis>>> {
    let per = opts.cfg.batch_size.max(1);
    // The beam multiplies rows; keep `rows × src_len` near what one batch of `per` sentences holds.
    let cfg = nmt_data::BatchConfig { max_tokens: per * 100, max_sentences: per };
    let mut out: Vec<Vec<Hypothesis>> = vec![Vec::new(); srcs.len()];
    let host = match opts.engine {
        Engine::Fused if crate::infer::HostModel::supports(model) => Some(crate::infer::HostModel::new(model)?),
        _ => None,
    };
    for batch in nmt_data::inference_batches(srcs, &cfg) {
        let hyps = match &host {
            Some(h) => crate::infer::search_batch(h, &batch, opts),
            None => search_batch(model, &batch, opts)?,
        };
        for (row, h) in batch.indices.iter().zip(hyps) {
            out[*row] = h;
        }
    }
    Ok(out)
}
