//! The model on an NVIDIA GPU against the same model on the CPU. Compiled in every build; the
//! tests need a CUDA device, which only a `--features cuda` build can open. Without a device
//! each test says so on stderr and returns, so the default build and CI are unaffected, unless
//! `NMT_REQUIRE_GPU=1` (set by `scripts/gpu-check.sh run`): then no device is a failure, so a
//! missing driver or library, or a build without the feature, cannot read as a pass. The files
//! the tests read (`configs/`, `data/`) are found from `NMT_REPO_ROOT` or the working directory
//! (`common::repo_root`), not the build machine's path.
//!
//! On the GPU the model runs in both of its forms: by default (`impl = "fused"`) the GPU kernels
//! where a layer has them (`kernels::gpu`: every recurrence, the optimiser's update, the
//! search's pick) and composed candle ops elsewhere, and with `impl = "composed"` the composed
//! ops throughout; on the CPU the reference is the fused f32 path that `nmt train` uses. The
//! weights are the same on both devices: initialisation draws on the host.
//!
//! Covered: the training loss and every parameter's gradient (both architectures, both GRU
//! forms, unit, recurrent and word dropout with the same masks, label smoothing, tied
//! embeddings; then every shipped recipe, shrunk, with its own options), and greedy and beam
//! search (tokens equal, scores close), of one-layer models and of every shipped recipe; three
//! training updates of the shipped recipe (the optimiser on the device); data-parallel training
//! on 2 ranks sharing the GPU against 1 rank; the recorded step and its CUDA graph (bodies in
//! `cuda/graph.rs`); the context as `kernels::gpu::context::open` sets it and cuBLAS's bf16
//! products (bodies in `cuda/device.rs`).
mod common;
#[path = "cuda/device.rs"]
mod device;
#[path = "cuda/graph.rs"]
mod graph;

use candle_core::{DType, Device, Tensor};
use nmt::config::{ArchName, GruForm, Impl, ModelConfig, SearchConfig, WeightInit};
use nmt::data::batch::{inference_batches, Batch, BatchConfig, Example};
use nmt::model::regularizer::{DropoutRates, Regularizer};
use nmt::model::{BatchTensors, Seq2Seq};
use nmt::search::{SearchOptions, Searcher};

/// The first GPU; `None` (and a note on stderr) when there is none, a panic when there is none
/// and `NMT_REQUIRE_GPU=1`.
fn gpu() -> Option<Device> {
    match nmt::kernels::gpu::context::open(0) {
        Ok(d) => Some(d),
        Err(e) if std::env::var("NMT_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            panic!("NMT_REQUIRE_GPU=1 and no CUDA device: {e}")
        }
        Err(e) => {
            eprintln!("no CUDA device ({e}); skipping (NMT_REQUIRE_GPU=1 makes this a failure)");
            None
        }
    }
}

/// The weights every loss comparison starts from: N(0, 0.3²), as `tests/gpu_layouts.rs`. At
/// the recipes' own σ = 0.01 every state is near zero, and a wrong recurrence moved the loss
/// and the gradients by less than the bound (a gated-feedback cell that halved its previous
/// state, 2026-11-28, caught only at 0.3).
fn at_test_scale(cfg: &ModelConfig) -> ModelConfig {
    ModelConfig { init: WeightInit::Paper, init_std: 0.3, ..cfg.clone() }
}

/// Max |a − b| over a tensor, relative to the largest |b| of that tensor (at least 1e-3): the
/// per-tensor scale of `tests/gpu_layouts.rs`, so that a tensor of small entries is held to
/// its own size, not to an absolute 1e-4.
fn rel_to_tensor(a: &Tensor, b: &Tensor) -> f64 {
    let flat = |t: &Tensor| t.to_dtype(DType::F64).unwrap().flatten_all().unwrap().to_vec1::<f64>().unwrap();
    let (a, b) = (flat(a), flat(b));
    assert_eq!(a.len(), b.len(), "tensors of different sizes");
    let scale = b.iter().fold(0f64, |m, x| m.max(x.abs())).max(1e-3);
    a.iter().zip(&b).map(|(x, y)| (x - y).abs() / scale).fold(0.0, f64::max)
}

