//! The GPU's products in bf16 (`train.precision = "bf16"` on a GPU, issue 69 item 7): cuBLAS
//! with bf16 inputs and `f32` sums. [`gemm_in`] runs a [`Gemm`] of `f32` operands in the
//! precision asked for: in bf16, each operand `op(A) (m × k)`, `op(B) (k × n)` is rounded as
//! stored into a contiguous bf16 copy (the kernel [`TO_BF16`], `bf16.cu`, one thread per
//! element; round to nearest even, as the CPU's bf16 products round), and
//! [`Launch::gemm_bf16`] multiplies the copies into the `f32` `C`: `cublasGemmEx` on the GPU,
//! the widened values through our `f32` GEMM under emulation. So the emulated tests run the
//! GPU's own rounding code, and differ from the GPU only in the order of the `f32` sums.
//!
//! A second method of [`Launch`] rather than a precision field on [`Gemm`]: the bf16 product
//! reads other buffers (the rounded copies, which someone must allocate and fill) than the
//! `Gemm` it came from, and every `Gemm` built elsewhere stays an `f32` product without a
//! field to set at each of its construction sites.
use candle_core::Result;

use super::args::kernels;
use super::launch::{Addr, Gemm, Launch, View};
use crate::config::Precision;

kernels! {
    Bf16:
    TO_BF16 = nmt_to_bf16, ToBf16 { dst: Addr, src: Addr, src_ld: i64, rows: i64, cols: i64 }
}

/// `g` in `precision`: [`Launch::gemm`] in `f32`, or its operands rounded to bf16 and
/// [`Launch::gemm_bf16`] (two scratch buffers of `⌈elements / 2⌉` `f32`s hold the bf16 copies
/// while the product runs).
pub fn gemm_in<L: Launch>(l: &L, g: Gemm, precision: Precision) -> Result<()> {
    // Nothing to round in an empty product (`C = beta·C`): the f32 product does it.
    if precision == Precision::F32 || g.m == 0 || g.n == 0 || g.k == 0 {
        return l.gemm(g);
    }
    let (a, va) = rounded(l, g.a, g.m, g.k)?;
    let (b, vb) = rounded(l, g.b, g.k, g.n)?;
    l.gemm_bf16(Gemm { a: va, b: vb, ..g })?;
    // The copies live until the product is queued (on the GPU they are freed on its stream).
    drop((a, b));
    Ok(())
}

