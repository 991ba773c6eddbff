//! bf16 × bf16 → f32 GEMM on AMX tiles (`tdpbf16ps`, issue 70), for the training step's large
//! products on Intel Xeons of the 4th generation on: `dst = (accumulate ? dst : 0) + a · b`
//! with f32 operands rounded to bf16 and f32 sums, the contract of [`crate::kernels::gemm::matmul`] and
//! of `bf16_gemm::matmul_bf16`, whose packing it shares.
//!
//! **Layout.** A tile step takes 16 pairs of `k` (32 values). B is packed as `bf16_pack` packs
//! it for `vdpbf16ps`, in panels of 16 columns with the pairs padded to a multiple of 16: each
//! 16 pairs × 16 columns block (1 KB) is one `B_j` tile, rows 64 bytes apart, as `tdpbf16ps`
//! wants its second operand (a k-pair per 32-bit lane). A is packed in panels of 16 rows whose
//! 16 × 16 blocks are A tiles, a tile row holding one row of A's 16 pairs, as the first operand
//! wants (`amx_pack.rs`). Rows and columns past the matrix, and pairs past
//! `k`, are zeros: the tiles always run full, and only the stores mind the edges.
//!
//! **Tiling** (llama.cpp's `ggml-cpu/amx` shape, issue 76): 2 × 2 blocks of C tiles (32 × 32
//! of C) in tiles 4–7, each held in the tiles over all of `k`: loaded (or zeroed) once, stored
//! once. Each tile step loads two A and two B tiles for four dot products, the loads
//! interleaved with the dot products that read them. Tiles that lie inside C load and store in
//! place; an edge tile (rows past `m` or columns past `n`) goes through a 16 × 16 scratch, made
//! once per task. Threads split the blocks' rows or columns, whichever has more, as `bf16_gemm`
//! does; a thread configures its tiles once, at its first product (`amx::AmxTiles`).
//! Packed panels start on 64-byte lines (`bf16_pack::Packed`), so a tile row is one line.
//!
//! The driver ([`drive`]) is written once, generic over [`TileOps`] and over the dot product
//! ([`Kind`]: `tdpbf16ps` into f32 here, `tdpbusd` into i32 in `amx_int8.rs`): [`matmul_amx`]
//! runs it on the hardware, [`matmul_model`] on `amx_model`'s software tiles, which is how
//! every CPU tests it (`amx_tests.rs`). Weights are packed per product, as `bf16_gemm` packs
//! them; packing them once per update is not done yet (docs/PERF.md, "Intel AMX").
use rayon::prelude::*;

use super::amx::{AmxTiles, TileOps, ROWS};
use super::amx_model::{ModelTiles, Order};
use super::amx_pack::{pack_a, STEP};
use super::bf16_pack::{pack_to, pairs, PairView, SharedMut};
use crate::kernels::gemm::Mat;
use crate::kernels::profile;

/// Column blocks (32 columns each) per task when the tasks split C's columns: the strip's B
/// panels (16 KB each at `k` = 256) stay in L2 while every row of blocks passes them. 4, 8 and
/// 16 were tried on the Emerald Rapids; they differed by less than that 2-core host's spread.
const STRIP: usize = 4;
/// Bytes between packed tile rows.
const PACKED_STRIDE: usize = 64;

/// Whether this process runs the AMX product: AMX-BF16 present and granted (`amx::enable`),
/// and the kernels' level at `amx` (`isa::level`, which `NMT_MAX_CPU_ISA` caps).
pub fn available() -> bool {
    super::isa::level() == super::isa::CpuLevel::Amx
}

/// The smallest `m`, `k` and `n` at which the tiles run a training product: below it the
/// product fills few tiles (at 16 or 32 rows a block computes mostly padding, and a `k` of 16
/// or 32 is one or two tile steps for a whole packing), and f32 is as fast or faster.
/// Measured on the recipe's products (`examples/gemm_shapes.rs amx`, Emerald Rapids, 2
/// threads, 2026-11-29, docs/logs/amx-2026-11-29/gemm-amx-2t.txt): at 16 batch rows the tiles
/// ran 0.45–1.20× f32, at 32 rows 0.74–1.57×, at 80 rows 1.03–2.18×, from 256 rows 1.19–3.30×.
pub const MIN_DIM: usize = 64;

/// Whether the tiles run a product of these dimensions ([`MIN_DIM`]); where not,
/// `products::matmul_wide` keeps it in f32.
pub fn pays(m: usize, k: usize, n: usize) -> bool {
    m.min(k).min(n) >= MIN_DIM
}

