//! RNNsearch's deep output up to the maxout layer as one op (Bahdanau et al. 2014, appendix
//! A.2.2): `t = maxout([s; c] O_sc + E y O_y + b)`, pairs `(t̃_{2k}, t̃_{2k+1})`.
//!
//! Inputs `sc (N, K1)` (the attention op's `[s_i; c_i]` rows), `ey (N, K2)` (the target
//! embeddings) and `wb (K1 + K2 + 1, 2l)` = `[O_sc; O_y; b]`; output `t (N, l)`. The composed
//! twin is `maxout_pairs(linear(cat([sc, ey], 1), [O_sc; O_y], b))`: this op never builds the
//! `(N, K1 + K2)` concatenation, nor the `(N, 2l)` pre-activation as a graph node, so candle
//! neither copies them nor allocates and adds their gradients. It keeps which element of each
//! pair won for its backward pass.
use std::sync::Mutex;

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp3, DType, Layout, Result, Shape, Tensor, WithDType};

use super::gemm::{fill_rows, matmul, Mat, Real};
use super::linear::col_sums;
use super::storage::{cpu_slice, float_dtype, tensor_from, with_slices};

/// `maxout([sc, ey] [O_sc; O_y] + b)` with `wb = [O_sc; O_y; b]`.
pub fn deep_output(sc: &Tensor, ey: &Tensor, wb: &Tensor) -> Result<Tensor> {
    let (n, k1) = sc.dims2()?;
    let (n2, k2) = ey.dims2()?;
    let (rows, m2) = wb.dims2()?;
    if n != n2 || rows != k1 + k2 + 1 || m2 % 2 != 0 {
        candle_core::bail!("deep_output: sc {:?}, ey {:?}, wb {:?} do not fit", sc.dims(), ey.dims(), wb.dims());
    }
    let op = DeepOut { n, k1, k2, m2, winners: Mutex::new(None) };
    sc.contiguous()?.apply_op3(&ey.contiguous()?, &wb.contiguous()?, op)
}

struct DeepOut {
    n: usize,
    k1: usize,
    k2: usize,
    m2: usize,
    /// Per output unit, whether the second of its pair won (from the forward pass).
    winners: Mutex<Option<Vec<bool>>>,
}

impl DeepOut {
    /// `t (N, l)` and the winners.
    fn forward<T: Real>(&self, sc: &[T], ey: &[T], wb: &[T]) -> (Vec<T>, Vec<bool>) {
        let (n, k1, k2, m2) = (self.n, self.k1, self.k2, self.m2);
        let threads = rayon::current_num_threads();
        let mut pre = fill_rows(&wb[(k1 + k2) * m2..], n);
        matmul(&mut pre, 0, m2, Mat::new(sc, n, k1), Mat::new(wb, k1, m2), true, threads);
        matmul(&mut pre, 0, m2, Mat::new(ey, n, k2), Mat::strided(wb, k1 * m2, k2, m2, m2), true, threads);
        let (t, second): (Vec<T>, Vec<bool>) = pre.chunks_exact(2).map(|p| if p[1] > p[0] { (p[1], true) } else { (p[0], false) }).unzip();
        (t, second)
    }

    /// Gradients of `(sc, ey, wb)` from `dt (N, l)`.
    fn backward<T: Real>(&self, sc: &[T], ey: &[T], wb: &[T], second: &[bool], dt: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
        let (n, k1, k2, m2) = (self.n, self.k1, self.k2, self.m2);
        let threads = rayon::current_num_threads();
        // The pre-activation's gradient: each unit's gradient to its pair's winner (ties to
        // the first, as `maxout_pairs`).
        let mut dpre = vec![T::ZERO; n * m2];
        for ((d, &g), &s) in dpre.chunks_exact_mut(2).zip(dt).zip(second) {
            d[usize::from(s)] = g;
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
        (dsc, dey, dwb)
    }
}

impl CustomOp3 for DeepOut {
    fn name(&self) -> &'static str {
        "fused-deep-output"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let shape = Shape::from((self.n, self.m2 / 2));
        let (out, second) = match float_dtype(&[s1.dtype(), s2.dtype(), s3.dtype()])? {
            DType::F32 => {
                let (a, b, c) = (cpu_slice(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?);
                let (t, w) = super::profile::timed(4, || self.forward::<f32>(a, b, c));
                (CpuStorage::F32(t), w)
            }
            _ => {
                let (t, w) = self.forward::<f64>(cpu_slice(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?);
                (CpuStorage::F64(t), w)
            }
        };
        if let Ok(mut c) = self.winners.lock() {
            *c = Some(second);
        }
        Ok((out, shape))
    }

    fn bwd(
        &self,
        sc: &Tensor,
        ey: &Tensor,
        wb: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let cached = self.winners.lock().ok().and_then(|mut c| c.take());
        fn go<T: Real + WithDType>(op: &DeepOut, cached: Option<Vec<bool>>, t: [&Tensor; 4]) -> Result<(Tensor, Tensor, Tensor)> {
            let [sc, ey, wb, _] = t;
            with_slices::<T, _, 4>(t, |[a, b, c, g]| {
                // No winners kept (a second backward through the graph): recompute them.
                let second = cached.unwrap_or_else(|| op.forward(a, b, c).1);
                let (dsc, dey, dwb) = op.backward(a, b, c, &second, g);
                Ok((tensor_from(dsc, sc.shape(), sc)?, tensor_from(dey, ey.shape(), ey)?, tensor_from(dwb, wb.shape(), wb)?))
            })
        }
        let t = [sc, ey, wb, grad];
        let (a, b, c) = match sc.dtype() {
            DType::F32 => super::profile::timed(5, || go::<f32>(self, cached, t))?,
            _ => go::<f64>(self, cached, t)?,
        };
        Ok((Some(a), Some(b), Some(c)))
    }
}