/// `v` used as `rows × cols`, rounded to bf16 as stored into a contiguous scratch buffer: the
/// buffer and the view of the copy (leading dimension the stored width, same transposition).
fn rounded<L: Launch>(l: &L, v: View, rows: usize, cols: usize) -> Result<(L::Floats, View)> {
    let (sr, sc) = if v.t { (cols, rows) } else { (rows, cols) };
    let buf = l.scratch((sr * sc).div_ceil(2))?;
    let dst = l.addr(&buf);
    let a = ToBf16 { dst, src: v.addr, src_ld: v.ld as i64, rows: sr as i64, cols: sc as i64 };
    l.launch(&TO_BF16, sr * sc, a)?;
    Ok((buf, View { addr: dst, ld: sc, t: v.t }))
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use super::super::emulated::Emulated;
    use super::super::launch::Module;
    use super::*;

    /// `x`'s bits rounded by the kernel (`nmt_bf16_bits`, run emulated: the C the GPU runs).
    fn kernel_rounding(x: &[f32]) -> Vec<u16> {
        let l = Emulated;
        let (src, dst) = (l.upload(x).unwrap(), l.scratch(x.len().div_ceil(2)).unwrap());
        let a = ToBf16 { dst: l.addr(&dst), src: l.addr(&src), src_ld: x.len() as i64, rows: 1, cols: x.len() as i64 };
        l.launch(&TO_BF16, x.len(), a).unwrap();
        let bytes: Vec<u8> = dst.to_vec().iter().flat_map(|f| f.to_ne_bytes()).collect();
        bytes.chunks(2).take(x.len()).map(|b| u16::from_ne_bytes([b[0], b[1]])).collect()
    }

    /// Bit patterns of every class: zeros, subnormals, the smallest normals, ties to even with
    /// both parities of the kept part and their neighbours, the largest finite values (which
    /// round to infinity), infinities, quiet and signalling NaNs with payloads, both signs;
    /// then random bit patterns and random ties.
    fn patterns() -> Vec<u32> {
        let mut v = vec![0, 1, 0x7fff, 0x8000, 0x8001, 0x1_8000, 0x7f_ffff, 0x80_0000, 0x80_8000, 0x81_8000];
        v.extend([0x3f80_0000, 0x3f80_7fff, 0x3f80_8000, 0x3f80_8001, 0x3f81_7fff, 0x3f81_8000, 0x3f81_8001, 0x3fff_8000]);
        v.extend([0x7f7f_7fff, 0x7f7f_8000, 0x7f7f_ffff, 0x7f80_0000, 0x7f80_0001, 0x7f80_8000, 0x7fbf_ffff, 0x7fc0_0000, 0x7fff_ffff]);
        let signed: Vec<u32> = v.iter().map(|x| x | 0x8000_0000).collect();
        v.extend(signed);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(69);
        v.extend((0..200_000).map(|_| rng.gen::<u32>()));
        v.extend((0..20_000).map(|_| (rng.gen::<u32>() & 0xffff_0000) | 0x8000));
        v
    }

    /// The kernel's rounding against the CPU's bf16 rounding (`half::bf16::from_f32`, which the
    /// CPU's packing uses for its scalar tails and strided operands, `kernels/cpu/engine/bf16_pack.rs`):
    /// the same 16 bits for every pattern, NaNs and ties included. On a CPU with AVX512_BF16
    /// also against its vector rounding (`vcvtneps2bf16`, the packing's contiguous paths): the
    /// same bits except on subnormal inputs, which the instruction flushes to a signed zero
    /// (887 of the patterns on 2026-11-28, Zen 4) and the kernel, like `half`, keeps.
    #[test]
    fn the_gpus_bf16_rounding_is_the_cpus() {
        let x: Vec<f32> = patterns().into_iter().map(f32::from_bits).collect();
        let got = super::super::emulated::same_bits_in_any_order(Module::Bf16, || kernel_rounding(&x));
        for (v, g) in x.iter().zip(&got) {
            let want = half::bf16::from_f32(*v).to_bits();
            assert_eq!(*g, want, "{:#010x}: kernel {g:#06x}, half {want:#06x}", v.to_bits());
        }
        // The CPU's own rounding instruction, where it has one (asked of the CPU directly: the
        // GPU's files import nothing of `kernels::cpu`).
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bf16") {
            let mut sub = 0;
            for (c, g) in x.chunks(16).zip(got.chunks(16)) {
                let mut lanes = [0f32; 16];
                lanes[..c.len()].copy_from_slice(c);
                // SAFETY: the CPU has AVX512_BF16 (checked above).
                let vec = unsafe { vector_rounding(&lanes) };
                for ((v, g), w) in c.iter().zip(g).zip(vec) {
                    // The instruction reads subnormals as zero (their bf16 would be subnormal
                    // too: below 2⁻¹²⁶, never a weight or an activation that matters).
                    if v.is_subnormal() && *g != w {
                        assert_eq!(w, (v.to_bits() >> 16) as u16 & 0x8000, "{:#010x}: not a signed zero", v.to_bits());
                        sub += 1;
                        continue;
                    }
                    assert_eq!(*g, w, "{:#010x}: kernel {g:#06x}, vcvtneps2bf16 {w:#06x}", v.to_bits());
                }
            }
            println!("vcvtneps2bf16 differs from the kernel on {sub} subnormal inputs");
        }
    }

    /// `x` rounded by `vcvtneps2bf16`, the CPU's vector rounding (`bf16_pack.rs` uses its
    /// two-register form).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn vector_rounding(x: &[f32; 16]) -> [u16; 16] {
        use std::arch::x86_64::*;
        std::mem::transmute(_mm512_cvtneps_pbh(_mm512_loadu_ps(x.as_ptr())))
    }
}
