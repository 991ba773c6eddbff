//! Packing of f32 GEMM operands into the bf16 pairs that `vdpbf16ps` reads (issue 42).
//!
//! `vdpbf16ps` multiplies pairs: lane `j` of its result gains `a₀ b₀ⱼ + a₁ b₁ⱼ`, where each
//! 32-bit lane of an operand holds two bf16 values, `k = 2p` in its low half and `k = 2p + 1` in
//! its high half. So both operands are packed along the inner dimension `k` into pairs, and into
//! panels of `width` outer indices (rows of A, columns of B) laid out pair by pair:
//!
//! `packed[(panel · kp + p) · width + w]` = the pair `p` of outer index `panel · width + w`,
//!
//! with `kp = ⌈k / 2⌉`; an odd `k` and the last panel's missing outer indices are padded with
//! zeros, so the micro-kernel never branches on edges. One panel of B (`kp × 32` pairs, 16 KB at
//! `k = 256`) stays in L1 while every panel of A streams past it.
//!
//! Rounding is to nearest even, the rounding of `vcvtne2ps2bf16` (the vector paths) and of
//! `half::bf16::from_f32` (the scalar tails and the strided path).
//!
//! Three paths, by the view's strides: pairs adjacent in memory (`k` contiguous: A as stored,
//! Bᵀ views), pairs across two rows (the outer index contiguous: B as stored, Aᵀ views), and
//! any other strides, element by element.
use std::sync::Mutex;

use rayon::prelude::*;

/// Whether this CPU runs the bf16 products (AVX512F, AVX512BW and AVX512_BF16).
#[cfg(target_arch = "x86_64")]
pub fn available() -> bool {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512bf16")
}

/// A buffer that parallel tasks write through a raw pointer, each to its own disjoint part
/// (the bf16 products' destination, the packing's output): the caller of [`SharedMut::ptr`]
/// promises that no two tasks write the same element.
#[derive(Clone, Copy)]
pub(super) struct SharedMut<T>(pub *mut T);
// SAFETY: the pointer is only written through, by tasks that write disjoint elements (above).
unsafe impl<T> Send for SharedMut<T> {}
unsafe impl<T> Sync for SharedMut<T> {}

impl<T> SharedMut<T> {
    /// The pointer, through a method so that closures capture the whole (`Sync`) wrapper
    /// rather than its raw-pointer field.
    pub(super) fn ptr(self) -> *mut T {
        self.0
    }
}

/// An operand seen as `(outer, k)`: element `(o, kk)` is `data[off + o · so + kk · sk]`.
#[derive(Clone, Copy)]
pub(super) struct PairView<'a> {
    pub data: &'a [f32],
    pub off: usize,
    pub outer: usize,
    pub k: usize,
    pub so: usize,
    pub sk: usize,
}

/// The bf16 bits of `x`, rounded to nearest even.
#[inline(always)]
fn bf16_bits(x: f32) -> u32 {
    half::bf16::from_f32(x).to_bits() as u32
}

impl PairView<'_> {
    #[inline(always)]
    fn at(&self, o: usize, kk: usize) -> f32 {
        if o < self.outer && kk < self.k {
            self.data[self.off + o * self.so + kk * self.sk]
        } else {
            0.0
        }
    }

    /// The pair `p` of outer index `o` (zeros outside the view).
    #[inline(always)]
    fn pair(&self, o: usize, p: usize) -> u32 {
        bf16_bits(self.at(o, 2 * p)) | (bf16_bits(self.at(o, 2 * p + 1)) << 16)
    }
}

/// Pairs `⌈k / 2⌉` of a view.
pub(super) fn pairs(k: usize) -> usize {
    k.div_ceil(2)
}

