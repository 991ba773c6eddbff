//! The recorded GPU training step (`launch_step.rs`, run emulated: the GPU's kernels compiled for
//! the host) against the composed model, its reference twin: the same loss and the same gradient
//! of every parameter, with the same dropout masks and label smoothing. Then the acceptance of
//! issue 69: for `bench-rnnsearch` and `configs/rnnsearch-s2s.toml`, a step recorded once and
//! replayed for three new batches of its bucket leaves, after every update, a fresh eager
//! step's parameters, loss and gradient norm, bit for bit.
use candle_core::{DType, Device};
use nmt_data::{Batch, Example};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::inputs::BatchTensors;
use super::launch_arena::pack_model;
use super::launch_bucket::{host_batch, uploaded, Bucket, MaskSizes};
use super::launch_step::{packed_gradients, LaunchStep};
use super::regularizer::{DropoutRates, Regularizer};
use super::seq2seq::Seq2Seq;
use crate::config::{Config, Impl, ModelConfig, WeightInit};
use crate::kernels::gpu::emulated::{Emulated, HostBuf};
use crate::kernels::gpu::optim_step::UpdateConfig;

type Step = LaunchStep<HostBuf<f32>, HostBuf<i64>>;

/// A batch of `b` sentence pairs padded to `(s, t)`, random ids below the vocabularies, the
/// first pair of full length (so the padding is the batch's own). Also `train/graph.rs`'s tests'.
pub(crate) fn batch(rng: &mut ChaCha8Rng, cfg: &ModelConfig, (b, s, t): (usize, usize, usize)) -> Batch {
    let ids = |rng: &mut ChaCha8Rng, v: usize, n: usize| (0..n).map(|_| rng.gen_range(4..v as u32)).collect::<Vec<_>>();
    let examples: Vec<Example> = (0..b)
        .map(|k| {
            let (ls, lt) = if k == 0 { (s, t) } else { (rng.gen_range(1..=s), rng.gen_range(1..=t)) };
            Example { src: ids(rng, cfg.src_vocab, ls), tgt: ids(rng, cfg.tgt_vocab, lt) }
        })
        .collect();
    Batch::from_examples(&examples.iter().collect::<Vec<_>>(), (0..b).collect())
}

fn sizes(cfg: &ModelConfig) -> MaskSizes {
    MaskSizes { emb: cfg.emb_dim, hidden: cfg.hidden_dim, units: cfg.maxout_dim }
}

fn rates(cfg: &ModelConfig) -> DropoutRates {
    DropoutRates { units: cfg.dropout, src_words: 0.0, tgt_words: 0.0, recurrent: cfg.recurrent_dropout }
}

const NO_UPDATE: UpdateConfig = UpdateConfig { adam: true, beta: 0.9, beta2: 0.98, eps: 1e-9, warmup: 0, clip: 0.0, normalize: false };

/// Each slot's largest difference against its largest entry.
fn per_slot(slots: &[(String, usize, usize)], want: &[f32], got: &[f32]) -> Vec<(String, f64)> {
    slots
        .iter()
        .map(|(s, at, len)| {
            let (w, g) = (&want[*at..at + len], &got[*at..at + len]);
            let scale = w.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-20);
            let diff = w.iter().zip(g).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
            (s.clone(), f64::from(diff / scale))
        })
        .collect()
}

/// The composed model's loss and its gradients packed as the step's arena, with the slots.
fn composed(model: &Seq2Seq, b: &Batch, smoothing: f64) -> (f32, Vec<f32>, Vec<(String, usize, usize)>) {
    let bt = BatchTensors::new(b, DType::F32, &Device::Cpu).unwrap();
    let mut reg = Regularizer::new(rates(&model.cfg), smoothing, 5, 1);
    let loss = model.loss(&bt, Some(&mut reg)).unwrap().mean;
    let grads = loss.backward().unwrap();
    let (packed, slots) = packed_gradients(model, &grads).unwrap();
    (loss.to_scalar::<f32>().unwrap(), packed, slots)
}