/// [`crate::kernels::gemm::matmul`]'s contract with the products in bf16 on AMX tiles; `threads > 1`
/// splits the blocks over rayon.
///
/// # Panics
/// Where [`available`] is false, on mismatched shapes or on views past their slices:
/// programming errors of the kernels (the caller checks the level first), never reachable from
/// user input.
pub fn matmul_amx(dst: &mut [f32], dst_off: usize, dst_rs: usize, a: Mat<'_, f32>, b: Mat<'_, f32>, accumulate: bool, threads: usize) {
    let new = || AmxTiles::new().expect("AMX product on a process without AMX tiles");
    assert!(available(), "AMX product on a process without AMX tiles");
    matmul_tiles(&new, dst, dst_off, dst_rs, a, b, accumulate, threads)
}

/// [`matmul_amx`] on the software model of the tiles: the same packing, blocks, steps and
/// edges, on any CPU (slowly: for tests), in the order of sums the hardware was measured to
/// follow (`amx_model::Order::MEASURED`).
pub fn matmul_model(dst: &mut [f32], dst_off: usize, dst_rs: usize, a: Mat<'_, f32>, b: Mat<'_, f32>, accumulate: bool, threads: usize) {
    matmul_model_in(Order::MEASURED, dst, dst_off, dst_rs, a, b, accumulate, threads)
}

/// [`matmul_model`] with `tdpbf16ps` adding in `order`.
#[allow(clippy::too_many_arguments)]
pub fn matmul_model_in(
    order: Order,
    dst: &mut [f32],
    dst_off: usize,
    dst_rs: usize,
    a: Mat<'_, f32>,
    b: Mat<'_, f32>,
    accumulate: bool,
    threads: usize,
) {
    matmul_tiles(&|| ModelTiles::with_order(order), dst, dst_off, dst_rs, a, b, accumulate, threads)
}

/// The bf16 product over the tiles that `new` makes (one set per task): packing, then [`drive`].
#[allow(clippy::too_many_arguments)]
fn matmul_tiles<T: TileOps>(
    new: &(dyn Fn() -> T + Sync),
    dst: &mut [f32],
    dst_off: usize,
    dst_rs: usize,
    a: Mat<'_, f32>,
    b: Mat<'_, f32>,
    accumulate: bool,
    threads: usize,
) {
    assert_eq!(a.cols, b.rows, "AMX gemm: inner dimensions differ");
    let (m, n, k) = (a.rows, b.cols, a.cols);
    if m == 0 || n == 0 {
        return;
    }
    // `k = 0` packs nothing, and `drive` zeroes or keeps `dst`.
    let kp = pairs(k).next_multiple_of(STEP);
    let t0 = profile::start();
    let pa = pack_a(PairView { data: a.data, off: a.off, outer: m, k, so: a.rs, sk: a.cs }, kp, threads);
    profile::stop(profile::PACK_A, t0);
    let t0 = profile::start();
    let pb = pack_to(PairView { data: b.data, off: b.off, outer: n, k, so: b.cs, sk: b.rs }, ROWS, kp, threads);
    profile::stop(profile::PACK_B, t0);
    drive::<Bf16, T>(new, Operands { pa: &pa, pb: &pb, m, n, lanes: kp }, dst, dst_off, dst_rs, accumulate, threads, m * n * k);
}

/// What a product's tiles compute: the dot-product instruction and the type of its sums.
pub(super) trait Kind {
    /// f32 (`tdpbf16ps`) or i32 (`tdpbusd`).
    type Acc: Copy + Default + Send + Sync;
    /// `C_ij += A_i · B_j`.
    fn dot<T: TileOps>(t: &mut T, i: usize, j: usize);
}

/// `tdpbf16ps`.
struct Bf16;

impl Kind for Bf16 {
    type Acc = f32;
    fn dot<T: TileOps>(t: &mut T, i: usize, j: usize) {
        t.dot_bf16(i, j)
    }
}

/// A product's packed operands: `pa` in panels of 16 rows of A, `pb` in panels of 16 columns
/// of B, each panel `lanes` 32-bit lanes of `k` long (a multiple of 16) in 16 × 16 blocks, a
/// block of `pa` an A tile (`[row][lane]`) and of `pb` a B tile (`[lane][column]`); zeros past
/// the matrices.
pub(super) struct Operands<'a> {
    pub pa: &'a [u32],
    pub pb: &'a [u32],
    pub m: usize,
    pub n: usize,
    pub lanes: usize,
}

