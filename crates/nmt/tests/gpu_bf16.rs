//! The GPU's bf16 products (`train.precision = "bf16"` on a GPU, issue 69 item 7; docs/GPU.md,
//! "bf16 products"), checked on the CPU with the GPU kernels emulated: the GPU twin of the
//! linear op in bf16 against the CPU's linear op in bf16, and the wiring, the GPU form of a
//! model running its input projections in bf16. Each op and model is given its precision
//! (`Seq2Seq::set_products`): nothing here is process-wide.
mod common;

use candle_core::cpu_backend::cuda_layouts::checked;
use candle_core::{DType, Device, Tensor, Var};
use nmt::config::{ArchName, Precision};
use nmt::kernels::cpu::engine::products::bf16_available;
use nmt::model::{BatchTensors, Seq2Seq};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn random(rng: &mut impl Rng, shape: &[usize]) -> Var {
    let v: Vec<f32> = (0..shape.iter().product()).map(|_| rng.gen_range(-1f32..1.0)).collect();
    Var::from_tensor(&Tensor::from_vec(v, shape, &Device::Cpu).unwrap()).unwrap()
}

fn flat(t: &Tensor) -> Vec<f32> {
    t.flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

fn bf16(x: f32) -> f64 {
    half::bf16::from_f32(x).to_f64()
}

/// The GPU linear op in bf16 (`kernels::gpu::linear`, emulated: `bf16.cu`'s rounding, then the
/// f32 GEMM on the rounded values) against the CPU's linear op with its products in bf16
/// (`matmul_wide` on AVX512_BF16 or AMX): `y`, `dx`, `dW` within `2·(terms + 1)·2⁻²⁴·Σ|term|`
/// of each other, `db` bit for bit. Both multiply the same bf16 operands (the same rounding,
/// `kernels::gpu::bf16`'s test), whose products are exact in f32; each sums them in f32 in its
/// own order (the CPU pair by pair along `k`, in blocks; the emulation in its GEMM's), and each
/// order is within `(terms + 1)·2⁻²⁴·Σ|term|` of the exact sum. The largest difference seen, as a
/// fraction of that bound, is printed (0.043 on 2026-11-28, Zen 4's AVX512_BF16 path).
#[test]
fn gpu_linear_in_bf16_is_the_cpu_linear_in_bf16_up_to_the_order_of_the_sums() {
    if !bf16_available() {
        eprintln!("NOT RUN: {}; the CPU's bf16 linear op is not there to compare with", nmt::bf16_path());
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(71);
    let mut worst = 0f64;
    for (n, k, m) in [(1, 1, 1), (13, 33, 45), (37, 16, 100), (61, 300, 130), (70, 96, 130)] {
        // On AMX the CPU keeps products with a dimension under `amx_gemm::MIN_DIM` in f32
        // (issue 76): there is no CPU bf16 product to compare with at those shapes.
        if nmt::bf16_path() == nmt::kernels::cpu::engine::products::Bf16Path::Amx && !nmt::kernels::cpu::engine::amx_gemm::pays(n, k, m) {
            eprintln!("({n}, {k}, {m}): the CPU runs it in f32 on AMX; not compared");
            continue;
        }
        let vars = [random(&mut rng, &[n, k]), random(&mut rng, &[k, m]), random(&mut rng, &[m])];
        let r = random(&mut rng, &[n, m]).as_tensor().clone();
        let [x, w, b] = vars.each_ref().map(|v| v.as_tensor());
        let run = |gpu: bool| -> Vec<Vec<f32>> {
            let y = match gpu {
                true => nmt::kernels::gpu::linear::linear(x, w, b, Precision::Bf16).unwrap(),
                false => nmt::kernels::cpu::linear::linear(x, w, b, Precision::Bf16).unwrap(),
            };
            let grads = (&y * &r).unwrap().sum_all().unwrap().backward().unwrap();
            [&y, grads.get(x).unwrap(), grads.get(w).unwrap(), grads.get(b).unwrap()].map(flat).to_vec()
        };
        let (cpu, gpu) = (run(false), run(true));
        let (xs, ws, bs, rs) = (flat(x), flat(w), flat(b), flat(&r));
        // Each output's bound from its terms and its initial value.
        let mut check = |what: String, a: f32, c: f32, init: f32, terms: &mut dyn Iterator<Item = f64>| {
            let (mut abs, mut count) = (init.abs() as f64, 1f64);
            for t in terms {
                abs += t.abs();
                count += 1.0;
            }
            let bound = 2.0 * count * 2f64.powi(-24) * abs;
            let diff = (a as f64 - c as f64).abs();
            worst = worst.max(diff / bound.max(f64::MIN_POSITIVE));
            assert!(diff <= bound, "{what}: gpu {a}, cpu {c}, bound {bound}");
        };
        for (i, j) in (0..n).flat_map(|i| (0..m).map(move |j| (i, j))) {
            let t = &mut (0..k).map(|kk| bf16(xs[i * k + kk]) * bf16(ws[kk * m + j]));
            check(format!("({n}, {k}, {m}) y[{i}][{j}]"), gpu[0][i * m + j], cpu[0][i * m + j], bs[j], t);
        }
        for (i, kk) in (0..n).flat_map(|i| (0..k).map(move |kk| (i, kk))) {
            let t = &mut (0..m).map(|j| bf16(rs[i * m + j]) * bf16(ws[kk * m + j]));
            check(format!("({n}, {k}, {m}) dx[{i}][{kk}]"), gpu[1][i * k + kk], cpu[1][i * k + kk], 0.0, t);
        }
        for (kk, j) in (0..k).flat_map(|kk| (0..m).map(move |j| (kk, j))) {
            let t = &mut (0..n).map(|i| bf16(xs[i * k + kk]) * bf16(rs[i * m + j]));
            check(format!("({n}, {k}, {m}) dW[{kk}][{j}]"), gpu[2][kk * m + j], cpu[2][kk * m + j], 0.0, t);
        }
        assert_eq!(gpu[3], cpu[3], "({n}, {k}, {m}) db");
    }
    eprintln!("largest difference: {worst:.3} of its bound");
}

/// The wiring: with the GPU form's products in bf16 (`Seq2Seq::set_products`, as training sets
/// them on a GPU), the GPU form of a model (`Seq2Seq::emulate_gpu`) runs its input projections through
/// the GPU linear op in bf16 (`Backend::linear`), inside the CUDA layout check: the loss within
/// 1e-3 of the f32 GPU form's and every gradient within 10 % in norm (cosine ≥ 0.995), the
/// bounds of `tests/bf16_model.rs` for the CPU's, and not equal to it (bf16 ran). RNNsearch (the bidirectional encoder's input projections) and
/// RNNenc (its encoder stack, upper layers and summary decoder). Measured (2026-11-28): loss
/// 3.8e-6 and 1.0e-5, gradients 4.7e-2 and 3.3e-2 in norm, cosine ≥ 0.9989 and 0.9994.
#[test]
fn the_gpu_form_runs_its_input_projections_in_bf16() {
    let batch = common::random_batch(12, 200, 3..12, 72);
    let bt = BatchTensors::new(&batch, DType::F32, &Device::Cpu).unwrap();
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        let mut cfg = common::small_config(arch, 200, 48, 64);
        cfg.init_std = 0.15;
        let mut model = Seq2Seq::fresh(&cfg, 3, DType::F32, &Device::Cpu).unwrap();
        model.emulate_gpu();
        let mut run = |p: Precision| -> (f64, Vec<Tensor>) {
            assert_eq!(model.set_products(p), p);
            checked(|| -> candle_core::Result<(f64, Vec<Tensor>)> {
                let loss = model.loss(&bt, None).map_err(candle_core::Error::wrap)?.mean;
                let grads = loss.backward()?;
                let g = model.params.named_vars().into_iter().filter_map(|(_, v)| grads.get(v.as_tensor()).cloned()).collect();
                Ok((loss.to_scalar::<f32>()? as f64, g))
            })
            .unwrap_or_else(|e| panic!("{arch:?}: the GPU form in {p:?}: {e}"))
        };
        let ((l32, g32), (l16, g16)) = (run(Precision::F32), run(Precision::Bf16));
        let norm = |t: &Tensor| t.sqr().unwrap().sum_all().unwrap().to_scalar::<f32>().unwrap().sqrt() as f64;
        let (mut worst, mut cos_min) = (0f64, 1f64);
        for (a, b) in g32.iter().zip(&g16) {
            worst = worst.max(norm(&(a - b).unwrap()) / norm(a).max(1e-30));
            let dot = (a * b).unwrap().sum_all().unwrap().to_scalar::<f32>().unwrap() as f64;
            cos_min = cos_min.min(dot / (norm(a) * norm(b)).max(1e-30));
        }
        let loss = (l16 - l32).abs() / l32;
        eprintln!("{arch:?}: loss f32 {l32:.9}, bf16 {l16:.9} ({loss:.2e}); gradients {worst:.2e}, cosine ≥ {cos_min:.6}");
        assert!(loss < 1e-3 && worst < 0.1 && cos_min > 0.995, "{arch:?}: bf16 moved the step too far");
        assert!(worst > 1e-6, "{arch:?}: the bf16 gradients equal f32's: the input projections did not run in bf16");
    }
}
