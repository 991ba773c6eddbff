//! A software model of the AMX tile instructions (issue 70): `tileloadd`, `tilestored`,
//! `tilezero`, `tdpbf16ps`, `tdpbssd` and `tdpbusd` on 8 tiles of 16 rows × 64 bytes, in plain
//! Rust, so that the tiling driver (`amx_gemm.rs`), its packing and its tails run and are tested
//! on every CPU, not only on the Xeons that have the tiles.
//!
//! **`tdpbf16ps`'s order of sums** ([`Order`]). The two sources disagree, and the model follows
//! either (issue 76):
//! - [`Order::PairByPair`], the Intrinsics Guide's pseudo-code: for each row `m` of C, pair `p`
//!   (a 32-bit lane of A's row) and column `n`, `C[m][n] += A[m].bf16[2p]·B[p].bf16[2n]`, then
//!   `+= A[m].bf16[2p+1]·B[p].bf16[2n+1]`, each addition into C rounded;
//! - [`Order::TwoAccumulators`], the current SDM's (vol. 2, TDPBF16PS): per row, two f32
//!   accumulators per column start at zero, one gathering the even products of the 16 pairs and
//!   one the odd; their sum is added to C once.
//!
//! Each addition is an f32 addition rounded to nearest even (a product of two bf16 is exact in
//! f32, so the SDM's "FMA" is the same), bf16 inputs that are denormal are read as zero and
//! denormal sums flushed to zero, whatever MXCSR says. `tdpbssd` adds the four sign-extended
//! byte products of a lane to an i32, wrapping; `tdpbusd` the same with A's bytes
//! zero-extended. Which order a CPU follows is measured by `amx_tests.rs`'s hardware test, which
//! prints the largest ulp difference between the tiles and each order on random operands:
//! [`Order::MEASURED`] is the one that matched on the CPUs named there, and the default.
use super::amx::{TileOps, ROWS, ROW_BYTES};

/// The order in which `tdpbf16ps` adds its products into C (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// The Intrinsics Guide's: each product added into C, pair by pair.
    PairByPair,
    /// The SDM's: even and odd products summed apart from zero over the tile, then into C.
    TwoAccumulators,
}

impl Order {
    /// The order this model follows by default: the one the hardware matched bit for bit
    /// (`amx_tests.rs`, `the_amx_tiles_agree_with_the_reference_and_the_model`).
    pub const MEASURED: Order = Order::TwoAccumulators;
}

/// 8 tiles of 16 rows × 64 bytes, zeroed, and the order of `tdpbf16ps`'s sums.
pub struct ModelTiles {
    t: [[[u8; ROW_BYTES]; ROWS]; 8],
    order: Order,
}

impl Default for ModelTiles {
    fn default() -> Self {
        ModelTiles::with_order(Order::MEASURED)
    }
}

impl ModelTiles {
    /// Zeroed tiles whose `tdpbf16ps` adds in `order`.
    pub fn with_order(order: Order) -> Self {
        ModelTiles { t: [[[0; ROW_BYTES]; ROWS]; 8], order }
    }
}

/// The f32 of bf16 `bits`, a denormal read as a zero of its sign.
fn bf16_daz(bits: u16) -> f32 {
    let b = if bits & 0x7F80 == 0 { bits & 0x8000 } else { bits };
    f32::from_bits((b as u32) << 16)
}

/// `x`, a denormal flushed to a zero of its sign.
fn ftz(x: f32) -> f32 {
    if x.is_subnormal() {
        f32::from_bits(x.to_bits() & 0x8000_0000)
    } else {
        x
    }
}

impl ModelTiles {
    /// 32-bit lane `n` of row `r` of tile `t`.
    fn lane(&self, t: usize, r: usize, n: usize) -> [u8; 4] {
        let row = &self.t[t][r];
        [row[4 * n], row[4 * n + 1], row[4 * n + 2], row[4 * n + 3]]
    }

    fn set_lane(&mut self, t: usize, r: usize, n: usize, v: [u8; 4]) {
        self.t[t][r][4 * n..4 * n + 4].copy_from_slice(&v);
    }

    /// # Safety
    /// `src + r·stride .. + 64` readable for every row `r`.
    unsafe fn load(&mut self, t: usize, src: *const u8, stride: usize) {
        for r in 0..ROWS {
            std::ptr::copy_nonoverlapping(src.add(r * stride), self.t[t][r].as_mut_ptr(), ROW_BYTES);
        }
    }

