//! int8 products for search (`SearchConfig::int8`, Marian's `--gemm-type packed8`): the output
//! projection `z = G t + b` of a step, whose `K_y × l` weights are read every step (through
//! `kernels::cpu::projection`), and the step's other products `x W` (through `model/int8_linear.rs`).
//!
//! - Weights are quantised once, symmetrically per output row to **7 bits**
//!   (`q = round(w / s)`, `s = max|w| / 63`), with `f32` scales.
//! - Activations are quantised per row on the fly to 8 bits (`s = max|a| / 127`) and stored
//!   shifted to unsigned (`q + 128`, zero point 128), since the x86 byte products (`vpmaddubsw`,
//!   `vpdpbusd`) multiply unsigned by signed bytes; the shift is undone exactly with each
//!   weight row's sum: `Σ (q_a + 128) q_w = Σ q_a q_w + 128 Σ q_w`.
//! - With 7-bit weights AVX2's saturating `i16` pair sum never saturates (`2 · 255 · 63 =
//!   32 130 < 32 767`), so the `i32` sums are exact on every instruction set. (Marian's intgemm
//!   keeps 8-bit weights and accepts rare saturation; we trade the weights' eighth bit for
//!   exactness, which is what makes every CPU and a quantised model file translate alike.)
//! - `z = s_w · s_a · Σ q_a q_w`, added to the output (which holds the bias).
//!
//! The integer product is **`rten-gemm`'s** `u8 × i8 → i32` GEMM (AVX-512 VNNI `vpdpbusd`,
//! AVX2, NEON dot products, WASM, a generic kernel; chosen at run time), on weights prepacked
//! once in chunks of [`CHUNK`] rows and activations prepacked once per step ([`QActs`]); the
//! scaling to `f32` is ours (rten's quantised output is `i32`). It replaced hand-written
//! AVX-512 VNNI and AVX2 kernels (`int8_vnni.rs`, until 994bb38): within 10 % of ours, measured
//! alternately on a 2-core AMD EPYC Zen 4, 2026-11-26 (docs/logs/int8-rten-2026-11-26/,
//! docs/PERF.md "int8: the library"): beam 5 on the 2 000 test verses, `--int8` median 7.53 s
//! against 7.48 s with ours, `--int8 --shortlist` 5.69 s against 5.96 s, translations
//! byte-identical (the sums are exact on both). (`W` as rten's left operand would saturate
//! AVX2's `vpmaddubsw` pair sum: `2 · 191 · 127 > 32 767`.)
//!
//! On AMX-INT8 CPUs the steps of [`MIN_ROWS`] rows or more run on the tiles (`amx_int8.rs`).
//!
//! candle's quantised matmul (`QMatMul`, GGML `Q8_0`) was measured too and does not serve: it
//! returns a new row-major tensor on its own thread split, and on AVX2 multiplies one row pair
//! per call (4.5× slower, 2026-11-23).
use std::cell::Cell;

use rten_gemm::{GemmExecutor, GemmInputA, GemmInputB, GemmOptions, PackedAMatrix, PackedBMatrix};
use rten_tensor::NdTensorView;

use crate::kernels::cpu::engine::amx_int8::{AmxI8Acts, AmxI8Weights, I8Tiles, MIN_ROWS};
use crate::kernels::cpu::engine::isa::simd_dispatch;

/// The largest weight magnitude: 7 bits (see the module doc).
pub const WEIGHT_MAX: f32 = 63.0;

/// Weight rows per prepacked chunk: [`block`] starts at a multiple of it. 512 rows of 256
/// bytes are 128 KB, and the projection's blocks of 512 vocabulary rows (`projection::BLOCK_ROWS`) are one
/// chunk each.
pub const CHUNK: usize = 512;

/// The activations' zero point: bytes are `q + 128`.
const SHIFT: u8 = 128;

thread_local! {
    /// rten's executor, one per thread (it is `Sync` but not `Send`). Each picks the same
    /// kernel, the fastest this CPU runs, so weights packed on one thread multiply on any
    /// (rten checks the kernel's name and tile width against the packing's).
    static GEMM: GemmExecutor<u8, i8, i32> = GemmExecutor::default();
}

/// The name of rten's int8 kernel that this thread's products run (`x86_64-u8i8i32-avx512`,
/// `…-avx2`, …): what `NMT_MAX_CPU_ISA` left of the CPU's instruction sets (`kernels::cpu::engine::isa`),
/// after `amx-tdpbusd+` where the steps of [`MIN_ROWS`] rows or more run on AMX's tiles, as
/// `nmt bench --int8` reports it.
pub fn kernel_name() -> String {
    let rten = GEMM.with(|g| g.kernel_name().to_string());
    match I8Tiles::for_search() {
        Some(_) => format!("amx-tdpbusd+{rten}"),
        None => rten,
    }
}

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

