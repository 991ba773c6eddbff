//! Packing of a bf16 product's A operand into AMX tiles (`amx_gemm.rs`, issue 76).
//!
//! An A tile is 16 rows of 16 bf16 pairs, a row per 64-byte line: block `s` of panel `q` holds
//! `A[16q + r][32s .. 32s + 32]` as pairs at `packed[(q · lanes + 16 s + r) · 16 ..]`, zeros past
//! `m` and `k`. `bf16_pack` packs pair-major (`[lane][row]`, the B tiles' and `vdpbf16ps`'
//! layout), so the general path packs that way and transposes each 16 × 16 block.
//!
//! **Rows of A with `k` contiguous** (every forward product's `x`, and the projection's
//! `dx = z · Wᵀ` with its 960 × 8 000 `z`, the largest operand a bench-rnnsearch step packs)
//! are already tile rows: 32 consecutive values convert to 16 pairs in one `vcvtne2ps2bf16` and
//! store as one line. Packed pair-major instead, they were transposed in registers by
//! `bf16_pack` and back by the block transpose. bench-rnnsearch's bf16 step spent 13.9 ms per
//! step packing A that way and 9.2 ms this way (medians of 5 alternated rounds, `NMT_PROFILE=1
//! nmt bench --threads 2 --only train --steps 10 --precision bf16`, `bf16.pack_a`, Emerald
//! Rapids, 2026-11-29, docs/logs/amx-2026-11-29/pack-a-direct.txt). Both paths write the same
//! bits (the test below), so the loss does not move.
use rayon::prelude::*;

use super::amx::ROWS;
use super::bf16_pack::{pack_to, Packed, PairView};

/// 32-bit lanes of `k` per tile step: 16 bf16 pairs.
pub(super) const STEP: usize = 16;

/// `v` (`outer` rows of A, `k` along a row) packed into A tiles, `lanes` (a multiple of
/// [`STEP`], at least `⌈k / 2⌉`) lanes per panel of 16 rows; `threads > 1` splits the panels.
pub(super) fn pack_a(v: PairView<'_>, lanes: usize, threads: usize) -> Packed {
    debug_assert!(lanes.is_multiple_of(STEP) && 2 * lanes >= v.k);
    #[cfg(target_arch = "x86_64")]
    if v.sk == 1 && v.outer > 0 && v.k > 0 && super::bf16_pack::available() {
        assert!(v.off + (v.outer - 1) * v.so + v.k <= v.data.len(), "AMX pack: view out of bounds");
        let mut out = Packed::with_len(v.outer.div_ceil(ROWS) * lanes * ROWS);
        let one = |(q, dst): (usize, &mut [u32])| {
            // SAFETY: the CPU has AVX512F, AVX512BW and AVX512_BF16 (checked above); the view
            // lies inside its slice (asserted above); `dst` is panel `q`, `lanes × 16` u32.
            unsafe { x86::rows(&v, q, lanes, dst) }
        };
        if parallel(&v, threads) {
            out.par_chunks_mut(lanes * ROWS).enumerate().for_each(one);
        } else {
            out.chunks_mut(lanes * ROWS).enumerate().for_each(one);
        }
        return out;
    }
    pair_major_then_transposed(v, lanes, threads)
}

/// The general path: `bf16_pack`'s pair-major panels, each 16 × 16 block then transposed.
pub(super) fn pair_major_then_transposed(v: PairView<'_>, lanes: usize, threads: usize) -> Packed {
    let mut pa = pack_to(v, ROWS, lanes, threads);
    if parallel(&v, threads) {
        pa.par_chunks_exact_mut(STEP * ROWS).for_each(transpose16);
    } else {
        pa.chunks_exact_mut(STEP * ROWS).for_each(transpose16);
    }
    pa
}

/// Whether packing `v` is worth splitting over `threads` (`bf16_pack::pack_to`'s threshold).
fn parallel(v: &PairView<'_>, threads: usize) -> bool {
    threads > 1 && v.outer * v.k >= 1 << 16
}

/// The transpose of a 16 × 16 block of u32, in place: pair-major (`bf16_pack`'s panels) to
/// row-major (an A tile).
fn transpose16(b: &mut [u32]) {
    for r in 0..ROWS {
        for c in r + 1..ROWS {
            b.swap(r * ROWS + c, c * ROWS + r);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{PairView, ROWS, STEP};
    use std::arch::x86_64::*;

    /// Panel `q` of A tiles from rows with `k` contiguous: per row and tile step, 32 values
    /// (masked at `k`'s end) convert to one 64-byte tile row; rows past `outer` are zeros.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn rows(v: &PairView<'_>, q: usize, lanes: usize, dst: &mut [u32]) {
        debug_assert_eq!(dst.len(), lanes * ROWS);
        let live = v.outer.saturating_sub(q * ROWS).min(ROWS);
        let out = dst.as_mut_ptr();
        for s in 0..lanes / STEP {
            let k0 = 32 * s;
            // Values of this step inside `k`: 0 to 32, as two masks of 16.
            let left = v.k.saturating_sub(k0).min(32);
            let (m0, m1): (__mmask16, __mmask16) = (((1u32 << left.min(16)) - 1) as u16, ((1u32 << left.saturating_sub(16)) - 1) as u16);
            for r in 0..ROWS {
                let line = out.add((s * STEP + r) * ROWS).cast::<__m512i>();
                if r >= live || left == 0 {
                    _mm512_storeu_si512(line, _mm512_setzero_si512());
                    continue;
                }
                // `wrapping_add`: past `k` the masks keep the lanes from being read.
                let row = v.data.as_ptr().wrapping_add(v.off + (q * ROWS + r) * v.so + k0);
                let lo = _mm512_maskz_loadu_ps(m0, row);
                let hi = _mm512_maskz_loadu_ps(m1, row.wrapping_add(16));
                _mm512_storeu_si512(line, std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    /// Rows with `k` contiguous, packed directly, equal the general path bit for bit: rows past
    /// a panel (`outer` 1, 15, 17, 40), `k` odd, short of and past a 32-value step, from an
    /// offset, at a row stride above `k`, on one thread and in parallel, on values that round.
    #[test]
    fn rows_packed_directly_equal_the_pair_major_path() {
        #[cfg(target_arch = "x86_64")]
        let direct = super::super::bf16_pack::available();
        #[cfg(not(target_arch = "x86_64"))]
        let direct = false;
        if !direct {
            println!("AMX PACK DIRECT PATH NOT RUN: no AVX512_BF16 on this CPU (the general path packs every A)");
        }
        let mut rng = ChaCha8Rng::seed_from_u64(76);
        for (outer, k) in [(1, 1), (15, 31), (17, 33), (16, 64), (40, 257), (3, 520), (300, 300)] {
            let (off, so) = (3, k + 5);
            let data: Vec<f32> = (0..off + outer * so).map(|_| rng.gen_range(-3.0f32..3.0)).collect();
            let v = PairView { data: &data, off, outer, k, so, sk: 1 };
            let lanes = k.div_ceil(2).next_multiple_of(STEP) + if k == 64 { STEP } else { 0 };
            for threads in [1, 2] {
                let got = pack_a(v, lanes, threads);
                let want = pair_major_then_transposed(v, lanes, 1);
                assert!(got[..] == want[..], "outer {outer}, k {k}, {threads} threads");
            }
        }
    }
}