fn examples() -> Vec<Example> {
    vec![
        Example { src: vec![4, 5, 6, 7, 8, 3], tgt: vec![8, 9, 3] },
        Example { src: vec![10, 11, 3], tgt: vec![5, 6, 7, 8, 9, 13, 3] },
        Example { src: vec![4, 3], tgt: vec![11, 3] },
        Example { src: vec![12, 13, 9, 3], tgt: vec![4, 12, 6, 3] },
    ]
}

/// The loss and the gradients (in parameter order) of `cfg` on `dev`, dropout drawn alike
/// on both devices (the masks are drawn on the host).
fn loss_and_grads_of(cfg: &ModelConfig, rates: DropoutRates, smoothing: f64, dev: &Device, imp: Impl) -> (Tensor, Vec<(String, Tensor)>) {
    let mut model = Seq2Seq::fresh(cfg, 3, DType::F32, dev).unwrap();
    model.set_impl(imp);
    assert_eq!(model.backend().imp(), imp);
    assert_eq!(model.backend().gpu(), !dev.is_cpu() && imp == Impl::Fused);
    let ex = examples();
    let rows: Vec<&Example> = ex.iter().collect();
    let batch = Batch::from_examples(&rows, vec![0, 1, 2, 3]);
    let bt = BatchTensors::new(&batch, DType::F32, dev).unwrap();
    let mut reg = Regularizer::new(rates, smoothing, 9, 4);
    let loss = model.loss(&bt, Some(&mut reg)).unwrap().mean;
    let grads = loss.backward().unwrap();
    let g = model
        .params
        .named_vars()
        .into_iter()
        .map(|(name, v)| {
            let g = grads.get(v.as_tensor()).unwrap_or_else(|| panic!("{name}: no gradient")).to_device(&Device::Cpu).unwrap();
            (name, g)
        })
        .collect();
    (loss.to_device(&Device::Cpu).unwrap(), g)
}

/// The worst relative difference of the loss and of every gradient (each against its tensor's
/// largest entry) of `cfg` at [`at_test_scale`] between the GPU, in both of its forms, and the
/// CPU's fused path.
fn gpu_against_cpu(cfg: &ModelConfig, rates: DropoutRates, smoothing: f64, gpu: &Device) -> f64 {
    let cfg = at_test_scale(cfg);
    let (lc, gc) = loss_and_grads_of(&cfg, rates, smoothing, &Device::Cpu, Impl::Fused);
    let mut worst = 0f64;
    for imp in [Impl::Fused, Impl::Composed] {
        let (lg, gg) = loss_and_grads_of(&cfg, rates, smoothing, gpu, imp);
        assert_eq!(gg.len(), gc.len(), "{imp:?}: parameters");
        let (l, want) = (lg.to_scalar::<f32>().unwrap() as f64, lc.to_scalar::<f32>().unwrap() as f64);
        worst = worst.max((l - want).abs() / want.abs().max(1e-3));
        for ((name, a), (want_name, b)) in gg.iter().zip(&gc) {
            assert_eq!(name, want_name, "{imp:?}: parameter order");
            let d = rel_to_tensor(a, b);
            assert!(d.is_finite(), "{imp:?} {name}: {d}");
            worst = worst.max(d);
        }
    }
    worst
}

/// A one-layer model of `arch` with every regulariser on, and its dropout rates.
fn small(arch: ArchName, gru: GruForm, tied: bool) -> (ModelConfig, DropoutRates) {
    let mut cfg = common::small_config(arch, 14, 6, 5);
    common::set_att_dim(&mut cfg, 4);
    cfg.maxout_dim = 3;
    if tied {
        cfg.emb_dim = cfg.maxout_dim;
    }
    cfg.tie_target_embeddings = tied;
    cfg.gru = gru;
    cfg.dropout = 0.2;
    cfg.recurrent_dropout = 0.2;
    let rates = DropoutRates { units: cfg.dropout, src_words: 0.2, tgt_words: 0.2, recurrent: cfg.recurrent_dropout };
    (cfg, rates)
}

