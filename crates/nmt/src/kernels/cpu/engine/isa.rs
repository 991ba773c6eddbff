//! Which x86 vector instruction sets the CPU kernels use: what the CPU has, capped by the
//! environment variable `NMT_MAX_CPU_ISA` (issue 56).
//!
//! Most users' CPUs have AVX2 and no AVX-512, while the project's figures come from AVX-512
//! machines. `NMT_MAX_CPU_ISA=avx2` makes an AVX-512 machine run what an AVX2 machine runs:
//! `simd_dispatch!`'s AVX2 path, f32 training products instead of bf16 ones, the `gemm`
//! crate's AVX2+FMA kernels and rten-gemm's AVX2 int8 kernel, without VNNI (through the
//! patched `vendor/gemm-common` and `vendor/rten-gemm`, which read the same variable).
//! `avx512` keeps AVX-512 and turns off the bf16 products; `avx512_bf16` keeps them off AMX's
//! tiles (issue 70); `amx`, like no variable, caps nothing. Whether bf16 products run at all
//! at a level is `products::choose`'s decision (where they are faster than f32). PyTorch's
//! `ATEN_CPU_CAPABILITY` and oneDNN's `ONEDNN_MAX_CPU_ISA` are the same kind of switch, and
//! `scripts/bench-vs-pytorch.sh` sets them together with this one.
//!
//! Not capped: glibc's `memcpy` and candle's own elementwise code (compiled for baseline
//! x86-64, so the same on every CPU).
//!
//! Read once per process, at the first kernel call: set it before the process starts.
use std::sync::atomic::{AtomicU8, Ordering};

/// Runs `$body` (an expression, usually a call of an `#[inline(always)]` kernel) in a function
/// compiled for AVX-512 or AVX2+FMA when the CPU has it, so that its loops are vectorised.
///
/// Hand-written rather than `pulp::Arch::new().dispatch(|| $body)`: with pulp in its place
/// (2026-11-23, AMD EPYC AVX2, 300 test verses, beam 5, `NMT_PROFILE=1 nmt translate`, two
/// alternations) the attention, which dispatches once per hypothesis row, took 802–882 ms
/// against 678–698 ms, and the whole beam-5 test set 27.1–29.5 s against 24.5–25.7 s (three
/// alternations, pulp 0.22.3). Why was not isolated; pulp's dispatch checks the whole
/// x86-64-v3/v4 feature levels on every call.
///
/// The closure handed to `v4`/`v3` is `#[inline(always)]`: only code inlined into them gets
/// their features. Left to LLVM's judgement, a large body was compiled as a closure of its own
/// in baseline x86-64 (SSE2): the conditional decoder's backward chunk
/// (`cgru_decoder::backward::{{closure}}::{{closure}}`, 9.6 % of an s2s training step's cycles,
/// `perf report`, 2026-11-27).
///
/// Crate-private (issue 58: it was exported, as a macro, to every downstream crate): reached as
/// `crate::kernels::cpu::engine::isa::simd_dispatch`.
macro_rules! simd_dispatch {
    ($body:expr) => {{
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
            unsafe fn v4<R>(f: impl FnOnce() -> R) -> R {
                f()
            }
            #[target_feature(enable = "avx2,fma")]
            unsafe fn v3<R>(f: impl FnOnce() -> R) -> R {
                f()
            }
            if $crate::kernels::cpu::engine::isa::has_v4() {
                // SAFETY: the CPU has the features `v4` is compiled for.
                unsafe {
                    v4(
                        #[inline(always)]
                        || $body,
                    )
                }
            } else if $crate::kernels::cpu::engine::isa::has_v3() {
                // SAFETY: as above, for `v3`.
                unsafe {
                    v3(
                        #[inline(always)]
                        || $body,
                    )
                }
            } else {
                $body
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            $body
        }
    }};
}
pub(crate) use simd_dispatch;

/// The environment variable that caps the instruction sets.
pub const MAX_ISA_VAR: &str = "NMT_MAX_CPU_ISA";

/// The classes of CPU kernels, in order: each runs everything the one before it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CpuLevel {
    /// None of `simd_dispatch!`'s paths: SSE2 code, and `gemm`'s scalar kernels.
    Baseline = 1,
    /// AVX2 and FMA (x86-64-v3).
    Avx2 = 2,
    /// AVX-512 F, BW, DQ and VL (x86-64-v4).
    Avx512 = 3,
    /// AVX-512 and AVX512_BF16: `vdpbf16ps` for the bf16 training products.
    Avx512Bf16 = 4,
    /// AVX512_BF16 and AMX-BF16 tiles that this process was granted (`amx::enable`): the bf16
    /// products on tiles (`amx_gemm.rs`).
    Amx = 5,
}

impl CpuLevel {
    /// The name README's figures use for the machines they were measured on.
    pub fn name(self) -> &'static str {
        match self {
            CpuLevel::Baseline => "baseline x86-64",
            CpuLevel::Avx2 => "AVX2",
            CpuLevel::Avx512 => "AVX-512",
            CpuLevel::Avx512Bf16 => "AVX-512 + BF16",
            CpuLevel::Amx => "AVX-512 + AMX",
        }
    }

    fn from_u8(v: u8) -> CpuLevel {
        match v {
            2 => CpuLevel::Avx2,
            3 => CpuLevel::Avx512,
            4 => CpuLevel::Avx512Bf16,
            5 => CpuLevel::Amx,
            _ => CpuLevel::Baseline,
        }
    }
}