/// Weights `(rows, k)` quantised per row to 7 bits, and prepacked for the product.
#[derive(Clone)]
pub struct QWeights {
    /// Rows `c·CHUNK..` as `Wᵀ (k, ≤ CHUNK)`, packed for rten's kernel.
    packed: Vec<PackedBMatrix<i8>>,
    /// The same chunks packed for AMX's `tdpbusd`, and the tiles that multiply them, where the
    /// search runs on tiles (`amx_int8.rs`).
    tiles: Option<(I8Tiles, Vec<AmxI8Weights>)>,
    scale: Vec<f32>,
    /// `−128 · Σ_k q[j, k]` per row: added to every sum (in `i32`, by [`scale_into`]), it undoes
    /// the activations' shift exactly (`Σ (q_a + 128) q_w − 128 Σ q_w = Σ q_a q_w`).
    unshift: Vec<i32>,
    rows: usize,
    k: usize,
}

impl std::fmt::Debug for QWeights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QWeights").field("rows", &self.rows).field("k", &self.k).finish_non_exhaustive()
    }
}

impl QWeights {
    /// The weight rows (the product's outputs) and their length (its inner dimension).
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.k)
    }

    /// Quantises `w (rows, k)` row-major, packed for AMX's tiles as well where the search runs
    /// on them (`amx_int8::I8Tiles::for_search`).
    pub fn new(w: &[f32], rows: usize, k: usize) -> Self {
        Self::with_tiles(w, rows, k, I8Tiles::for_search())
    }

    /// [`QWeights::new`] with the steps of [`MIN_ROWS`] rows or more on `tiles`, or always on
    /// rten-gemm (`None`).
    pub fn with_tiles(w: &[f32], rows: usize, k: usize, tiles: Option<I8Tiles>) -> Self {
        let mut q = vec![0i8; rows * k];
        let scale: Vec<f32> = if k == 0 {
            vec![1.0; rows]
        } else {
            w.chunks_exact(k).zip(q.chunks_exact_mut(k)).take(rows).map(|(row, out)| quantize_row(row, out)).collect()
        };
        let packed = if k == 0 {
            Vec::new()
        } else {
            GEMM.with(|gemm| {
                q.chunks(CHUNK * k)
                    .map(|c| {
                        let rows = NdTensorView::from_data([c.len() / k, k], c);
                        gemm.prepack_b(rows.transposed())
                    })
                    .collect()
            })
        };
        let unshift = (0..rows).map(|j| -i32::from(SHIFT) * q[j * k..(j + 1) * k].iter().map(|&x| i32::from(x)).sum::<i32>()).collect();
        let tiles = tiles.filter(|_| k > 0).map(|t| (t, q.chunks(CHUNK * k).map(|c| AmxI8Weights::new(c, c.len() / k, k)).collect()));
        QWeights { packed, tiles, scale, unshift, rows, k }
    }
}

/// Activations `(rows, k)` quantised per row to 8 bits, shifted to unsigned, and packed once
/// for rten's kernel: a search step multiplies them by every 512-row chunk of the projection
/// (16 chunks for 8 000 words), and packing them again per chunk, as the unpacked input does,
/// was 6.4 % of an int8 beam search's cycles (`perf record`, `nmt bench --int8 --only beam5`,
/// 2026-11-27); packed once per step it is 0.7 %. A prepacked input carries no zero point
/// (rten 0.25 packs it without), so the shift is undone in [`scale_into`] instead (rten's own
/// `i32` bias pass for it was 3.4 % of the cycles: a second pass over the sums).
pub struct QActs {
    /// `None` when there is nothing to multiply (no rows or `k = 0`).
    packed: Option<StepActs>,
    scale: Vec<f32>,
    rows: usize,
    k: usize,
}

impl QActs {
    /// Quantises `a (rows, k)` row-major, for `w`'s inner dimension.
    pub fn new(a: &[f32], rows: usize, w: &QWeights) -> Self {
        let k = w.k;
        let mut q = vec![SHIFT; rows * k];
        let mut scale = vec![1f32; rows];
        if k > 0 {
            for ((row, out), s) in a.chunks_exact(k).zip(q.chunks_exact_mut(k)).zip(&mut scale) {
                *s = simd_dispatch!(quantize_act_row(row, out));
            }
        }
        let packed = (rows > 0 && k > 0).then(|| match &w.tiles {
            Some(_) if rows >= MIN_ROWS => StepActs::Tiles(AmxI8Acts::new(&q, rows, k), q),
            _ => StepActs::Rten(GEMM.with(|gemm| gemm.prepack_a(NdTensorView::from_data([rows, k], q.as_slice())))),
        });
        QActs { packed, scale, rows, k }
    }
}