/// Small models of both shipped decoders: Bahdanau's with the reset-after GRU, its first
/// backward state as the start and separate embeddings (`bench-rnnsearch`'s form), and the
/// conditional GRU in the paper's form from the annotations' mean with tied embeddings, unit
/// and recurrent dropout and label smoothing (`rnnsearch-s2s`'s form). N(0, 0.3²) weights, as
/// `tests/gpu_layouts.rs`: at 0.01 every state is near zero and a wrong index hides.
#[test]
fn launch_step_equals_the_composed_loss_and_gradients() {
    let s2s = Config::from_file(&repo().join("configs/rnnsearch-s2s.toml"), &[]).unwrap().model;
    let bench = ModelConfig::preset("bench-rnnsearch").unwrap();
    let lstm = ModelConfig { cell: crate::config::Cell::Lstm, ..bench.clone() };
    for (base, smoothing) in [(bench, 0.0), (s2s, 0.1), (lstm, 0.1)] {
        let cfg = ModelConfig {
            emb_dim: 6,
            hidden_dim: 5,
            maxout_dim: if base.tie_target_embeddings { 6 } else { 4 },
            src_vocab: 23,
            tgt_vocab: 19,
            init: WeightInit::Paper,
            init_std: 0.3,
            ..base.clone()
        };
        let mut model = Seq2Seq::fresh(&cfg, 11, DType::F32, &Device::Cpu).unwrap();
        model.set_impl(Impl::Composed);
        let b = batch(&mut ChaCha8Rng::seed_from_u64(3), &cfg, (3, 5, 4));
        let (want_loss, want, slots) = composed(&model, &b, smoothing);
        // `s_0`'s pool (`start.cu`) runs only here, in the whole step: its test of the threads'
        // order (emulated::same_bits_in_any_order) is this one.
        let device = || {
            let l = Emulated;
            let step = Step::new(&l, &model, NO_UPDATE, 0.0, smoothing).unwrap();
            let mut reg = Regularizer::new(rates(&cfg), smoothing, 5, 1);
            step.run(&l, &uploaded(&host_batch(&b, sizes(&cfg), Some(&mut reg.dropout))), false).unwrap();
            (step.loss_and_norm(&l).unwrap().0, step.grads(&l).unwrap())
        };
        let (loss, grads) = crate::kernels::gpu::emulated::same_bits_in_any_order(crate::kernels::gpu::launch::Module::Start, device);
        let what = format!("{:?} tied {}", cfg.arch, cfg.tie_target_embeddings);
        assert!((loss - want_loss).abs() <= 1e-5 * want_loss.abs(), "{what}: loss {loss} against {want_loss}");
        for (slot, rel) in per_slot(&slots, &want, &grads) {
            assert!(rel <= 1e-4, "{what}: {slot}'s gradient differs by {rel:.2e} of its scale");
        }
    }
}

/// The packing is a bijection on the parameters: an arena written back into another model of the
/// same configuration makes it the first, element for element, for both decoders' forms (the
/// paper GRU's zero `b_h` is a constant of the packing, no parameter).
#[test]
fn an_arena_written_back_is_the_model() {
    let s2s = Config::from_file(&repo().join("configs/rnnsearch-s2s.toml"), &[]).unwrap().model;
    for base in [ModelConfig::preset("bench-rnnsearch").unwrap(), s2s] {
        let cfg = ModelConfig { emb_dim: 6, hidden_dim: 5, maxout_dim: 6, src_vocab: 23, tgt_vocab: 19, ..base };
        let (a, b) =
            (Seq2Seq::fresh(&cfg, 1, DType::F32, &Device::Cpu).unwrap(), Seq2Seq::fresh(&cfg, 2, DType::F32, &Device::Cpu).unwrap());
        let l = Emulated;
        let step = Step::new(&l, &a, NO_UPDATE, 0.0, 0.0).unwrap();
        step.write_back(&l, &b).unwrap();
        for ((name, va), (_, vb)) in a.params.named_vars().iter().zip(b.params.named_vars()) {
            let (x, y) = (va.flatten_all().unwrap().to_vec1::<f32>().unwrap(), vb.flatten_all().unwrap().to_vec1::<f32>().unwrap());
            assert_eq!(x, y, "{:?}: {name}", cfg.arch);
        }
    }
}

/// What the recorded step does not run is refused with a clear error, not run wrong: layer
/// normalisation, stacked decoders, RNNenc.
#[test]
fn the_recorded_step_refuses_what_it_does_not_run() {
    let base = ModelConfig {
        emb_dim: 6,
        hidden_dim: 5,
        maxout_dim: 4,
        src_vocab: 23,
        tgt_vocab: 19,
        ..ModelConfig::preset("bench-rnnsearch").unwrap()
    };
    // Marian's layer normalisation is the conditional GRU's (`config/checks.rs`).
    let s2s = |b: &ModelConfig| {
        let c = Config::from_file(&repo().join("configs/rnnsearch-s2s.toml"), &[]).unwrap().model;
        ModelConfig {
            emb_dim: b.emb_dim,
            hidden_dim: b.hidden_dim,
            maxout_dim: b.emb_dim,
            src_vocab: b.src_vocab,
            tgt_vocab: b.tgt_vocab,
            ..c
        }
    };
    let refused = [
        ("layer normalisation", ModelConfig { layer_norm: true, gru: crate::config::GruForm::ResetAfter, ..s2s(&base) }),
        ("stacked layers", ModelConfig { dec_layers: 2, ..base.clone() }),
        ("RNNsearch only", ModelConfig { arch: crate::config::Arch::rnnenc(), ..base.clone() }),
    ];
    for (what, cfg) in refused {
        let model = Seq2Seq::fresh(&cfg, 1, DType::F32, &Device::Cpu).unwrap();
        let err = Step::new(&Emulated, &model, NO_UPDATE, 0.0, 0.0).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains(what) || err.contains("does not run"), "{what}: {err:?}");
    }
}

fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The recipe's own model and optimiser for the replay check: its sizes, dropout, label
/// smoothing, Adam with its warm-up and clipping.
fn recipe(name: &str) -> (ModelConfig, UpdateConfig, f64, f64) {
    let t = match name {
        "bench-rnnsearch" => crate::config::TrainConfig { warmup: 4, ..Default::default() },
        path => Config::from_file(&repo().join(path), &[]).unwrap().train,
    };
    let model = match name {
        "bench-rnnsearch" => ModelConfig::preset(name).unwrap(),
        path => Config::from_file(&repo().join(path), &[]).unwrap().model,
    };
    let cfg = UpdateConfig {
        adam: true,
        beta: t.adam_betas.0,
        beta2: t.adam_betas.1,
        eps: t.adam_eps,
        warmup: t.warmup as usize,
        clip: t.clip_norm,
        normalize: t.normalize_updates,
    };
    (model, cfg, t.lr, t.label_smoothing)
}

/// Issue 69's acceptance: the step of `bench-rnnsearch` and of `configs/rnnsearch-s2s.toml` (at
/// their own sizes: 256 units, 8 000 words), recorded on its bucket's first batch, then replayed
/// for three more batches of the bucket (other ids, lengths and dropout masks), equals fresh
/// eager steps after every update, bit for bit: the parameters, the loss and the norm.
#[test]
fn replayed_training_steps_equal_fresh_steps_bit_for_bit() {
    for name in ["bench-rnnsearch", "configs/rnnsearch-s2s.toml"] {
        let (cfg, opt, lr, smoothing) = recipe(name);
        let model = Seq2Seq::fresh(&cfg, 7, DType::F32, &Device::Cpu).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(69);
        let batches: Vec<_> = (0..4u64)
            .map(|k| {
                let b = batch(&mut rng, &cfg, (3, 6, 5));
                let mut reg = Regularizer::new(rates(&cfg), smoothing, 1, k + 1);
                host_batch(&b, sizes(&cfg), Some(&mut reg.dropout))
            })
            .collect();
        let l = Emulated;
        let (eager, replayed) = (Step::new(&l, &model, opt, lr, smoothing).unwrap(), Step::new(&l, &model, opt, lr, smoothing).unwrap());
        let bucket = Bucket::new(&l, &batches[0]).unwrap();
        let mut moved = false;
        for (k, x) in batches.iter().enumerate() {
            eager.run(&l, &uploaded(x), true).unwrap();
            bucket.stage(x).unwrap();
            bucket.step(&replayed, true).unwrap();
            let (want, got) = (eager.params(&l).unwrap(), replayed.params(&l).unwrap());
            let same = want.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{name}: update {k}: the replayed step's parameters differ from the fresh step's");
            let ((wl, wn), (gl, gn)) = (eager.loss_and_norm(&l).unwrap(), replayed.loss_and_norm(&l).unwrap());
            assert_eq!((wl.to_bits(), wn.to_bits()), (gl.to_bits(), gn.to_bits()), "{name}: update {k}: loss, norm");
            assert!(wl.is_finite() && wn > 0.0, "{name}: update {k}: loss {wl}, norm {wn}");
            moved |= k > 0 && want != pack_model(&model).unwrap().0;
        }
        assert!(moved, "{name}: the updates left the parameters where they were");
        assert!(bucket.recording().tape_len() > 100, "{name}: a step of {} operations", bucket.recording().tape_len());
    }
}

/// The scale at which the full-size step is compared with the composed model, here and on a
/// GPU (`tests/cuda/graph.rs`): N(0, 1/H) weights, so that a pre-activation of `H` inputs has
/// unit variance.
fn full_size(base: ModelConfig, std: f64) -> ModelConfig {
    ModelConfig { init: WeightInit::Paper, init_std: std, ..base }
}

