//! RNNsearch's deep output up to the maxout layer as one op (Bahdanau et al. 2014, appendix
//! A.2.2): `t = maxout([s; c] O_sc + E y O_y + b)`, pairs `(t̃_{2k}, t̃_{2k+1})`.
//!
//! Inputs `sc (N, K1)` (the attention op's `[s_i; c_i]` rows), `ey (N, K2)` (the target
//! embeddings) and `wb (K1 + K2 + 1, 2l)` = `[O_sc; O_y; b]`; output `t (N, l)`. The composed
//! twin is `maxout_pairs(linear(cat([sc, ey], 1), [O_sc; O_y], b))`: this op never builds the
//! `(N, K1 + K2)` concatenation, nor the `(N, 2l)` pre-activation as a graph node, so candle
//! neither copies them nor allocates and adds their gradients. It keeps which element of each
//! pair won for its backward pass. A dropout mask `(N, l)` on `t`, when given, is applied here
//! too (the composed twin multiplies it after the maxout).
use candle_core::{Result, Shape, Tensor};

use super::gemm::{fill_rows, matmul, Mat, Real};
use super::linear::col_sums;
use super::saved_op::{apply, SavedForward};

/// `maxout([sc, ey] [O_sc; O_y] + b) ⊙ mask` with `wb = [O_sc; O_y; b]`.
pub fn deep_output(sc: &Tensor, ey: &Tensor, wb: &Tensor, mask: Option<&[f32]>) -> Result<Tensor> {
    let (n, k1) = sc.dims2()?;
    let (n2, k2) = ey.dims2()?;
    let (rows, m2) = wb.dims2()?;
    if n != n2 || rows != k1 + k2 + 1 || m2 % 2 != 0 || mask.is_some_and(|m| m.len() != n * m2 / 2) {
        candle_core::bail!("deep_output: sc {:?}, ey {:?}, wb {:?} (or the mask) do not fit", sc.dims(), ey.dims(), wb.dims());
    }
    apply(DeepOut { n, k1, k2, m2, mask: mask.map(<[f32]>::to_vec) }, sc, ey, wb)
}

struct DeepOut {
    n: usize,
    k1: usize,
    k2: usize,
    m2: usize,
    mask: Option<Vec<f32>>,
}

impl SavedForward for DeepOut {
    /// Per output unit, whether the second of its pair won.
    type Saved<T: Real> = Vec<bool>;
    const NAME: &'static str = "fused-deep-output";
    const SLOTS: (usize, usize) = (4, 5);

    fn out_shape(&self) -> Shape {
        Shape::from((self.n, self.m2 / 2))
    }

    /// `t (N, l)` and the winners.
    fn forward<T: Real>(&self, [sc, ey, wb]: [&[T]; 3]) -> (Vec<T>, Vec<bool>) {
        let (n, k1, k2, m2) = (self.n, self.k1, self.k2, self.m2);
        let threads = rayon::current_num_threads();
        let mut pre = fill_rows(&wb[(k1 + k2) * m2..], n);
        matmul(&mut pre, 0, m2, Mat::new(sc, n, k1), Mat::new(wb, k1, m2), true, threads);
        matmul(&mut pre, 0, m2, Mat::new(ey, n, k2), Mat::strided(wb, k1 * m2, k2, m2, m2), true, threads);
        let (mut t, second): (Vec<T>, Vec<bool>) =
            pre.chunks_exact(2).map(|p| if p[1] > p[0] { (p[1], true) } else { (p[0], false) }).unzip();
        if let Some(mask) = &self.mask {
            for (x, &k) in t.iter_mut().zip(mask) {
                *x = *x * T::from_f64(f64::from(k));
            }
        }
        (t, second)
    }

    /// Gradients of `(sc, ey, wb)` from `dt (N, l)`.
    fn backward<T: Real>(&self, second: Vec<bool>, [sc, ey, wb]: [&[T]; 3], _t: &[T], dt: &[T]) -> [Vec<T>; 3] {
        let (n, k1, k2, m2) = (self.n, self.k1, self.k2, self.m2);
        let threads = rayon::current_num_threads();
        // The pre-activation's gradient: each unit's gradient to its pair's winner (ties to
        // the first, as `maxout_pairs`).
        let mut dpre = vec![T::ZERO; n * m2];
        for (i, ((d, &g), s)) in dpre.chunks_exact_mut(2).zip(dt).zip(second).enumerate() {
            d[usize::from(s)] = match &self.mask {
                Some(mask) => g * T::from_f64(f64::from(mask[i])),
                None => g,
            };
        }
        let mut dsc = vec![T::ZERO; n * k1];
        matmul(&mut dsc, 0, k1, Mat::new(&dpre, n, m2), Mat::new(wb, k1, m2).t(), false, threads);
        let mut dey = vec![T::ZERO; n * k2];
        matmul(&mut dey, 0, k2, Mat::new(&dpre, n, m2), Mat::strided(wb, k1 * m2, k2, m2, m2).t(), false, threads);
        let mut dwb = vec![T::ZERO; (k1 + k2 + 1) * m2];
        matmul(&mut dwb, 0, m2, Mat::new(sc, n, k1).t(), Mat::new(&dpre, n, m2), false, threads);
        matmul(&mut dwb, k1 * m2, m2, Mat::new(ey, n, k2).t(), Mat::new(&dpre, n, m2), false, threads);
        let db = col_sums(&dpre, n, m2);
        dwb[(k1 + k2) * m2..].copy_from_slice(&db);
        [dsc, dey, dwb]
    }
}
