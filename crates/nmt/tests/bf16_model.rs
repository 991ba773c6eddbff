//! The whole model's loss and gradients with the training step's large products in bf16
//! (`train.precision = "bf16"`, issue 42) against the same step in f32: the loss within 0.1 %
//! and every parameter's gradient within 10 % in norm (cosine ≥ 0.995), for Bahdanau's decoder
//! and the conditional decoder of the shipped recipe, and that decoder with layer normalisation
//! (whose backward passes recompute the normalised products as the forward pass multiplied
//! them, `kernels::cpu::attention_op`). Measured (2026-11-26, Zen 4): loss 2e-5,
//! gradients 2–7 % (the largest where a gradient's terms cancel), cosine ≥ 0.9977. Whether that
//! costs learning is measured by dev BLEU, not here (docs/PERF.md). The precision is the
//! model's (`Seq2Seq::set_products`) or the op's: nothing here is process-wide.
//!
//! The bound: operands rounded to bf16 carry a relative error of 2⁻⁸ each, so a product's
//! error is about `2⁻⁷·Σ|a||b|`: small against the sum when its terms agree, not when they
//! cancel, as a gradient summed over a batch does. What is measured is printed.
mod common;

use candle_core::{DType, Device, Tensor, Var};
use nmt::config::{ArchName, Precision};
use nmt::kernels::cpu::engine::products::bf16_available;
use nmt::kernels::cpu::proj_nll::proj_nll;
use nmt::kernels::shapes::proj_weight::ProjWeight;
use nmt::model::{BatchTensors, Seq2Seq};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn norm(t: &Tensor) -> f64 {
    t.sqr().unwrap().sum_all().unwrap().to_scalar::<f32>().unwrap().sqrt() as f64
}

/// (relative loss difference, worst relative gradient difference in norm, worst cosine).
fn compare(conditional: bool, layer_norm: bool) -> (f64, f64, f64) {
    let dev = Device::Cpu;
    let mut cfg = common::small_config(ArchName::Rnnsearch, 300, 48, 64);
    common::set_att_dim(&mut cfg, 40);
    cfg.maxout_dim = 32;
    // Weights large enough that the logits and the attention are far from uniform (at the
    // default init the loss is ln V whatever the products' precision).
    cfg.init_std = 0.15;
    if conditional {
        common::with_conditional(&mut cfg);
    }
    if layer_norm {
        cfg.gru = nmt::config::GruForm::ResetAfter;
        cfg.layer_norm = true;
    }
    let mut model = Seq2Seq::fresh(&cfg, 3, DType::F32, &dev).unwrap();
    let batch = common::random_batch(24, 300, 3..20, 5);
    let bt = BatchTensors::new(&batch, DType::F32, &dev).unwrap();
    let mut run = |p: Precision| {
        assert_eq!(model.set_products(p), p);
        let loss = model.loss(&bt, None).unwrap().mean;
        let grads = loss.backward().unwrap();
        let g: Vec<(String, Tensor)> =
            model.params.named_vars().into_iter().map(|(name, v)| (name, grads.get(v.as_tensor()).unwrap().clone())).collect();
        (loss.to_scalar::<f32>().unwrap() as f64, g)
    };
    let (l32, g32) = run(Precision::F32);
    let (l16, g16) = run(Precision::Bf16);
    eprintln!("loss f32 {l32:.9}, bf16 {l16:.9}");
    let (mut worst, mut cos_min) = (0f64, 1f64);
    for ((name, a), (_, b)) in g32.iter().zip(&g16) {
        let rel = norm(&(a - b).unwrap()) / norm(a).max(1e-30);
        let cos = (a * b).unwrap().sum_all().unwrap().to_scalar::<f32>().unwrap() as f64 / (norm(a) * norm(b)).max(1e-30);
        eprintln!("  {name}: relative difference {rel:.2e}, cosine {cos:.6}");
        worst = worst.max(rel);
        cos_min = cos_min.min(cos);
    }
    ((l16 - l32).abs() / l32, worst, cos_min)
}

