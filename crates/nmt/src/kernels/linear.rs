//! `y = x W + b` as one op, `x (N, K)`, `W (K, M)` stored `[in, out]`, `b (M)`.
//!
//! The composed twin (`x.matmul(W)?.broadcast_add(b)`) is dominated by candle's broadcast add
//! and, in the backward pass, by its column sum for `db`: on the bench's `(960, 8000)` logits,
//! 67 ms and 96 ms against 44 ms for the GEMM itself (measured, 2 threads). Here the bias is
//! the GEMM's initial value, and `db` is a vectorised column sum.
use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp3, DType, Layout, Result, Shape, Tensor, WithDType};
use rayon::prelude::*;

use super::gemm::{fill_rows, matmul, Mat, Real};
use super::math::axpy;
use super::storage::{cpu_slice, float_dtype, tensor_from, with_slices};
use crate::simd_dispatch;

/// `x W + b` for `x (N, K)`, `w (K, M)`, `b (M)`; differentiable in all three.
pub fn linear(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (n, k) = x.dims2()?;
    let (k2, m) = w.dims2()?;
    if k != k2 || b.dims1()? != m {
        candle_core::bail!("linear: x {:?}, w {:?}, b {:?} do not fit", x.dims(), w.dims(), b.dims());
    }
    x.contiguous()?.apply_op3(&w.contiguous()?, &b.contiguous()?, Linear { n, k, m })
}

struct Linear {
    n: usize,
    k: usize,
    m: usize,
}

fn forward<T: Real>(op: &Linear, x: &[T], w: &[T], b: &[T]) -> Vec<T> {
    let mut y = fill_rows(b, op.n);
    matmul(&mut y, 0, op.m, Mat::new(x, op.n, op.k), Mat::new(w, op.k, op.m), true, rayon::current_num_threads());
    y
}

/// Column sums of `dy (N, M)`, in parallel over column blocks.
pub(crate) fn col_sums<T: Real>(dy: &[T], n: usize, m: usize) -> Vec<T> {
    const BLOCK: usize = 1024;
    let mut db = vec![T::ZERO; m];
    db.par_chunks_mut(BLOCK).enumerate().for_each(|(c, acc)| {
        let w = acc.len();
        simd_dispatch!(for r in 0..n {
            axpy(T::ONE, &dy[r * m + c * BLOCK..r * m + c * BLOCK + w], acc);
        })
    });
    db
}

impl CustomOp3 for Linear {
    fn name(&self) -> &'static str {
        "fused-linear"
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
        let shape = Shape::from((self.n, self.m));
        Ok(match float_dtype(&[s1.dtype(), s2.dtype(), s3.dtype()])? {
            DType::F32 => {
                let (a, b, c) = (cpu_slice(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?);
                (CpuStorage::F32(super::profile::timed(4, || forward(self, a, b, c))), shape)
            }
            _ => (CpuStorage::F64(forward(self, cpu_slice(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?)), shape),
        })
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        fn go<T: Real + WithDType>(op: &Linear, x: &Tensor, w: &Tensor, b: &Tensor, grad: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
            let (n, k, m) = (op.n, op.k, op.m);
            let threads = rayon::current_num_threads();
            with_slices::<T, _, 3>([x, w, grad], |[xs, ws, dy]| {
                let mut dx = vec![T::ZERO; n * k];
                // Transposed views are as fast as copies at these sizes (see proj_nll.rs).
                matmul(&mut dx, 0, k, Mat::new(dy, n, m), Mat::new(ws, k, m).t(), false, threads);
                let mut dw = vec![T::ZERO; k * m];
                matmul(&mut dw, 0, m, Mat::new(xs, n, k).t(), Mat::new(dy, n, m), false, threads);
                let db = col_sums(dy, n, m);
                Ok((tensor_from(dx, x.shape(), x)?, tensor_from(dw, w.shape(), w)?, tensor_from(db, b.shape(), b)?))
            })
        }
        let (dx, dw, db) = match x.dtype() {
            DType::F32 => super::profile::timed(5, || go::<f32>(self, x, w, b, grad))?,
            _ => go::<f64>(self, x, w, b, grad)?,
        };
        Ok((Some(dx), Some(dw), Some(db)))
    }
}
