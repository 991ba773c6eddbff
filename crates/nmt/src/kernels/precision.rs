//! The precision of the training step's large products (`train.precision`, issue 42).
//!
//! The fused training kernels call [`matmul_wide`] for the products over a whole batch: the
//! input projections over the sequence, the output projection and its loss, the attention's
//! annotation projection, the deep output, and the backward products of each. With
//! [`Precision::Bf16`] set on a CPU with AVX512_BF16 they run in `bf16_gemm.rs` (operands
//! rounded to bf16, f32 sums); everything else stays f32: the recurrences' per-step products,
//! the reductions, the loss, the master weights and Adam's moments. f64 (the gradient checks)
//! is never rounded.
//!
//! A process-wide setting, like candle's `set_gemm_reduced_precision_bf16`: the products sit
//! deep inside candle custom ops whose constructors do not see the training config, and a
//! process trains one model at a time. Search and the composed reference twin never read it.
use std::sync::atomic::{AtomicBool, Ordering};

use super::gemm::{matmul, Mat, Real};
pub use crate::config::Precision;

static BF16: AtomicBool = AtomicBool::new(false);

/// Whether this CPU runs the bf16 products: it has AVX512_BF16 and `NMT_MAX_CPU_ISA` does not
/// cap it below (`kernels::isa`).
pub fn bf16_available() -> bool {
    super::isa::level() >= super::isa::CpuLevel::Avx512Bf16
}

/// Sets the precision of the large products and returns the one in effect: `F32` when `Bf16`
/// was asked for on a CPU without AVX512_BF16 (the caller says so, once).
pub fn set_training_products(p: Precision) -> Precision {
    let on = p == Precision::Bf16 && bf16_available();
    BF16.store(on, Ordering::Relaxed);
    if on {
        Precision::Bf16
    } else {
        Precision::F32
    }
}

/// The precision in effect for the large products.
pub fn training_products() -> Precision {
    if BF16.load(Ordering::Relaxed) {
        Precision::Bf16
    } else {
        Precision::F32
    }
}

/// [`matmul`] for a large product of the training step: in bf16 when that is set and `T` is
/// f32, in `T` otherwise.
pub fn matmul_wide<T: Real>(dst: &mut [T], dst_off: usize, dst_rs: usize, a: Mat<'_, T>, b: Mat<'_, T>, accumulate: bool, threads: usize) {
    #[cfg(target_arch = "x86_64")]
    if BF16.load(Ordering::Relaxed) && std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() {
        // SAFETY: `T` is `f32` (checked above), so these are the same slices retyped.
        let (dst, a, b) = unsafe { (retype_mut(dst), retype(a), retype(b)) };
        return super::bf16_gemm::matmul_bf16(dst, dst_off, dst_rs, a, b, accumulate, threads);
    }
    matmul(dst, dst_off, dst_rs, a, b, accumulate, threads)
}

/// # Safety
/// `T` must be `f32`.
#[cfg(target_arch = "x86_64")]
unsafe fn retype_mut<T>(s: &mut [T]) -> &mut [f32] {
    std::slice::from_raw_parts_mut(s.as_mut_ptr().cast(), s.len())
}

/// # Safety
/// `T` must be `f32`.
#[cfg(target_arch = "x86_64")]
unsafe fn retype<T>(m: Mat<'_, T>) -> Mat<'_, f32> {
    Mat {
        data: std::slice::from_raw_parts(m.data.as_ptr().cast(), m.data.len()),
        off: m.off,
        rows: m.rows,
        cols: m.cols,
        rs: m.rs,
        cs: m.cs,
    }
}
