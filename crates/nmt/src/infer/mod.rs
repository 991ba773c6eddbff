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
pub mod grconv;
pub mod step;
pub mod weights;

pub use weights::HostModel;

use nmt_data::batch::Batch;

use crate::hypothesis::{max_output_len, Hypothesis, SearchOptions};
use crate::kernels::profile;

/// Translates one batch: up to `n_best` hypotheses per row, best first, in the batch's order.
pub fn search_batch(model: &HostModel, batch: &Batch, opts: &SearchOptions) -> Vec<Vec<Hypothesis>> {
    let threads = rayon::current_num_threads();
    let mut enc = profile::timed(profile::SEARCH_ENCODE, || encode::encode(model, &batch.src, &batch.src_lengths, threads));
    enc.src_ext = batch.src_ext.clone();
    let limits: Vec<usize> = batch.src_lengths.iter().map(|&l| max_output_len(l, &opts.cfg)).collect();
    beam::beam(model, &enc, &limits, opts, threads)
}
