//! The kernels (docs/ARCHITECTURE.md, "Kernels"): two rooms over one floor.
//! - `cpu/`: the CPU ops, candle custom ops with hand-written backward passes, and in
//!   `cpu/engine/` what they multiply with: the GEMM engines (the `gemm` crate's, bf16 on
//!   `vdpbf16ps` or AMX tiles, int8 on rten-gemm or AMX tiles), the CPU's identity (`cpuid`,
//!   `isa` with `simd_dispatch!`) and which engine runs a training step's large products
//!   (`products`);
//! - `gpu/`: their GPU twins, same stem, same op, other device (`gpu/mod.rs`);
//! - the floor both stand on, here: each op's shape and packed layout (`shapes/`), the one op
//!   trait (`fused_op`), candle's buffers (`storage`), the element types and their elementwise
//!   maths (`math`), the portable product on strided views (`gemm`: the `gemm` crate's, which
//!   the CPU ops run in f32 and f64 and the GPU's emulation runs in cuBLAS's place) and the
//!   opt-in profile (`profile`). The floor imports neither room, and `gpu/` imports nothing
//!   of `cpu/`;
//! - `recurrent_twin_tests.rs` and `output_twin_tests.rs` (tests): each GPU twin, emulated,
//!   against its CPU op.
pub mod cpu;
pub mod fused_op;
pub mod gemm;
pub mod gpu;
pub mod math;
#[cfg(test)]
mod output_twin_tests;
pub mod profile;
#[cfg(test)]
mod recurrent_twin_tests;
pub mod shapes;
pub mod storage;
