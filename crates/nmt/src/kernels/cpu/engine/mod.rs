//! What the CPU ops multiply with beyond the floor's portable product (`kernels::gemm`, which
//! the GPU's emulation also multiplies with in cuBLAS's place), and on which instructions
//! (issue 77: the CPU's room, not the floor both devices stand on):
//! - `bf16_gemm` (`vdpbf16ps`, AMD Zen 4/5) and `amx_gemm` (AMX tiles, Intel Xeons), over the
//!   operands `bf16_pack` and `amx_pack` pack, the tiles' instructions in `amx` and their
//!   software model `amx_model` (what the tests run where the CPU has no tiles);
//! - `int8` (rten-gemm, or `amx_int8` on the tiles): the search's quantised products, whose
//!   layer is `model/int8_linear.rs`, where the search quantises;
//! - `cpuid` and `isa`: what this CPU has, capped by `NMT_MAX_CPU_ISA`, and `simd_dispatch!`;
//! - `products`: which engine runs a training step's large products in bf16 on this CPU
//!   (`Bf16Path`), and `matmul_wide`, which runs one product in the precision its op was given.
pub mod amx;
pub mod amx_gemm;
pub mod amx_int8;
mod amx_model;
mod amx_pack;
#[cfg(test)]
mod amx_tests;
pub mod bf16_gemm;
mod bf16_pack;
pub mod cpuid;
pub mod int8;
pub mod isa;
pub mod products;
