//! u8 × i8 → i32 GEMM on AMX tiles (`tdpbusd`, issue 70), for the int8 search's products where
//! a step has at least 16 rows: the contract of `int8.rs`'s integer product (rten-gemm's
//! `vpdpbusd` kernel), activations as unsigned bytes (`q + 128`) and 7-bit weights, exact `i32`
//! sums: `dst[i][j] (+)= Σ_k a[i][k] · w[j][k]`.
//!
//! Weights are packed once ([`AmxI8Weights`]) into panels of 16 weight rows, each 16 × 16 block
//! a `B_j` tile: a row of the tile holds 4 consecutive `k` of each of the 16 weight rows, as
//! `tdpbusd` wants its second operand. Activations are packed once per step ([`AmxI8Acts`])
//! into panels of 16 rows, each tile row 64 consecutive bytes of one row. `k` is padded with
//! zeros to a multiple of 64, rows and weight rows to 16: zero weights add nothing whatever the
//! activations' bytes.
//! The tiling is `amx_gemm.rs`'s driver, the same 2 × 2 blocks and edges, on `i32` sums.
//!
//! **In the search** (issue 76): where [`available`] (AMX-INT8, tiles granted, and
//! `NMT_MAX_CPU_ISA` at `amx`), `int8.rs` packs each 512-row chunk of its weights here as well,
//! and a step with at least [`MIN_ROWS`] activation rows multiplies on the tiles instead of
//! rten-gemm's `vpdpbusd` kernel. Both give the exact `i32` sums, so the search's output is the
//! same bit for bit either way (tested below, on the model and on the hardware).
use super::amx::{AmxTiles, TileOps, ROWS};
use super::amx_gemm::{drive, Kind, Operands};
use super::amx_model::ModelTiles;
use super::bf16_pack::Packed;

/// Bytes of `k` per 32-bit lane.
const QUAD: usize = 4;
/// Lanes of `k` per tile step.
const STEP: usize = 16;

/// `tdpbusd`: unsigned bytes of A times signed bytes of B into `i32`.
struct U8I8;

impl Kind for U8I8 {
    type Acc = i32;
    fn dot<T: TileOps>(t: &mut T, i: usize, j: usize) {
        t.dot_u8i8(i, j)
    }
}

/// Whether this process runs the int8 tiles: AMX-INT8 present, the tiles granted, and the
/// kernels' level at `amx` (`isa::level`, which `NMT_MAX_CPU_ISA` caps).
pub fn available() -> bool {
    super::cpuid::cpu().amx_int8 && super::isa::level() == super::isa::CpuLevel::Amx
}

/// Activation rows from which a search step's products run on the tiles rather than on
/// rten-gemm: below it a step fills less than one tile of rows, and the tiles compute zeros.
/// At the bench's steps (32 rows greedy, 160 at beam 5, split over 2 threads) the search ran
/// 1.16× and 1.11× rten-gemm's on an Emerald Rapids (docs/PERF.md, "Intel AMX"); 16 itself
/// is the tile's height, not a measured threshold.
pub const MIN_ROWS: usize = 16;

/// Which tiles run an int8 product: the hardware's, or the software model's (tests, on any
/// CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum I8Tiles {
    Hardware,
    Model,
}

impl I8Tiles {
    /// The tiles the search runs on this process: the hardware's where [`available`].
    pub fn for_search() -> Option<I8Tiles> {
        available().then_some(I8Tiles::Hardware)
    }

    /// [`matmul_u8i8`] (or its model) on activations packed once: `dst (a.m, w.n)` at row
    /// stride `w.n` = `a · wᵀ`.
    pub fn product(self, dst: &mut [i32], a: &AmxI8Acts, w: &AmxI8Weights, threads: usize) {
        let new_hw = || AmxTiles::new().expect("AMX int8 product on a process without AMX tiles");
        match self {
            I8Tiles::Hardware => {
                assert!(available(), "AMX int8 product on a process without AMX-INT8 tiles");
                packed_product(&new_hw, dst, 0, w.n, a, w, false, threads)
            }
            I8Tiles::Model => packed_product(&ModelTiles::default, dst, 0, w.n, a, w, false, threads),
        }
    }
}

/// Activations `(m, k)` as unsigned bytes, packed once for `tdpbusd` (panels of 16 rows, each
/// 16 × 16 block an A tile), for a search step that multiplies them by every chunk of the
/// weights.
pub struct AmxI8Acts {
    m: usize,
    k: usize,
    packed: Packed,
}

impl AmxI8Acts {
    /// Packs the row-major `(m, k)` bytes `a`.
    ///
    /// # Panics
    /// When `a` holds fewer than `m · k` bytes (a programming error of the caller).
    pub fn new(a: &[u8], m: usize, k: usize) -> AmxI8Acts {
        assert!(a.len() >= m * k, "AMX int8 activations: {} bytes for ({m}, {k})", a.len());
        AmxI8Acts { m, k, packed: pack(a, m, k, k, lanes(k), false, |x| x) }
    }
}

