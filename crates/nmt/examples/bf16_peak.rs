//! One core's arithmetic peak in f32 (`vfmadd`, 16 multiply-adds per instruction) and in bf16
//! (`vdpbf16ps`, AVX512_BF16: 32 multiply-adds of bf16 pairs into f32 per instruction), from
//! 24 independent accumulators, so neither latency nor memory limits it: the ceiling a bf16
//! GEMM could reach against an f32 one. docs/PERF.md ("Why not bf16") cites it for why mixed
//! precision cannot take training to 3× PyTorch on the AVX-512 host.
//!
//! `cargo run --release -p nmt --example bf16_peak` (one thread; says so and exits on a CPU
//! without AVX512_BF16).
use std::time::Instant;

#[cfg(target_arch = "x86_64")]
mod peak {
    use std::arch::x86_64::*;

    /// `reps × 24` dot products of 32 bf16 pairs; returns a sum so nothing is optimised away.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub unsafe fn bf16(reps: usize) -> f32 {
        let mut acc = [_mm512_setzero_ps(); 24];
        // 1.0 and 0.0078125 as bf16 pairs: the sums stay finite.
        let a: __m512bh = std::mem::transmute(_mm512_set1_epi32(0x3f80_3f80));
        let b: __m512bh = std::mem::transmute(_mm512_set1_epi32(0x3c00_3c00));
        for _ in 0..reps {
            for x in acc.iter_mut() {
                *x = _mm512_dpbf16_ps(*x, a, b);
            }
        }
        acc.iter().map(|&x| _mm512_reduce_add_ps(x)).sum()
    }

    /// `reps × 24` f32 multiply-adds of 16 lanes.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn f32(reps: usize) -> f32 {
        let mut acc = [_mm512_setzero_ps(); 24];
        let (a, b) = (_mm512_set1_ps(0.999), _mm512_set1_ps(0.001));
        for _ in 0..reps {
            for x in acc.iter_mut() {
                *x = _mm512_fmadd_ps(*x, a, b);
            }
        }
        acc.iter().map(|&x| _mm512_reduce_add_ps(x)).sum()
    }
}

fn rate(flop_per_rep: f64, reps: usize, f: impl Fn(usize) -> f32) -> f64 {
    let t = Instant::now();
    let sum = f(reps);
    let s = t.elapsed().as_secs_f64();
    assert!(sum.is_finite());
    flop_per_rep * reps as f64 / s / 1e9
}

#[cfg(target_arch = "x86_64")]
fn main() {
    let bf16 = is_x86_feature_detected!("avx512bf16");
    if !is_x86_feature_detected!("avx512f") || !bf16 {
        println!("this CPU has no AVX512_BF16 (avx512f {}, avx512bf16 {bf16}): nothing to measure", is_x86_feature_detected!("avx512f"));
        return;
    }
    let reps = 20_000_000;
    for round in 1..=3 {
        // SAFETY: both features were detected above.
        let b = rate(24.0 * 64.0, reps, |r| unsafe { peak::bf16(r) });
        let f = rate(24.0 * 32.0, reps, |r| unsafe { peak::f32(r) });
        println!("round {round}: bf16 dot {b:6.1} GFLOP/s   f32 FMA {f:6.1} GFLOP/s   ratio {:.2}", b / f);
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    println!("AVX512_BF16 is an x86-64 extension: nothing to measure here");
}
