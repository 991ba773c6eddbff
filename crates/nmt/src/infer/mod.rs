//! Fast search on the CPU: the forward pass of [`Seq2Seq`](crate::model::Seq2Seq) written on
//! host slices with the kernels' GEMM and vectorised elementwise code, no autodiff graph.
//!
//! This is the translator of Marian's split between model and translator: the candle model
//! (crate::model) is the reference and the thing that trains; [`HostModel`] is a snapshot of
//! its weights that search runs on. `tests/infer.rs` checks that both give the same
//! hypotheses and scores, for both architectures, greedy and beam, with alignments.
//!
//! What makes it faster than the candle search (docs/PERF.md, "Translation speed"):
//! - no per-op tensor allocation or graph bookkeeping;
//! - the scores are column-major (`kernels/scores.rs`) and never normalised in full: the
//!   normaliser and a thresholded top-k read them once;
//! - only live hypotheses are computed: finished ones and finished sentences leave the batch;
//! - the two encoder directions run on one thread each.
pub mod beam;
pub mod copy;
pub mod dense;
pub mod encode;
pub mod ensemble;
pub mod grconv;
pub mod step;
pub mod weights;

pub use weights::HostModel;

use nmt_data::batch::Batch;

use crate::hypothesis::{max_output_len, Hypothesis, SearchOptions};
use crate::kernels::profile;

/// Translates one batch with one model or an ensemble (`models`, sharing the vocabularies;
/// `infer/ensemble.rs`): up to `n_best` hypotheses per row, best first, in the batch's order.
/// The batch's sources are in the first model's reading order, and so are the alignments.
pub fn search_batch(models: &[&HostModel], batch: &Batch, opts: &SearchOptions) -> Vec<Vec<Hypothesis>> {
    let threads = rayon::current_num_threads();
    let lead = models.first().is_some_and(|m| m.cfg.reverse_source);
    let members: Vec<ensemble::Member<'_>> = models
        .iter()
        .map(|&model| {
            let flipped = model.cfg.reverse_source != lead;
            let (mut src, mut ext) = (batch.src.clone(), batch.src_ext.clone());
            if flipped {
                flip_rows(&mut src, batch);
                flip_rows(&mut ext, batch);
            }
            let mut enc = profile::timed(profile::SEARCH_ENCODE, || encode::encode(model, &src, &batch.src_lengths, threads));
            enc.src_ext = ext;
            ensemble::Member { model, enc, flipped }
        })
        .collect();
    let limits: Vec<usize> = batch.src_lengths.iter().map(|&l| max_output_len(l, &opts.cfg)).collect();
    beam::beam(&members, &limits, opts, threads)
}

/// Reverses each row's words (its `</s>` stays last) in a `(B, S)` array of the batch's shape.
fn flip_rows(ids: &mut [u32], batch: &Batch) {
    if ids.is_empty() {
        return;
    }
    for (row, &len) in ids.chunks_exact_mut(batch.src_len.max(1)).zip(&batch.src_lengths) {
        nmt_data::reverse_source(&mut row[..len.min(batch.src_len)], true);
    }
}
