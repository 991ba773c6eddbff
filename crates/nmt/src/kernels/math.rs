//! The kernels' element types ([`Real`]: `f32`, `f64`) and branch-free elementwise functions that
//! the compiler vectorises ([`FastMath`]): portable Rust on the floor both rooms stand on. The
//! CPU-feature dispatch that compiles them for AVX-512/AVX2 (`simd_dispatch!`) is the CPU's, in
//! `kernels::cpu::engine::isa`.
//!
//! `f32` uses rational/polynomial approximations (Eigen's `ptanh_float`, Cephes' `expf`):
//! libm's scalar `tanhf`/`expm1f` were 17 % of the op-by-op training profile. Their error
//! is below 1e-6 absolute against libm (tested in `tests/kernels.rs`). `f64`, used only by
//! gradient checks, keeps libm so that the fused and composed ops agree to rounding.

/// tanh for f32, after Eigen's `ptanh_float`: a 13/6 rational approximation on [-7.9, 7.9].
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    const CLAMP: f32 = 7.905_311;
    let x = x.clamp(-CLAMP, CLAMP);
    let x2 = x * x;
    let mut p = -2.760_768_5e-16_f32;
    p = p * x2 + 2.000_188e-13;
    p = p * x2 + -8.604_672e-11;
    p = p * x2 + 5.122_297e-8;
    p = p * x2 + 1.485_722_4e-5;
    p = p * x2 + 6.372_619e-4;
    p = p * x2 + 4.893_524_6e-3;
    p *= x;
    let mut q = 1.198_258_4e-6_f32;
    q = q * x2 + 1.185_347_1e-4;
    q = q * x2 + 2.268_434_6e-3;
    q = q * x2 + 4.893_525e-3;
    p / q
}

/// exp for f32, after Cephes' `expf`: range reduction by powers of two and a degree-6 polynomial.
/// Integer-only bit manipulation (no float→int `as`, whose saturating semantics compile to
/// scalar code), so loops over it vectorise.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    let x = x.clamp(-87.3, 88.0);
    // round(x / ln 2) by the 1.5·2^23 trick: the sum's low mantissa bits hold the integer.
    const MAGIC: f32 = 12_582_912.0;
    let t = x * std::f32::consts::LOG2_E + MAGIC;
    let n_int = t.to_bits().wrapping_sub(MAGIC.to_bits()) as i32;
    let n = t - MAGIC;
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let mut y = 1.987_569_1e-4_f32;
    y = y * r + 1.398_199_9e-3;
    y = y * r + 8.333_452e-3;
    y = y * r + 4.166_579_6e-2;
    y = y * r + 1.666_666_5e-1;
    y = y * r + 0.5; // Cephes: 5.0000001e-1, which rounds to 0.5 in f32
    y = y * r * r + r + 1.0;
    // 2^n from its exponent bits; n is in [-126, 127] after the clamp.
    let pow2 = f32::from_bits(((n_int + 127) as u32) << 23);
    y * pow2
}

/// The scalar functions the kernels need, fast for `f32`, exact for `f64`.
pub trait FastMath: Sized {
    fn tanh_fast(self) -> Self;
    fn exp_fast(self) -> Self;
    fn sigmoid_fast(self) -> Self;
}

impl FastMath for f32 {
    #[inline(always)]
    fn tanh_fast(self) -> f32 {
        tanh_f32(self)
    }
    #[inline(always)]
    fn exp_fast(self) -> f32 {
        exp_f32(self)
    }
    #[inline(always)]
    fn sigmoid_fast(self) -> f32 {
        // σ(x) = (1 + tanh(x/2)) / 2, exactly.
        0.5 + 0.5 * tanh_f32(0.5 * self)
    }
}

impl FastMath for f64 {
    #[inline(always)]
    fn tanh_fast(self) -> f64 {
        self.tanh()
    }
    #[inline(always)]
    fn exp_fast(self) -> f64 {
        self.exp()
    }
    #[inline(always)]
    fn sigmoid_fast(self) -> f64 {
        1.0 / (1.0 + (-self).exp())
    }
}

