//! The kernels, on three floors (docs/ARCHITECTURE.md, "Kernels"):
//! - `cpu/`: the CPU ops, candle custom ops with hand-written backward passes;
//! - `gpu/`: their GPU twins, same stem, same op, other device (`gpu/mod.rs`);
//! - here, the engine both floors stand on: the GEMMs (`gemm`, `bf16_gemm` with `bf16_pack`,
//!   `int8` with `int8_linear`, the AMX tiles' `amx_gemm` and `amx_int8` over `amx` and its
//!   software model `amx_model`), the CPU's identity and instruction sets (`cpuid`, `isa`), the element types and
//!   vectorised maths (`math`), the training products' precision (`precision`), candle's
//!   buffers (`storage`), the opt-in profile (`profile`) and the one op trait (`fused_op`).
pub mod amx;
pub mod amx_gemm;
pub mod amx_int8;
mod amx_model;
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
pub mod precision;
pub mod profile;
pub mod storage;