#[test]
fn gpu_loss_and_gradients_equal_the_cpu_fused_path() {
    let Some(gpu) = gpu() else { return };
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        for gru in [GruForm::Paper, GruForm::ResetAfter] {
            for tied in [false, true] {
                let (cfg, rates) = small(arch, gru, tied);
                let worst = gpu_against_cpu(&cfg, rates, 0.1, &gpu);
                eprintln!("{arch:?} {gru:?} tied {tied}: GPU against CPU {worst:.1e}");
                assert!(worst < 1e-4, "{arch:?} {gru:?} tied {tied}: GPU differs from CPU by {worst:e}");
            }
        }
    }
}

/// Greedy and beam-5 search of `cfg`'s fresh model on the GPU (the candle search with the
/// GPU's kernels) against the CPU's search with `imp`: as many sentences, the same tokens,
/// scores within 1e-3.
fn assert_gpu_search_equals_cpu(cfg: &ModelConfig, imp: Impl, gpu: &Device, what: &str) {
    let srcs: Vec<Vec<u32>> = common::reversal_examples(24, 20, 2..=9, 5).into_iter().map(|e| e.src).collect();
    let batch = inference_batches(&srcs, &BatchConfig { max_tokens: 10_000, max_sentences: 100 }).remove(0);
    for beam_size in [1, 5] {
        let o = SearchOptions { cfg: SearchConfig { beam_size, ..SearchConfig::default() }, alignments: false, imp };
        let run = |dev: &Device| {
            let m = Seq2Seq::fresh(cfg, 11, DType::F32, dev).unwrap();
            let nbest = Searcher::new(vec![&m]).unwrap().search_batch(&batch, &o).unwrap();
            nbest.into_iter().map(|n| (n[0].tokens.clone(), n[0].log_prob)).collect::<Vec<_>>()
        };
        let (c, g) = (run(&Device::Cpu), run(gpu));
        assert_eq!(c.len(), srcs.len(), "{what} beam {beam_size}: the CPU's sentences");
        assert_eq!(g.len(), c.len(), "{what} beam {beam_size}: the GPU's sentences");
        for (i, ((tc, sc), (tg, sg))) in c.iter().zip(&g).enumerate() {
            assert_eq!(tc, tg, "{what} beam {beam_size}, sentence {i}");
            assert!((sc - sg).abs() < 1e-3 * sc.abs().max(1.0), "{what} beam {beam_size}, sentence {i}: {sc} vs {sg}");
        }
    }
}

#[test]
fn gpu_search_equals_cpu_search() {
    let Some(gpu) = gpu() else { return };
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        let mut cfg = common::small_config(arch, 30, 16, 24);
        cfg.init_std = 0.3;
        assert_gpu_search_equals_cpu(&cfg, Impl::Composed, &gpu, &format!("{arch:?}"));
    }
}

/// Every shipped recipe (`configs/*.toml`, shrunk: `common::shipped_configs`), and RNNsearch
/// with LSTMs and with layer normalisation (`common::with_gpu_variants`), with its own dropout and label smoothing: the loss and every gradient on the GPU against the CPU's
/// fused path. `tests/gpu_layouts.rs` checks the same on the CPU for the layouts the GPU refuses.
#[test]
fn gpu_trains_every_shipped_recipe_as_the_cpu() {
    let Some(gpu) = gpu() else { return };
    for (name, cfg) in common::with_gpu_variants(common::shipped_configs(14)) {
        let rates = DropoutRates {
            units: cfg.model.dropout,
            src_words: cfg.train.src_word_dropout,
            tgt_words: cfg.train.tgt_word_dropout,
            recurrent: cfg.model.recurrent_dropout,
        };
        let worst = gpu_against_cpu(&cfg.model, rates, cfg.train.label_smoothing, &gpu);
        eprintln!("{name}: GPU against CPU {worst:.1e}");
        assert!(worst < 1e-4, "{name}: GPU differs from CPU by {worst:e}");
    }
}