/// A step's activations as its product reads them: packed for rten's kernel, or for the tiles
/// (with the bytes row-major, for weights without tiles).
enum StepActs {
    Rten(PackedAMatrix<u8>),
    Tiles(AmxI8Acts, Vec<u8>),
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

/// `out[r·ld + (j − j0)] += s_w[j] s_a[r] Σ_k q_w[j, k] q_a[r, k]` for weight rows
/// `j0..j0 + bs` and all activation rows `r`: the row-major layout rten-gemm writes its sums in
/// (a step's `x W`, `W`'s columns being the weight rows, and the projection's `(n, bs)` score
/// blocks). `j0` is a multiple of [`CHUNK`], and `bs` one too unless the block ends at the last
/// row. Runs on the calling thread's rayon pool (rten splits a chunk's columns when it has more
/// than one thread; the integer sums, hence the result, do not depend on it).
pub fn block(w: &QWeights, j0: usize, bs: usize, a: &QActs, out: &mut [f32], ld: usize) {
    let n = a.rows;
    assert!(
        j0.is_multiple_of(CHUNK) && (bs.is_multiple_of(CHUNK) || j0 + bs == w.rows) && j0 + bs <= w.rows,
        "int8 block: rows {j0}..+{bs} are not whole chunks of {}",
        w.rows
    );
    assert!(bs == 0 || n == 0 || (ld >= bs && (n - 1) * ld + bs <= out.len()), "int8 block: output too small");
    assert_eq!(a.k, w.k, "int8 block: activations for another inner dimension");
    let Some(acts) = a.packed.as_ref().filter(|_| bs > 0) else { return };
    // The sums buffer is taken out of the thread's slot for the call and put back after, never
    // borrowed across `gemm.gemm`: rten runs on the caller's rayon pool, and a thread waiting
    // inside it steals other jobs, which may be another `block` on this thread (a `RefCell`
    // borrowed here panicked "already borrowed" with 16 threads, issue 56). A nested call finds
    // the slot empty and grows a buffer of its own, which it leaves for the next call.
    thread_local!(static SUMS: Cell<Vec<i32>> = const { Cell::new(Vec::new()) });
    let mut sums = SUMS.take();
    GEMM.with(|gemm| {
        for c0 in (j0..j0 + bs).step_by(CHUNK) {
            let packed = &w.packed[c0 / CHUNK];
            let cols = packed.cols();
            // Grown once, never cleared: with beta = 0 rten writes every sum without reading.
            if sums.len() < n * cols {
                sums.resize(n * cols, 0);
            }
            let sums = &mut sums[..n * cols];
            match (acts, &w.tiles) {
                // On this thread: the callers split a step over the threads (the projection by
                // parts of the vocabulary, `int8_linear` by rows).
                (StepActs::Tiles(acts, _), Some((tiles, chunks))) => tiles.product(sums, acts, &chunks[c0 / CHUNK], 1),
                // Activations for the tiles and weights without them (another `QWeights` of the
                // same shape) multiply on rten-gemm unpacked. The shapes are ours and checked
                // above: an error here is a bug, not input.
                (acts, _) => {
                    let a = match acts {
                        StepActs::Rten(p) => GemmInputA::Packed(p),
                        StepActs::Tiles(_, bytes) => GemmInputA::Unpacked(NdTensorView::from_data([n, w.k], bytes.as_slice())),
                    };
                    gemm.gemm(sums, a, GemmInputB::Packed(packed), GemmOptions::default())
                        .expect("int8 block: rten-gemm refused shapes checked here")
                }
            }
            let dst = &mut out[c0 - j0..];
            let cw = Cols { scale: &w.scale[c0..c0 + cols], unshift: &w.unshift[c0..c0 + cols] };
            simd_dispatch!(scale_into(sums, cw, &a.scale, dst, ld));
        }
    });
    SUMS.set(sums);
}

/// One chunk's weight rows, as [`scale_into`] reads them.
struct Cols<'a> {
    scale: &'a [f32],
    unshift: &'a [i32],
}

