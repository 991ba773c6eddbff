//! int8 products for search (`SearchConfig::int8`, Marian's `--gemm-type packed8`): the output
//! projection `z = G t + b` of a step, whose `K_y × l` weights are read every step.
//!
//! - Weights are quantised once, symmetrically per output row to **7 bits**
//!   (`q = round(w / s)`, `s = max|w| / 63`), with `f32` scales.
//! - Activations are quantised per row on the fly to 8 bits (`s = max|a| / 127`) and stored
//!   shifted to unsigned (`q + 128`), since AVX2's only 8-bit product, `vpmaddubsw`, multiplies
//!   unsigned by signed bytes. The shift is undone exactly with each weight row's sum:
//!   `Σ (q_a + 128) q_w = Σ q_a q_w + 128 Σ q_w`.
//! - `vpmaddubsw` adds two products into a saturating `i16`: with 7-bit weights the largest
//!   pair is `2 · 255 · 63 = 32 130 < 32 767`, so nothing ever saturates and the `i32` sums are
//!   exact. (Marian's intgemm keeps 8-bit weights and accepts rare saturation; we trade the
//!   weights' eighth bit for exactness, which is what makes the AVX2 and scalar paths agree
//!   bit for bit.)
//! - `z = s_w · s_a · (acc − 128 Σ q_w)`, added to the output (which holds the bias).
//!
//! Paths: AVX2 (4 weight rows × 2 activation rows per tile, 8 `i32` accumulators), chosen at
//! run time, and a scalar path with the same integer arithmetic. AVX-512 VNNI (`vpdpbusd`, one
//! instruction for four products with `i32` accumulation) is not written: no machine this
//! project is measured on has it, and an untested kernel is not shipped.
//!
//! Why hand-written: candle's quantised matmul (`QMatMul`, GGML's `Q8_0` blocks of 32 with
//! `f16` scales), the maintained library that does int8 products, multiplies one weight row by
//! one activation row per `vec_dot` call, with no register tiling across rows. At the search's
//! projection (`8 000 × 256` weights by 160 rows; `examples/int8_shapes.rs`, 2026-11-23, this
//! project's 2-core AVX2 machine) it took 31.1 ms on 2 threads where this kernel takes 6.9 ms on
//! one (and the `f32` GEMM 9.1 ms on one); at 32 rows 6.1 ms against 1.3 ms.

/// Which instruction set multiplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    Scalar,
    Avx2,
}

impl Isa {
    /// The fastest one this CPU runs.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Isa::Avx2;
        }
        Isa::Scalar
    }
}

/// The largest weight magnitude: 7 bits (see the module doc).
pub const WEIGHT_MAX: f32 = 63.0;

/// The scale of a weight row whose largest magnitude is `max`: `max / 63` with its 6 lowest
/// mantissa bits cleared, so that `63 · s` is exact and quantising a quantised row again
/// gives the same integers and values (a model file stored in int8 and quantised once more at
/// load translates exactly as the `f32` model quantised once).
pub fn weight_scale(max: f32) -> f32 {
    if max > 0.0 && max.is_finite() {
        f32::from_bits((max / WEIGHT_MAX).to_bits() & !0x3f)
    } else {
        1.0
    }
}

/// A weight row quantised: `q[i] = round(w[i] / s)` in `[-63, 63]`, and `s`.
pub fn quantize_row(w: &[f32], q: &mut [i8]) -> f32 {
    let s = weight_scale(w.iter().fold(0f32, |m, &x| m.max(x.abs())));
    for (o, &x) in q.iter_mut().zip(w) {
        *o = (x / s).round().clamp(-WEIGHT_MAX, WEIGHT_MAX) as i8;
    }
    s
}

/// Rows padded to a multiple of 32 bytes (one AVX2 register).
fn padded(k: usize) -> usize {
    k.div_ceil(32) * 32
}

