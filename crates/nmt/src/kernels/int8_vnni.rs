//! The AVX-512 VNNI path of `kernels/int8.rs` (its module doc gives the arithmetic).
//!
//! `vpdpbusd` multiplies 64 unsigned by 64 signed bytes and adds each four products into an
//! `i32` lane in one instruction (no saturating `i16` stage, unlike AVX2's `vpmaddubsw`). The
//! weights are stored repacked for it (`QWeights::tiles`: 16 rows × 4 columns per 64 bytes, the
//! layout of candle's `quantized/repack_x86.rs`): one activation row's 4 bytes are broadcast
//! and one instruction gives 16 weight rows' partial sums, so no horizontal sums are needed.
//! A tile is 32 weight rows × 8 activation rows: 16 accumulators, 2 weight loads and 8
//! broadcasts per 4 columns. The sums are exact, so this path agrees bit for bit with the others.
//!
//! It reads `kernels/int8.rs`'s buffers through [`Operands`] and writes through [`Dest`] (the
//! fields of its `QWeights`, `QActs` and `Out`), so that file alone depends on this one.
#![cfg(target_arch = "x86_64")]

/// Quantised weights in tiles, their row sums and scales, and quantised activation rows (each
/// `kp` bytes, padded to 4 rows) with their scales.
pub(super) struct Operands<'a> {
    pub tiles: &'a [i8],
    pub sum: &'a [i32],
    pub scale: &'a [f32],
    pub kp: usize,
    pub acts: &'a [u8],
    pub act_scale: &'a [f32],
    pub n: usize,
}

/// Value `(j − j0, r)` goes to `data[(j − j0)·j_stride + r·r_stride]`.
pub(super) struct Dest<'a> {
    pub data: &'a mut [f32],
    pub j_stride: usize,
    pub r_stride: usize,
}

impl Dest<'_> {
    #[inline(always)]
    fn at(&mut self, dj: usize, r: usize) -> &mut f32 {
        &mut self.data[dj * self.j_stride + r * self.r_stride]
    }
}

/// `out(j − j0, r) += Σ_k W[j, k] A[r, k]` for weight rows `j0..j0 + bs` (`j0` a multiple of 16).
///
/// # Safety
/// The CPU has AVX-512 F/BW/VNNI; the buffers are padded as `kernels/int8.rs` pads them (32
/// weight rows readable from any multiple of 16, activation rows to 4, columns to 64).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(super) unsafe fn block(w: &Operands<'_>, j0: usize, bs: usize, out: &mut Dest<'_>) {
    let n = w.n;
    for j in (j0..j0 + bs).step_by(32) {
        let mut r = 0;
        while r < n {
            // Activation rows are padded to 4: a short tail reads padding, never written out.
            if n - r >= 8 {
                tile_vnni::<8>(w, j, j0 + bs, r, out, j0);
                r += 8;
            } else {
                tile_vnni::<4>(w, j, j0 + bs, r, out, j0);
                r += 4;
            }
        }
    }
}

/// Weight rows `j..j + 32` (those below `j_end` written) by activation rows `r..r + M`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[inline]
unsafe fn tile_vnni<const M: usize>(w: &Operands<'_>, j: usize, j_end: usize, r: usize, out: &mut Dest<'_>, j0: usize) {
    use std::arch::x86_64::*;
    let (n, kp) = (w.n, w.kp);
    let quads = kp / 4;
    // Rows j..j+16 and j+16..j+32: two consecutive tile columns of 64 bytes per quad.
    let t0 = w.tiles.as_ptr().add((j / 16) * quads * 64);
    let t1 = t0.add(quads * 64);
    let ap = w.acts.as_ptr().add(r * kp);
    // acc[m][g]: activation row r + m against weight rows j + 16 g .. j + 16 g + 16.
    let mut acc = [[_mm512_setzero_si512(); 2]; M];
    for k4 in 0..quads {
        let w0 = _mm512_loadu_si512(t0.add(k4 * 64) as *const _);
        let w1 = _mm512_loadu_si512(t1.add(k4 * 64) as *const _);
        for (m, pair) in acc.iter_mut().enumerate() {
            let av = _mm512_set1_epi32((ap.add(m * kp + k4 * 4) as *const i32).read_unaligned());
            pair[0] = _mm512_dpbusd_epi32(pair[0], av, w0);
            pair[1] = _mm512_dpbusd_epi32(pair[1], av, w1);
        }
    }
    for g in 0..2 {
        let jg = j + 16 * g;
        if jg >= j_end {
            break;
        }
        let c = _mm512_slli_epi32(_mm512_loadu_si512(w.sum.as_ptr().add(jg) as *const _), 7);
        let sw = _mm512_loadu_ps(w.scale.as_ptr().add(jg));
        for (m, pair) in acc.iter().enumerate() {
            let v = pair[g];
            if r + m >= n {
                break;
            }
            // `dequant`'s arithmetic in its order: ((acc − 128 Σq) as f32 · s_w) · s_a.
            let x = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(v, c)), sw), _mm512_set1_ps(w.act_scale[r + m]));
            if out.j_stride == 1 && j_end - jg >= 16 {
                // Row-major output: 16 consecutive values, added as the scalar path adds them.
                let o = out.at(jg - j0, r + m) as *mut f32;
                _mm512_storeu_ps(o, _mm512_add_ps(_mm512_loadu_ps(o), x));
                continue;
            }
            let mut vals = [0f32; 16];
            _mm512_storeu_ps(vals.as_mut_ptr(), x);
            for (i, &x) in vals.iter().enumerate().take(j_end - jg) {
                *out.at(jg + i - j0, r + m) += x;
            }
        }
    }
}
