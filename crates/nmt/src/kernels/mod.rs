//! Fused CPU kernels (issue 4): the recurrences, the loss and the optimizer step written as
//! candle custom ops with hand-written forward and backward passes. Each has a composed-op twin
//! in the model code that it is tested against (values and gradients, f32 and f64).
pub mod attn_backward;
pub mod attn_decoder;
pub mod attn_op;
pub mod bigru;
pub mod deep_output;
pub mod embed;
pub mod gemm;
pub mod gru;
pub mod gru_cell;
pub mod linear;
pub mod lstm_cell;
pub mod math;
pub mod maxout;
pub mod optim_step;
pub mod profile;
pub mod proj_nll;
mod saved_op;
pub mod scores;
pub mod storage;
pub mod xent;
