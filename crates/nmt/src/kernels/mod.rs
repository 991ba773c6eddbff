//! Fused CPU kernels (issue 4): the recurrences, the loss and the optimizer step written as
//! candle custom ops with hand-written forward and backward passes. Each has a composed-op twin
//! in the model code that it is tested against (values and gradients, f32 and f64).
pub mod amx;
pub mod amx_gemm;
pub mod amx_int8;
mod amx_model;
#[cfg(test)]
mod amx_tests;
pub mod attn_backward;
pub mod attn_decoder;
pub mod attn_op;
pub mod bf16_gemm;
mod bf16_pack;
pub mod birnn;
mod cgru_decoder;
pub mod cpuid;
pub mod deep_output;
pub mod dense;
mod feedback_backward;
pub mod feedback_op;
pub(crate) mod feedback_step;
pub mod gemm;
pub mod gpu;
pub mod gru_cell;
pub mod int8;
pub mod int8_linear;
pub mod isa;
pub mod linear;
pub mod lookup;
pub mod lstm_cell;
pub mod math;
pub mod maxout;
pub mod norm_rows;
pub mod optim_step;
pub mod precision;
pub mod profile;
pub mod proj_nll;
pub mod projection;
pub mod rnn_cell;
pub mod rnn_op;
pub mod row_best;
mod saved_op;
pub mod start_pool;
pub mod storage;
