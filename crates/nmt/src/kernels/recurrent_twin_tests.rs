//! The GPU kernels, run emulated on the host, against the CPU's fused ops (`kernels::cpu::birnn`,
//! `kernels::cpu::rnn_sequence`)
//! and in-place update (`kernels::cpu::optim_step`); the decoders' GPU form is tested beside its
//! wiring (`model/decoder_gpu.rs`), the search's pick beside its use (`search/candle.rs`):
//! the same annotations and the same gradients, for both GRU forms and the LSTM, with and without recurrent
//! dropout, with padded sentences of every length. A wrong index, leading dimension, transpose
//! or step order in `birnn.rs` or a `.cu` source fails here, on any machine.
use candle_core::{Device, Tensor, Var};
use rand::{Rng, SeedableRng};

use crate::config::{CellKind, GruForm};
use crate::kernels::gpu::emulated::same_bits_in_any_order;
use crate::kernels::gpu::launch::Module;
use crate::kernels::shapes::rnn_dims::RnnSpec;

fn random(rng: &mut impl Rng, shape: &[usize], scale: f32) -> Var {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|_| rng.gen_range(-scale..scale)).collect();
    Var::from_tensor(&Tensor::from_vec(v, shape, &Device::Cpu).unwrap()).unwrap()
}

/// The output and the gradients of `(gi, u, bh)` under the loss `Σ out ⊙ w`, by `gpu` or by
/// the CPU's fused op.
fn run(gpu: bool, vars: &[Var; 3], w: &Tensor, spec: RnnSpec<'_>) -> Vec<Vec<f32>> {
    let [gi, u, bh] = vars;
    let out = match gpu {
        true => crate::kernels::gpu::birnn::birnn_sequence(gi.as_tensor(), u.as_tensor(), bh.as_tensor(), spec).unwrap(),
        false => crate::kernels::cpu::birnn::birnn_sequence(gi.as_tensor(), u.as_tensor(), bh.as_tensor(), spec).unwrap(),
    };
    out_and_grads(&out, w, vars)
}

/// `out` and the gradients of `vars` under the loss `Σ out ⊙ w`, flat.
fn out_and_grads(out: &Tensor, w: &Tensor, vars: &[Var]) -> Vec<Vec<f32>> {
    let grads = (out * w).unwrap().sum_all().unwrap().backward().unwrap();
    let mut all = vec![out.flatten_all().unwrap().to_vec1::<f32>().unwrap()];
    for v in vars {
        all.push(grads.get(v.as_tensor()).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap());
    }
    all
}

/// The bidirectional op (`birnn.rs`) against `kernels::cpu::birnn`: both GRU forms, the LSTM and
/// the layer-normalised reset-after GRU (`bh` rows `[b_h | γ_h]`), with and without recurrent
/// dropout, padded sentences; the annotations and the gradients of `gi`, `u` and `bh`.
#[test]
fn emulated_gpu_birnn_equals_the_cpu_op() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(57);
    let (b, s, h) = (3usize, 6usize, 5usize);
    let lens = [6usize, 4, 1];
    let (paper, reset_after) = (CellKind::Gru(GruForm::Paper), CellKind::Gru(GruForm::ResetAfter));
    for (kind, norm) in [(paper, false), (reset_after, false), (CellKind::Lstm, false), (reset_after, true)] {
        let g = kind.gates() * h;
        for dropout in [false, true] {
            let bw = if norm { 2 * g } else { g };
            let vars = [random(&mut rng, &[b * s, 2 * g], 1.0), random(&mut rng, &[2, h, g], 0.5), random(&mut rng, &[2, bw], 0.5)];
            let w =
                Tensor::from_vec((0..b * s * 2 * h).map(|_| rng.gen_range(-1f32..1.0)).collect::<Vec<_>>(), (b, s, 2 * h), &Device::Cpu)
                    .unwrap();
            let mask: Vec<f32> = (0..2 * b * h).map(|_| if rng.gen_bool(0.3) { 0.0 } else { 1.0 / 0.7 }).collect();
            let spec = RnnSpec { kind, lens: &lens, state_mask: dropout.then_some(&mask[..]), products: crate::config::Precision::F32 };
            let (want, got) = (run(false, &vars, &w, spec), same_bits_in_any_order(Module::Recurrence, || run(true, &vars, &w, spec)));
            for (k, (a, e)) in got.iter().zip(&want).enumerate() {
                assert_eq!(a.len(), e.len());
                for (i, (x, y)) in a.iter().zip(e).enumerate() {
                    assert!(
                        (x - y).abs() <= 1e-5 * (1.0 + y.abs()),
                        "{kind:?} norm {norm} dropout {dropout}: tensor {k} [{i}]: gpu {x}, cpu {y}"
                    );
                }
            }
        }
    }
}