/// Every shipped recipe's greedy and beam-5 search on the GPU against the CPU's host search.
#[test]
fn gpu_searches_every_shipped_recipe_as_the_cpu() {
    let Some(gpu) = gpu() else { return };
    for (name, mut cfg) in common::shipped_configs(30) {
        cfg.model.init_std = 0.3;
        assert_gpu_search_equals_cpu(&cfg.model, Impl::Fused, &gpu, &name);
        eprintln!("{name}: GPU search equals the CPU's");
    }
}

/// Three training updates (loss, backward, clipping, Adam) of the shipped recipe on the GPU,
/// where the optimiser's moments live on the device and its update is one kernel per parameter
/// (`kernels::gpu::optim_step`), against the same updates on the CPU (the in-place update): every
/// weight within 1e-4 of its tensor's largest.
#[test]
fn gpu_updates_the_weights_as_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let (_, cfg) = common::shipped_configs(14).into_iter().find(|(n, _)| n == "rnnsearch-s2s").expect("the shipped recipe");
    let train = nmt::config::TrainConfig { warmup: 0, ..cfg.train.clone() };
    let rates = DropoutRates { units: 0.0, src_words: 0.0, tgt_words: 0.0, recurrent: 0.0 };
    let weights = |dev: &Device| -> Vec<(String, Vec<f32>)> {
        let model = Seq2Seq::fresh(&cfg.model, 3, DType::F32, dev).unwrap();
        let ex = examples();
        let rows: Vec<&Example> = ex.iter().collect();
        let bt = BatchTensors::new(&Batch::from_examples(&rows, vec![0, 1, 2, 3]), DType::F32, dev).unwrap();
        let mut opt = nmt::train::optim::Optimizer::new(model.params.named_vars(), &train).unwrap();
        for _ in 0..3 {
            let mut reg = Regularizer::new(rates, train.label_smoothing, 9, 4);
            let grads = model.loss(&bt, Some(&mut reg)).unwrap().mean.backward().unwrap();
            opt.clip(&grads).unwrap();
            opt.update(&grads).unwrap();
        }
        let flat = |v: &candle_core::Var| v.as_tensor().to_device(&Device::Cpu).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
        model.params.named_vars().iter().map(|(k, v)| (k.clone(), flat(v))).collect()
    };
    let (cpu, on_gpu) = (weights(&Device::Cpu), weights(&gpu));
    for ((k, c), (_, g)) in cpu.iter().zip(&on_gpu) {
        let scale = c.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-3);
        let worst = c.iter().zip(g).fold(0f32, |m, (x, y)| m.max((x - y).abs() / scale));
        assert!(worst < 1e-4, "{k}: GPU differs from CPU by {worst:e} of the tensor's largest");
    }
    eprintln!("rnnsearch-s2s: three GPU updates equal the CPU's");
}