/// `dst[r·ld + j] += (sums[r·cols + j] + unshift[j]) · sw[j] · sa[r]`: the product's `i32`
/// sums of the shifted activations `(n, cols)`, unshifted exactly and scaled into the output's
/// rows.
#[inline(always)]
fn scale_into(sums: &[i32], w: Cols<'_>, sa: &[f32], dst: &mut [f32], ld: usize) {
    let cols = w.scale.len();
    for ((row, d), &s_a) in sums.chunks_exact(cols).zip(dst.chunks_mut(ld)).zip(sa) {
        for (((o, &acc), &s), &u) in d[..cols].iter_mut().zip(row).zip(w.scale).zip(w.unshift) {
            *o += (acc + u) as f32 * s * s_a;
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

    /// The arithmetic written out, one sum at a time, for weights `wf (rows, k)` quantised as
    /// `w`: what the library's kernels must equal, row-major `(n, rows)`.
    fn reference(wf: &[f32], w: &QWeights, af: &[f32], a: &QActs) -> Vec<f32> {
        let (rows, k, n) = (w.rows, w.k, a.rows);
        let mut q = vec![0i8; rows * k];
        for (row, out) in wf.chunks_exact(k).zip(q.chunks_exact_mut(k)) {
            quantize_row(row, out);
        }
        let mut qa = vec![0u8; n * k];
        for (row, out) in af.chunks_exact(k).zip(qa.chunks_exact_mut(k)) {
            quantize_act_row(row, out);
        }
        let mut out = vec![0f32; rows * n];
        for j in 0..rows {
            for r in 0..n {
                let acc: i32 = (0..k).map(|i| q[j * k + i] as i32 * (qa[r * k + i] as i32 - SHIFT as i32)).sum();
                out[r * rows + j] += acc as f32 * w.scale[j] * a.scale[r];
            }
        }
        out
    }

    #[test]
    fn int8_products_equal_the_written_out_sums_and_stay_within_the_quantisation_bound() {
        for (case, &(rows, n, k)) in
            [(7, 3, 5), (16, 160, 256), (33, 9, 100), (4, 1, 32), (61, 12, 300), (1100, 17, 256), (40, 8, 64), (600, 1, 7)]
                .iter()
                .enumerate()
        {
            let w = data(rows * k, case as u64 + 1);
            let a: Vec<f32> = data(n * k, case as u64 + 100).iter().map(|v| v * 3.0).collect();
            let qw = QWeights::new(&w, rows, k);
            let qa = QActs::new(&a, n, &qw);
            // In one call, `(n, rows)`.
            let mut out = vec![0f32; n * rows];
            block(&qw, 0, rows, &qa, &mut out, rows);
            // The library's sums are exact: equal bit for bit to the written-out ones.
            assert_eq!(out, reference(&w, &qw, &a, &qa), "{rows}×{k} by {n}");
            // Chunk by chunk into a wider output (leading dimension `rows + 3`), as the
            // projection's blocks: the same values, the padding untouched.
            let ld = rows + 3;
            let mut wide = vec![0.5f32; n * ld];
            for j0 in (0..rows).step_by(CHUNK) {
                let bs = CHUNK.min(rows - j0);
                block(&qw, j0, bs, &qa, &mut wide[j0..], ld);
            }
            for (r, row) in wide.chunks_exact(ld).enumerate() {
                let want: Vec<f32> = out[r * rows..(r + 1) * rows].iter().map(|v| v + 0.5).collect();
                assert_eq!(row[..rows].to_vec(), want, "{rows}×{k} by {n}, chunked, row {r}");
                assert_eq!(&row[rows..], &[0.5; 3], "padding written");
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
                    let got = out[r * rows + j];
                    assert!((got - exact).abs() <= bound, "{rows}×{k}: ({j}, {r}) {got} vs {exact}, bound {bound}");
                }
            }
        }
    }

    #[test]
    fn the_largest_sums_are_exact_and_empty_shapes_add_nothing() {
        // Every weight at +63 and every activation at +127 (byte 255), and at −127 (byte 1):
        // the largest products a saturating kernel would clip.
        let (rows, n, k) = (48, 6, 512);
        let w = vec![1f32; rows * k];
        let a: Vec<f32> = (0..n * k).map(|i| if (i / k) % 2 == 0 { 1.0 } else { -1.0 }).collect();
        let qw = QWeights::new(&w, rows, k);
        let qa = QActs::new(&a, n, &qw);
        let mut out = vec![0f32; n * rows];
        block(&qw, 0, rows, &qa, &mut out, rows);
        assert_eq!(out, reference(&w, &qw, &a, &qa));
        for (i, &v) in out.iter().enumerate() {
            let want = if (i / rows) % 2 == 0 { k as f32 } else { -(k as f32) };
            assert!((v - want).abs() < 1e-2 * k as f32, "{i}: {v} vs {want}");
        }
        let empty = QWeights::new(&[], 5, 0);
        let mut out = vec![0.5f32; 5 * 3];
        block(&empty, 0, 5, &QActs::new(&[], 3, &empty), &mut out, 5);
        assert_eq!(out, vec![0.5; 15]);
    }
}