/// The one-direction op (`rnn_sequence.rs`) against `kernels::cpu::rnn_sequence`: each sentence's own
/// recurrent term and initial state, both directions of travel, both GRU forms and the LSTM,
/// with and without recurrent dropout, padded sentences; the states and the gradients of
/// `gi`, `u` and `rows` within 1e-5.
#[test]
fn emulated_gpu_rnn_sequence_equals_the_cpu_op() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(58);
    let (b, s, h) = (3usize, 5usize, 4usize);
    let lens = [3usize, 5, 1];
    for kind in [CellKind::Gru(GruForm::Paper), CellKind::Gru(GruForm::ResetAfter), CellKind::Lstm] {
        let g = kind.gates() * h;
        for (dropout, reverse) in [(false, false), (true, false), (true, true)] {
            let vars = [random(&mut rng, &[b, s, g], 1.0), random(&mut rng, &[h, g], 0.5), random(&mut rng, &[b, g + h], 0.8)];
            let w =
                Tensor::from_vec((0..b * s * h).map(|_| rng.gen_range(-1f32..1.0)).collect::<Vec<_>>(), (b, s, h), &Device::Cpu).unwrap();
            let mask: Vec<f32> = (0..b * h).map(|_| if rng.gen_bool(0.3) { 0.0 } else { 1.0 / 0.7 }).collect();
            let spec = RnnSpec { kind, lens: &lens, state_mask: dropout.then_some(&mask[..]), products: crate::config::Precision::F32 };
            let [gi, u, rows] = &vars;
            let run = |gpu: bool| -> Vec<Vec<f32>> {
                let (gi, u, rows) = (gi.as_tensor(), u.as_tensor(), rows.as_tensor());
                let out = match gpu {
                    true => crate::kernels::gpu::rnn_sequence::rnn_sequence(gi, u, rows, reverse, spec).unwrap(),
                    false => crate::kernels::cpu::rnn_sequence::rnn_sequence(gi, u, rows, reverse, spec).unwrap(),
                };
                out_and_grads(&out, &w, &vars)
            };
            let (want, got) = (run(false), same_bits_in_any_order(Module::Recurrence, || run(true)));
            for (k, (a, e)) in got.iter().zip(&want).enumerate() {
                assert_eq!(a.len(), e.len());
                for (i, (x, y)) in a.iter().zip(e).enumerate() {
                    let what = format!("{kind:?} dropout {dropout} reverse {reverse}: tensor {k} [{i}]");
                    assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{what}: gpu {x}, cpu {y}");
                }
            }
        }
    }
}

/// The emulated op refuses weights of the wrong width for the cell (a GRU's `U` given as an
/// LSTM's), with an error, not a panic.
#[test]
fn emulated_gpu_birnn_refuses_mismatched_weights() {
    let t = |shape: &[usize]| Tensor::zeros(shape, candle_core::DType::F32, &Device::Cpu).unwrap();
    let spec = RnnSpec { kind: CellKind::Lstm, lens: &[2], state_mask: None, products: crate::config::Precision::F32 };
    assert!(crate::kernels::gpu::birnn::birnn_sequence(&t(&[2, 12]), &t(&[2, 2, 6]), &t(&[2, 6]), spec).is_err());
}

