//! Fast search on the CPU: the forward pass of [`Seq2Seq`](crate::model::Seq2Seq) written on
//! host slices with the kernels' GEMM and vectorised elementwise code, no autodiff graph.
//!
//! This is the translator of Marian's split between model and translator: the candle model
//! (crate::model) is the reference and the thing that trains; [`HostModel`] is a snapshot of
//! its weights that search runs on, as a `crate::search::Scorer` (`search/host.rs`).
//! `tests/infer.rs` checks that both scorers give the same hypotheses and scores, for both
//! architectures, greedy and beam, with alignments.
//!
//! What makes it faster than the candle search (docs/PERF-HISTORY.md, "Translation speed on
//! real data"):
//! - no per-op tensor allocation or graph bookkeeping;
//! - the scores are column-major (`kernels/projection.rs`) and never normalised in full: the
//!   normaliser and a thresholded top-k read them once;
//! - only live hypotheses are computed: finished ones and finished sentences leave the batch;
//! - the two encoder directions run on one thread each.
//!
//! Each layer's host form (its weights and its step on host slices) lives in its layer file
//! beside its composed and fused forms: `HostRnn` (`model/rnn.rs`, an encoder layer or an upper
//! decoder layer), `HostAttention` (`model/attention_decoder.rs`), `HostSummary`
//! (`model/summary_decoder.rs`), `HostOutput` (`model/output.rs`), `HostUpper`
//! (`model/upper.rs`), `HostFeedback` (`model/feedback.rs`), `HostGrConv` (`model/grconv.rs`)
//! and `HostCopy` (`model/copy.rs`), and each architecture's snapshot of them in its own file
//! (`HostRnnsearch`, `model/rnnsearch.rs`; `HostRnnenc`, `model/rnnenc.rs`). What stays here:
//! the snapshot of a whole model, its embeddings beside its architecture's (`weights.rs`), the
//! encoder pass's embeddings and start states (`encode.rs`), a step's embeddings, scores and
//! copy mixture (`step.rs`), and a batch's shortlist (`sub_vocab.rs`); the `Scorer` over them
//! is `search/host.rs`.
pub mod encode;
pub mod step;
pub mod sub_vocab;
pub mod weights;

pub use weights::HostModel;