/// Packing buffers kept between calls. A training step packs about 35 MB (the projection's
/// gradients: 15 MB each); fresh allocations of that size cost page faults and the kernel's
/// zeroing of every page (`clear_page_erms`: 9 % of the bf16 step's cycles before the buffers
/// were kept). A pool rather than a thread-local: the products run inside rayon tasks, and a
/// task that waits on its own product's threads may run another product meanwhile.
static POOL: Mutex<Vec<Vec<Line>>> = Mutex::new(Vec::new());
/// Buffers kept at most: the two operands of up to three products in flight.
const KEPT: usize = 6;

/// 64 bytes on a 64-byte boundary: the unit of packed buffers, so that every 16-lane row of a
/// panel (a zmm load, an AMX tile row) is one cache line, not two (issue 76; a `Vec<u32>` is
/// aligned to 16 bytes at best).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct Line([u32; 16]);

/// The kept buffer that fits `lines` best (the smallest that holds it, else the largest), so
/// that a small operand does not take, and a large one does not regrow, the large buffers.
fn take(lines: usize) -> Vec<Line> {
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let fits = pool.iter().enumerate().filter(|(_, b)| b.capacity() >= lines).min_by_key(|(_, b)| b.capacity()).map(|(i, _)| i);
    let best = fits.or_else(|| pool.iter().enumerate().max_by_key(|(_, b)| b.capacity()).map(|(i, _)| i));
    best.map(|i| pool.swap_remove(i)).unwrap_or_default()
}

/// A packed operand of `len` u32 on 64-byte lines; its buffer goes back to the pool when
/// dropped.
pub(super) struct Packed {
    lines: Vec<Line>,
    len: usize,
}

impl Packed {
    /// A buffer of `len` u32 from the pool: a kept buffer's old values stay (every caller
    /// writes all of it), only growth is zero-filled.
    pub(super) fn with_len(len: usize) -> Packed {
        let mut lines = take(len.div_ceil(16));
        lines.resize(len.div_ceil(16), Line([0; 16]));
        Packed { lines, len }
    }
}

impl Clone for Packed {
    fn clone(&self) -> Packed {
        let mut p = Packed::with_len(self.len);
        p.copy_from_slice(self);
        p
    }
}

impl std::ops::Deref for Packed {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        // SAFETY: `lines` holds `⌈len / 16⌉` lines of 16 u32 each, contiguous (`repr(C)`, no
        // padding: 64 bytes at alignment 64).
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast(), self.len) }
    }
}

impl std::ops::DerefMut for Packed {
    fn deref_mut(&mut self) -> &mut [u32] {
        // SAFETY: as `deref`, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast(), self.len) }
    }
}

impl Drop for Packed {
    fn drop(&mut self) {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < KEPT {
            pool.push(std::mem::take(&mut self.lines));
        }
    }
}

/// `v` packed into panels of `width` outer indices (the layout in the module doc), the panels
/// converted in parallel when `threads > 1`. Every element is written (padding included), so
/// a kept buffer is not cleared first.
///
/// # Panics
/// When the view runs past its slice (a programming error of the caller, which checks shapes).
pub(super) fn pack(v: PairView<'_>, width: usize, threads: usize) -> Packed {
    pack_to(v, width, pairs(v.k), threads)
}

/// [`pack`] with `kp ≥ ⌈k / 2⌉` pairs per panel, those past the view zero: AMX's tiles take
/// `k` 16 pairs at a time (`amx_gemm.rs`).
pub(super) fn pack_to(v: PairView<'_>, width: usize, kp: usize, threads: usize) -> Packed {
    debug_assert!(kp >= pairs(v.k));
    let panels = v.outer.div_ceil(width);
    let len = panels * kp * width;
    let mut out = Packed::with_len(len);
    if v.outer == 0 || v.k == 0 {
        out.fill(0);
        return out;
    }
    assert!(v.off + (v.outer - 1) * v.so + (v.k - 1) * v.sk < v.data.len(), "bf16 pack: view out of bounds");
    let parallel = threads > 1 && v.outer * v.k >= 1 << 16;
    #[cfg(target_arch = "x86_64")]
    if v.so == 1 && v.sk != 1 && available() {
        pack_across(&v, width, kp, &mut out, parallel);
        return out;
    }
    let chunk = (kp * width).max(1);
    let one = |(panel, dst): (usize, &mut [u32])| pack_panel(&v, panel, width, kp, dst);
    if parallel {
        out.par_chunks_mut(chunk).enumerate().for_each(one);
    } else {
        out.chunks_mut(chunk).enumerate().for_each(one);
    }
    out
}

