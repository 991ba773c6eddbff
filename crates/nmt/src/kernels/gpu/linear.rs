//! `y = x W + b` on the GPU, `x (N, K)`, `W (K, M)` stored `[in, out]`, `b (M)`: the twin of
//! `kernels::cpu::linear`, differentiable in all three.
//!
//! Forward: `b` written into every row of `y` (`FILL_ROWS`, one thread per element), then one
//! product accumulating `x W` into it, as the CPU op starts its GEMM from the bias. Backward:
//! `dx (N, K) = dy Wᵀ` and `dW (K, M) = xᵀ dy`, one product each, and `db (M)` the column sums of
//! `dy` (`SUM_STEPS` over one "sentence" of `N` steps: one thread per column, the rows in
//! order, the CPU's order). The products run in the op's [`Precision`] ([`super::bf16::gemm_in`]):
//! all three in bf16 under `train.precision = "bf16"`, as the CPU op's three `matmul_wide`s.
//! Nothing is uploaded and nothing allocated but the outputs (`Launch::scratch`, written
//! whole before they are read) and, in bf16, the operands' rounded copies.
use candle_core::{bail, DType, Result, Shape, Tensor};

use super::args::{self, FillRows, SumSteps};
use super::bf16::gemm_in;
use super::launch::{Addr, Gemm, Launch, View};
use crate::config::Precision;
use crate::kernels::fused_op::FusedOp;

/// `x W + b` for `x (N, K)`, `w (K, M)`, `b (M)`, all `f32`; differentiable in all three. The
/// products in `precision` (the model's `Backend::products`), as the CPU twin's.
pub fn linear(x: &Tensor, w: &Tensor, b: &Tensor, precision: Precision) -> Result<Tensor> {
    let (n, k) = x.dims2()?;
    let (k2, m) = w.dims2()?;
    if k != k2 || b.dims1()? != m || [x.dtype(), w.dtype(), b.dtype()] != [DType::F32; 3] {
        bail!("gpu linear: x {:?}, w {:?}, b {:?} do not fit (f32)", x.dims(), w.dims(), b.dims());
    }
    super::op::apply(Linear { n, k, m, precision }, x, w, b)
}

/// The op on `x (n, k)`, `W (k, m)`, `b (m)`, its products in `precision`; another op can
/// drive its passes on its own addresses (`FusedOp::forward`, `backward`).
pub(crate) struct Linear {
    pub n: usize,
    pub k: usize,
    pub m: usize,
    pub precision: Precision,
}

/// A buffer of `len` outputs that a product over an inner dimension `inner` writes whole: on
/// the GPU uninitialised, unless the product is empty (`inner = 0`, which leaves `C` alone).
fn output<L: Launch>(l: &L, len: usize, inner: usize) -> Result<L::Floats> {
    if inner == 0 {
        l.zeros(len)
    } else {
        l.scratch(len)
    }
}

impl<L: Launch> FusedOp<L> for Linear {
    const NAME: &'static str = "gpu-linear";
    /// Nothing: the backward pass needs only the inputs.
    type Saved = ();

    fn out_shape(&self) -> Shape {
        Shape::from((self.n, self.m))
    }

    fn forward(&self, l: &L, [x, w, b]: [Addr; 3]) -> Result<(L::Floats, ())> {
        let (n, k, m) = (self.n, self.k, self.m);
        let y = l.scratch(n * m)?;
        let yp = l.addr(&y);
        // src_ld 0: every row reads `b`.
        l.launch(&args::FILL_ROWS, n * m, FillRows { dst: yp, src: b, src_ld: 0, rows: n as i64, width: m as i64, group: 1 })?;
        let g = Gemm { m: n, n: m, k, a: View::new(x, k), b: View::new(w, m), c: View::new(yp, m), accumulate: true };
        gemm_in(l, g, self.precision)?;
        Ok((y, ()))
    }

    fn backward(&self, l: &L, [x, w, _]: [Addr; 3], _: (), _y: Addr, dy: Addr) -> Result<[L::Floats; 3]> {
        let (n, k, m) = (self.n, self.k, self.m);
        let (dx, dw, db) = (output(l, n * k, m)?, output(l, k * m, n)?, l.scratch(m)?);
        // dx (n × k) = dy (n × m) · Wᵀ (m × k).
        let g = Gemm { m: n, n: k, k: m, a: View::new(dy, m), b: View::new(w, m).t(), c: View::new(l.addr(&dx), k), accumulate: false };
        gemm_in(l, g, self.precision)?;
        // dW (k × m) = xᵀ (k × n) · dy (n × m).
        let g = Gemm { m: k, n: m, k: n, a: View::new(x, k).t(), b: View::new(dy, m), c: View::new(l.addr(&dw), m), accumulate: false };
        gemm_in(l, g, self.precision)?;
        let sums = SumSteps { dst: l.addr(&db), dst_ld: m as i64, src: dy, batch: 1, len: n as i64, width: m as i64 };
        l.launch(&args::SUM_STEPS, m, sums)?;
        Ok([dx, dw, db])
    }
}
