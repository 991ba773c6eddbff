//! `y = x W + b` as one op, `x (N, K)`, `W (K, M)` stored `[in, out]`, `b (M)`.
//!
//! The composed twin (`x.matmul(W)?.broadcast_add(b)`) is dominated by candle's broadcast add
//! and, in the backward pass, by its column sum for `db`: on the bench's `(960, 8000)` logits,
//! 67 ms and 96 ms against 44 ms for the GEMM itself (measured, 2 threads). Here the bias is
//! the GEMM's initial value, and `db` is a vectorised column sum.
use candle_core::{Result, Shape, Tensor};
use rayon::prelude::*;

use super::op::apply;
use crate::kernels::cpu::engine::isa::simd_dispatch;
use crate::kernels::cpu::engine::products::{matmul_wide, Precision};
use crate::kernels::fused_op::{FusedOp, Host};
use crate::kernels::gemm::{fill_rows, Mat, Real};
use crate::kernels::math::axpy;

/// `x W + b` for `x (N, K)`, `w (K, M)`, `b (M)`; differentiable in all three. Its three
/// products in `products` (`engine::products::matmul_wide`).
pub fn linear(x: &Tensor, w: &Tensor, b: &Tensor, products: Precision) -> Result<Tensor> {
    let (n, k) = x.dims2()?;
    let (k2, m) = w.dims2()?;
    if k != k2 || b.dims1()? != m {
        candle_core::bail!("linear: x {:?}, w {:?}, b {:?} do not fit", x.dims(), w.dims(), b.dims());
    }
    apply(Linear { n, k, m, products }, x, w, b)
}

struct Linear {
    n: usize,
    k: usize,
    m: usize,
    products: Precision,
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

impl<T: Real> FusedOp<Host<T>> for Linear {
    /// Nothing: the backward pass needs only the inputs.
    type Saved = ();
    const NAME: &'static str = "fused-linear";
    const SLOTS: Option<(usize, usize)> = Some((4, 5));

    fn out_shape(&self) -> Shape {
        Shape::from((self.n, self.m))
    }

    fn forward(&self, _: &Host<T>, [x, w, b]: [&[T]; 3]) -> Result<(Vec<T>, ())> {
        let mut y = fill_rows(b, self.n);
        matmul_wide(
            self.products,
            &mut y,
            0,
            self.m,
            Mat::new(x, self.n, self.k),
            Mat::new(w, self.k, self.m),
            true,
            rayon::current_num_threads(),
        );
        Ok((y, ()))
    }

    fn backward(&self, _: &Host<T>, [x, w, _]: [&[T]; 3], _: (), _y: &[T], dy: &[T]) -> Result<[Vec<T>; 3]> {
        let (n, k, m) = (self.n, self.k, self.m);
        let threads = rayon::current_num_threads();
        let mut dx = vec![T::ZERO; n * k];
        // Transposed views are as fast as copies at these sizes (see proj_nll.rs).
        matmul_wide(self.products, &mut dx, 0, k, Mat::new(dy, n, m), Mat::new(w, k, m).t(), false, threads);
        let mut dw = vec![T::ZERO; k * m];
        matmul_wide(self.products, &mut dw, 0, m, Mat::new(x, n, k).t(), Mat::new(dy, n, m), false, threads);
        Ok([dx, dw, col_sums(dy, n, m)])
    }
}