/// Pairs per task of [`pack_across`]: 32 rows of the operand.
#[cfg(target_arch = "x86_64")]
const ACROSS_PAIRS: usize = 16;

/// The across path (outer index contiguous) by blocks of [`ACROSS_PAIRS`] pairs, each task
/// writing its pairs of every panel: the rows are read front to back, 32 at a time. Packed
/// panel by panel instead, each panel read a 12-column strip of every row (the projection's
/// gradient: 960 rows 32 KB apart), and this path took 4.6 % of the bf16 step's cycles.
#[cfg(target_arch = "x86_64")]
fn pack_across(v: &PairView<'_>, width: usize, kp: usize, out: &mut [u32], parallel: bool) {
    let panels = v.outer.div_ceil(width);
    debug_assert_eq!(out.len(), panels * kp * width);
    let base = SharedMut(out.as_mut_ptr());
    let block = |b: usize| {
        let ps = b * ACROSS_PAIRS..((b + 1) * ACROSS_PAIRS).min(kp);
        for panel in 0..panels {
            // SAFETY: the CPU has the features (checked by the caller); pairs `ps` of panel
            // `panel` lie inside `out` and belong to this task alone.
            unsafe { x86::across(v, panel, width, base.ptr().add(panel * kp * width), ps.clone()) };
        }
    };
    if parallel {
        (0..kp.div_ceil(ACROSS_PAIRS)).into_par_iter().for_each(block);
    } else {
        (0..kp.div_ceil(ACROSS_PAIRS)).for_each(block);
    }
}

