//! The timing harness behind `nmt bench`: the same measurements, with the same keys, as the
//! PyTorch reference (`bench/pytorch/pytorch_rnnsearch.py`): `train` (forward + backward +
//! Adam, ms per step, target tokens/s), `greedy` and `beam5` (32 sentences × 30 decoder steps,
//! sentences/s), each with `loss0`; plus `gemm` (the CPU's fp32 GEMM rate through the GEMM the
//! project uses) and the effective GFLOP/s of training from the FLOP count below.
//!
//! What is timed is the code users run: `Seq2Seq::loss`, its backward pass and the training
//! `Optimizer` (as `nmt train` calls them, `train.impl` = `--impl`), and the search's
//! `Searcher::search_batch` (as `nmt translate` calls it per batch: the host search, or with
//! `--impl composed` the candle search; on a GPU the candle search with the GPU's kernels, or
//! with `--impl composed` on composed candle ops only). Each figure's `impl` says which ran
//! (`nmt-fused`, `nmt-gpu-kernels`, `nmt-composed`), a search's `search` which search. The
//! reference decodes 30 steps with no early stop; so that ours does the same work, the search
//! runs on a copy of the model whose `</s>` can never win (its output bias −10⁹), 30 tokens.
use std::path::PathBuf;
use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use serde_json::{json, Value};

use super::reference::{self, BATCH, SRC_LEN, TGT_LEN};
use super::timing::{peak_rss_mb, round, timed};
use crate::config::{Arch, Impl, ModelConfig, Optimizer as OptimizerKind, Precision, SearchConfig, TrainConfig};
use crate::error::Result;
use crate::kernels::gemm::{matmul, Mat};
use crate::model::candidates::Candidates;
use crate::model::regularizer::{DropoutRates, Regularizer};
use crate::model::{Backend, BatchTensors, Seq2Seq, OUTPUT_BIAS};
use crate::search::{SearchOptions, Searcher};
use crate::train::moment_scale::moment_scales;
use crate::train::optim::Optimizer;

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Directory with the reference's `init.bin` and `batch.bin`; seeded weights otherwise.
    pub data: Option<PathBuf>,
    /// Timed repetitions (after 3 untimed warm-up runs), as the reference's `STEPS`.
    pub steps: usize,
    /// `Fused` (what `nmt train`/`translate` run by default) or `Composed` (candle ops only,
    /// the search included).
    pub imp: Impl,
    /// Any of `train`, `greedy`, `beam5`, `gemm`.
    pub only: Vec<String>,
    /// The model preset to time (`bench-rnnsearch`, the reference's model, by default). Any
    /// other preset runs seeded on the reference's batch shape (32 sentences of 30 + 30
    /// tokens), with its own sizes and architecture.
    pub preset: String,
    /// `model.KEY=VALUE` overrides of the preset (as `nmt train --set`), e.g.
    /// `model.cell=gru` to time a preset's GRU twin at equal sizes.
    pub overrides: Vec<String>,
    /// Search with int8 products (`SearchConfig::int8`).
    pub int8: bool,
    /// The precision of the training step's large products (`train.precision`).
    pub precision: Precision,
    /// Where the model runs: the CPU, or a CUDA GPU (the GPU's kernels, or with `imp` composed
    /// candle ops only; a training step is timed after the device's queue is drained,
    /// `Device::synchronize`).
    pub device: Device,
    /// Sentences per batch: a multiple of the reference's 32 (its batch, repeated).
    pub batch: usize,
    /// The training step's softmax over the batch's candidate words (`train.candidates`): the
    /// bench has no corpus to count, so its "frequent" ids are the first word ids (4, 5, …);
    /// only `|V′|` matters to the time. With `scale_moments` the update scales the draws'
    /// moments as training does (`train/moment_scale.rs`).
    pub candidates: Option<crate::config::CandidatesConfig>,
}

/// The preset's model config with `opts.overrides` applied, checked as `nmt train` checks it.
fn model_config(opts: &BenchOptions) -> Result<ModelConfig> {
    if let Some(o) = opts.overrides.iter().find(|o| !o.trim_start().starts_with("model.")) {
        return Err(crate::error::Error::Config(format!("bench --set {o:?}: only model.* keys change what is timed")));
    }
    let text = format!("[model]\npreset = {:?}\n", opts.preset);
    let cfg = crate::config::Config::from_toml_str(&text, &opts.overrides)?.model;
    // The batch's words need ids past the four specials (`fit_vocab`).
    if cfg.src_vocab.min(cfg.tgt_vocab) <= 4 {
        return Err(crate::error::Error::Config("bench: model.src_vocab and model.tgt_vocab must exceed the 4 special tokens".into()));
    }
    Ok(cfg)
}

