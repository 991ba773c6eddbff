//! The GPU twins of the CPU ops (issue 57), written once and run in two places: on an NVIDIA
//! GPU (`cuda.rs`: nvcc's PTX and cuBLAS on candle's stream) and on the host (`emulated.rs`:
//! the same CUDA sources compiled by the host's C compiler and run thread index by thread
//! index, our GEMM for cuBLAS), so that every CPU test checks the arithmetic and the
//! orchestration the GPU runs.
//!
//! **Same stem, same op, other device**: `gpu/X.rs` is the twin of `kernels/cpu/X.rs` and is
//! tested against it. The twins: `rnn_cell.rs` (either cell, chosen once from its kind) with
//! `gru_cell.rs` and `lstm_cell.rs`; `norm_rows.rs` (layer normalisation of a product's rows);
//! `rnn_sequence.rs` (one direction, the op `rnn_sequence`) and `birnn.rs` (the bidirectional
//! layer, `birnn_sequence`); `bahdanau.rs` and `conditional.rs` (the two RNNsearch decoder
//! loops) under `attention_op.rs` (the ops `attention_loop`, `attention_step`);
//! `feedback_forward.rs`, `feedback_backward.rs` under `feedback_op.rs` (`feedback_sequence`);
//! `optim_step.rs` (the optimiser's update); `row_best.rs` (each row's best tokens); the
//! input and output sides of a training step: `linear.rs` (`x W + b`, the input projections,
//! in bf16 under bf16 products), `lookup.rs` (the embedding lookup with its dropout mask),
//! `start_pool.rs` (the decoder's start state), `deep_output.rs` (the deep output's maxout or
//! tanh layer) and `proj_nll.rs` (the vocabulary projection and its label-smoothed loss);
//! `op.rs` (the candle plumbing of
//! [`crate::kernels::fused_op::FusedOp`] on this device).
//!
//! GPU-only files, each with a name no other file has: `launch.rs` (the room's vocabulary:
//! [`launch::Launch`], [`launch::Kernel`], addresses and products), `args.rs` (the kernels'
//! argument structs, mirrored from `common.h`), `bf16.rs` (products in bf16: the operands'
//! rounding kernel, `bf16.cu`, before `Launch::gemm_bf16`), `direction.rs` (the loops through time that
//! `birnn.rs` and `rnn_sequence.rs` share), `attention_kernels.rs` (the decoder loops' layout
//! and attention launches), `cuda.rs` and `emulated.rs` (the two launchers), `context.rs` (what opening a GPU sets on its
//! context) with `cuda_context.rs` (those calls on cudarc), `recording.rs` (a
//! launcher that records a training step and replays it, as a CUDA graph does), `replay_check.rs`
//! (a step to check replays with, on any launcher), `emulation_tests.rs` (the emulation's own checks) and
//! `recording_tests.rs`. The kernels' tests against their CPU twins stand on both rooms, one floor
//! up: `kernels/recurrent_twin_tests.rs` and `kernels/output_twin_tests.rs`.
//! The CUDA sources are every `.cu` file of this folder (build.rs finds them), with
//! `common.h` (argument structs, cell codes, shared device functions) and, for the host,
//! `emulate.h`/`emulate.c`.
//!
//! **Design: Marian's** (`gGRUFastForward`/`gGRUFastBackward`, `gAtt`/`gAttBack` in its
//! `tensors/gpu/tensor_operators.cu`), not cuDNN's: what does not depend on the previous step
//! is one large product by the caller (the input projections of every step, the attention
//! keys); per time step there is one recurrent product on cuBLAS (two for the paper form,
//! whose reset gates `U_n`'s input) and a few fused elementwise kernels, forward and
//! backward; every weight gradient is one product over all steps. cuDNN's `cudnnRNNForward`
//! would run a whole encoder layer in one call, but it has neither of the cells' exact forms
//! with our recurrent dropout (one mask per sentence on the state entering `U`) nor padding
//! that carries the state, nor an attention decoder; a kernel of our own has the CPU's fused
//! op as its reference.
//!
//! A kernel launch on the GPU is a few microseconds of CPU time, and the composed candle path
//! spends 12 of them on a reset-after GRU step forward (`model/gru.rs`'s `cell_step`, counted
//! from its ops; docs/GPU.md, "Reading"). Here a reset-after GRU step is 2 launches each way
//! (a product and a gate kernel), a paper-form step 4, and recurrent dropout adds one; a
//! Bahdanau decoder step is 7 forward, a conditional GRU step 9 (docs/GPU.md). The per-step
//! launches are what a CUDA graph captures: `recording.rs` records them over a bucket's buffers
//! and `cuda.rs` captures the recording (docs/GPU.md, "The training step as a CUDA graph").
//!
//! The host form is not a second implementation of the maths: it is the same source. Training
//! on the CPU runs the CPU ops (`kernels::cpu`); the emulation runs in the tests and in one
//! production place, the composed search's pick of each row's best tokens on a CPU tensor
//! (`row_best.rs`, called by `search/candle.rs`).
pub(crate) mod args;
pub mod attention_kernels;
pub mod attention_op;
mod bahdanau;
pub mod bf16;
pub mod birnn;
mod conditional;
pub mod context;
#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "cuda")]
mod cuda_context;
pub mod deep_output;
mod direction;
pub(crate) mod emulated;
mod feedback_backward;
mod feedback_forward;
pub mod feedback_op;
mod gru_cell;
pub mod launch;
pub mod linear;
pub mod lookup;
mod lstm_cell;
mod norm_rows;
mod op;
pub mod optim_step;
pub mod proj_nll;
pub mod recording;
#[cfg(test)]
mod recording_tests;
// A test harness: the lib's tests and, in a CUDA build, the GPU test binary (`tests/cuda.rs`)
// use it; the default build ships none of it.
#[cfg(any(test, feature = "cuda"))]
pub mod replay_check;
mod rnn_cell;
pub mod rnn_sequence;
pub mod row_best;
pub mod start_pool;

#[cfg(test)]
mod emulation_tests;