    /// The dot product of tiles `a` and `b` into `c`, lane by lane, by `step`: (C's lane, A's
    /// lane, B's lane) → C's new lane.
    fn dot(&mut self, c: usize, a: usize, b: usize, step: fn([u8; 4], [u8; 4], [u8; 4]) -> [u8; 4]) {
        for m in 0..ROWS {
            for p in 0..ROW_BYTES / 4 {
                let av = self.lane(a, m, p);
                for n in 0..ROW_BYTES / 4 {
                    let next = step(self.lane(c, m, n), av, self.lane(b, p, n));
                    self.set_lane(c, m, n, next);
                }
            }
        }
    }

    /// `tdpbf16ps` in [`Order::TwoAccumulators`]: per row of C, the even and odd products of
    /// the 16 pairs summed apart from zero, then their sum added to C.
    fn dot_two_accumulators(&mut self, c: usize, a: usize, b: usize) {
        let lanes = ROW_BYTES / 4;
        for m in 0..ROWS {
            let mut acc = [[0f32; 2]; ROW_BYTES / 4];
            for p in 0..lanes {
                let av = halves(self.lane(a, m, p));
                for (n, s) in acc.iter_mut().enumerate() {
                    let bv = halves(self.lane(b, p, n));
                    s[0] = ftz(s[0] + av[0] * bv[0]);
                    s[1] = ftz(s[1] + av[1] * bv[1]);
                }
            }
            for (n, s) in acc.iter().enumerate() {
                let sum = ftz(f32::from_le_bytes(self.lane(c, m, n)) + ftz(s[0] + s[1]));
                self.set_lane(c, m, n, sum.to_le_bytes());
            }
        }
    }
}

/// The two bf16 of a lane, as f32 (denormals read as zero).
fn halves(v: [u8; 4]) -> [f32; 2] {
    [bf16_daz(u16::from_le_bytes([v[0], v[1]])), bf16_daz(u16::from_le_bytes([v[2], v[3]]))]
}

/// One pair step of `tdpbf16ps` in [`Order::PairByPair`].
fn bf16_step(c: [u8; 4], a: [u8; 4], b: [u8; 4]) -> [u8; 4] {
    let (a, b) = (halves(a), halves(b));
    let mut s = f32::from_le_bytes(c);
    s = ftz(s + a[0] * b[0]);
    s = ftz(s + a[1] * b[1]);
    s.to_le_bytes()
}

/// One lane step of `tdpbssd`.
fn i8_step(c: [u8; 4], a: [u8; 4], b: [u8; 4]) -> [u8; 4] {
    let dot = (0..4).fold(0i32, |s, q| s.wrapping_add(a[q] as i8 as i32 * b[q] as i8 as i32));
    i32::from_le_bytes(c).wrapping_add(dot).to_le_bytes()
}

/// One lane step of `tdpbusd`: A's bytes unsigned.
fn u8i8_step(c: [u8; 4], a: [u8; 4], b: [u8; 4]) -> [u8; 4] {
    let dot = (0..4).fold(0i32, |s, q| s.wrapping_add(a[q] as i32 * b[q] as i8 as i32));
    i32::from_le_bytes(c).wrapping_add(dot).to_le_bytes()
}