fn pack_panel(v: &PairView<'_>, panel: usize, width: usize, kp: usize, dst: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: the CPU has AVX512F, AVX512BW and AVX512_BF16 (checked just above); `pack`
        // checked that the view lies inside its slice.
        unsafe {
            if v.sk == 1 {
                return x86::adjacent(v, panel, width, kp, dst);
            }
        }
    }
    for p in 0..kp {
        for w in 0..width {
            dst[p * width + w] = v.pair(panel * width + w, p);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::PairView;
    use std::arch::x86_64::*;

    /// `k` contiguous: 32 consecutive values of an outer index convert to 16 pairs in one
    /// `vcvtne2ps2bf16`, already in pair order; 16 outer indices' vectors are transposed in
    /// registers so that each pair is stored as one row of the panel. (Storing the pairs one by
    /// one instead made this path 3 % of the bf16 training step's cycles.)
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn adjacent(v: &PairView<'_>, panel: usize, width: usize, kp: usize, dst: &mut [u32]) {
        let full = v.k / 32;
        for w0 in (0..width).step_by(16) {
            let lanes = (width - w0).min(16);
            let live = v.outer.saturating_sub(panel * width + w0).min(lanes);
            let store: __mmask16 = ((1u32 << lanes) - 1) as u16;
            let row = |r: usize| v.data.as_ptr().add(v.off + (panel * width + w0 + r) * v.so);
            for c in 0..full {
                let mut r = [_mm512_setzero_si512(); 16];
                for (i, x) in r.iter_mut().enumerate().take(live) {
                    let lo = _mm512_loadu_ps(row(i).add(32 * c));
                    let hi = _mm512_loadu_ps(row(i).add(32 * c + 16));
                    *x = std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(hi, lo));
                }
                for (j, x) in transpose16(&r).iter().enumerate() {
                    _mm512_mask_storeu_epi32(dst.as_mut_ptr().add((16 * c + j) * width + w0).cast(), store, *x);
                }
            }
            for p in 16 * full..kp {
                for w in w0..w0 + lanes {
                    dst[p * width + w] = v.pair(panel * width + w, p);
                }
            }
        }
    }

    /// The transpose of a 16 × 16 block of 32-bit lanes: `out[j]` lane `i` = `r[i]` lane `j`.
    #[target_feature(enable = "avx512f")]
    unsafe fn transpose16(r: &[__m512i; 16]) -> [__m512i; 16] {
        // 32-bit, then 64-bit interleaves within 128-bit lanes, then two 128-bit lane shuffles.
        let mut t = [_mm512_setzero_si512(); 16];
        for q in 0..8 {
            t[2 * q] = _mm512_unpacklo_epi32(r[2 * q], r[2 * q + 1]);
            t[2 * q + 1] = _mm512_unpackhi_epi32(r[2 * q], r[2 * q + 1]);
        }
        let mut u = [_mm512_setzero_si512(); 16];
        for b in (0..16).step_by(4) {
            u[b] = _mm512_unpacklo_epi64(t[b], t[b + 2]);
            u[b + 1] = _mm512_unpackhi_epi64(t[b], t[b + 2]);
            u[b + 2] = _mm512_unpacklo_epi64(t[b + 1], t[b + 3]);
            u[b + 3] = _mm512_unpackhi_epi64(t[b + 1], t[b + 3]);
        }
        let mut w = [_mm512_setzero_si512(); 16];
        for h in [0, 8] {
            for c in 0..4 {
                w[h + c] = _mm512_shuffle_i32x4::<0x88>(u[h + c], u[h + 4 + c]);
                w[h + 4 + c] = _mm512_shuffle_i32x4::<0xdd>(u[h + c], u[h + 4 + c]);
            }
        }
        let mut out = [_mm512_setzero_si512(); 16];
        for c in 0..8 {
            out[c] = _mm512_shuffle_i32x4::<0x88>(w[c], w[8 + c]);
            out[8 + c] = _mm512_shuffle_i32x4::<0xdd>(w[c], w[8 + c]);
        }
        out
    }

    /// The outer index contiguous: the rows `2p` and `2p + 1` are loaded 16 outer indices at a
    /// time, converted together, and interleaved into pairs by one `vpermw`. Pairs `ps` of the
    /// panel whose first element is at `dst`; pairs past the view's `k` are zeros.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn across(v: &PairView<'_>, panel: usize, width: usize, dst: *mut u32, ps: std::ops::Range<usize>) {
        // Lane j of the result takes bf16 j (row 2p) low and bf16 16 + j (row 2p + 1) high.
        let idx = _mm512_set_epi16(
            31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0,
        );
        let o0 = panel * width;
        for p in ps {
            let r0 = v.off + 2 * p * v.sk;
            let (has_r0, has_r1) = (2 * p < v.k, 2 * p + 1 < v.k);
            for w0 in (0..width).step_by(16) {
                let lanes = (width - w0).min(16);
                let live = v.outer.saturating_sub(o0 + w0).min(lanes);
                let load: __mmask16 = ((1u32 << live) - 1) as u16;
                let store: __mmask16 = ((1u32 << lanes) - 1) as u16;
                // `wrapping_add`: a panel's padding lanes may lie past the slice; the mask keeps
                // them from being read.
                let a = if has_r0 { _mm512_maskz_loadu_ps(load, v.data.as_ptr().wrapping_add(r0 + o0 + w0)) } else { _mm512_setzero_ps() };
                let b = if has_r1 {
                    _mm512_maskz_loadu_ps(load, v.data.as_ptr().wrapping_add(r0 + v.sk + o0 + w0))
                } else {
                    _mm512_setzero_ps()
                };
                let bh: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(b, a));
                let pairs = _mm512_permutexvar_epi16(idx, bh);
                _mm512_mask_storeu_epi32(dst.add(p * width + w0).cast(), store, pairs);
            }
        }
    }
}
