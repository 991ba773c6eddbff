//! The encoder-decoder: [`Seq2Seq`] (`seq2seq.rs`) holds the embeddings and one `Layers`
//! (RNNsearch or RNNenc, `layers.rs`: each architecture's layers are listed once, in its own
//! file) and offers what training, search and scoring need: `loss`, `sentence_log_probs`,
//! `encode`, `decode_step`. This file lists the folder's modules and its public names only. The
//! search's scorers live beside the beam loop (`search/candle.rs`, `search/host.rs`).
//!
//! Shapes: `B` sentences, `S` padded source length, `T` padded target length, `m` embedding,
//! `n` hidden, `l` maxout units, `K_y` target vocabulary.
pub(crate) mod architecture;
pub mod attention;
pub(crate) mod attention_decoder;
pub(crate) mod attention_memory;
pub(crate) mod backend;
pub(crate) mod candidates;
pub(crate) mod conditional_decoder;
pub(crate) mod conditional_host;
pub(crate) mod copy;
pub(crate) mod decoder;
pub(crate) mod decoder_gpu;
pub(crate) mod decoder_launch;
pub(crate) mod decoder_loop_gpu;
pub(crate) mod dense;
pub(crate) mod embedding;
pub(crate) mod embedding_launch;
pub(crate) mod encoder;
pub(crate) mod encoder_launch;
pub(crate) mod feedback;
pub(crate) mod feedback_fused;
pub mod grconv;
pub mod gru;
pub(crate) mod inputs;
pub(crate) mod int8_linear;
pub(crate) mod launch_arena;
pub(crate) mod launch_bucket;
#[cfg(test)]
mod launch_layer_tests;
pub(crate) mod launch_step;
pub(crate) mod launch_tape;
#[cfg(test)]
pub(crate) mod launch_tests;
pub(crate) mod layer_norm;
pub(crate) mod layers;
pub mod lstm;
pub(crate) mod output;
pub(crate) mod output_launch;
pub mod params;
pub(crate) mod precomputed;
pub mod regularizer;
pub(crate) mod rnn;
pub(crate) mod rnnenc;
pub(crate) mod rnnsearch;
pub(crate) mod seq2seq;
pub(crate) mod snapshot;
pub(crate) mod summary_decoder;
#[cfg(test)]
mod twin_support;
pub(crate) mod upper;
pub(crate) mod upper_host;

pub use backend::{Backend, TrainStep};
pub use candidates::{CandidateSpec, Candidates};
pub use decoder::StepScores;
pub use inputs::BatchTensors;
// The search's int8 layer, which `examples/int8_shapes.rs` times.
pub use int8_linear::QLinear;
// The recorded step's parts that `tests/cuda.rs` drives on a GPU (its only callers outside).
pub use launch_bucket::{host_batch, uploaded, Bucket, MaskSizes};
pub use launch_step::{packed_gradients, LaunchStep};
pub use seq2seq::{Loss, Seq2Seq, OUTPUT_BIAS, SRC_EMB, TGT_EMB};