/// The tiling driver: `dst = (accumulate ? dst : 0) + A · B` over packed operands, `dst`
/// `(m, n)` at row stride `dst_rs` from `dst_off`, on the tiles that `new` makes (one set per
/// task). `work` (`m·n·k`) decides whether `threads > 1` is worth the split.
///
/// # Panics
/// On a destination or packed operands too short for the shapes (programming errors of the
/// callers above, never reachable from user input).
#[allow(clippy::too_many_arguments)]
pub(super) fn drive<K: Kind, T: TileOps>(
    new: &(dyn Fn() -> T + Sync),
    ops: Operands<'_>,
    dst: &mut [K::Acc],
    dst_off: usize,
    dst_rs: usize,
    accumulate: bool,
    threads: usize,
    work: usize,
) {
    let (m, n, lanes) = (ops.m, ops.n, ops.lanes);
    if m == 0 || n == 0 {
        return;
    }
    assert!(m == 1 || dst_rs >= n, "AMX gemm: destination rows overlap");
    assert!(dst_off + (m - 1) * dst_rs + n <= dst.len(), "AMX gemm: destination out of bounds");
    assert!(lanes % STEP == 0, "AMX gemm: panels of {lanes} lanes");
    // A C tile row is 64 bytes: 16 sums of 4 bytes.
    assert_eq!(std::mem::size_of::<K::Acc>() * ROWS, super::amx::ROW_BYTES, "AMX gemm: sums of another size");
    let (mp, np) = (m.div_ceil(ROWS), n.div_ceil(ROWS));
    assert!(ops.pa.len() >= mp * lanes * ROWS && ops.pb.len() >= np * lanes * ROWS, "AMX gemm: packed operands too short");
    if lanes == 0 {
        if !accumulate {
            (0..m).for_each(|i| dst[dst_off + i * dst_rs..dst_off + i * dst_rs + n].fill(K::Acc::default()));
        }
        return;
    }
    let g = Grid { m, n, kp: lanes, rs: dst_rs, pa: ops.pa, pb: ops.pb, c: SharedMut(dst[dst_off..].as_mut_ptr()) };
    let (mb, nb) = (m.div_ceil(2 * ROWS), n.div_ceil(2 * ROWS));
    // Each task owns a strip of blocks along the dimension with more of them: one row of
    // blocks, or [`STRIP`] columns of them. Within a task the blocks are visited row by row, so
    // consecutive blocks write C in the same rows. Walked down a column of blocks instead, the
    // 960 × 256 × 8 000 product ran at 0.94–0.98× f32 on the Emerald Rapids, row by row 1.74×
    // (docs/logs/amx-2026-11-29/gemm-amx-2t.txt; why, we did not measure: C's pages in the TLB
    // is a guess). Each block's C tiles stay in the tiles over all of `k`, so C is read and
    // written once per product.
    let rows_outer = mb >= nb;
    let task = |o: usize| {
        let mut t = new();
        let mut edges = Edges::default();
        if rows_outer {
            (0..nb).for_each(|bj| g.block::<K, T>(&mut t, &mut edges, o, bj, accumulate));
        } else {
            let strip = o * STRIP..((o + 1) * STRIP).min(nb);
            (0..mb).for_each(|bi| strip.clone().for_each(|bj| g.block::<K, T>(&mut t, &mut edges, bi, bj, accumulate)));
        }
    };
    let tasks = if rows_outer { mb } else { nb.div_ceil(STRIP) };
    if threads > 1 && work >= 1 << 18 {
        (0..tasks).into_par_iter().for_each(task);
    } else {
        (0..tasks).for_each(task);
    }
}

/// The four 16 × 16 scratch tiles through which a block's edge tiles (rows past `m` or columns
/// past `n`) load and store: made once per task, not per block, and read only where the C
/// tile's own rows were copied in.
struct Edges<A>([[A; ROWS * ROWS]; 4]);

impl<A: Copy + Default> Default for Edges<A> {
    fn default() -> Self {
        Edges([[A::default(); ROWS * ROWS]; 4])
    }
}

/// One product's packed operands and its destination, shared by the tasks.
struct Grid<'a, A> {
    m: usize,
    n: usize,
    /// Lanes per packed panel, a multiple of [`STEP`].
    kp: usize,
    /// C's row stride, in elements.
    rs: usize,
    pa: &'a [u32],
    pb: &'a [u32],
    /// C's first element; each task writes only its own blocks.
    c: SharedMut<A>,
}