/// `(rows, k)` bytes at row stride `rs` packed into panels of 16 rows × `lanes` 4-byte lanes,
/// each 16 × 16 block row-major (`[row][lane]`, an A tile) or transposed (`[lane][row]`, a B
/// tile); zeros past the matrix.
fn pack<B: Copy>(data: &[B], rows: usize, k: usize, rs: usize, lanes: usize, transposed: bool, byte: fn(B) -> u8) -> Packed {
    let panels = rows.div_ceil(ROWS);
    let mut out = Packed::with_len(panels * lanes * ROWS);
    out.fill(0);
    for r in 0..rows {
        let row = &data[r * rs..r * rs + k];
        let (panel, rr) = (r / ROWS, r % ROWS);
        for (q, quad) in row.chunks(QUAD).enumerate() {
            let mut bytes = [0u8; QUAD];
            quad.iter().zip(&mut bytes).for_each(|(&x, b)| *b = byte(x));
            let (step, l) = (q / STEP, q % STEP);
            let block = (panel * lanes + step * STEP) * ROWS;
            let at = if transposed { l * ROWS + rr } else { rr * STEP + l };
            out[block + at] = u32::from_le_bytes(bytes);
        }
    }
    out
}

/// Lanes of `k` per packed panel: `⌈k / 4⌉` rounded up to a tile step.
fn lanes(k: usize) -> usize {
    k.div_ceil(QUAD).next_multiple_of(STEP)
}

/// Int8 weights `(n, k)` packed once for `tdpbusd` (the module doc's layout).
#[derive(Clone)]
pub struct AmxI8Weights {
    n: usize,
    k: usize,
    packed: Packed,
}

impl AmxI8Weights {
    /// Packs the row-major `(n, k)` weights `w`.
    ///
    /// # Panics
    /// When `w` holds fewer than `n · k` values (a programming error of the caller).
    pub fn new(w: &[i8], n: usize, k: usize) -> AmxI8Weights {
        assert!(w.len() >= n * k, "AMX int8 weights: {} values for ({n}, {k})", w.len());
        AmxI8Weights { n, k, packed: pack(w, n, k, k, lanes(k), true, |x| x as u8) }
    }
}

/// `dst = (accumulate ? dst : 0) + a · wᵀ` in exact `i32`: `a` is `(m, w.k)` bytes at row
/// stride `a_rs`, `dst` `(m, w.n)` at row stride `dst_rs` from `dst_off`.
///
/// # Panics
/// Where [`available`] is false, or on operands past their slices: programming errors of the
/// caller, never reachable from user input.
#[allow(clippy::too_many_arguments)]
pub fn matmul_u8i8(
    dst: &mut [i32],
    dst_off: usize,
    dst_rs: usize,
    a: &[u8],
    m: usize,
    a_rs: usize,
    w: &AmxI8Weights,
    accumulate: bool,
    threads: usize,
) {
    assert!(available(), "AMX int8 product on a process without AMX-INT8 tiles");
    let new = || AmxTiles::new().expect("AMX int8 product on a process without AMX tiles");
    product(&new, dst, dst_off, dst_rs, a, m, a_rs, w, accumulate, threads)
}

/// [`matmul_u8i8`] on the software model of the tiles, on any CPU (slowly: for tests).
#[allow(clippy::too_many_arguments)]
pub fn matmul_u8i8_model(
    dst: &mut [i32],
    dst_off: usize,
    dst_rs: usize,
    a: &[u8],
    m: usize,
    a_rs: usize,
    w: &AmxI8Weights,
    accumulate: bool,
    threads: usize,
) {
    product(&ModelTiles::default, dst, dst_off, dst_rs, a, m, a_rs, w, accumulate, threads)
}

#[allow(clippy::too_many_arguments)]
fn product<T: TileOps>(
    new: &(dyn Fn() -> T + Sync),
    dst: &mut [i32],
    dst_off: usize,
    dst_rs: usize,
    a: &[u8],
    m: usize,
    a_rs: usize,
    w: &AmxI8Weights,
    accumulate: bool,
    threads: usize,
) {
    assert!(a_rs >= w.k && (m == 0 || (m - 1) * a_rs + w.k <= a.len()), "AMX int8: activations out of bounds");
    let acts = AmxI8Acts { m, k: w.k, packed: pack(a, m, w.k, a_rs, lanes(w.k), false, |x| x) };
    packed_product(new, dst, dst_off, dst_rs, &acts, w, accumulate, threads)
}