#[test]
fn bf16_loss_and_gradients_are_close_to_f32() {
    if !bf16_available() {
        eprintln!("NOT RUN: {}; the bf16 training step is untested here", nmt::bf16_path());
        return;
    }
    for (conditional, layer_norm) in [(false, false), (true, false), (true, true)] {
        let (loss, grad, cos) = compare(conditional, layer_norm);
        eprintln!("conditional {conditional} layer norm {layer_norm}: loss {loss:.2e}, gradients {grad:.2e}, cosine ≥ {cos:.6}");
        assert!(loss < 1e-3, "conditional {conditional}: loss differs by {loss:e}");
        assert!(grad < 0.1 && cos > 0.995, "conditional {conditional}: gradients differ by {grad:e} (cosine {cos})");
        // bf16 really ran: an f32 step repeated gives identical gradients, this does not.
        assert!(grad > 1e-5, "conditional {conditional}: the bf16 gradients equal f32's ({grad:e})");
    }
}

/// The projection-and-loss op alone in bf16 (`proj_nll.rs`: its products' operands packed in
/// 12-row and 32-column panels of bf16 pairs): against its f32 pass, on shapes whose rows are
/// not a multiple of the panels (nor even), whose
/// vocabulary is not a multiple of the panels (nor even), with `k` odd, both weight layouts and
/// a weighted sum (so each row's `g` differs). A misplaced block or pair would be off by O(1).
#[test]
fn bf16_projection_gradients_are_close_to_f32_on_edge_shapes() {
    if !bf16_available() {
        eprintln!("NOT RUN: {}; the bf16 projection is untested here", nmt::bf16_path());
        return;
    }
    let dev = Device::Cpu;
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    // The last shape's products have every dimension at least `amx_gemm::MIN_DIM`: on AMX the
    // smaller ones run f32 (issue 76), and their gradients then equal f32's.
    for (n, k, v) in [(1, 5, 7), (13, 33, 45), (37, 16, 100), (24, 64, 33), (61, 40, 301), (70, 64, 130)] {
        for tied in [false, true] {
            let mut r = |len: usize, s: f32| -> Vec<f32> { (0..len).map(|_| rng.gen_range(-s..s)).collect() };
            let x = Var::from_vec(r(n * k, 1.0), (n, k), &dev).unwrap();
            let w = Var::from_vec(r(k * v, 0.5), if tied { (v, k) } else { (k, v) }, &dev).unwrap();
            let b = Var::from_vec(r(v, 0.5), v, &dev).unwrap();
            let g = Tensor::from_vec(r(n, 1.0), n, &dev).unwrap();
            let targets: Vec<u32> = (0..n).map(|i| (i * 7 % v) as u32).collect();
            let run = |p: Precision| {
                let pw = if tied { ProjWeight::Vk(w.as_tensor()) } else { ProjWeight::Kv(w.as_tensor()) };
                let nll = proj_nll(x.as_tensor(), pw, b.as_tensor(), &targets, 0.1, p).unwrap();
                let grads = (nll * &g).unwrap().sum_all().unwrap().backward().unwrap();
                [&x, &w, &b].map(|p| grads.get(p.as_tensor()).unwrap().clone())
            };
            let (f32s, bf16s) = (run(Precision::F32), run(Precision::Bf16));
            for (name, a, c) in [("dx", &f32s[0], &bf16s[0]), ("dw", &f32s[1], &bf16s[1]), ("db", &f32s[2], &bf16s[2])] {
                let rel = norm(&(a - c).unwrap()) / norm(a).max(1e-30);
                eprintln!("n {n} k {k} v {v} tied {tied}: {name} relative difference {rel:.2e}");
                assert!(rel < 2e-2, "n {n} k {k} v {v} tied {tied}: {name} differs by {rel:e}");
            }
            let rel = norm(&(&f32s[1] - &bf16s[1]).unwrap()) / norm(&f32s[1]);
            let in_bf16 = nmt::bf16_path() != nmt::kernels::cpu::engine::products::Bf16Path::Amx
                || nmt::kernels::cpu::engine::amx_gemm::pays(k, n, v);
            assert_eq!(rel > 1e-6, in_bf16, "n {n} k {k} v {v} tied {tied}: dW in bf16 {in_bf16}, relative difference {rel:e}");
        }
    }
}