/// The reference batch's word ids are drawn from its 8 000 words; a preset with a smaller
/// vocabulary (`tiny`) gets them folded into its own range. Ids 0–3 (the specials) stay.
/// `vocab` exceeds 4 ([`model_config`] checks it; the reference model has 8 000).
fn fit_vocab(ids: &mut [u32], vocab: usize) {
    let words = (vocab - 4) as u32;
    for id in ids.iter_mut().filter(|id| **id >= 4 && **id as usize >= vocab) {
        *id = 4 + (*id - 4) % words;
    }
}

/// FLOPs of one forward pass of an RNNsearch of sizes `c` (the preset bench-rnnsearch) over the
/// reference batch, multiply-adds as 2, elementwise work ignored (gates, tanh, softmax: under
/// 1 %). A training step is 3× the forward pass (each GEMM has two of its size in its backward).
pub fn forward_flops(c: &ModelConfig) -> f64 {
    let att_dim = match c.arch {
        Arch::Rnnsearch { att_dim, .. } => att_dim,
        Arch::Rnnenc { .. } => 0,
    };
    let (h, e, a, v) = (c.hidden_dim as f64, c.emb_dim as f64, att_dim as f64, c.tgt_vocab as f64);
    let src_tok = (BATCH * SRC_LEN) as f64;
    let tgt_tok = (BATCH * TGT_LEN) as f64;
    // Encoder, per source token: two directions of input and recurrent GEMMs; U_a h_j.
    let enc = src_tok * (2.0 * (2.0 * e * 3.0 * h) + 2.0 * (2.0 * h * 3.0 * h) + 2.0 * (2.0 * h) * a);
    let init = BATCH as f64 * 2.0 * h * h;
    // Decoder, per target token: W_a s, scores and context over the source, GRU input
    // (E y and c) and recurrent GEMMs, deep output and the vocabulary projection.
    let att = 2.0 * h * a + SRC_LEN as f64 * (2.0 * a + 2.0 * 2.0 * h);
    let gru = 2.0 * e * 3.0 * h + 2.0 * (2.0 * h) * 3.0 * h + 2.0 * h * 3.0 * h;
    let out = 2.0 * (h + e + 2.0 * h) * 2.0 * h + 2.0 * h * v;
    enc + init + tgt_tok * (att + gru + out)
}

/// The training optimiser with PyTorch's Adam defaults (lr 1e-3, β = (0.9, 0.999), ε = 1e-8)
/// and no clipping, as in the reference.
fn adam(model: &Seq2Seq, imp: Impl) -> Result<Optimizer> {
    let cfg = TrainConfig {
        optimizer: OptimizerKind::Adam,
        lr: 1e-3,
        adam_betas: (0.9, 0.999),
        adam_eps: 1e-8,
        clip_norm: 0.0,
        imp,
        ..TrainConfig::default()
    };
    Optimizer::new(model.params.named_vars(), &cfg)
}

/// A copy of `model` whose `</s>` never wins a search step (output bias −10⁹), so that every
/// hypothesis runs the reference's 30 steps: the bias set by its checkpoint key, then built.
fn without_eos(model: &Seq2Seq) -> Result<Seq2Seq> {
    let mut tensors: std::collections::BTreeMap<String, Tensor> =
        model.params.named_vars().into_iter().map(|(k, v)| Ok((k, v.as_tensor().copy()?))).collect::<Result<_>>()?;
    let Some(b_g) = tensors.get_mut(OUTPUT_BIAS) else {
        return Err(crate::error::Error::Config("bench: the model has no output bias".into()));
    };
    let mut bias = b_g.to_dtype(candle_core::DType::F32)?.to_vec1::<f32>()?;
    bias[nmt_data::EOS as usize] = -1e9;
    *b_g = Tensor::new(bias, b_g.device())?.to_dtype(b_g.dtype())?;
    let mut copy = Seq2Seq::build(&model.cfg, crate::model::params::Params::from_tensors(tensors, model.dtype(), model.device()))?;
    // `build` sets `Impl::Fused`: the copy runs in the form the timed model runs in, so that
    // `--impl composed` on a GPU searches without the GPU's kernels too.
    copy.set_impl(model.backend().imp());
    Ok(copy)
}

