//! bf16 × bf16 → f32 GEMM on `vdpbf16ps` (AVX512_BF16), for the training step's large
//! products (issue 42): `dst = beta·dst + a · b` with f32 operands rounded to bf16 and f32
//! accumulation, the contract of [`crate::kernels::gemm::matmul`].
//!
//! Hand-written because no maintained Rust crate multiplies in bf16 on a CPU (2026-11): the
//! `gemm` crate's f16/bf16 paths widen to f32 and run at its f32 rate, and oneDNN's bindings are
//! early. Stable Rust has the instructions (`_mm512_dpbf16_ps`, `_mm512_cvtne2ps_pbh`, 1.89), so
//! the kernel is intrinsics only. One `vdpbf16ps` does 32 multiply-adds where `vfmadd231ps`
//! does 16, at the same rate on Zen 4 (`examples/bf16_peak.rs`: 221–233 against 101–113
//! GFLOP/s on one core).
//!
//! Layout: both operands are packed into bf16 pairs along `k` (`bf16_pack.rs`): A in panels of
//! [`MR`] rows, B in panels of [`NR`] columns. The micro-kernel keeps an `MR × NR` block of C
//! in 24 of the 32 zmm registers; per pair of `k` it loads one B row of the panel (2 zmm) and
//! broadcasts one pair of each of A's 12 rows: 24 `vdpbf16ps` for 2 loads and 12 broadcasts.
//! `k` is cut into blocks of [`KC`] pairs. Within a block the threads split the panels of the
//! operand that has more of them; each thread keeps its panel in L1 and walks every panel of
//! the other operand (in L2) past it.
#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

use rayon::prelude::*;

use super::bf16_pack::{pack, pairs, PairView, SharedMut};
use crate::kernels::gemm::Mat;
use crate::kernels::profile;

/// Rows of C per micro-kernel call.
pub const MR: usize = 12;
/// Columns of C per micro-kernel call: two zmm registers of f32.
pub const NR: usize = 32;
/// Pairs of `k` per block: an A panel's block is 6 KB and a B panel's 16 KB (L1), all of the
/// streamed operand's block ≤ 0.5 MB for 1 000 rows (L2). Without blocking, the `k = 8 000`
/// product (the projection's `dx`) ran at the f32 rate (measured, `examples/gemm_shapes.rs bf16`).
const KC: usize = 128;

pub use super::bf16_pack::available;

/// `dst = (accumulate ? dst : 0) + a · b` with the products in bf16, `dst` `(a.rows, b.cols)`
/// with row stride `dst_rs` from `dst_off`; `threads > 1` splits the panels over rayon.
///
/// # Panics
/// When the CPU lacks the features ([`available`]), on mismatched shapes, or on views that run
/// past their slices: programming errors of the kernels, never reachable from user input.
pub fn matmul_bf16(dst: &mut [f32], dst_off: usize, dst_rs: usize, a: Mat<'_, f32>, b: Mat<'_, f32>, accumulate: bool, threads: usize) {
    assert!(available(), "bf16 GEMM on a CPU without AVX512_BF16");
    assert_eq!(a.cols, b.rows, "bf16 gemm: inner dimensions differ");
    let (m, n, k) = (a.rows, b.cols, a.cols);
    if m == 0 || n == 0 {
        return;
    }
    assert!(dst_off + (m - 1) * dst_rs + n <= dst.len(), "bf16 gemm: destination out of bounds");
    if k == 0 {
        if !accumulate {
            (0..m).for_each(|i| dst[dst_off + i * dst_rs..dst_off + i * dst_rs + n].fill(0.0));
        }
        return;
    }
    let kp = pairs(k);
    let t0 = profile::start();
    let pa = pack(PairView { data: a.data, off: a.off, outer: m, k, so: a.rs, sk: a.cs }, MR, threads);
    profile::stop(profile::PACK_A, t0);
    let t0 = profile::start();
    let pb = pack(PairView { data: b.data, off: b.off, outer: n, k, so: b.cs, sk: b.rs }, NR, threads);
    profile::stop(profile::PACK_B, t0);
    // Shared by the tasks: each writes only the blocks of its own panel.
    let base = SharedMut(dst[dst_off..].as_mut_ptr());
    let (mp, np) = (m.div_ceil(MR), n.div_ceil(NR));
    // Each task owns one panel of the operand with more panels and walks every panel of the
    // other past it; its panel stays in L1, the other operand's `k` block in L2.
    let rows_outer = mp >= np;
    for (block, p0) in (0..kp).step_by(KC).enumerate() {
        let p1 = (p0 + KC).min(kp);
        let accumulate = accumulate || block > 0;
        let pair = |ip: usize, jp: usize| {
            let ap = &pa[(ip * kp + p0) * MR..(ip * kp + p1) * MR];
            let bp = &pb[(jp * kp + p0) * NR..(jp * kp + p1) * NR];
            let (rows, cols) = ((m - ip * MR).min(MR), (n - jp * NR).min(NR));
            // SAFETY: the CPU has the features (asserted above); the block `(ip·MR.., jp·NR..)`
            // of `rows × cols` lies inside `dst` (asserted above), and only the task that owns
            // panel `ip` (or `jp`) writes it.
            unsafe { tile(p1 - p0, ap, bp, base.ptr().add(ip * MR * dst_rs + jp * NR), dst_rs, rows, cols, accumulate) };
        };
        let task = |o: usize| {
            if rows_outer {
                (0..np).for_each(|jp| pair(o, jp));
            } else {
                (0..mp).for_each(|ip| pair(ip, o));
            }
        };
        let tasks = if rows_outer { mp } else { np };
        if threads > 1 && m * n * k >= 1 << 18 {
            (0..tasks).into_par_iter().for_each(task);
        } else {
            (0..tasks).for_each(task);
        }
    }
}

/// One `MR × NR` block of C from the packed panels `a` (`kp × MR` pairs) and `b` (`kp × NR`):
/// the first `rows × cols` of it are stored (or added) at `c` with row stride `rs`.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile(kp: usize, a: &[u32], b: &[u32], c: *mut f32, rs: usize, rows: usize, cols: usize, accumulate: bool) {
    debug_assert!(a.len() == kp * MR && b.len() == kp * NR);
    let mut acc = [[_mm512_setzero_ps(); 2]; MR];
    let (ap, bp) = (a.as_ptr(), b.as_ptr());
    for p in 0..kp {
        let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(bp.add(p * NR).cast()));
        let b1: __m512bh = std::mem::transmute(_mm512_loadu_si512(bp.add(p * NR + 16).cast()));
        for (i, row) in acc.iter_mut().enumerate() {
            let ai: __m512bh = std::mem::transmute(_mm512_set1_epi32(*ap.add(p * MR + i) as i32));
            row[0] = _mm512_dpbf16_ps(row[0], ai, b0);
            row[1] = _mm512_dpbf16_ps(row[1], ai, b1);
        }
    }
    let m0: __mmask16 = ((1u32 << cols.min(16)) - 1) as u16;
    let m1: __mmask16 = ((1u32 << cols.saturating_sub(16)) - 1) as u16;
    for (i, row) in acc.iter().enumerate().take(rows) {
        let ci = c.add(i * rs);
        let (mut v0, mut v1) = (row[0], row[1]);
        if accumulate {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, ci));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, ci.wrapping_add(16)));
        }
        _mm512_mask_storeu_ps(ci, m0, v0);
        _mm512_mask_storeu_ps(ci.wrapping_add(16), m1, v1);
    }
}