/// Weights `(rows, k)` quantised per row to 7 bits, rows padded to a multiple of 4 and columns
/// to a multiple of 32 with zeros.
#[derive(Clone, Debug)]
pub struct QWeights {
    q: Vec<i8>,
    scale: Vec<f32>,
    sum: Vec<i32>,
    rows: usize,
    k: usize,
    kp: usize,
}

impl QWeights {
    /// Quantises `w (rows, k)` row-major.
    pub fn new(w: &[f32], rows: usize, k: usize) -> Self {
        let kp = padded(k);
        let rp = rows.div_ceil(4) * 4;
        let mut q = vec![0i8; rp * kp];
        let (mut scale, mut sum) = (vec![0f32; rp], vec![0i32; rp]);
        for j in 0..rows {
            scale[j] = quantize_row(&w[j * k..(j + 1) * k], &mut q[j * kp..j * kp + k]);
            sum[j] = q[j * kp..j * kp + k].iter().map(|&v| v as i32).sum();
        }
        QWeights { q, scale, sum, rows, k, kp }
    }
}

/// Activations `(rows, k)` quantised per row to 8 bits and shifted to unsigned, rows padded to
/// a multiple of 2 (padding rows are never written out).
pub struct QActs {
    q: Vec<u8>,
    scale: Vec<f32>,
    rows: usize,
}

impl QActs {
    /// Quantises `a (rows, k)` row-major, with columns padded as `w`'s.
    pub fn new(a: &[f32], rows: usize, w: &QWeights) -> Self {
        let (k, kp) = (w.k, w.kp);
        let rp = rows.div_ceil(2) * 2;
        // Zero weights meet the padding, so its value does not matter; 128 is zero, shifted.
        let mut q = vec![128u8; rp * kp];
        let mut scale = vec![0f32; rp];
        for r in 0..rows {
            let row = &a[r * k..(r + 1) * k];
            let m = row.iter().fold(0f32, |m, &x| m.max(x.abs()));
            let s = if m > 0.0 { m / 127.0 } else { 1.0 };
            scale[r] = s;
            for (o, &x) in q[r * kp..r * kp + k].iter_mut().zip(row) {
                *o = ((x / s).round().clamp(-127.0, 127.0) as i32 + 128) as u8;
            }
        }
        QActs { q, scale, rows }
    }
}

/// `out[(j − j0)·n + r] += Σ_k W[j, k] A[r, k]` for weight rows `j0..j0 + bs` and all `n`
/// activation rows (`out (bs, n)`, the projection's column-major score block). `j0` must be a
/// multiple of 4.
/// `isa` is a request: `Avx2` on a CPU without AVX2 runs the scalar path.
pub fn block(isa: Isa, w: &QWeights, j0: usize, bs: usize, a: &QActs, out: &mut [f32]) {
    assert!(j0 & 3 == 0 && j0 + bs <= w.rows && out.len() >= bs * a.rows, "int8 block: bad shapes");
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU has AVX2 (checked here: the detection is cached); the kernel reads
        // inside the padded buffers (rows to 4 and 2, columns to 32).
        Isa::Avx2 if std::arch::is_x86_feature_detected!("avx2") => unsafe { block_avx2(w, j0, bs, a, out) },
        _ => block_scalar(w, j0, bs, a, out),
    }
}

/// The value both paths write: the exact integer sum, unshifted and scaled.
#[inline(always)]
fn dequant(w: &QWeights, j: usize, a: &QActs, r: usize, acc: i32) -> f32 {
    (acc - 128 * w.sum[j]) as f32 * w.scale[j] * a.scale[r]
}