/// The optimiser's GPU update (`optim_step.rs`, run emulated) against the CPU's in-place update
/// (`kernels::cpu::optim_step`): the same parameters and moments after three Adam updates (bias
/// corrections of steps 1–3) and three Adadelta updates, with a clipping factor.
#[test]
fn emulated_gpu_update_equals_the_cpu_update() {
    use crate::kernels::cpu::optim_step::update_in_place;
    use crate::kernels::shapes::update_rule::Rule;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(60);
    let n = 700;
    let mut draw = |s: f32| (0..n).map(|_| rng.gen_range(-s..s)).collect::<Vec<f32>>();
    let (p0, grads) = (draw(1.0), [draw(0.3), draw(0.3), draw(0.3)]);
    let rules =
        |k: u64| [Rule::Adam { lr: 2e-3, beta1: 0.9, beta2: 0.98, eps: 1e-8, step: k }, Rule::Adadelta { lr: 1.0, rho: 0.95, eps: 1e-6 }];
    for which in 0..2 {
        let cpu = Tensor::from_vec(p0.clone(), n, &Device::Cpu).unwrap();
        let (mut m, mut v) = (vec![0f32; n], vec![0f32; n]);
        let mut gpu = Tensor::from_vec(p0.clone(), n, &Device::Cpu).unwrap();
        let mut mv = Tensor::zeros(2 * n, candle_core::DType::F32, &Device::Cpu).unwrap();
        for (k, g) in grads.iter().enumerate() {
            let (rule, g) = (rules(k as u64 + 1)[which], Tensor::from_vec(g.clone(), n, &Device::Cpu).unwrap());
            update_in_place(&cpu, &g, (&mut m, &mut v), rule, 0.7, None).unwrap();
            let out = crate::kernels::gpu::optim_step::update(&gpu, &g, &mv, rule, 0.7).unwrap();
            gpu = out.narrow(0, 0, n).unwrap();
            mv = out.narrow(0, n, 2 * n).unwrap();
        }
        let want = [cpu.to_vec1::<f32>().unwrap(), m, v].concat();
        let got = [gpu.to_vec1::<f32>().unwrap(), mv.to_vec1::<f32>().unwrap()].concat();
        for (i, (a, e)) in got.iter().zip(&want).enumerate() {
            assert!((a - e).abs() <= 1e-6 * (1.0 + e.abs()), "rule {which}: [{i}] gpu {a}, cpu {e}");
        }
    }
}

/// The device-side update of a parameter arena (`optim_step::DeviceUpdate`: the update count,
/// the gradient norm, warm-up, clipping or normalising, Adam's bias corrections all computed on
/// the device) against the host's (`train/optim.rs`'s rule, `kernels::cpu::optim_step`'s update)
/// over five updates with gradients of norms above and below the clip.
#[test]
fn device_update_scalars_equal_the_hosts() {
    use crate::kernels::cpu::optim_step::update_in_place;
    use crate::kernels::gpu::emulated::{Emulated, HostBuf};
    use crate::kernels::gpu::launch::Launch;
    use crate::kernels::gpu::optim_step::{DeviceUpdate, UpdateConfig};
    use crate::kernels::shapes::update_rule::Rule;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(61);
    let n = 9000;
    let p0: Vec<f32> = (0..n).map(|_| rng.gen_range(-1f32..1.0)).collect();
    let grads: Vec<Vec<f32>> = [0.5f32, 0.001, 0.02, 0.3, 0.0005].iter().map(|&s| (0..n).map(|_| rng.gen_range(-s..s)).collect()).collect();
    for normalize in [false, true] {
        let cfg = UpdateConfig { adam: true, beta: 0.9, beta2: 0.98, eps: 1e-8, warmup: 3, clip: 1.0, normalize };
        let device = || {
            let l = Emulated;
            let (p, m, v, g) = (HostBuf::from_slice(&p0), l.zeros(n).unwrap(), l.zeros(n).unwrap(), l.zeros(n).unwrap());
            let dev = DeviceUpdate::new(&l, cfg, n, 2e-3).unwrap();
            let mut norms = Vec::new();
            for gk in &grads {
                l.write(l.addr(&g), gk).unwrap();
                dev.step(&l, l.addr(&p), [l.addr(&m), l.addr(&v)], l.addr(&g)).unwrap();
                norms.push(dev.norm(&l).unwrap());
            }
            (norms, [p.to_vec(), m.to_vec(), v.to_vec()].concat())
        };
        let (norms, got) = same_bits_in_any_order(Module::Update, device);
        let cpu = Tensor::from_vec(p0.clone(), n, &Device::Cpu).unwrap();
        let (mut hm, mut hv) = (vec![0f32; n], vec![0f32; n]);
        for (k, gk) in grads.iter().enumerate() {
            let step = k as u64 + 1;
            let norm = gk.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>().sqrt();
            let got = norms[k];
            assert!((got - norm).abs() <= 1e-12 * norm, "update {step}: norm {got} against {norm}");
            let scale = if norm > cfg.clip || (normalize && norm > 0.0) { cfg.clip / norm } else { 1.0 };
            let lr = 2e-3 * (step as f64 / 3.0).min(1.0);
            let rule = Rule::Adam { lr, beta1: cfg.beta, beta2: cfg.beta2, eps: cfg.eps, step };
            update_in_place(&cpu, &Tensor::from_vec(gk.clone(), n, &Device::Cpu).unwrap(), (&mut hm, &mut hv), rule, scale, None).unwrap();
        }
        let want = [cpu.to_vec1::<f32>().unwrap(), hm, hv].concat();
        for (i, (a, e)) in got.iter().zip(&want).enumerate() {
            assert!((a - e).abs() <= 1e-6 * (1.0 + e.abs()), "normalize {normalize}: [{i}] device {a}, host {e}");
        }
    }
}