/// Searches the reference's source batch with beam `k` for 30 steps, by the code `nmt
/// translate` runs for a batch.
fn search(searcher: &Searcher, opts: &BenchOptions, batch: &nmt_data::Batch, k: usize) -> Result<usize> {
    let (imp, int8) = (opts.imp, opts.int8);
    let cfg = SearchConfig {
        beam_size: k,
        n_best: 1,
        max_len_ratio: 0.0,
        max_len_extra: TGT_LEN,
        normalize: 0.0,
        int8,
        ..SearchConfig::default()
    };
    let hyps = searcher.search_batch(batch, &SearchOptions { cfg, alignments: false, imp })?;
    Ok(hyps.iter().flatten().map(|h| h.tokens.len()).sum())
}

/// What ran, for the output's `impl`: the fused CPU kernels (and the host search), the GPU's
/// kernels where a layer has them (`kernels::gpu`, with the candle search, its decoder step and
/// its pick on the device), or composed candle ops only (on a GPU, the pick on the host).
fn impl_label(backend: Backend) -> &'static str {
    match backend {
        Backend::FusedF32(_) | Backend::FusedF64 => "nmt-fused",
        Backend::Gpu(_) => "nmt-gpu-kernels",
        Backend::Composed => "nmt-composed",
    }
}

/// `v` with `"at"`, the Unix time in seconds at which it was measured (the moment it is
/// emitted), so that a log of figures can be checked against the time a run was killed.
fn stamped(mut v: Value) -> Value {
    let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    if let Some(o) = v.as_object_mut() {
        o.insert("at".into(), json!(round(at, 3)));
    }
    v
}

/// Runs the selected measurements; one JSON object per measurement ([`run_each`], collected).
pub fn run(opts: &BenchOptions) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    run_each(opts, &mut |v| {
        out.push(v);
        Ok(())
    })?;
    Ok(out)
}

