//! The vocabulary projection and its loss as one op: `nll_r = lse(x_r W + b) - (x_r W + b)[y_r]`
//! for `x (N, K)`, `W (K, V)`, `b (V)`; the composed twin is `linear` then `xent::nll_rows`.
//!
//! The logits `(N, V)` (30 MB on the bench) are computed once and kept by the op instance for
//! its own backward pass, where they are turned in place into `softmax − onehot`; candle never
//! sees them as a graph node, so no zero-filled gradient buffer of that size is allocated and
//! added into (measured 23 ms for candle's `zeros_like + add` on that shape). If the cache is
//! gone (a second backward through the same graph), the logits are recomputed.
use std::sync::Mutex;

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp3, DType, Layout, Result, Shape, Tensor, WithDType};
use rayon::prelude::*;

use super::gemm::{fill_rows, matmul, Mat, Real};
use super::linear::col_sums;
use super::storage::{cpu_slice, float_dtype, tensor_from, with_slice};
use super::xent::{logsumexp, ROWS};
use crate::simd_dispatch;

/// Per-row NLL `(N,)` of `targets` under `softmax(x W + b)`.
pub fn proj_nll(x: &Tensor, w: &Tensor, b: &Tensor, targets: &[u32]) -> Result<Tensor> {
    let (n, k) = x.dims2()?;
    let (k2, v) = w.dims2()?;
    if k != k2 || b.dims1()? != v || targets.len() != n || targets.iter().any(|&t| t as usize >= v) {
        candle_core::bail!("proj_nll: x {:?}, w {:?}, b {:?}, {} targets do not fit", x.dims(), w.dims(), b.dims(), targets.len());
    }
    let op = ProjNll { n, k, v, targets: targets.to_vec(), cache: Mutex::new(None) };
    x.contiguous()?.apply_op3(&w.contiguous()?, &b.contiguous()?, op)
}

/// Logits kept between the forward and the backward pass, in either precision.
enum Cached {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

struct ProjNll {
    n: usize,
    k: usize,
    v: usize,
    targets: Vec<u32>,
    cache: Mutex<Option<Cached>>,
}

impl ProjNll {
    fn logits<T: Real>(&self, x: &[T], w: &[T], b: &[T]) -> Vec<T> {
        let mut z = fill_rows(b, self.n);
        matmul(&mut z, 0, self.v, Mat::new(x, self.n, self.k), Mat::new(w, self.k, self.v), true, rayon::current_num_threads());
        z
    }

    fn forward<T: Real>(&self, x: &[T], w: &[T], b: &[T]) -> (Vec<T>, Vec<T>) {
        let z = self.logits(x, w, b);
        let v = self.v;
        let mut nll = vec![T::ZERO; self.n];
        nll.par_chunks_mut(ROWS).enumerate().for_each(|(c, o)| {
            simd_dispatch!(for (i, slot) in o.iter_mut().enumerate() {
                let r = c * ROWS + i;
                let row = &z[r * v..(r + 1) * v];
                *slot = logsumexp(row) - row[self.targets[r] as usize];
            })
        });
        (nll, z)
    }

    /// Gradients of `(x, w, b)` given the logits `z` (consumed) and `g = ∂L/∂nll`.
    fn backward<T: Real>(&self, x: &[T], w: &[T], mut z: Vec<T>, nll: &[T], g: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
        let (n, k, v) = (self.n, self.k, self.v);
        let threads = rayon::current_num_threads();
        z.par_chunks_mut(ROWS * v).enumerate().for_each(|(c, blk)| {
            simd_dispatch!(for (i, row) in blk.chunks_mut(v).enumerate() {
                let r = c * ROWS + i;
                let t = self.targets[r] as usize;
                let lse = nll[r] + row[t];
                let gr = g[r];
                for zj in row.iter_mut() {
                    *zj = gr * (*zj - lse).exp_fast();
                }
                row[t] = row[t] - gr;
            })
        });
        // Transposed views: for GEMMs this large, packing a transposed operand costs nothing
        // measurable (36 ms either way for dx on 2 threads), unlike the per-step GEMMs.
        let mut dx = vec![T::ZERO; n * k];
        matmul(&mut dx, 0, k, Mat::new(&z, n, v), Mat::new(w, k, v).t(), false, threads);
        let mut dw = vec![T::ZERO; k * v];
        matmul(&mut dw, 0, v, Mat::new(x, n, k).t(), Mat::new(&z, n, v), false, threads);
        let db = col_sums(&z, n, v);
        (dx, dw, db)
    }
}

impl CustomOp3 for ProjNll {
    fn name(&self) -> &'static str {
        "fused-projection-nll"
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
        let shape = Shape::from(self.n);
        let (out, cached) = match float_dtype(&[s1.dtype(), s2.dtype(), s3.dtype()])? {
            DType::F32 => {
                let (a, b, c) = (cpu_slice(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?);
                let (nll, z) = super::profile::timed(6, || self.forward::<f32>(a, b, c));
                (CpuStorage::F32(nll), Cached::F32(z))
            }
            _ => {
                let (nll, z) = self.forward::<f64>(cpu_slice(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?);
                (CpuStorage::F64(nll), Cached::F64(z))
            }
        };
        if let Ok(mut c) = self.cache.lock() {
            *c = Some(cached);
        }
        Ok((out, shape))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        b: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let cached = self.cache.lock().ok().and_then(|mut c| c.take());
        fn go<T: Real + WithDType>(op: &ProjNll, z: Option<Vec<T>>, t: [&Tensor; 5]) -> Result<(Tensor, Tensor, Tensor)> {
            let [x, w, b, res, grad] = t;
            with_slice::<T, _>(x, |xs| {
                with_slice::<T, _>(w, |ws| {
                    with_slice::<T, _>(res, |nll| {
                        with_slice::<T, _>(grad, |g| {
                            let z = match z {
                                Some(z) => z,
                                None => with_slice::<T, _>(b, |bs| Ok(op.logits(xs, ws, bs)))?,
                            };
                            let (dx, dw, db) = op.backward(xs, ws, z, nll, g);
                            Ok((tensor_from(dx, x.shape(), x)?, tensor_from(dw, w.shape(), w)?, tensor_from(db, b.shape(), b)?))
                        })
                    })
                })
            })
        }
        let t = [x, w, b, res, grad];
        let (dx, dw, db) = match (x.dtype(), cached) {
            (DType::F32, Some(Cached::F32(z))) => super::profile::timed(7, || go::<f32>(self, Some(z), t))?,
            (DType::F32, _) => go::<f32>(self, None, t)?,
            (_, Some(Cached::F64(z))) => go::<f64>(self, Some(z), t)?,
            _ => go::<f64>(self, None, t)?,
        };
        Ok((Some(dx), Some(dw), Some(db)))
    }
}
