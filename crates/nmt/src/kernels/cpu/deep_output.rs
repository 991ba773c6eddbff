//! RNNsearch's deep output up to its hidden layer as one op (Bahdanau et al. 2014, appendix
//! A.2.2): `t = maxout([s; c] O_sc + E y O_y + b)`, pairs `(t̃_{2k}, t̃_{2k+1})`, or with
//! `model.output_layer = "tanh"` (Nematus, Marian) `t = tanh([s; c] O_sc + E y O_y + b)`.
//!
//! Inputs `sc (N, K1)` (the attention op's `[s_i; c_i]` rows), `ey (N, K2)` (the target
//! embeddings) and `wb (K1 + K2 + 1, w)` = `[O_sc; O_y; b]` (`w = 2l` for maxout, `l` for tanh);
//! output `t (N, l)`. The composed twin is `act(linear(cat([sc, ey], 1), [O_sc; O_y], b))`: this
//! op never builds the `(N, K1 + K2)` concatenation, nor the `(N, w)` pre-activation as a graph
//! node, so candle neither copies them nor allocates and adds their gradients. For its backward
//! pass it keeps which element of each pair won (maxout) or `tanh`'s output before the mask. A
//! dropout mask `(N, l)` on `t`, when given, is applied here too (the composed twin multiplies
//! it after the activation).
use candle_core::{Result, Shape, Tensor};

use super::linear::col_sums;
use super::op::apply;
use crate::config::OutputLayer;
use crate::kernels::cpu::engine::products::{matmul_wide, Precision};
use crate::kernels::fused_op::{FusedOp, Host};
use crate::kernels::gemm::{fill_rows, Mat, Real};

/// `act([sc, ey] [O_sc; O_y] + b) ⊙ mask` with `wb = [O_sc; O_y; b]`, its products in
/// `products` (`engine::products::matmul_wide`).
pub fn deep_output(sc: &Tensor, ey: &Tensor, wb: &Tensor, layer: OutputLayer, mask: Option<&[f32]>, products: Precision) -> Result<Tensor> {
    let (n, k1) = sc.dims2()?;
    let (n2, k2) = ey.dims2()?;
    let (rows, m2) = wb.dims2()?;
    if layer == OutputLayer::Maxout && m2 % 2 != 0 {
        candle_core::bail!("deep_output: maxout needs an even width, wb is {:?}", wb.dims());
    }
    let op = DeepOut { n, k1, k2, m2, layer, mask: mask.map(<[f32]>::to_vec), products };
    if n != n2 || rows != k1 + k2 + 1 || mask.is_some_and(|m| m.len() != n * op.units()) {
        candle_core::bail!("deep_output: sc {:?}, ey {:?}, wb {:?} (or the mask) do not fit", sc.dims(), ey.dims(), wb.dims());
    }
    apply(op, sc, ey, wb)
}

struct DeepOut {
    n: usize,
    k1: usize,
    k2: usize,
    /// The pre-activation's width `w`.
    m2: usize,
    layer: OutputLayer,
    mask: Option<Vec<f32>>,
    products: Precision,
}

impl DeepOut {
    /// The output's width `l`: `w / 2` for maxout's pairs, `w` for tanh.
    fn units(&self) -> usize {
        match self.layer {
            OutputLayer::Maxout => self.m2 / 2,
            OutputLayer::Tanh => self.m2,
        }
    }
}

/// What the backward pass needs of the activation.
pub enum Activated<T> {
    /// Per output unit, whether the second of its pair won.
    Winners(Vec<bool>),
    /// `tanh(t~)` before the mask: its derivative is `1 − t²`.
    Tanh(Vec<T>),
}

impl<T: Real> FusedOp<Host<T>> for DeepOut {
    type Saved = Activated<T>;
    const NAME: &'static str = "fused-deep-output";
    const SLOTS: Option<(usize, usize)> = Some((4, 5));

