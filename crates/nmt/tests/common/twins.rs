//! The twins' comparison shared by the kernel tests (`kernels.rs`, `output_kernels.rs`): random
//! variables, and a fused op against its composed twin on a random linear functional.
use candle_core::{DType, Device, Tensor, Var};
use nmt::config::{CellKind, GruForm};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A variable of `shape` with entries uniform in `(−scale, scale)`, in `dtype`.
pub fn rand_var(shape: &[usize], scale: f64, dtype: DType, rng: &mut ChaCha8Rng) -> Var {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|_| rng.gen_range(-scale..scale)).collect();
    Var::from_tensor(&Tensor::from_vec(v, shape, &Device::Cpu).unwrap().to_dtype(dtype).unwrap()).unwrap()
}

/// Compares `fused` and `composed` (functions of the same vars) on a random linear functional:
/// values, and the gradient of every var. Returns the worst relative difference.
pub fn compare(vars: &[&Var], fused: impl Fn() -> Tensor, composed: impl Fn() -> Tensor, seed: u64) -> f64 {
    let (yf, yc) = (fused(), composed());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let probe = rand_var(yf.dims(), 1.0, yf.dtype(), &mut rng);
    let mut worst = super::max_rel(&yf, &yc);
    let gf = (yf * probe.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
    let gc = (yc * probe.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
    for v in vars {
        let (a, b) = (gf.get(v.as_tensor()).expect("fused grad"), gc.get(v.as_tensor()).expect("composed grad"));
        worst = worst.max(super::max_rel(a, b));
    }
    worst
}

/// Every cell the kernels run.
pub const KINDS: [CellKind; 3] = [CellKind::Gru(GruForm::Paper), CellKind::Gru(GruForm::ResetAfter), CellKind::Lstm];

/// A recurrent-dropout mask of `n` entries: `0` or `1/(1−p)` with `p = 0.3`, as the training
/// loss draws them.
pub fn state_mask(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| if rng.gen_bool(0.7) { 1.0 / 0.7 } else { 0.0 }).collect()
}

/// A `(rows, h)` mask tensor in `dtype`.
pub fn mask_tensor(m: &[f32], rows: usize, h: usize, dtype: DType) -> Tensor {
    Tensor::from_vec(m.to_vec(), (rows, h), &Device::Cpu).unwrap().to_dtype(dtype).unwrap()
}
