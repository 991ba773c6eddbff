//! int8 products for search (`SearchConfig::int8`, Marian's `--gemm-type packed8`): the output
//! projection `z = G t + b` of a step, whose `K_y × l` weights are read every step (through
//! `kernels::projection`), and the step's other products `x W` (through `kernels/int8_linear.rs`).
//!
//! - Weights are quantised once, symmetrically per output row to **7 bits**
//!   (`q = round(w / s)`, `s = max|w| / 63`), with `f32` scales.
//! - Activations are quantised per row on the fly to 8 bits (`s = max|a| / 127`) and stored
//!   shifted to unsigned (`q + 128`), since the x86 byte products (`vpmaddubsw`, `vpdpbusd`)
//!   multiply unsigned by signed bytes. The shift is undone exactly with each weight row's sum:
//!   `Σ (q_a + 128) q_w = Σ q_a q_w + 128 Σ q_w`.
//! - AVX2's `vpmaddubsw` adds two products into a saturating `i16`: with 7-bit weights the
//!   largest pair is `2 · 255 · 63 = 32 130 < 32 767`, so nothing ever saturates and the `i32`
//!   sums are exact. (Marian's intgemm keeps 8-bit weights and accepts rare saturation; we trade
//!   the weights' eighth bit for exactness, which is what makes every path agree bit for bit.)
//! - `z = s_w · s_a · (acc − 128 Σ q_w)`, added to the output (which holds the bias).
//!
//! Paths, chosen at run time ([`Isa::detect`]), all computing the same exact integer sums (so
//! they agree bit for bit, and with the scalar path):
//! - AVX-512 VNNI (`kernels/int8_vnni.rs`): `vpdpbusd`, four byte products added into each `i32`
//!   lane in one instruction, on weights repacked 16 rows × 4 columns per register.
//! - AVX2: `vpmaddubsw` + `vpmaddwd`, 4 weight rows × 2 activation rows per tile, 8
//!   accumulators.
//! - scalar, the same integer arithmetic.
//!
//! Why hand-written, measured by `examples/int8_shapes.rs` at the search's projection
//! (`8 000 × 256` weights by 160 rows): candle's quantised matmul (`QMatMul`, GGML's `Q8_0`
//! blocks of 32 with `f16` scales) is the maintained library that does int8 products.
//! - On an AVX2 CPU it multiplies one weight row by one activation row per `vec_dot` call: 31.1
//!   ms on 2 threads where the AVX2 path here takes 6.9 ms on one (2026-11-23, a 2-core AVX2
//!   AMD EPYC).
//! - With AVX-512 VNNI it repacks `Q8_0` weights for `vpdpbusd` (candle's
//!   `quantized/repack_x86.rs`, whose layout the VNNI path here follows): 1.34 ms on 2 threads
//!   against 2.45 ms for the VNNI path here on one, the same rate per thread (2026-11-25, a
//!   2-core AMD EPYC Zen 4 with VNNI).
//!
//! It does not serve the search as it is: it returns a new row-major `(n, V)` tensor (the
//! projection consumes column-major blocks of L2 size with its normaliser and top-k in the
//! same pass, `kernels::projection`), runs on its own thread split (the search splits rows
//! across threads, `search/host.rs`), and on AVX2 it is 4.5× slower. The integer sums here
//! are also exact, so every path and a quantised model file translate identically.

#[cfg(target_arch = "x86_64")]
use super::int8_vnni::{block as block_vnni, Dest, Operands};
use crate::simd_dispatch;

/// Which instruction set multiplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    Scalar,
    Avx2,
    Avx512Vnni,
}

impl Isa {
    /// The fastest one this CPU runs.
    pub fn detect() -> Isa {
        *Isa::available().last().unwrap_or(&Isa::Scalar)
    }

    /// Every path this CPU runs, slowest first (the tests force each).
    pub fn available() -> Vec<Isa> {
        let mut out = vec![Isa::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                out.push(Isa::Avx2);
            }
            if avx512_vnni() {
                out.push(Isa::Avx512Vnni);
            }
        }
        out
    }
}

#[cfg(target_arch = "x86_64")]
fn avx512_vnni() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vnni")
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

/// Rows padded to a multiple of 64 bytes (one AVX-512 register, two AVX2 ones).
fn padded(k: usize) -> usize {
    k.div_ceil(64) * 64
}

/// Weights `(rows, k)` quantised per row to 7 bits, rows padded to a multiple of 16 plus 16 and
/// columns to a multiple of 64 with zeros.
#[derive(Clone, Debug)]
pub struct QWeights {
    /// Row-major `(rows, kp)`, for the scalar and AVX2 paths.
    q: Vec<i8>,
    /// The same for the VNNI path: 64-byte tiles `[rows / 16][kp / 4][16 rows][4 columns]`;
    /// empty on a CPU without it (the only one that reads them).
    tiles: Vec<i8>,
    scale: Vec<f32>,
    sum: Vec<i32>,
    rows: usize,
    k: usize,
    kp: usize,
}