/// The largest per-slot difference of the composed gradients when every weight moves by less
/// than one f32 rounding (a relative 6e-8, random signs): how well the comparison is posed.
fn sensitivity(model: &Seq2Seq, b: &Batch, smoothing: f64, want: &[f32], slots: &[(String, usize, usize)]) -> f64 {
    let mut moved = Seq2Seq::fresh(&model.cfg, 7, DType::F32, &Device::Cpu).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for ((_, v), (_, w)) in model.params.named_vars().into_iter().zip(moved.params.named_vars()) {
        let x = v.as_tensor().flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let y: Vec<f32> = x.iter().map(|&a| a * (1.0 + 6e-8 * (rng.gen::<f32>() * 2.0 - 1.0))).collect();
        w.set(&candle_core::Tensor::from_vec(y, v.as_tensor().shape(), &Device::Cpu).unwrap()).unwrap();
    }
    moved.set_impl(Impl::Composed);
    let (_, got, _) = composed(&moved, b, smoothing);
    per_slot(slots, want, &got).into_iter().map(|(_, r)| r).fold(0.0, f64::max)
}

/// Both shipped decoders at full size, 16 sentence pairs of up to 20 and 18 tokens, as the
/// GPU's `gpu_launch_step_equals_the_cpu_and_replays_as_a_graph` runs them. That test asked
/// 1e-4 at `at_test_scale`'s N(0, 0.3²) weights and failed on an H200 (2026-11-30) by 3-8 % of
/// every gradient of `bench-rnnsearch`. The comparison was ill-posed, not the GPU wrong: at
/// 256 units those weights saturate the gates, and moving every weight by less than one
/// rounding moves the composed model's own gradients by 2.4-3.1 % (the emulated step differed
/// by 3.2-4.3 %). At N(0, 1/H) the same perturbation moves them by under 1e-6, the step agrees
/// to 1e-6, and 1e-4 is a bound with room. Both are checked here, with the 0.3 case as the
/// proof that the check can fail.
#[test]
fn the_full_size_comparison_is_well_posed_and_holds() {
    let s2s = Config::from_file(&repo().join("configs/rnnsearch-s2s.toml"), &[]).unwrap().model;
    let bench = ModelConfig::preset("bench-rnnsearch").unwrap();
    let ill = full_size(bench.clone(), 0.3);
    let mut model = Seq2Seq::fresh(&ModelConfig { dropout: 0.0, recurrent_dropout: 0.0, ..ill }, 7, DType::F32, &Device::Cpu).unwrap();
    model.set_impl(Impl::Composed);
    let b = batch(&mut ChaCha8Rng::seed_from_u64(69), &model.cfg, (16, 20, 18));
    let (_, want, slots) = composed(&model, &b, 0.0);
    let ill_posed = sensitivity(&model, &b, 0.0, &want, &slots);
    assert!(ill_posed > 1e-3, "N(0, 0.3²) at full size moved the gradients by {ill_posed:.2e} only");
    for (base, smoothing) in [(bench, 0.0), (s2s, 0.1)] {
        let cfg = full_size(base.clone(), 1.0 / (base.hidden_dim as f64).sqrt());
        let mut model = Seq2Seq::fresh(&cfg, 7, DType::F32, &Device::Cpu).unwrap();
        model.set_impl(Impl::Composed);
        let b = batch(&mut ChaCha8Rng::seed_from_u64(69), &cfg, (16, 20, 18));
        let (want_loss, want, slots) = composed(&model, &b, smoothing);
        let posed = sensitivity(&model, &b, smoothing, &want, &slots);
        assert!(posed <= 1e-5, "{:?}: one rounding moves the gradients by {posed:.2e}", cfg.arch);
        let l = Emulated;
        let step = Step::new(&l, &model, NO_UPDATE, 0.0, smoothing).unwrap();
        let mut reg = Regularizer::new(rates(&cfg), smoothing, 5, 1);
        step.run(&l, &uploaded(&host_batch(&b, sizes(&cfg), Some(&mut reg.dropout))), false).unwrap();
        let (loss, grads) = (step.loss_and_norm(&l).unwrap().0, step.grads(&l).unwrap());
        assert!((loss - want_loss).abs() <= 1e-5 * want_loss.abs(), "{:?}: loss {loss} against {want_loss}", cfg.arch);
        for (slot, rel) in per_slot(&slots, &want, &grads) {
            assert!(rel <= 1e-5, "{:?}: {slot}'s gradient differs by {rel:.2e} of its scale", cfg.arch);
        }
    }
}
