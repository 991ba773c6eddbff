//! The kernels (docs/ARCHITECTURE.md, "Kernels"):
//! - `shapes/`: the floor both rooms stand on, each op's shape and packed layout, so that
//!   `gpu/` imports nothing of `cpu/`;
//! - `cpu/`: the CPU ops, candle custom ops with hand-written backward passes;
//! - `gpu/`: their GPU twins, same stem, same op, other device (`gpu/mod.rs`);
//! - `recurrent_twin_tests.rs` and `output_twin_tests.rs` (tests): each GPU twin, emulated, against its CPU op;
//! - here: the one op trait (`fused_op`), candle's buffers (`storage`), the opt-in profile
//!   (`profile`), the element types and vectorised maths (`math`), and what issue 77 still has to
//!   move to their rooms: the CPU's GEMM engines (`gemm`, `bf16_gemm` with `bf16_pack`, the AMX
//!   tiles' `amx_gemm` (its A operand packed by `amx_pack`) and `amx_int8` over `amx` and its
//!   software model `amx_model`) and identity
//!   (`cpuid`, `isa`), the search's `int8` with `int8_linear`, and the training products'
//!   precision (`precision`).
pub mod amx;
pub mod amx_gemm;
pub mod amx_int8;
mod amx_model;
mod amx_pack;
#[cfg(test)]
mod amx_tests;
pub mod bf16_gemm;
mod bf16_pack;
pub mod cpu;
pub mod cpuid;
pub mod fused_op;
pub mod gemm;
pub mod gpu;
pub mod int8;
pub mod int8_linear;
pub mod isa;
pub mod math;
#[cfg(test)]
mod output_twin_tests;
pub mod precision;
pub mod profile;
#[cfg(test)]
mod recurrent_twin_tests;
pub mod shapes;
pub mod storage;