/// Dot product with 16 independent accumulators, so the loop vectorises without reassociation.
#[inline(always)]
pub fn dot<T: Real>(a: &[T], b: &[T]) -> T {
    let n = a.len().min(b.len());
    let mut acc = [T::ZERO; 16];
    let full = n / 16 * 16;
    for (ca, cb) in a[..full].chunks_exact(16).zip(b[..full].chunks_exact(16)) {
        for k in 0..16 {
            acc[k] += ca[k] * cb[k];
        }
    }
    let mut s = T::ZERO;
    for k in full..n {
        s += a[k] * b[k];
    }
    for x in acc {
        s += x;
    }
    s
}

/// `y += alpha * x`.
#[inline(always)]
pub fn axpy<T: Real>(alpha: T, x: &[T], y: &mut [T]) {
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi;
    }
}

/// Unit by unit over rows of `H` units: `out[k][j] = f(x, o)[k]`, with `x[i] = ins[i][j]` and
/// `o[k]` the value `out[k][j]` held before (for a row updated in place). `H` is `out[0]`'s
/// length; every row must have at least `H` units.
///
/// Used by the recurrent cells' backward rows (`gru_cell.rs`, `lstm_cell.rs`), which read up to
/// eight rows and write five to seven rows split from one buffer. Written as one indexed loop,
/// LLVM kept it scalar (`vmulss`, `perf annotate`, 2026-11-27): it could not prove the written
/// rows disjoint, and with the inputs indexed inside the loop it kept a bounds check that
/// peeled the last vector of every pass to scalar code. Here 16 units at a time are copied into
/// arrays on the stack, computed there (a loop over local arrays only, which vectorises) and
/// copied out. The same operations per unit, in the same order: the same floats.
#[inline(always)]
pub fn lanes<T: Real, const I: usize, const K: usize>(ins: [&[T]; I], out: [&mut [T]; K], f: impl Fn([T; I], [T; K]) -> [T; K]) {
    const L: usize = 16;
    let h = out[0].len();
    let ins = ins.map(|r| &r[..h]);
    let out = out.map(|r| &mut r[..h]);
    let mut j0 = 0;
    while j0 + L <= h {
        let (mut x, mut o) = ([[T::ZERO; L]; I], [[T::ZERO; L]; K]);
        for i in 0..I {
            x[i].copy_from_slice(&ins[i][j0..j0 + L]);
        }
        for k in 0..K {
            o[k].copy_from_slice(&out[k][j0..j0 + L]);
        }
        let mut y = [[T::ZERO; L]; K];
        for l in 0..L {
            let v = f(std::array::from_fn(|i| x[i][l]), std::array::from_fn(|k| o[k][l]));
            for k in 0..K {
                y[k][l] = v[k];
            }
        }
        for k in 0..K {
            out[k][j0..j0 + L].copy_from_slice(&y[k]);
        }
        j0 += L;
    }
    for j in j0..h {
        let v = f(std::array::from_fn(|i| ins[i][j]), std::array::from_fn(|k| out[k][j]));
        for k in 0..K {
            out[k][j] = v[k];
        }
    }
}

/// Element types the kernels run in: `f32` for speed, `f64` for gradient checks.
pub trait Real:
    Copy
    + Send
    + Sync
    + 'static
    + PartialOrd
    + std::fmt::Debug
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::AddAssign
    + std::ops::Neg<Output = Self>
    + FastMath
{
    const ZERO: Self;
    const ONE: Self;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    fn ln(self) -> Self;
    fn max(self, other: Self) -> Self;
}

macro_rules! impl_real {
    ($t:ty) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn max(self, other: Self) -> Self {
                <$t>::max(self, other)
            }
        }
    };
}
impl_real!(f32);
impl_real!(f64);