impl TileOps for ModelTiles {
    fn zero_c(&mut self, i: usize, j: usize) {
        self.t[4 + 2 * i + j] = [[0; ROW_BYTES]; ROWS];
    }
    unsafe fn load_c(&mut self, i: usize, j: usize, src: *const u8, stride: usize) {
        self.load(4 + 2 * i + j, src, stride)
    }
    unsafe fn store_c(&mut self, i: usize, j: usize, dst: *mut u8, stride: usize) {
        let t = &self.t[4 + 2 * i + j];
        for (r, row) in t.iter().enumerate() {
            std::ptr::copy_nonoverlapping(row.as_ptr(), dst.add(r * stride), ROW_BYTES);
        }
    }
    unsafe fn load_a(&mut self, i: usize, src: *const u32, stride: usize) {
        self.load(i, src.cast(), stride)
    }
    unsafe fn load_b(&mut self, j: usize, src: *const u32, stride: usize) {
        self.load(2 + j, src.cast(), stride)
    }
    fn dot_bf16(&mut self, i: usize, j: usize) {
        match self.order {
            Order::PairByPair => self.dot(4 + 2 * i + j, i, 2 + j, bf16_step),
            Order::TwoAccumulators => self.dot_two_accumulators(4 + 2 * i + j, i, 2 + j),
        }
    }
    fn dot_i8(&mut self, i: usize, j: usize) {
        self.dot(4 + 2 * i + j, i, 2 + j, i8_step)
    }
    fn dot_u8i8(&mut self, i: usize, j: usize) {
        self.dot(4 + 2 * i + j, i, 2 + j, u8i8_step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 16 × 16 tile of u32 lanes from `f(row, lane)`.
    fn tile(f: impl Fn(usize, usize) -> u32) -> Vec<u32> {
        (0..ROWS * 16).map(|x| f(x / 16, x % 16)).collect()
    }

    fn bf16_pair(lo: f32, hi: f32) -> u32 {
        (lo.to_bits() >> 16) | (hi.to_bits() & 0xFFFF_0000)
    }

    /// Small integers are exact in bf16 and in the f32 sums: the model's product is the
    /// integer one, each C tile gets its own A row and B column, and loads and stores keep
    /// their strides.
    #[test]
    fn bf16_tiles_multiply_exactly_on_small_integers() {
        let av = |m: usize, k: usize| ((m * 3 + k * 7) % 11) as f32 - 5.0;
        let bv = |k: usize, n: usize| ((k * 5 + n * 2) % 9) as f32 - 4.0;
        let mut t = ModelTiles::default();
        let a: Vec<Vec<u32>> = (0..2).map(|i| tile(|m, p| bf16_pair(av(16 * i + m, 2 * p), av(16 * i + m, 2 * p + 1)))).collect();
        let b: Vec<Vec<u32>> = (0..2).map(|j| tile(|p, n| bf16_pair(bv(2 * p, 16 * j + n), bv(2 * p + 1, 16 * j + n)))).collect();
        // C starts at 1 everywhere, read from a buffer with a wider row stride.
        let c0 = vec![1.0f32; 16 * 40];
        let mut out = vec![0f32; 16 * 40];
        for (i, ai) in a.iter().enumerate() {
            for (j, bj) in b.iter().enumerate() {
                // SAFETY: each buffer holds 16 rows at its stride.
                unsafe {
                    t.load_a(i, ai.as_ptr(), 64);
                    t.load_b(j, bj.as_ptr(), 64);
                    t.load_c(i, j, c0.as_ptr().cast(), 160);
                    t.dot_bf16(i, j);
                    t.store_c(i, j, out.as_mut_ptr().add(16 * j).cast(), 160);
                }
                for m in 0..16 {
                    for n in 0..16 {
                        let want = 1.0 + (0..32).map(|k| av(16 * i + m, k) * bv(k, 16 * j + n)).sum::<f32>();
                        assert_eq!(out[m * 40 + 16 * j + n], want, "C{i}{j}[{m}][{n}]");
                    }
                }
            }
        }
        t.zero_c(1, 1);
        // SAFETY: as above.
        unsafe { t.store_c(1, 1, out.as_mut_ptr().cast(), 160) };
        assert!((0..16).all(|m| out[m * 40..m * 40 + 16].iter().all(|&x| x == 0.0)));
    }

    #[test]
    fn bf16_denormals_are_read_as_zero_and_sums_flushed() {
        assert_eq!(bf16_daz(0x0001), 0.0);
        assert_eq!(bf16_daz(0x8001).to_bits(), 0x8000_0000);
        assert_eq!(bf16_daz(0x3F80), 1.0);
        // (2⁻⁶⁴)² = 2⁻¹²⁸ is an f32 denormal: flushed.
        let x = bf16_pair(2f32.powi(-64), 0.0);
        let s = bf16_step(0f32.to_le_bytes(), x.to_le_bytes(), x.to_le_bytes());
        assert_eq!(f32::from_le_bytes(s), 0.0);
    }

    #[test]
    fn int8_tiles_sum_four_signed_bytes_per_lane() {
        let mut t = ModelTiles::default();
        let a = tile(|_, p| u32::from_le_bytes([1, 255, 127, 128]) * (p == 3) as u32);
        let b = tile(|p, n| u32::from_le_bytes([2, 3, n as u8, 1]) * (p == 3) as u32);
        let mut c = vec![0i32; 256];
        // SAFETY: 16 rows of 64 bytes each.
        unsafe {
            t.load_a(1, a.as_ptr(), 64);
            t.load_b(0, b.as_ptr(), 64);
            t.zero_c(1, 0);
            t.dot_i8(1, 0);
            t.store_c(1, 0, c.as_mut_ptr().cast(), 64);
        }
        for (n, &x) in c.iter().enumerate().take(16) {
            // 1·2 + (−1)·3 + 127·n + (−128)·1
            assert_eq!(x, 2 - 3 + 127 * n as i32 - 128);
        }
        // tdpbusd reads A's bytes unsigned: 1·2 + 255·3 + 127·n + 128·1, added to the above.
        // SAFETY: as above.
        unsafe {
            t.dot_u8i8(1, 0);
            t.store_c(1, 0, c.as_mut_ptr().cast(), 64);
        }
        for (n, &x) in c.iter().enumerate().take(16) {
            assert_eq!(x, (2 - 3 + 127 * n as i32 - 128) + (2 + 765 + 127 * n as i32 + 128));
        }
    }
}
