//! The output side's fused kernels against their composed-op twins (split from `kernels.rs`):
//! maxout, the deep output, the optimiser's update, the projection's loss and the linear op, and
//! the embedding, in f64 (to rounding) and f32.
mod common;

/// The products in f32: the ops against their composed twins (bf16: `tests/bf16_model.rs`).
use nmt::config::Precision::F32;

use common::twins::{compare, mask_tensor, rand_var, state_mask};

use candle_core::{DType, Device, Tensor, Var, D};
use nmt::kernels::cpu::maxout;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
#[test]
fn fused_maxout_matches_reshape_max() {
    for dtype in [DType::F64, DType::F32] {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let x = rand_var(&[11, 16], 1.0, dtype, &mut rng);
        let err = compare(
            &[&x],
            || maxout::maxout_pairs(x.as_tensor()).unwrap(),
            || x.as_tensor().reshape((11, 8, 2)).unwrap().max(D::Minus1).unwrap(),
            6,
        );
        assert!(err < 1e-12, "maxout {dtype:?}: {err}");
    }
}

/// The deep output op against `act(cat([sc, ey]) W + b)` from candle ops, maxout and tanh:
/// value and the gradients of the activations, the weights and the bias.
#[test]
fn fused_deep_output_matches_composed_ops() {
    use nmt::config::OutputLayer;
    use nmt::kernels::cpu::deep_output::deep_output;
    for layer in [OutputLayer::Maxout, OutputLayer::Tanh] {
        for (dtype, tol, masked) in
            [(DType::F64, 1e-12, false), (DType::F32, 3e-5, false), (DType::F64, 1e-12, true), (DType::F32, 3e-5, true)]
        {
            let mut rng = ChaCha8Rng::seed_from_u64(21);
            let (n, k1, k2, m2) = (13, 10, 6, 8);
            let l = match layer {
                OutputLayer::Maxout => m2 / 2,
                OutputLayer::Tanh => m2,
            };
            let sc = rand_var(&[n, k1], 1.0, dtype, &mut rng);
            let ey = rand_var(&[n, k2], 1.0, dtype, &mut rng);
            let wb = rand_var(&[k1 + k2 + 1, m2], 1.0, dtype, &mut rng);
            // A dropout mask on the hidden units.
            let mask = masked.then(|| state_mask(n * l, 53));
            let err = compare(
                &[&sc, &ey, &wb],
                || deep_output(sc.as_tensor(), ey.as_tensor(), wb.as_tensor(), layer, mask.as_deref(), F32).unwrap(),
                || {
                    let x = Tensor::cat(&[sc.as_tensor(), ey.as_tensor()], 1).unwrap();
                    let w = wb.as_tensor().narrow(0, 0, k1 + k2).unwrap();
                    let b = wb.as_tensor().narrow(0, k1 + k2, 1).unwrap();
                    let pre = x.matmul(&w).unwrap().broadcast_add(&b).unwrap();
                    let t = match layer {
                        OutputLayer::Maxout => pre.reshape((n, l, 2)).unwrap().max(D::Minus1).unwrap(),
                        OutputLayer::Tanh => pre.tanh().unwrap(),
                    };
                    match &mask {
                        Some(mk) => (t * mask_tensor(mk, n, l, dtype)).unwrap(),
                        None => t,
                    }
                },
                12,
            );
            eprintln!("deep output {layer:?} {dtype:?} masked={masked}: {err:.2e}");
            assert!(err < tol, "deep output {layer:?} {dtype:?} masked={masked}: {err}");
        }
    }
}

