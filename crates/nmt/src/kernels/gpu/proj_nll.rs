//! The vocabulary projection and its loss on a [`Launch`]: the GPU twin of
//! `kernels::cpu::proj_nll`. `nll_r = lse(z_r) − (1−ε) z_r[y_r] − ε·mean(z_r)` with `z = x W + b`
//! for `x (N, K)`, `W (K, V)` (or the tied form's `Wᵀ (V, K)`, the target embeddings, read in
//! place), `b (V)`: the cross-entropy against the smoothed labels `(1−ε)·onehot + ε/V`
//! (Szegedy et al. 2016, §7; ε = 0: the plain NLL). Output `nll (N)`.
//!
//! Forward: the logits `(N, V)` one product (cuBLAS), then one thread per row (`output.cu`) adds
//! the bias, turns the row into `exp(z − max)` in place and writes the loss and `1 / Σ`; both stay
//! on the device for the backward pass. Backward: one elementwise kernel turns them in place into
//! `dz = (softmax − (1−ε)·onehot − ε/V)·dnll_r`, then `dx = dz Wᵀ` and `dW = xᵀ dz` (or `dzᵀ x`
//! tied) are products over all rows and `db` a column sum (one thread per column, rows in order).
//!
//! The target ids are host data held as [`Staged`]: a recorded step hands a device buffer of
//! `i64`s and the op uploads nothing; ε is a launch argument, fixed for a whole training run.
use candle_core::{bail, DType, Result, Shape, Tensor};

use super::args::{self, kernels, SumSteps};
use super::launch::{Addr, Gemm, Launch, Staged, View};
use crate::kernels::fused_op::FusedOp;
use crate::kernels::shapes::proj_weight::{Fitted, ProjWeight};

kernels! {
    Output:
    NLL_ROWS = nmt_nll_rows, NllRows { z: Addr, b: Addr, targets: Addr, nll: Addr, inv_sum: Addr, rows: i64, vocab: i64, eps: f64 }
    NLL_GRAD = nmt_nll_grad, NllGrad { p: Addr, inv_sum: Addr, dnll: Addr, targets: Addr, rows: i64, vocab: i64, eps: f64 }
}

/// Per-row NLL `(N,)` of `targets` under `softmax(x W + b)`, label-smoothed by `smoothing` (ε),
/// all `f32`: the signature of `kernels::cpu::proj_nll::proj_nll`.
pub fn proj_nll(x: &Tensor, w: ProjWeight<'_>, b: &Tensor, targets: &[u32], smoothing: f64) -> Result<Tensor> {
    let Fitted { n, k, v, transposed, w: wt } = w.fitted("gpu proj_nll", x, b, targets)?;
    if [x.dtype(), wt.dtype(), b.dtype()] != [DType::F32; 3] {
        bail!("gpu proj_nll: f32 only, got {:?}, {:?}, {:?}", x.dtype(), wt.dtype(), b.dtype());
    }
    let targets = Staged::Host(targets.iter().map(|&t| i64::from(t)).collect());
    super::op::apply(ProjNll::new(targets, (n, k, v), smoothing, transposed), x, wt, b)
}

/// The projection and loss as a [`FusedOp`] of inputs `[x (N, K), W, b (V)]`, `W` being `(K, V)`
/// or, `transposed`, `Wᵀ (V, K)`.
pub(crate) struct ProjNll {
    n: usize,
    k: usize,
    v: usize,
    /// `N` ids below `V`, `i64` on the device.
    targets: Staged<i64>,
    smoothing: f64,
    transposed: bool,
}

/// What the forward pass keeps: `exp(z − max)` `(N, V)` and each row's `1 / Σ` `(N)`.
pub(crate) struct Probs<F> {
    p: F,
    inv_sum: F,
}