/// Runs the selected measurements, handing `emit` one JSON object per measurement as soon as it
/// is measured (`nmt bench` prints and flushes each at once: a run killed at any point keeps
/// every figure measured before it, `scripts/gpu-check.sh`). Searches, then `train`.
pub fn run_each(opts: &BenchOptions, emit: &mut dyn FnMut(Value) -> Result<()>) -> Result<()> {
    let threads = rayon::current_num_threads();
    let want = |k: &str| opts.only.is_empty() || opts.only.iter().any(|o| o == k);
    // The model is f32: the form is decided by the implementation asked and the device.
    let imp_name = impl_label(Backend::new(opts.imp, &opts.device, DType::F32));
    let mut gemm_peak = None;
    if want("gemm") && opts.device.is_cpu() {
        let (gflops, n) = gemm_rate(threads);
        gemm_peak = Some(gflops);
        emit(stamped(json!({"impl": imp_name, "threads": threads, "bench": "gemm", "n": n, "gflop_per_s": round(gflops, 1)})))?;
    }
    let dev = opts.device.clone();
    if opts.batch == 0 || !opts.batch.is_multiple_of(BATCH) {
        return Err(crate::error::Error::Config(format!("bench --batch {}: a multiple of the reference's {BATCH} sentences", opts.batch)));
    }
    let sentences = opts.batch;
    let reference = opts.preset == "bench-rnnsearch";
    if !reference && opts.data.is_some() {
        return Err(crate::error::Error::Config("bench --data holds the reference's weights: it needs the preset bench-rnnsearch".into()));
    }
    if reference && !opts.overrides.is_empty() {
        return Err(crate::error::Error::Config(
            "bench --set changes the model: the reference's model (bench-rnnsearch) has fixed sizes".into(),
        ));
    }
    let mut model = if reference {
        reference::model(opts.data.as_deref(), &dev)?
    } else {
        Seq2Seq::fresh(&model_config(opts)?, 1234, DType::F32, &dev)?
    };
    model.set_impl(opts.imp);
    debug_assert_eq!(impl_label(model.backend()), imp_name);
    let mut batch = reference::tiled(&reference::batch(opts.data.as_deref())?, sentences / BATCH);
    fit_vocab(&mut batch.src, model.cfg.src_vocab);
    fit_vocab(&mut batch.tgt_in, model.cfg.tgt_vocab);
    fit_vocab(&mut batch.tgt_out, model.cfg.tgt_vocab);
    if model.cfg.copy() {
        // Every source word is in this batch's vocabulary: the extended ids are the ids (the
        // mixture's work is the same either way; only which ids it scatters to differs).
        batch.src_ext = batch.src.clone();
    }
    let bt = BatchTensors::new(&batch, DType::F32, &dev)?;
    // loss0 in the training step's precision, summed in f64 so that bf16 products show in it
    // (at the initial weights they moved it by 1e-8 on AMX, under an f32 mean's rounding; issue
    // 74). The searches then run f32 products.
    let on_gpu = model.backend().gpu();
    model.set_products(opts.precision);
    let lp = model.token_log_probs(&bt)?.concat();
    let loss0 = -lp.iter().sum::<f64>() / lp.len().max(1) as f64;
    model.set_products(Precision::F32);
    crate::kernels::profile::take();
    let device = if dev.is_cpu() { "cpu".to_string() } else { format!("{:?}", dev.location()) };
    let mut base = json!({"impl": imp_name, "threads": threads, "device": device, "cuda": crate::kernels::gpu::context::describe(&dev), "cpu": crate::kernels::cpu::engine::isa::cpu_class(), "batch": sentences, "preset": opts.preset, "loss0": round(loss0, 9)});
    if let (false, Some(o)) = (opts.overrides.is_empty(), base.as_object_mut()) {
        o.insert("set".into(), json!(opts.overrides));
    }
    let with = |extra: Value| -> Value {
        let mut v = base.clone();
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        v
    };
    if want("greedy") || want("beam5") {
        // Built once, as `nmt translate` keeps its host snapshot across batches.
        let searcher = Searcher::new(vec![without_eos(&model)?])?;
        for (name, k, reps) in [("greedy", 1, opts.steps), ("beam5", 5, (opts.steps / 2).max(5))] {
            if !want(name) {
                continue;
            }
            let mut tokens = 0;
            let (ms, mn) = timed(reps, || {
                tokens = std::hint::black_box(search(&searcher, opts, &batch, k)?);
                Ok(())
            })?;
            if tokens != sentences * TGT_LEN {
                return Err(crate::error::Error::Input(format!("bench {name}: {tokens} output tokens, expected {}", sentences * TGT_LEN)));
            }
            let kernel = if opts.int8 { json!(crate::kernels::cpu::engine::int8::kernel_name()) } else { json!(null) };
            let search = if searcher.lead().backend().host() && opts.imp == Impl::Fused { "host" } else { "candle" };
            emit(stamped(with(
                json!({"bench": name, "search": search, "int8": opts.int8, "int8_kernel": kernel, "ms_median": round(ms, 2), "ms_min": round(mn, 2), "sentences_per_s": round(sentences as f64 / (ms / 1e3), 1)}),
            )))?;
        }
    }
    if want("train") {
        // In effect: f32 where `bf16_path` is off (issue 70), bf16 on a GPU whatever the CPU has.
        let (precision, bf16_products) = (model.set_products(opts.precision), crate::kernels::cpu::engine::products::products_line(on_gpu));
        let mut adam = adam(&model, opts.imp)?;
        if opts.candidates.is_some() && model.cfg.copy() {
            return Err(crate::error::Error::Config("bench --candidates: a copy model normalises over the whole vocabulary".into()));
        }
        let cands = opts.candidates.map(|c| Candidates::first_words(&batch.tgt_out, &c, model.cfg.tgt_vocab)).transpose()?;
        let mut last = 0f32;
        let mut phases: [Vec<f64>; 3] = Default::default();
        let (ms, mn) = timed(opts.steps, || {
            let t0 = Instant::now();
            let mut reg = cands.clone().map(|c| Regularizer::new(DropoutRates::default(), 0.0, 1, 0).with_candidates(Some(c)));
            let l = model.loss(&bt, reg.as_mut())?.mean;
            let t1 = Instant::now();
            let grads = l.backward()?;
            let t2 = Instant::now();
            adam.clip(&grads)?;
            // `scale_moments`: the factors are built and applied per update, as the trainer does.
            let scales = moment_scales(&model, cands.as_ref(), opts.candidates.as_ref())?;
            adam.update_scaled(&grads, &scales)?;
            // A GPU queues its kernels: the step ends when they have run.
            dev.synchronize()?;
            last = l.to_scalar::<f32>()?;
            for (slot, (a, b)) in phases.iter_mut().zip([(t0, t1), (t1, t2), (t2, Instant::now())]) {
                slot.push((b - a).as_secs_f64() * 1e3);
            }
            Ok(())
        })?;
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            round(v[v.len() / 2], 1)
        };
        let [f, b, a] = &mut phases;
        let (fwd, bwd, opt) = (median(f), median(b), median(a));
        let mut v = with(json!({
            "bench": "train", "precision": precision, "bf16_products": bf16_products, "ms_median": round(ms, 2), "ms_min": round(mn, 2),
            "target_tokens_per_s": round((sentences * TGT_LEN) as f64 / (ms / 1e3), 1),
            "loss_last": round(last as f64, 6), "candidates": cands.as_ref().map(Candidates::len),
            "forward_ms": fwd, "backward_ms": bwd, "adam_ms": opt,
        }));
        // The FLOP count is bench-rnnsearch's (one-layer GRU RNNsearch).
        let copies = (sentences / BATCH) as f64;
        let gflops = 3.0 * copies * forward_flops(&model.cfg) / (ms / 1e3) / 1e9;
        if reference {
            if let Some(o) = v.as_object_mut() {
                o.insert("gflop_per_step".into(), json!(round(3.0 * copies * forward_flops(&model.cfg) / 1e9, 2)));
                o.insert("gflop_per_s".into(), json!(round(gflops, 1)));
            }
        }
        let prof = crate::kernels::profile::take();
        if prof.iter().any(|(_, ms)| *ms > 0.0) {
            // Per-step milliseconds of each fused kernel, over warm-up and timed steps.
            let steps = (3 + opts.steps) as f64;
            let m: serde_json::Map<String, Value> =
                prof.iter().filter(|(_, ms)| *ms > 0.0).map(|(n, ms)| (n.to_string(), json!(round(ms / steps, 1)))).collect();
            if let Some(o) = v.as_object_mut() {
                o.insert("kernel_ms".into(), Value::Object(m));
            }
        }
        if let (Some(peak), Some(o), true) = (gemm_peak, v.as_object_mut(), reference) {
            o.insert("fraction_of_gemm_peak".into(), json!(round(gflops / peak, 3)));
        }
        emit(stamped(v))?;
        // The recorded step's forms are f32 and the GPU kernels' own: not for `--impl composed`
        // or `--precision bf16`, which time candle's step in another form.
        if opts.imp == Impl::Fused && opts.precision == Precision::F32 {
            super::cuda_graph::train_forms(&model, &batch, opts.steps, &mut |v| emit(stamped(with(v))))?;
        }
    }
    if let Some(mb) = peak_rss_mb() {
        emit(stamped(json!({"impl": imp_name, "threads": threads, "bench": "memory", "peak_rss_mb": round(mb, 1)})))?;
    }
    Ok(())
}

