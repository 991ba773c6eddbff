//! The precision of the training step's large products (`train.precision`, issue 42).
//!
//! The fused training kernels call [`matmul_wide`] for the products over a whole batch: the
//! input projections over the sequence, the output projection and its loss, the attention's
//! annotation projection, the deep output, and the backward products of each. With
//! [`Precision::Bf16`] set, on a CPU where bf16 products are faster than f32 ([`choose`]), they
//! run on AMX tiles (`amx_gemm.rs`) or on `vdpbf16ps` (`bf16_gemm.rs`), operands rounded to
//! bf16 and f32 sums. On AMX only the products whose every dimension is at least
//! `amx_gemm::MIN_DIM` do, where the tiles are faster than f32. Everything else stays f32: the
//! recurrences' per-step products, the reductions, the loss, the master weights and Adam's
//! moments. f64 (the gradient checks) is never rounded.
//!
//! **Never a slower path (issue 70).** bf16 products exist to be faster; where they are not, the
//! shipped recipe's `precision = "bf16"` would lose updates and, in the demo's 10 minutes, BLEU
//! (Emerald Rapids: 1 177 updates and 18.03 test BLEU in bf16 against 1 247 and 20.04 in f32).
//! `vdpbf16ps` issues at the rate of an f32 FMA on AMD Zen 4 (twice the multiply-adds: the
//! training step 1.35× f32, issue 42) but at half that rate on Intel's Xeons (Emerald Rapids:
//! the step 0.72–0.78× f32), whose fast bf16 path is AMX. So the choice is a table of CPU
//! classes by CPUID vendor and family ([`choose`]), not a timing probe: a probe of a few
//! milliseconds on a shared 2-core machine flips with the load, and with it the numerics of a
//! run between one start and the next; the table gives one answer per CPU, and says which.
//!
//! Not a process-wide setting (it was one until issue 77, like candle's
//! `set_gemm_reduced_precision_bf16`): each op is given its precision by the model's `Backend`
//! (`model/backend.rs`, set from `train.precision` by `Seq2Seq::set_products`), so two models in
//! one process, a search beside a training run, or a test, never see another's. Search and the
//! composed reference twin run `F32`.
pub use crate::config::Precision;
use crate::kernels::gemm::{matmul, Mat, Real};

/// Which kernels run the bf16 products on this CPU, or why none do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bf16Path {
    /// AMX tiles (`tdpbf16ps`, `amx_gemm.rs`): Intel Xeons of the 4th generation on.
    Amx,
    /// `vdpbf16ps` (`bf16_gemm.rs`): AMD Zen 4 and Zen 5.
    Avx512Bf16,
    /// Off: the kernels this process runs have no bf16 instructions (no AVX512_BF16, or
    /// `NMT_MAX_CPU_ISA` capped them).
    NoInstructions,
    /// Off: AVX512_BF16 without AMX on an Intel CPU, where `vdpbf16ps` runs at half the f32
    /// rate (Emerald Rapids with `NMT_MAX_CPU_ISA=avx512_bf16`, Cooper Lake, a Sapphire Rapids
    /// whose kernel refused the tiles).
    SlowerIntel,
    /// Off: AVX512_BF16 on a CPU this table does not know to be faster in bf16.
    Unknown,
}

/// The decision, a pure function of the CPU's vendor, family and kernel level (capped): the
/// documented table of the module doc. AMX wherever the tiles are granted; `vdpbf16ps` on AMD
/// families 0x19 (Zen 4: measured, 1.35× f32) and 0x1A (Zen 5, on the expectation that its
/// full-width AVX-512 keeps Zen 4's ratio: not measured by this project; `NMT_MAX_CPU_ISA=avx512`
/// turns it off); off everywhere else.
pub fn choose(vendor: super::cpuid::Vendor, family: u32, level: super::isa::CpuLevel) -> Bf16Path {
    use super::{cpuid::Vendor, isa::CpuLevel};
    match (level, vendor) {
        (CpuLevel::Amx, _) => Bf16Path::Amx,
        (CpuLevel::Avx512Bf16, Vendor::Amd) if matches!(family, 0x19 | 0x1A) => Bf16Path::Avx512Bf16,
        (CpuLevel::Avx512Bf16, Vendor::Intel) => Bf16Path::SlowerIntel,
        (CpuLevel::Avx512Bf16, _) => Bf16Path::Unknown,
        _ => Bf16Path::NoInstructions,
    }
}

/// This process's [`choose`]: this CPU at `isa::level()`.
pub fn bf16_path() -> Bf16Path {
    let cpu = super::cpuid::cpu();
    choose(cpu.vendor, cpu.family, super::isa::level())
}

impl std::fmt::Display for Bf16Path {
    /// The line training, `nmt demo` and `nmt bench` print once: "bf16 products: …".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bf16Path::Amx => write!(f, "bf16 products: AMX"),
            Bf16Path::Avx512Bf16 => write!(f, "bf16 products: AVX512_BF16"),
            Bf16Path::NoInstructions => {
                write!(f, "bf16 products: off, no bf16 instructions in the {} CPU kernels", super::isa::cpu_class())
            }
            Bf16Path::SlowerIntel => write!(f, "bf16 products: off, slower than f32 on this CPU (Intel without AMX)"),
            Bf16Path::Unknown => write!(f, "bf16 products: off, not known to be faster than f32 on this CPU"),
        }
    }
}

/// Whether this process runs the bf16 products: [`bf16_path`] is AMX or AVX512_BF16.
pub fn bf16_available() -> bool {
    matches!(bf16_path(), Bf16Path::Amx | Bf16Path::Avx512Bf16)
}