fn block_scalar(w: &QWeights, j0: usize, bs: usize, a: &QActs, out: &mut [f32]) {
    let (n, kp) = (a.rows, w.kp);
    for j in j0..j0 + bs {
        let wr = &w.q[j * kp..(j + 1) * kp];
        for r in 0..n {
            let ar = &a.q[r * kp..(r + 1) * kp];
            let acc: i32 = wr.iter().zip(ar).map(|(&x, &y)| x as i32 * y as i32).sum();
            out[(j - j0) * n + r] += dequant(w, j, a, r, acc);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn block_avx2(w: &QWeights, j0: usize, bs: usize, a: &QActs, out: &mut [f32]) {
    use std::arch::x86_64::*;
    let (n, kp) = (a.rows, w.kp);
    let ones = _mm256_set1_epi16(1);
    // The 4 sums of `v[0..4]`'s lanes, in order.
    let hsum4 = |v: &[__m256i]| -> [i32; 4] {
        let h = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
        let s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
        let mut o = [0i32; 4];
        _mm_storeu_si128(o.as_mut_ptr() as *mut __m128i, s);
        o
    };
    for j in (j0..j0 + bs).step_by(4) {
        let wp = w.q.as_ptr().add(j * kp);
        for r in (0..n).step_by(2) {
            let ap = a.q.as_ptr().add(r * kp);
            let mut acc = [_mm256_setzero_si256(); 8];
            for k in (0..kp).step_by(32) {
                let a0 = _mm256_loadu_si256(ap.add(k) as *const __m256i);
                let a1 = _mm256_loadu_si256(ap.add(kp + k) as *const __m256i);
                for i in 0..4 {
                    let wv = _mm256_loadu_si256(wp.add(i * kp + k) as *const __m256i);
                    acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(a0, wv), ones));
                    acc[4 + i] = _mm256_add_epi32(acc[4 + i], _mm256_madd_epi16(_mm256_maddubs_epi16(a1, wv), ones));
                }
            }
            for (dr, sums) in [hsum4(&acc[..4]), hsum4(&acc[4..])].into_iter().enumerate() {
                if r + dr >= n {
                    continue;
                }
                for (i, &s) in sums.iter().enumerate().take((j0 + bs - j).min(4)) {
                    out[(j + i - j0) * n + r + dr] += dequant(w, j + i, a, r + dr, s);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(len: usize, seed: u64) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn int8_products_match_f32_within_the_quantisation_bound_on_both_paths() {
        let paths: Vec<Isa> = [Isa::Scalar, Isa::detect()].into_iter().collect();
        for (case, &(rows, n, k)) in [(7, 3, 5), (16, 160, 256), (33, 9, 100), (4, 1, 32), (61, 12, 300)].iter().enumerate() {
            let w = data(rows * k, case as u64 + 1);
            let a: Vec<f32> = data(n * k, case as u64 + 100).iter().map(|v| v * 3.0).collect();
            let qw = QWeights::new(&w, rows, k);
            let qa = QActs::new(&a, n, &qw);
            let outs: Vec<Vec<f32>> = paths
                .iter()
                .map(|&p| {
                    let mut out = vec![0f32; rows * n];
                    // Two blocks, the second starting at a multiple of 4.
                    let split = (rows / 2) / 4 * 4;
                    block(p, &qw, 0, split, &qa, &mut out[..split * n]);
                    block(p, &qw, split, rows - split, &qa, &mut out[split * n..]);
                    out
                })
                .collect();
            // The paths agree bit for bit: the same exact integer sums.
            assert_eq!(outs[0], outs[outs.len() - 1], "paths differ for {rows}×{k} by {n}");
            for j in 0..rows {
                let (wr, sw) = (&w[j * k..(j + 1) * k], qw.scale[j]);
                for r in 0..n {
                    let (ar, sa) = (&a[r * k..(r + 1) * k], qa.scale[r]);
                    let exact: f32 = wr.iter().zip(ar).map(|(x, y)| x * y).sum();
                    let bound = sw / 2.0 * ar.iter().map(|v| v.abs()).sum::<f32>()
                        + sa / 2.0 * wr.iter().map(|v| v.abs()).sum::<f32>()
                        + k as f32 * sw * sa / 4.0
                        + 1e-4;
                    let got = outs[0][j * n + r];
                    assert!((got - exact).abs() <= bound, "{rows}×{k}: ({j}, {r}) {got} vs {exact}, bound {bound}");
                }
            }
        }
    }
}