/// fp32 GEMM rate: the best of square products of a few sizes through [`matmul`].
fn gemm_rate(threads: usize) -> (f64, usize) {
    let mut best = (0.0, 0);
    for n in [512usize, 1024, 2048] {
        let a: Vec<f32> = (0..n * n).map(|i| ((i % 13) as f32 - 6.0) * 0.01).collect();
        let mut c = vec![0f32; n * n];
        let reps = ((2048 / n).pow(3) * 4).max(4);
        matmul(&mut c, 0, n, Mat::new(&a, n, n), Mat::new(&a, n, n), false, threads);
        let t0 = Instant::now();
        for _ in 0..reps {
            matmul(&mut c, 0, n, Mat::new(&a, n, n), Mat::new(&a, n, n), false, threads);
        }
        let rate = 2.0 * (n * n * n * reps) as f64 / t0.elapsed().as_secs_f64() / 1e9;
        if rate > best.0 {
            best = (rate, n);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The search's copy of the model runs in the timed model's form: `Seq2Seq::build` sets
    /// `Impl::Fused`, so `--impl composed` on a GPU searched with the GPU's kernels (issue 69).
    #[test]
    fn the_search_copy_keeps_the_models_form() {
        let cfg = ModelConfig::preset("tiny").unwrap();
        for (imp, want) in [(Impl::Composed, Backend::Composed), (Impl::Fused, Backend::FusedF32(Precision::F32))] {
            let mut m = Seq2Seq::fresh(&cfg, 1, DType::F32, &Device::Cpu).unwrap();
            m.set_impl(imp);
            assert_eq!(without_eos(&m).unwrap().backend(), want, "{imp:?}");
            assert_eq!(impl_label(want), if imp == Impl::Composed { "nmt-composed" } else { "nmt-fused" });
        }
    }
}