impl QWeights {
    /// The weight rows (the product's outputs) and their length (its inner dimension).
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.k)
    }

    /// Quantises `w (rows, k)` row-major.
    pub fn new(w: &[f32], rows: usize, k: usize) -> Self {
        let kp = padded(k);
        // The VNNI tile reads 32 rows from any multiple of 16: 16 zero rows past the last group.
        let rp = rows.div_ceil(16) * 16 + 16;
        let mut q = vec![0i8; rp * kp];
        let (mut scale, mut sum) = (vec![0f32; rp], vec![0i32; rp]);
        for j in 0..rows {
            scale[j] = quantize_row(&w[j * k..(j + 1) * k], &mut q[j * kp..j * kp + k]);
            sum[j] = q[j * kp..j * kp + k].iter().map(|&v| v as i32).sum();
        }
        let tiles = if Isa::available().contains(&Isa::Avx512Vnni) { vnni_tiles(&q, kp) } else { Vec::new() };
        QWeights { q, tiles, scale, sum, rows, k, kp }
    }
}

/// Row-major weights `q (rp, kp)` repacked for the VNNI path (see [`QWeights`]).
fn vnni_tiles(q: &[i8], kp: usize) -> Vec<i8> {
    let mut tiles = vec![0i8; q.len()];
    if kp == 0 {
        return tiles;
    }
    for (j, row) in q.chunks_exact(kp).enumerate() {
        for (k4, quad) in row.chunks_exact(4).enumerate() {
            let at = ((j / 16) * (kp / 4) + k4) * 64 + (j % 16) * 4;
            tiles[at..at + 4].copy_from_slice(quad);
        }
    }
    tiles
}

/// Activations `(rows, k)` quantised per row to 8 bits and shifted to unsigned, rows padded to
/// a multiple of 4 (padding rows are never written out).
pub struct QActs {
    q: Vec<u8>,
    scale: Vec<f32>,
    rows: usize,
}

impl QActs {
    /// Quantises `a (rows, k)` row-major, with columns padded as `w`'s.
    pub fn new(a: &[f32], rows: usize, w: &QWeights) -> Self {
        let (k, kp) = (w.k, w.kp);
        let rp = rows.div_ceil(4) * 4;
        // Zero weights meet the padding, so its value does not matter; 128 is zero, shifted.
        let mut q = vec![128u8; rp * kp];
        let mut scale = vec![0f32; rp];
        for (r, row) in a.chunks_exact(k.max(1)).take(rows).enumerate() {
            scale[r] = simd_dispatch!(quantize_act_row(row, &mut q[r * kp..r * kp + k]));
        }
        QActs { q, scale, rows }
    }
}

/// One activation row quantised to 8 bits, shifted to unsigned; returns its scale.
///
/// Written to vectorise (it was 12 % of an int8 search's time as a scalar loop calling `roundf`):
/// the maximum over 16 fixed lanes, a multiplication by `1 / s`, and rounding by adding
/// `1.5 · 2²³` (the float's low mantissa bits then hold the integer, ties to even), so no
/// float-to-int cast, whose saturating semantics keep loops scalar.
#[inline(always)]
fn quantize_act_row(row: &[f32], out: &mut [u8]) -> f32 {
    const ROUND: f32 = 12_582_912.0;
    let mut lanes = [0f32; 16];
    let mut chunks = row.chunks_exact(16);
    for c in &mut chunks {
        for (l, &x) in lanes.iter_mut().zip(c) {
            *l = l.max(x.abs());
        }
    }
    let m = chunks.remainder().iter().fold(lanes.iter().fold(0f32, |m, &x| m.max(x)), |m, &x| m.max(x.abs()));
    let s = if m > 0.0 { m / 127.0 } else { 1.0 };
    let inv = 1.0 / s;
    for (o, &x) in out.iter_mut().zip(row) {
        let v = (x * inv).clamp(-127.0, 127.0) + ROUND;
        *o = (v.to_bits().wrapping_sub(ROUND.to_bits()) as i32 + 128) as u8;
    }
    s
}

/// Where [`block`] adds its results: value `(j − j0, r)` (weight row `j` of the block, activation
/// row `r`) at `data[(j − j0)·j_stride + r·r_stride]`.
pub struct Out<'a> {
    data: &'a mut [f32],
    j_stride: usize,
    r_stride: usize,
}

impl<'a> Out<'a> {
    /// The projection's column-major score block `(bs, n)`: `(j − j0)·n + r`.
    pub fn columns(data: &'a mut [f32], n: usize) -> Self {
        Out { data, j_stride: n, r_stride: 1 }
    }