/// [`product`] on activations packed once.
#[allow(clippy::too_many_arguments)]
fn packed_product<T: TileOps>(
    new: &(dyn Fn() -> T + Sync),
    dst: &mut [i32],
    dst_off: usize,
    dst_rs: usize,
    a: &AmxI8Acts,
    w: &AmxI8Weights,
    accumulate: bool,
    threads: usize,
) {
    if a.m == 0 || w.n == 0 {
        return;
    }
    assert_eq!(a.k, w.k, "AMX int8: activations for another inner dimension");
    let ops = Operands { pa: &a.packed, pb: &w.packed, m: a.m, n: w.n, lanes: lanes(w.k) };
    drive::<U8I8, T>(new, ops, dst, dst_off, dst_rs, accumulate, threads, a.m * w.n * w.k);
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    /// `(m, k, n)`: tails of rows, weight rows and `k` (not multiples of 4, 16 or 64), one and
    /// several `k` blocks (a block is 8 steps, 512 bytes), a parallel product.
    const SHAPES: [(usize, usize, usize); 10] = [
        (1, 1, 1),
        (16, 64, 16),
        (17, 65, 15),
        (5, 3, 40),
        (33, 256, 31),
        (48, 513, 20),
        (64, 1100, 33),
        (3, 600, 70),
        (100, 256, 96),
        (31, 127, 1),
    ];

    fn case(seed: u64, (m, k, n): (usize, usize, usize)) -> (Vec<u8>, Vec<i8>, Vec<i32>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // Row stride k + 5, so that a stride other than k is read; 7-bit weights as int8.rs's.
        let a: Vec<u8> = (0..m * (k + 5)).map(|_| rng.gen()).collect();
        let w: Vec<i8> = (0..n * k).map(|_| rng.gen_range(-63..=63)).collect();
        let c0: Vec<i32> = (0..m * (n + 2)).map(|_| rng.gen_range(-1000..1000)).collect();
        (a, w, c0)
    }

    /// The sums written out, at `dst`'s stride `n + 2`.
    fn reference(a: &[u8], w: &[i8], c0: &[i32], (m, k, n): (usize, usize, usize), acc: bool) -> Vec<i32> {
        let mut c = c0.to_vec();
        for i in 0..m {
            for j in 0..n {
                let s: i32 = (0..k).map(|p| a[i * (k + 5) + p] as i32 * w[j * k + p] as i32).sum();
                c[i * (n + 2) + j] = if acc { c0[i * (n + 2) + j] + s } else { s };
            }
        }
        c
    }

    type Product = fn(&mut [i32], usize, usize, &[u8], usize, usize, &AmxI8Weights, bool, usize);

    fn check(f: Product, what: &str, threads: &[usize]) {
        for (s, &shape) in SHAPES.iter().enumerate() {
            let (m, k, n) = shape;
            let (a, w, c0) = case(s as u64, shape);
            let packed = AmxI8Weights::new(&w, n, k);
            for acc in [false, true] {
                let want = reference(&a, &w, &c0, shape, acc);
                for &t in threads {
                    let mut got = c0.clone();
                    f(&mut got, 0, n + 2, &a, m, k + 5, &packed, acc, t);
                    assert_eq!(got, want, "{what} {shape:?} accumulate {acc}, {t} threads");
                }
            }
        }
    }

    #[test]
    fn the_model_gives_the_exact_sums_at_every_shape_class() {
        check(matmul_u8i8_model, "model", &[1, 2, 64]);
    }

    #[test]
    fn the_amx_int8_tiles_give_the_exact_sums() {
        if !available() {
            println!("AMX TESTS NOT RUN (amx_int8): this CPU has no AMX-INT8 tiles, or the kernel refused them; only the software model was tested");
            return;
        }
        check(matmul_u8i8, "AMX", &[1, 2, 4, 16, 64]);
    }

    /// The search's products (`int8::block`) on the tiles equal rten-gemm's bit for bit (both
    /// sums are exact): on the model on every CPU, on the hardware where it runs. Steps below
    /// [`MIN_ROWS`] rows stay on rten-gemm.
    #[test]
    fn the_search_products_on_tiles_equal_rten_gemms() {
        use crate::kernels::cpu::engine::int8::{block, QActs, QWeights};
        let mut tiles = vec![I8Tiles::Model];
        match I8Tiles::for_search() {
            Some(t) => tiles.push(t),
            None => println!("AMX TESTS NOT RUN (amx_int8 search): no AMX-INT8 tiles at this level; the model was tested"),
        }
        let mut rng = ChaCha8Rng::seed_from_u64(76);
        for (rows, k, n) in [(600, 256, 16), (1100, 100, 40), (40, 7, 17), (513, 64, 5)] {
            let w: Vec<f32> = (0..rows * k).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let a: Vec<f32> = (0..n * k).map(|_| rng.gen_range(-3.0..3.0)).collect();
            let plain = QWeights::with_tiles(&w, rows, k, None);
            let mut want = vec![0.25f32; n * (rows + 2)];
            block(&plain, 0, rows, &QActs::new(&a, n, &plain), &mut want, rows + 2);
            for &t in &tiles {
                let qw = QWeights::with_tiles(&w, rows, k, Some(t));
                let mut got = vec![0.25f32; n * (rows + 2)];
                block(&qw, 0, rows, &QActs::new(&a, n, &qw), &mut got, rows + 2);
                assert_eq!(got, want, "{t:?}: ({rows}, {k}) by {n} rows");
            }
        }
    }
}