/// Data-parallel training on one GPU shared by 2 ranks (threads of this process,
/// `common::ranks`: a GPU machine has no MPI; the trainer stages the gradients through host
/// memory as under `mpirun`): 20 updates end with the weights of 1 rank, to 1e-6 as on the CPU
/// (`tests/ranks.rs`, docs/DISTRIBUTED.md), with Adam's ε at 1e-6 (below).
#[test]
fn two_ranks_sharing_the_gpu_end_with_the_weights_of_one() {
    if gpu().is_none() {
        return;
    }
    // Adam's ε at 1e-6, not the recipe's 1e-8. Measured on an H200 (2026-11-30, docs/GPU.md):
    // at 1e-8 the ranks ended 8.8e-5 apart, all of it in the output layer and the target
    // embedding (`output.o_y`, `tgt_emb`, `output.o_h`, `output.o_c`), while one rank run twice
    // ended bit for bit the same; at 1e-6, 8.6e-8. Adam divides each gradient by its own size
    // (`m / (√v + ε)`), so an element whose gradient is within rounding of zero takes a step
    // of the learning rate's size in the direction of its rounding; 2 ranks sum half batches
    // and add the halves on the host, and cuBLAS picks its summation order per shape, so those
    // roundings differ. On the CPU the same comparison gives 6.0e-8 at 1e-8; why its roundings
    // of such elements agree was not looked into.
    // A larger ε keeps what the test is for: with rank 1's half lost and rank 0's counted twice
    // (`common::ranks`' all-reduce so broken, on the CPU, 2026-11-30, then reverted), the ranks
    // ended 3.8e-2 from 1 rank at ε 1e-6 as at 1e-8, 38 000x the bound.
    let diff = common::ranks::two_ranks_against_one(|| Device::new_cuda(0).unwrap(), &["train.adam_eps=1e-6"]);
    // The figure, whatever the bound says: `gpu-check.sh run` keeps each test's output.
    eprintln!("2 in-process ranks against 1, 20 updates on the GPU: max |diff| of the weights {diff:e} (CPU, tests/ranks.rs: 6.0e-8)");
    assert!(diff <= 1e-6, "2 ranks differ from 1 by {diff}");
}

/// A recorded training step (`kernels::gpu::replay_check`: a bidirectional GRU layer forward and
/// backward with recurrent dropout and padded sentences, Adam with its scalars on the device),
/// its first update run eagerly while recorded, then replayed for three new batches: as the
/// tape's eager launches, and as a captured CUDA graph (`kernels::gpu::cuda::Cuda::capture`).
/// Both must leave fresh eager steps' bits after every update; a graph replayed over stale
/// inputs must not.
#[test]
fn gpu_graph_replays_equal_fresh_steps() {
    let Some(dev) = gpu() else { return };
    graph::graph_replays(&dev);
}

/// The model's training step as launches (`nmt::model::launch_step`) on the GPU, for
/// `bench-rnnsearch` and `configs/rnnsearch-s2s.toml` at their own sizes from N(0, 0.3²)
/// weights: the loss and every gradient against the composed model on the CPU with the same
/// dropout masks (1e-4 of each slot's largest entry); then four updates of new batches, eagerly,
/// replayed from the recorded tape and replayed as a captured CUDA graph: the same bits after
/// every update.
#[test]
fn gpu_launch_step_equals_the_cpu_and_replays_as_a_graph() {
    let Some(dev) = gpu() else { return };
    graph::launch_step_on(&dev);
}

/// `nmt train --gpu` with `train.cuda_graph = true` (`train/graph.rs`) against the same run
/// without it, on an RNNsearch of the test corpus: 30 updates with dropout, label smoothing,
/// validations (which write the device's state back) and learning-rate decay. The logged losses
/// agree to 1e-3 relative (the same training, rounded differently), and a graph run stopped at
/// update 10 and resumed continues bit for bit.
#[test]
fn gpu_training_with_cuda_graphs_equals_candles() {
    let Some(dev) = gpu() else { return };
    graph::training_with_cuda_graphs(&dev);
}

/// The context as `kernels::gpu::context::open` sets it, and under `NMT_CUDA_OVERHEADS=cudarc`
/// as cudarc leaves it (`device::context_is_set_as_nmt_sets_it`).
#[test]
fn gpu_context_is_set_as_nmt_sets_it() {
    let Some(dev) = gpu() else { return };
    device::context_is_set_as_nmt_sets_it(&dev, "gpu_context_is_set_as_nmt_sets_it");
}

/// cuBLAS's bf16 products against the emulated ones on strided, transposed and accumulating
/// views (`device::bf16_products_equal_the_emulated_ones`).
#[test]
fn gpu_bf16_products_equal_the_emulated_ones() {
    let Some(dev) = gpu() else { return };
    device::bf16_products_equal_the_emulated_ones(&dev);
}