    /// A row-major product `(n, ld)`: `r·ld + (j − j0)` (a step's `x W`, `W`'s columns being
    /// the weight rows).
    pub fn rows(data: &'a mut [f32], ld: usize) -> Self {
        Out { data, j_stride: 1, r_stride: ld }
    }

    #[inline(always)]
    fn at(&mut self, dj: usize, r: usize) -> &mut f32 {
        &mut self.data[dj * self.j_stride + r * self.r_stride]
    }
}

/// `out(j − j0, r) += Σ_k W[j, k] A[r, k]` for weight rows `j0..j0 + bs` and all activation
/// rows. `j0` must be a multiple of 16.
/// `isa` is a request: a path this CPU lacks runs the scalar one.
pub fn block(isa: Isa, w: &QWeights, j0: usize, bs: usize, a: &QActs, mut out: Out<'_>) {
    let last = (bs.max(1) - 1) * out.j_stride + (a.rows.max(1) - 1) * out.r_stride;
    assert!(j0.is_multiple_of(16) && j0 + bs <= w.rows && (bs == 0 || a.rows == 0 || last < out.data.len()), "int8 block: bad shapes");
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU has AVX-512 F/BW/VNNI (checked here: the detection is cached); the
        // kernel reads inside the padded buffers (32 weight rows from a multiple of 16,
        // activation rows to 4, columns to 64).
        Isa::Avx512Vnni if avx512_vnni() => {
            let ops = Operands { tiles: &w.tiles, sum: &w.sum, scale: &w.scale, kp: w.kp, acts: &a.q, act_scale: &a.scale, n: a.rows };
            let mut dest = Dest { data: &mut *out.data, j_stride: out.j_stride, r_stride: out.r_stride };
            unsafe { block_vnni(&ops, j0, bs, &mut dest) }
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX2.
        Isa::Avx2 if std::arch::is_x86_feature_detected!("avx2") => unsafe { block_avx2(w, j0, bs, a, &mut out) },
        _ => block_scalar(w, j0, bs, a, &mut out),
    }
}

/// The value both paths write: the exact integer sum, unshifted and scaled.
#[inline(always)]
fn dequant(w: &QWeights, j: usize, a: &QActs, r: usize, acc: i32) -> f32 {
    (acc - 128 * w.sum[j]) as f32 * w.scale[j] * a.scale[r]
}

fn block_scalar(w: &QWeights, j0: usize, bs: usize, a: &QActs, out: &mut Out<'_>) {
    let (n, kp) = (a.rows, w.kp);
    for j in j0..j0 + bs {
        let wr = &w.q[j * kp..(j + 1) * kp];
        for r in 0..n {
            let ar = &a.q[r * kp..(r + 1) * kp];
            let acc: i32 = wr.iter().zip(ar).map(|(&x, &y)| x as i32 * y as i32).sum();
            *out.at(j - j0, r) += dequant(w, j, a, r, acc);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn block_avx2(w: &QWeights, j0: usize, bs: usize, a: &QActs, out: &mut Out<'_>) {
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
                    *out.at(j + i - j0, r + dr) += dequant(w, j + i, a, r + dr, s);
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
        // Every path this CPU has, forced; say which, since a CPU without one cannot test it.
        let paths = Isa::available();
        eprintln!("int8 paths tested on this CPU: {paths:?}");
        for (case, &(rows, n, k)) in
            [(7, 3, 5), (16, 160, 256), (33, 9, 100), (4, 1, 32), (61, 12, 300), (100, 17, 256), (40, 8, 64)].iter().enumerate()
        {
            let w = data(rows * k, case as u64 + 1);
            let a: Vec<f32> = data(n * k, case as u64 + 100).iter().map(|v| v * 3.0).collect();
            let qw = QWeights::new(&w, rows, k);
            let qa = QActs::new(&a, n, &qw);
            let outs: Vec<Vec<f32>> = paths
                .iter()
                .map(|&p| {
                    let mut out = vec![0f32; rows * n];
                    // Two blocks, the second starting at a multiple of 16.
                    let split = (rows / 2) / 16 * 16;
                    block(p, &qw, 0, split, &qa, Out::columns(&mut out[..split * n], n));
                    block(p, &qw, split, rows - split, &qa, Out::columns(&mut out[split * n..], n));
                    out
                })
                .collect();
            // The paths agree bit for bit: the same exact integer sums.
            for (p, o) in paths.iter().zip(&outs) {
                assert_eq!(&outs[0], o, "{p:?} differs from the scalar path for {rows}×{k} by {n}");
                // Row-major output `(n, rows)` holds the same values, transposed.
                let mut by_row = vec![0f32; n * rows];
                block(*p, &qw, 0, rows, &qa, Out::rows(&mut by_row, rows));
                let t: Vec<f32> = (0..rows * n).map(|i| by_row[(i % n) * rows + i / n]).collect();
                assert_eq!(&outs[0], &t, "{p:?}: row-major output differs for {rows}×{k} by {n}");
            }
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