    fn out_shape(&self) -> Shape {
        Shape::from((self.n, self.units()))
    }

    /// `t (N, l)` and what its backward pass needs.
    fn forward(&self, _: &Host<T>, [sc, ey, wb]: [&[T]; 3]) -> Result<(Vec<T>, Activated<T>)> {
        let (n, k1, k2, m2) = (self.n, self.k1, self.k2, self.m2);
        let threads = rayon::current_num_threads();
        let mut pre = fill_rows(&wb[(k1 + k2) * m2..], n);
        matmul_wide(self.products, &mut pre, 0, m2, Mat::new(sc, n, k1), Mat::new(wb, k1, m2), true, threads);
        matmul_wide(self.products, &mut pre, 0, m2, Mat::new(ey, n, k2), Mat::strided(wb, k1 * m2, k2, m2, m2), true, threads);
        let (mut t, saved) = match self.layer {
            OutputLayer::Maxout => {
                let (t, second): (Vec<T>, Vec<bool>) =
                    pre.chunks_exact(2).map(|p| if p[1] > p[0] { (p[1], true) } else { (p[0], false) }).unzip();
                (t, Activated::Winners(second))
            }
            OutputLayer::Tanh => {
                let t: Vec<T> = pre.iter().map(|&x| x.tanh_fast()).collect();
                (t.clone(), Activated::Tanh(t))
            }
        };
        if let Some(mask) = &self.mask {
            for (x, &k) in t.iter_mut().zip(mask) {
                *x = *x * T::from_f64(f64::from(k));
            }
        }
        Ok((t, saved))
    }

    /// Gradients of `(sc, ey, wb)` from `dt (N, l)`.
    fn backward(&self, _: &Host<T>, [sc, ey, wb]: [&[T]; 3], saved: Activated<T>, _t: &[T], dt: &[T]) -> Result<[Vec<T>; 3]> {
        let (n, k1, k2, m2) = (self.n, self.k1, self.k2, self.m2);
        let threads = rayon::current_num_threads();
        // The gradient at the activation's output, before the mask.
        let dact = |i: usize, g: T| match &self.mask {
            Some(mask) => g * T::from_f64(f64::from(mask[i])),
            None => g,
        };
        let mut dpre = vec![T::ZERO; n * m2];
        match saved {
            // Each unit's gradient to its pair's winner (ties to the first, as `maxout_pairs`).
            Activated::Winners(second) => {
                for (i, ((d, &g), s)) in dpre.chunks_exact_mut(2).zip(dt).zip(second).enumerate() {
                    d[usize::from(s)] = dact(i, g);
                }
            }
            Activated::Tanh(t) => {
                for (i, ((d, &g), &y)) in dpre.iter_mut().zip(dt).zip(&t).enumerate() {
                    *d = dact(i, g) * (T::ONE - y * y);
                }
            }
        }
        let mut dsc = vec![T::ZERO; n * k1];
        matmul_wide(self.products, &mut dsc, 0, k1, Mat::new(&dpre, n, m2), Mat::new(wb, k1, m2).t(), false, threads);
        let mut dey = vec![T::ZERO; n * k2];
        matmul_wide(self.products, &mut dey, 0, k2, Mat::new(&dpre, n, m2), Mat::strided(wb, k1 * m2, k2, m2, m2).t(), false, threads);
        let mut dwb = vec![T::ZERO; (k1 + k2 + 1) * m2];
        matmul_wide(self.products, &mut dwb, 0, m2, Mat::new(sc, n, k1).t(), Mat::new(&dpre, n, m2), false, threads);
        matmul_wide(self.products, &mut dwb, k1 * m2, m2, Mat::new(ey, n, k2).t(), Mat::new(&dpre, n, m2), false, threads);
        let db = col_sums(&dpre, n, m2);
        dwb[(k1 + k2) * m2..].copy_from_slice(&db);
        Ok([dsc, dey, dwb])
    }
}