/// The precision in effect on this CPU when `p` is asked for: `F32` when `Bf16` is asked for
/// where [`bf16_path`] is off (the caller prints the path's line, once).
pub fn in_effect(p: Precision) -> Precision {
    match p == Precision::Bf16 && bf16_available() {
        true => Precision::Bf16,
        false => Precision::F32,
    }
}

/// The line training and `nmt bench` print for bf16 on a GPU: what runs in bf16 there.
pub const GPU_BF16_PRODUCTS: &str = "bf16 products: cuBLAS, bf16 operands and f32 sums (the GPU's input projections)";

/// What runs a training step's bf16 products, as training and `nmt bench` say it once: cuBLAS
/// for a model in its GPU form ([`GPU_BF16_PRODUCTS`]), this CPU's [`bf16_path`] otherwise.
pub fn products_line(gpu: bool) -> String {
    match gpu {
        true => GPU_BF16_PRODUCTS.to_string(),
        false => bf16_path().to_string(),
    }
}

/// [`matmul`] for a large product of the training step, in the precision its op was given
/// (`products`, from the model's `Backend`): in bf16 when that is `Bf16`, `T` is f32 and this
/// CPU runs bf16 products ([`in_effect`], on [`bf16_path`]'s kernels); in `T` otherwise, so
/// `Precision::F32` is [`matmul`] itself.
#[allow(clippy::too_many_arguments)] // matmul's seven, and the precision
pub fn matmul_wide<T: Real>(
    products: Precision,
    dst: &mut [T],
    dst_off: usize,
    dst_rs: usize,
    a: Mat<'_, T>,
    b: Mat<'_, T>,
    accumulate: bool,
    threads: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if products == Precision::Bf16 && std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() && bf16_available() {
        // SAFETY: `T` is `f32` (checked above), so these are the same slices retyped.
        let (dst, a, b) = unsafe { (retype_mut(dst), retype(a), retype(b)) };
        // The path is AMX or AVX512_BF16 (`bf16_available`, checked above). The tiles run
        // the products large enough to fill them; the others stay in f32
        // (`amx_gemm::pays`: never a slower path).
        if super::isa::level() != super::isa::CpuLevel::Amx {
            return super::bf16_gemm::matmul_bf16(dst, dst_off, dst_rs, a, b, accumulate, threads);
        }
        if super::amx_gemm::pays(a.rows, a.cols, b.cols) {
            return super::amx_gemm::matmul_amx(dst, dst_off, dst_rs, a, b, accumulate, threads);
        }
        return matmul(dst, dst_off, dst_rs, a, b, accumulate, threads);
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

#[cfg(test)]
mod tests {
    use super::super::cpuid::{cpu, Vendor};
    use super::super::isa::{level, CpuLevel};
    use super::*;

    /// The table on the CPUs of issue 70 and 42, at every level a cap can leave them.
    #[test]
    fn the_table_never_picks_a_path_known_to_be_slower() {
        // Emerald Rapids (family 6): AMX when granted, else off.
        assert_eq!(choose(Vendor::Intel, 6, CpuLevel::Amx), Bf16Path::Amx);
        assert_eq!(choose(Vendor::Intel, 6, CpuLevel::Avx512Bf16), Bf16Path::SlowerIntel);
        assert_eq!(choose(Vendor::Intel, 6, CpuLevel::Avx512), Bf16Path::NoInstructions);
        // Zen 4 and Zen 5: vdpbf16ps; Zen 4 capped to AVX-512 or AVX2: off.
        assert_eq!(choose(Vendor::Amd, 0x19, CpuLevel::Avx512Bf16), Bf16Path::Avx512Bf16);
        assert_eq!(choose(Vendor::Amd, 0x1A, CpuLevel::Avx512Bf16), Bf16Path::Avx512Bf16);
        assert_eq!(choose(Vendor::Amd, 0x19, CpuLevel::Avx512), Bf16Path::NoInstructions);
        assert_eq!(choose(Vendor::Amd, 0x19, CpuLevel::Avx2), Bf16Path::NoInstructions);
        // An AVX2-only CPU of either maker, and CPUs the table does not know.
        assert_eq!(choose(Vendor::Amd, 0x17, CpuLevel::Avx2), Bf16Path::NoInstructions);
        assert_eq!(choose(Vendor::Intel, 6, CpuLevel::Avx2), Bf16Path::NoInstructions);
        assert_eq!(choose(Vendor::Amd, 0x1B, CpuLevel::Avx512Bf16), Bf16Path::Unknown);
        assert_eq!(choose(Vendor::Other, 0x19, CpuLevel::Avx512Bf16), Bf16Path::Unknown);
        assert_eq!(choose(Vendor::Other, 0, CpuLevel::Baseline), Bf16Path::NoInstructions);
        let line = Bf16Path::SlowerIntel.to_string();
        assert_eq!(line, "bf16 products: off, slower than f32 on this CPU (Intel without AMX)");
    }

    /// This CPU's decision, printed for the log, and consistent with what the process runs.
    #[test]
    fn this_cpu_gets_one_decision() {
        let (c, path) = (cpu(), bf16_path());
        println!("{c:?} at {:?}: {path}", level());
        assert_eq!(path, choose(c.vendor, c.family, level()));
        assert_eq!(bf16_available(), matches!(path, Bf16Path::Amx | Bf16Path::Avx512Bf16));
        if c.vendor == Vendor::Amd && c.family == 0x19 && level() == CpuLevel::Avx512Bf16 {
            assert_eq!(path, Bf16Path::Avx512Bf16);
        }
    }
}