impl<A: Copy + Default> Grid<'_, A> {
    /// The 2 × 2 block `(bi, bj)` of C tiles over all of `k`: its C tiles loaded from C
    /// (`load`) or zeroed, every tile step's dot products, the tiles stored back. Tiles past C's
    /// last row or column panel are skipped; tiles across its edge go through `edges`.
    ///
    /// Within a step the loads are interleaved with the dot products (A₀ B₀ · C₀₀, B₁ · C₀₁,
    /// A₁ · C₁₀ C₁₁), so each dot product waits only for the tiles it reads; each C tile sees
    /// the steps in order of `k`, whatever the interleaving, so the sums are the same.
    fn block<K: Kind<Acc = A>, T: TileOps>(&self, t: &mut T, edges: &mut Edges<A>, bi: usize, bj: usize, load: bool) {
        let (mp, np) = (self.m.div_ceil(ROWS), self.n.div_ceil(ROWS));
        let (ni, nj) = ((mp - 2 * bi).min(2), (np - 2 * bj).min(2));
        // Bytes between rows: C's (4-byte f32 or i32) and the scratch's.
        let (c_stride, edge_stride) = (std::mem::size_of::<A>() * self.rs, std::mem::size_of::<A>() * ROWS);
        for i in 0..ni {
            for j in 0..nj {
                let (r0, c0) = (ROWS * (2 * bi + i), ROWS * (2 * bj + j));
                let (rows, cols) = ((self.m - r0).min(ROWS), (self.n - c0).min(ROWS));
                let c = self.c.ptr().wrapping_add(r0 * self.rs + c0);
                let edge = &mut edges.0[2 * i + j];
                // SAFETY: a whole tile (rows < 16 ≤ `m - r0`, 16 columns) lies inside C, asserted
                // by `drive`; an edge tile reads only its `rows × cols` from C and loads from the
                // 16 × 16 scratch (whose other entries hold earlier sums: rows and columns of a
                // tile are independent, and they are never stored to C).
                unsafe {
                    match (load, rows == ROWS && cols == ROWS) {
                        (false, _) => t.zero_c(i, j),
                        (true, true) => t.load_c(i, j, c.cast(), c_stride),
                        (true, false) => {
                            for r in 0..rows {
                                std::ptr::copy_nonoverlapping(c.add(r * self.rs), edge[r * ROWS..].as_mut_ptr(), cols);
                            }
                            t.load_c(i, j, edge.as_ptr().cast(), edge_stride);
                        }
                    }
                }
            }
        }
        let (a0, b0) = (2 * bi * self.kp * ROWS, 2 * bj * self.kp * ROWS);
        let panel = self.kp * ROWS;
        for step in 0..self.kp / STEP {
            let at = |p: &[u32], start: usize| p[start + step * STEP * ROWS..].as_ptr();
            // SAFETY: panel `2·bi + i < mp` (or `2·bj + j < np`) holds `kp` lanes × 16, so 16
            // rows of 64 bytes from step `step < kp / 16` lie inside it.
            unsafe {
                t.load_a(0, at(self.pa, a0), PACKED_STRIDE);
                t.load_b(0, at(self.pb, b0), PACKED_STRIDE);
                K::dot(t, 0, 0);
                if nj == 2 {
                    t.load_b(1, at(self.pb, b0 + panel), PACKED_STRIDE);
                    K::dot(t, 0, 1);
                }
                if ni == 2 {
                    t.load_a(1, at(self.pa, a0 + panel), PACKED_STRIDE);
                    K::dot(t, 1, 0);
                    if nj == 2 {
                        K::dot(t, 1, 1);
                    }
                }
            }
        }
        for i in 0..ni {
            for j in 0..nj {
                let (r0, c0) = (ROWS * (2 * bi + i), ROWS * (2 * bj + j));
                let (rows, cols) = ((self.m - r0).min(ROWS), (self.n - c0).min(ROWS));
                let c = self.c.ptr().wrapping_add(r0 * self.rs + c0);
                let edge = &mut edges.0[2 * i + j];
                // SAFETY: as for the loads; this task alone writes this block.
                unsafe {
                    if rows == ROWS && cols == ROWS {
                        t.store_c(i, j, c.cast(), c_stride);
                    } else {
                        t.store_c(i, j, edge.as_mut_ptr().cast(), edge_stride);
                        for r in 0..rows {
                            std::ptr::copy_nonoverlapping(edge[r * ROWS..].as_ptr(), c.add(r * self.rs), cols);
                        }
                    }
                }
            }
        }
    }
}