impl ProjNll {
    /// The loss of `n` rows of `x (n, k)` over a vocabulary of `v`, for `targets` (host values, or
    /// `n` `i64`s on the device), label-smoothed by `smoothing`; `transposed`: the weight input is
    /// `Wᵀ (v, k)`. Targets on the device are the caller's to check (below `v`): the kernels
    /// read them unchecked.
    pub(crate) fn new(targets: Staged<i64>, (n, k, v): (usize, usize, usize), smoothing: f64, transposed: bool) -> ProjNll {
        ProjNll { n, k, v, targets, smoothing, transposed }
    }

    /// `W (K, V)` as a product's operand, whichever layout the input has.
    fn w_view(&self, w: Addr) -> View {
        if self.transposed {
            View::new(w, self.k).t()
        } else {
            View::new(w, self.v)
        }
    }
}

impl<L: Launch> FusedOp<L> for ProjNll {
    const NAME: &'static str = "gpu-projection-nll";
    type Saved = Probs<L::Floats>;

    fn out_shape(&self) -> Shape {
        Shape::from(self.n)
    }

    fn forward(&self, l: &L, [x, w, b]: [Addr; 3]) -> Result<(L::Floats, Probs<L::Floats>)> {
        let (n, k, v) = (self.n, self.k, self.v);
        let (targets, _targets_buf) = self.targets.addr(l)?;
        // The bias is added in the row pass, as the CPU op adds it (the same roundings).
        let z = l.scratch(n * v)?;
        l.gemm(Gemm { m: n, n: v, k, a: View::new(x, k), b: self.w_view(w), c: View::new(l.addr(&z), v), accumulate: false })?;
        let (nll, inv_sum) = (l.scratch(n)?, l.scratch(n)?);
        let a = NllRows {
            z: l.addr(&z),
            b,
            targets,
            nll: l.addr(&nll),
            inv_sum: l.addr(&inv_sum),
            rows: n as i64,
            vocab: v as i64,
            eps: self.smoothing,
        };
        l.launch(&NLL_ROWS, n, a)?;
        Ok((nll, Probs { p: z, inv_sum }))
    }

    /// Gradients of `(x, W, b)` from the probabilities (turned into `dz` in place) and
    /// `dnll = ∂L/∂nll`.
    fn backward(&self, l: &L, [x, w, _]: [Addr; 3], probs: Probs<L::Floats>, _: Addr, dnll: Addr) -> Result<[L::Floats; 3]> {
        let (n, k, v) = (self.n, self.k, self.v);
        let (targets, _targets_buf) = self.targets.addr(l)?;
        let dz = l.addr(&probs.p);
        let a = NllGrad { p: dz, inv_sum: l.addr(&probs.inv_sum), dnll, targets, rows: n as i64, vocab: v as i64, eps: self.smoothing };
        l.launch(&NLL_GRAD, n * v, a)?;
        let dzv = View::new(dz, v);
        let dx = l.scratch(n * k)?;
        l.gemm(Gemm { m: n, n: k, k: v, a: dzv, b: self.w_view(w).t(), c: View::new(l.addr(&dx), k), accumulate: false })?;
        let dw = l.scratch(k * v)?;
        let g = match self.transposed {
            // dWᵀ (V, K) = dzᵀ x, the layout of the op's input.
            true => Gemm { m: v, n: k, k: n, a: dzv.t(), b: View::new(x, k), c: View::new(l.addr(&dw), k), accumulate: false },
            false => Gemm { m: k, n: v, k: n, a: View::new(x, k).t(), b: dzv, c: View::new(l.addr(&dw), v), accumulate: false },
        };
        l.gemm(g)?;
        // db = Σ_r dz_r, one thread per column over the rows in order (`recurrence.cu`'s
        // per-sentence sum of steps, as one sentence of `n` steps).
        let db = l.scratch(v)?;
        let s = SumSteps { dst: l.addr(&db), dst_ld: v as i64, src: dz, batch: 1, len: n as i64, width: v as i64 };
        l.launch(&args::SUM_STEPS, v, s)?;
        Ok([dx, dw, db])
    }
}