/// The gated-feedback stack (`feedback_forward.rs`) against `kernels::cpu::feedback_op`: both GRU forms and
/// the LSTM, three layers (two upper), with and without dropout (input and state masks) and
/// residual connections; the top outputs and the gradients of `s1`, `h0` and every weight.
#[test]
fn emulated_gpu_feedback_stack_equals_the_cpu_op() {
    use crate::kernels::cpu::feedback_op;
    use crate::kernels::shapes::feedback_dims::{param_len, FeedbackSpec, LayerDropout};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(59);
    let (b, t, n, layers) = (3usize, 4usize, 5usize, 3usize);
    let keep = |rng: &mut rand_chacha::ChaCha8Rng, len: usize| -> Vec<f32> {
        (0..len).map(|_| if rng.gen_bool(0.3) { 0.0 } else { 1.0 / 0.7 }).collect()
    };
    for kind in [CellKind::Gru(GruForm::Paper), CellKind::Gru(GruForm::ResetAfter), CellKind::Lstm] {
        for (dropout, residual) in [(false, false), (true, false), (false, true), (true, true)] {
            let plen = (layers - 1) * param_len(kind, n, layers);
            let vars = [random(&mut rng, &[b, t, n], 1.0), random(&mut rng, &[b, n], 1.0), random(&mut rng, &[plen], 0.4)];
            let w =
                Tensor::from_vec((0..b * t * n).map(|_| rng.gen_range(-1f32..1.0)).collect::<Vec<_>>(), (b, t, n), &Device::Cpu).unwrap();
            let masks: Vec<(Vec<f32>, Vec<f32>)> = (0..layers - 1).map(|_| (keep(&mut rng, b * t * n), keep(&mut rng, b * n))).collect();
            let drop: Vec<LayerDropout<'_>> = masks
                .iter()
                .map(|(i, s)| if dropout { LayerDropout { input: Some(&i[..]), state: Some(&s[..]) } } else { LayerDropout::default() })
                .collect();
            let spec = FeedbackSpec { kind, layers, residual, dropout: &drop };
            let run = |gpu: bool| -> Vec<Vec<f32>> {
                let [s1, h0, p] = &vars;
                let out = match gpu {
                    true => {
                        crate::kernels::gpu::feedback_op::feedback_sequence(s1.as_tensor(), h0.as_tensor(), p.as_tensor(), spec.clone())
                            .unwrap()
                    }
                    false => feedback_op::feedback_sequence(s1.as_tensor(), h0.as_tensor(), p.as_tensor(), spec.clone()).unwrap(),
                };
                out_and_grads(&out, &w, &vars)
            };
            let (want, got) = (run(false), same_bits_in_any_order(Module::Feedback, || run(true)));
            for (k, (a, e)) in got.iter().zip(&want).enumerate() {
                assert_eq!(a.len(), e.len());
                for (i, (x, y)) in a.iter().zip(e).enumerate() {
                    let ok = (x - y).abs() <= 1e-5 * (1.0 + y.abs());
                    assert!(ok, "{kind:?} dropout {dropout} residual {residual}: tensor {k} [{i}]: gpu {x}, cpu {y}");
                }
            }
        }
    }
}