/// The in-place optimiser update (Adam and Adadelta, with clipping) against the composed-op
/// update of the same `Optimizer`, over five steps.
#[test]
fn fused_optimiser_matches_composed_update() {
    use nmt::config::{Impl, Optimizer as Kind, TrainConfig};
    use nmt::train::optim::Optimizer;
    for (kind, lr) in [(Kind::Adam, 1e-2), (Kind::Adadelta, 1.0)] {
        let mut rng = ChaCha8Rng::seed_from_u64(13);
        let p = rand_var(&[300, 7], 1.0, DType::F32, &mut rng);
        let pc = Var::from_tensor(&p.as_tensor().copy().unwrap()).unwrap();
        let cfg = TrainConfig { optimizer: kind, lr, clip_norm: 5.0, ..TrainConfig::default() };
        let mut fused = Optimizer::new(vec![("p".into(), p.clone())], &cfg).unwrap();
        let cfg_ops = TrainConfig { imp: Impl::Composed, ..cfg.clone() };
        let mut composed = Optimizer::new(vec![("p".into(), pc.clone())], &cfg_ops).unwrap();
        for _ in 1..=5 {
            let g = rand_var(&[300, 7], 1.0, DType::F32, &mut rng);
            for (opt, var) in [(&mut fused, &p), (&mut composed, &pc)] {
                let grads = (var.as_tensor() * g.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
                opt.clip(&grads).unwrap();
                opt.update(&grads).unwrap();
            }
        }
        let err = common::max_rel(p.as_tensor(), pc.as_tensor());
        eprintln!("{kind:?}: {err:.2e}");
        assert!(err < 1e-5, "{kind:?}: {err}");
    }
}

/// The composed twin of the projection op's loss: cross-entropy of `logits (N, V)` against
/// the smoothed labels `(1−ε)·onehot + ε/V`, i.e. `−Σ_k ((1−ε)·onehot_k + ε/V) log p_k`.
fn smoothed_nll(logits: &Tensor, targets: &Tensor, eps: f64) -> Tensor {
    let lp = candle_nn::ops::log_softmax(logits, D::Minus1).unwrap();
    let picked = lp.gather(targets, 1).unwrap().squeeze(1).unwrap();
    let mean = lp.mean(D::Minus1).unwrap();
    ((picked * (1.0 - eps)).unwrap() + (mean * eps).unwrap()).unwrap().neg().unwrap()
}

#[test]
fn fused_projection_nll_and_linear_match_composed_ops() {
    use nmt::kernels::cpu::{linear, proj_nll};
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 3e-5)] {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        let (n, k, v) = (21, 9, 37);
        let x = rand_var(&[n, k], 1.0, dtype, &mut rng);
        let w = rand_var(&[k, v], 1.0, dtype, &mut rng);
        let b = rand_var(&[v], 1.0, dtype, &mut rng);
        let targets: Vec<u32> = (0..n).map(|_| rng.gen_range(0..v as u32)).collect();
        let tt = Tensor::from_vec(targets.clone(), (n, 1), &Device::Cpu).unwrap();
        let composed_logits = || x.as_tensor().matmul(w.as_tensor()).unwrap().broadcast_add(b.as_tensor()).unwrap();
        let err = compare(&[&x, &w, &b], || linear::linear(x.as_tensor(), w.as_tensor(), b.as_tensor(), F32).unwrap(), composed_logits, 8);
        assert!(err < tol, "linear {dtype:?}: {err}");
        for eps in [0.0, 0.1] {
            let err = compare(
                &[&x, &w, &b],
                || {
                    proj_nll::proj_nll(
                        x.as_tensor(),
                        nmt::kernels::shapes::proj_weight::ProjWeight::Kv(w.as_tensor()),
                        b.as_tensor(),
                        &targets,
                        eps,
                        F32,
                    )
                    .unwrap()
                },
                || smoothed_nll(&composed_logits(), &tt, eps),
                10,
            );
            eprintln!("projection nll {dtype:?} smoothing {eps}: {err:.2e}");
            assert!(err < tol, "projection nll {dtype:?} smoothing {eps}: {err}");
        }
    }
}

/// The embedding op (lookup and dropout mask) against `index_select` times the mask, with
/// repeated ids so that the scatter adds.
#[test]
fn fused_embedding_matches_index_select_times_mask() {
    use nmt::kernels::cpu::lookup::lookup_op;
    for (dtype, masked) in [(DType::F64, false), (DType::F64, true), (DType::F32, true)] {
        let mut rng = ChaCha8Rng::seed_from_u64(31);
        let (v, m) = (11, 6);
        let table = rand_var(&[v, m], 1.0, dtype, &mut rng);
        let ids: Vec<u32> = vec![3, 7, 3, 0, 10, 7, 7];
        let mask = masked.then(|| state_mask(ids.len() * m, 47));
        let idt = Tensor::new(ids.as_slice(), &Device::Cpu).unwrap();
        let err = compare(
            &[&table],
            || lookup_op(table.as_tensor(), &ids, mask.as_deref()).unwrap(),
            || {
                let x = table.as_tensor().index_select(&idt, 0).unwrap();
                match &mask {
                    Some(mk) => (x * mask_tensor(mk, ids.len(), m, dtype)).unwrap(),
                    None => x,
                }
            },
            16,
        );
        assert!(err < 1e-6, "embed {dtype:?} masked={masked}: {err}");
    }
}

/// The tied layout: the op reads `E (V, K)` as `Wᵀ` and returns `dE` in that layout.
#[test]
fn fused_projection_nll_reads_transposed_weights() {
    use nmt::kernels::cpu::proj_nll::proj_nll;
    use nmt::kernels::shapes::proj_weight::ProjWeight;
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 3e-5)] {
        let mut rng = ChaCha8Rng::seed_from_u64(29);
        let (n, k, v) = (13, 7, 31);
        let x = rand_var(&[n, k], 1.0, dtype, &mut rng);
        let e = rand_var(&[v, k], 1.0, dtype, &mut rng);
        let b = rand_var(&[v], 1.0, dtype, &mut rng);
        let targets: Vec<u32> = (0..n).map(|_| rng.gen_range(0..v as u32)).collect();
        let tt = Tensor::from_vec(targets.clone(), (n, 1), &Device::Cpu).unwrap();
        let err = compare(
            &[&x, &e, &b],
            || proj_nll(x.as_tensor(), ProjWeight::Vk(e.as_tensor()), b.as_tensor(), &targets, 0.1, F32).unwrap(),
            || {
                let z = x.as_tensor().matmul(&e.as_tensor().t().unwrap()).unwrap().broadcast_add(b.as_tensor()).unwrap();
                smoothed_nll(&z, &tt, 0.1)
            },
            14,
        );
        eprintln!("projection nll, transposed weights, {dtype:?}: {err:.2e}");
        assert!(err < tol, "projection nll transposed {dtype:?}: {err}");
    }
}
