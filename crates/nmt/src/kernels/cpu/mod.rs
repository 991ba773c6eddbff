//! The CPU ops (issue 4): the recurrences, the attention decoders, the loss, the lookups and
//! the optimiser's step as candle custom ops with hand-written forward and backward passes,
//! and the host search's fused projection. Each op has a composed-op twin in the model code
//! that it is tested against (values and gradients, f32 and f64), and where a GPU form exists,
//! a twin of the same stem in `kernels/gpu/` that is tested against it. What they multiply with
//! beyond the floor's `gemm` (bf16, AMX and int8 engines, the CPU's identity, the large
//! products' precision) is in `engine/`.
pub mod attention_op;
pub mod attention_weights;
pub mod bahdanau;
pub mod bahdanau_backward;
pub mod birnn;
mod conditional;
pub mod deep_output;
pub mod engine;
mod feedback_backward;
pub(crate) mod feedback_forward;
pub mod feedback_op;
pub mod grconv_tree;
pub mod gru_cell;
pub mod linear;
pub mod lookup;
pub mod lstm_cell;
pub mod maxout;
pub mod norm_rows;
mod op;
pub mod optim_step;
pub mod proj_nll;
pub mod projection;
pub mod rnn_cell;
pub mod rnn_sequence;
pub mod row_best;
pub mod start_pool;