/// A value of `NMT_MAX_CPU_ISA`: `avx2`, `avx512`, `avx512_bf16` or `amx` (any case, spaces
/// trimmed). The error names the accepted values.
pub fn parse_cap(value: &str) -> Result<CpuLevel, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "avx2" => Ok(CpuLevel::Avx2),
        "avx512" => Ok(CpuLevel::Avx512),
        "avx512_bf16" => Ok(CpuLevel::Avx512Bf16),
        "amx" => Ok(CpuLevel::Amx),
        other => Err(format!("{MAX_ISA_VAR}={other:?} is not one of avx2, avx512, avx512_bf16, amx")),
    }
}

/// The cap the environment asks for: `Ok(None)` when the variable is unset. The binary calls
/// this at start-up so that a misspelt value is an error, not a silent no-op.
pub fn cap_from_env() -> Result<Option<CpuLevel>, String> {
    match std::env::var(MAX_ISA_VAR) {
        // `NMT_MAX_CPU_ISA= nmt …` reads as unset, as an empty `RUST_LOG` does.
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => parse_cap(&v).map(Some),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(e) => Err(format!("{MAX_ISA_VAR}: {e}")),
    }
}

/// What this CPU has, uncapped: [`Amx`](CpuLevel::Amx) where CPUID and the OS offer the tiles,
/// unless the kernel refused them to this process ([`level`] asked).
pub fn detected() -> CpuLevel {
    let l = instruction_sets();
    if l == CpuLevel::Amx && super::amx::refused() {
        CpuLevel::Avx512Bf16
    } else {
        l
    }
}

/// What CPUID and XCR0 report, before the kernel's permission for AMX tiles.
fn instruction_sets() -> CpuLevel {
    #[cfg(target_arch = "x86_64")]
    {
        let v4 = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl");
        if v4 && super::bf16_pack::available() && super::cpuid::cpu().amx_bf16 {
            CpuLevel::Amx
        } else if v4 && super::bf16_pack::available() {
            CpuLevel::Avx512Bf16
        } else if v4 {
            CpuLevel::Avx512
        } else if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            CpuLevel::Avx2
        } else {
            CpuLevel::Baseline
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        CpuLevel::Baseline
    }
}

/// The level the kernels run: [`detected`], capped by `NMT_MAX_CPU_ISA` (an invalid value caps
/// nothing here; the binary refuses it first). Never above what the CPU has, so the `unsafe`
/// calls of `simd_dispatch!` stay sound whatever the variable says. At [`CpuLevel::Amx`] the
/// first call asks the kernel for the tiles (`amx::enable`); a refusal, logged there, runs
/// the level below.
pub fn level() -> CpuLevel {
    static LEVEL: AtomicU8 = AtomicU8::new(0);
    match LEVEL.load(Ordering::Relaxed) {
        0 => {
            let cap = cap_from_env().ok().flatten().unwrap_or(CpuLevel::Amx);
            let mut l = instruction_sets().min(cap);
            if l == CpuLevel::Amx && !super::amx::enable() {
                l = CpuLevel::Avx512Bf16;
            }
            LEVEL.store(l as u8, Ordering::Relaxed);
            l
        }
        v => CpuLevel::from_u8(v),
    }
}

/// Whether `level()` is capped below what the CPU has.
pub fn capped() -> bool {
    level() < detected()
}

/// Whether `simd_dispatch!` runs its `v4` path (the AVX-512 features it is compiled for).
#[inline(always)]
pub(crate) fn has_v4() -> bool {
    level() >= CpuLevel::Avx512
}

/// Whether `simd_dispatch!` runs its `v3` path (AVX2 and FMA).
#[inline(always)]
pub(crate) fn has_v3() -> bool {
    level() >= CpuLevel::Avx2
}

/// The class of CPU kernels this process runs, as README's figures name the machines they were
/// measured on: `"AVX-512 + AMX"` (AMX tiles as well), `"AVX-512 + BF16"` (AVX512_BF16),
/// `"AVX-512"`, `"AVX2"`, or `"baseline x86-64"`, followed by `" (NMT_MAX_CPU_ISA)"` when the
/// variable capped it. Speed and the 10-minute demo's quality depend on it (an AVX2 CPU made
/// about half the updates).
pub fn cpu_class() -> String {
    if cfg!(not(target_arch = "x86_64")) {
        return "portable (no x86 vector kernels)".to_string();
    }
    let l = level();
    if capped() {
        format!("{} ({MAX_ISA_VAR})", l.name())
    } else {
        l.name().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_accepts_the_four_levels_in_any_case_and_refuses_others() {
        assert_eq!(parse_cap("avx2"), Ok(CpuLevel::Avx2));
        assert_eq!(parse_cap("AMX"), Ok(CpuLevel::Amx));
        assert_eq!(parse_cap(" AVX512 "), Ok(CpuLevel::Avx512));
        assert_eq!(parse_cap("avx512_BF16"), Ok(CpuLevel::Avx512Bf16));
        let e = parse_cap("avx-2").unwrap_err();
        assert!(e.contains("avx2, avx512, avx512_bf16, amx"), "{e}");
    }

    #[test]
    fn levels_are_ordered_and_round_trip() {
        for l in [CpuLevel::Baseline, CpuLevel::Avx2, CpuLevel::Avx512, CpuLevel::Avx512Bf16, CpuLevel::Amx] {
            assert_eq!(CpuLevel::from_u8(l as u8), l);
        }
        assert!(CpuLevel::Avx2 < CpuLevel::Avx512 && CpuLevel::Avx512 < CpuLevel::Avx512Bf16 && CpuLevel::Avx512Bf16 < CpuLevel::Amx);
        assert!(level() <= detected());
    }
}
