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
/// products in the GPU's training precision (`kernels::precision::gpu_products`), as the CPU
/// twin's follow `training_products`.
pub fn linear(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    linear_in(x, w, b, crate::kernels::precision::gpu_products())
}

/// [`linear`] with its products in `precision`.
pub fn linear_in(x: &Tensor, w: &Tensor, b: &Tensor, precision: Precision) -> Result<Tensor> {
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

#[cfg(test)]
mod tests {
    use candle_core::{Device, Tensor, Var};
    use rand::{Rng, SeedableRng};

    use super::*;

    /// `(N, K, M)`: a single element, odd sizes, and sizes past the GEMM's blocks.
    const SHAPES: [(usize, usize, usize); 4] = [(1, 1, 1), (7, 5, 9), (33, 17, 40), (70, 130, 300)];

    fn random(rng: &mut impl Rng, shape: &[usize]) -> Var {
        let v: Vec<f32> = (0..shape.iter().product()).map(|_| rng.gen_range(-1f32..1.0)).collect();
        Var::from_tensor(&Tensor::from_vec(v, shape, &Device::Cpu).unwrap()).unwrap()
    }

    /// `x`, `W`, `b` and the loss's weights `r (N, M)` for one shape.
    fn inputs(rng: &mut impl Rng, (n, k, m): (usize, usize, usize)) -> ([Var; 3], Tensor) {
        let vars = [random(rng, &[n, k]), random(rng, &[k, m]), random(rng, &[m])];
        (vars, random(rng, &[n, m]).as_tensor().clone())
    }

    /// `y` and the gradients of `x`, `W`, `b` under the loss `Σ y ⊙ r`: the GPU op (emulated) in
    /// `Some(precision)`, or the CPU op (`kernels::cpu::linear`, in f32: no lib test sets the
    /// CPU's bf16 products).
    fn run(vars: &[Var; 3], r: &Tensor, gpu: Option<Precision>) -> [Vec<f32>; 4] {
        let [x, w, b] = vars.each_ref().map(|v| v.as_tensor());
        let y = match gpu {
            Some(p) => linear_in(x, w, b, p).unwrap(),
            None => crate::kernels::cpu::linear::linear(x, w, b).unwrap(),
        };
        let grads = (&y * r).unwrap().sum_all().unwrap().backward().unwrap();
        let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        [flat(&y), flat(grads.get(x).unwrap()), flat(grads.get(w).unwrap()), flat(grads.get(b).unwrap())]
    }

    /// The GPU op in f32 against the CPU op: the output and the three gradients bit for bit
    /// (the same f32 GEMM on the same operands, the bias as its initial value, `db` summed row
    /// by row from zero on both).
    #[test]
    fn emulated_gpu_linear_equals_the_cpu_op() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(69);
        for shape in SHAPES {
            let (vars, r) = inputs(&mut rng, shape);
            let (want, got) = (run(&vars, &r, None), run(&vars, &r, Some(Precision::F32)));
            for (t, (g, e)) in ["y", "dx", "dW", "db"].iter().zip(got.iter().zip(&want)) {
                assert_eq!(g.len(), e.len(), "{shape:?} {t}");
                for (i, (a, b)) in g.iter().zip(e).enumerate() {
                    assert_eq!(a.to_bits(), b.to_bits(), "{shape:?} {t}[{i}]: gpu {a}, cpu {b}");
                }
            }
        }
    }

    fn bf16(x: f32) -> f64 {
        half::bf16::from_f32(x).to_f64()
    }

    /// The GPU op in bf16 multiplies the operands rounded to bf16 with f32 sums: each of `y`,
    /// `dx`, `dW` against the f64 sum of the rounded operands' products (`b` added unrounded,
    /// as the product's initial value), within `(terms + 1)·2⁻²⁴·Σ|term|` — the products of
    /// two bf16 numbers are exact in f32, so what is left is the f32 sums' rounding, at most
    /// one unit of 2⁻²⁴ per addition of the running sum's magnitude. `db` sums `dy` unrounded,
    /// as the CPU op does. And it is not the f32 op: rounding moved some output.
    #[test]
    fn emulated_gpu_linear_in_bf16_multiplies_rounded_operands() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(70);
        let mut moved = false;
        for (n, k, m) in SHAPES {
            let (vars, r) = inputs(&mut rng, (n, k, m));
            let got = run(&vars, &r, Some(Precision::Bf16));
            moved |= got[0] != run(&vars, &r, Some(Precision::F32))[0];
            let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            let [x, w, b] = vars.each_ref().map(|v| flat(v.as_tensor()));
            let r = flat(&r);
            // Each output: its terms `(a, b)`, and an initial value; the sum's bound.
            let check = |what: &str, got: f32, init: f64, terms: &mut dyn Iterator<Item = (f64, f64)>| {
                let (mut sum, mut abs, mut count) = (init, init.abs(), 1f64);
                for (p, q) in terms {
                    sum += p * q;
                    abs += (p * q).abs();
                    count += 1.0;
                }
                let bound = count * 2f64.powi(-24) * abs;
                assert!((got as f64 - sum).abs() <= bound, "{what}: gpu {got}, rounded operands' sum {sum}, bound {bound}");
            };
            for (i, j) in (0..n).flat_map(|i| (0..m).map(move |j| (i, j))) {
                let t = &mut (0..k).map(|kk| (bf16(x[i * k + kk]), bf16(w[kk * m + j])));
                check(&format!("({n}, {k}, {m}) y[{i}][{j}]"), got[0][i * m + j], b[j] as f64, t);
            }
            for (i, kk) in (0..n).flat_map(|i| (0..k).map(move |kk| (i, kk))) {
                let t = &mut (0..m).map(|j| (bf16(r[i * m + j]), bf16(w[kk * m + j])));
                check(&format!("({n}, {k}, {m}) dx[{i}][{kk}]"), got[1][i * k + kk], 0.0, t);
            }
            for (kk, j) in (0..k).flat_map(|kk| (0..m).map(move |j| (kk, j))) {
                let t = &mut (0..n).map(|i| (bf16(x[i * k + kk]), bf16(r[i * m + j])));
                check(&format!("({n}, {k}, {m}) dW[{kk}][{j}]"), got[2][kk * m + j], 0.0, t);
            }
            for j in 0..m {
                check(&format!("({n}, {k}, {m}) db[{j}]"), got[3][j], 0.0, &mut (0..n).map(|i| (r[i * m + j] as f64, 1.0)));
            }
        }
        assert!(moved, "bf16 products gave the f32 op's outputs everywhere");
    }
}
