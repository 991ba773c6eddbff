//! The timing harness behind `nmt bench`: the same measurements, with the same keys, as the
//! PyTorch reference (`../shared/bench/pytorch_rnnsearch.py`): `train` (forward + backward +
//! Adam, ms per step, target tokens/s), `greedy` and `beam5` (32 sentences × 30 decoder steps,
//! sentences/s), each with `loss0`; plus `gemm` (the CPU's fp32 GEMM rate through the GEMM the
//! project uses) and the effective GFLOP/s of training from the FLOP count below.
use std::path::PathBuf;
use std::time::Instant;

use candle_core::{DType, Device};
use serde_json::{json, Value};

use super::model::{loss, Impl};
use super::params::{BenchBatch, BenchParams, ATT, BATCH, EMB, HIDDEN, PARAMS, SRC_LEN, TGT_LEN, VOCAB};
use super::search::{beam, greedy, SearchWeights};
use crate::config::{Optimizer as OptimizerKind, TrainConfig};
use crate::error::Result;
use crate::kernels::gemm::{matmul, Mat};
use crate::train::optim::Optimizer;

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Directory with the reference's `init.bin` and `batch.bin`; seeded weights otherwise.
    pub data: Option<PathBuf>,
    /// Timed repetitions (after 3 untimed warm-up runs), as the reference's `STEPS`.
    pub steps: usize,
    pub imp: Impl,
    /// Any of `train`, `greedy`, `beam5`, `gemm`.
    pub only: Vec<String>,
}

/// FLOPs of one forward pass of bench-rnnsearch over the batch, counting multiply-adds as 2 and
/// ignoring elementwise work (gates, tanh, softmax: under 1 %). A training step is counted as
/// 3× the forward pass (each GEMM has two GEMMs of the same size in its backward).
pub fn forward_flops() -> f64 {
    let (h, e, a, v) = (HIDDEN as f64, EMB as f64, ATT as f64, VOCAB as f64);
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

/// Peak resident memory of this process in MB (Linux; `None` elsewhere).
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Median and minimum milliseconds of `reps` timed runs after 3 warm-up runs.
fn timed(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<(f64, f64)> {
    let mut ms = Vec::with_capacity(reps);
    for it in 0..3 + reps {
        let t0 = Instant::now();
        f()?;
        if it >= 3 {
            ms.push(t0.elapsed().as_secs_f64() * 1e3);
        }
    }
    ms.sort_by(f64::total_cmp);
    Ok((ms[ms.len() / 2], ms[0]))
}

fn round(x: f64, digits: i32) -> f64 {
    let s = 10f64.powi(digits);
    (x * s).round() / s
}

/// The bench's Adam: the training optimiser, in place (`fused`) or composed (`ops`), with
/// PyTorch's defaults (lr 1e-3, β = (0.9, 0.999), ε = 1e-8) and no clipping, as in the reference.
struct BenchAdam(Optimizer);

impl BenchAdam {
    fn new(p: &BenchParams, imp: Impl) -> Result<Self> {
        let cfg = TrainConfig {
            optimizer: OptimizerKind::Adam,
            lr: 1e-3,
            adam_betas: (0.9, 0.999),
            adam_eps: 1e-8,
            clip_norm: 0.0,
            imp,
            ..TrainConfig::default()
        };
        let vars = PARAMS.iter().zip(&p.vars).map(|((n, _), v)| (n.to_string(), v.clone())).collect();
        Ok(BenchAdam(Optimizer::new(vars, &cfg)?))
    }

    fn update(&mut self, _p: &BenchParams, grads: &candle_core::backprop::GradStore) -> Result<()> {
        self.0.update(grads)
    }
}

/// Runs the selected measurements; one JSON object per measurement.
pub fn run(opts: &BenchOptions) -> Result<Vec<Value>> {
    let threads = rayon::current_num_threads();
    let want = |k: &str| opts.only.is_empty() || opts.only.iter().any(|o| o == k);
    let imp_name = match opts.imp {
        Impl::Fused => "nmt-fused",
        Impl::Ops => "nmt-ops",
    };
    let mut out = Vec::new();
    let mut gemm_peak = None;
    if want("gemm") {
        let (gflops, n) = gemm_rate(threads);
        gemm_peak = Some(gflops);
        out.push(json!({"impl": imp_name, "threads": threads, "bench": "gemm", "n": n, "gflop_per_s": round(gflops, 1)}));
    }
    let dev = Device::Cpu;
    let p = BenchParams::load(opts.data.as_deref(), DType::F32, &dev)?;
    let batch = BenchBatch::load(opts.data.as_deref())?;
    let loss0 = loss(&p, &batch, opts.imp)?.to_scalar::<f32>()? as f64;
    crate::kernels::profile::take();
    let base = json!({"impl": imp_name, "threads": threads, "loss0": round(loss0, 6)});
    let with = |extra: Value| -> Value {
        let mut v = base.clone();
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        v
    };
    if want("greedy") || want("beam5") {
        let w = SearchWeights::new(&p)?;
        if want("greedy") {
            let (ms, mn) = timed(opts.steps, || {
                std::hint::black_box(greedy(&w, &batch.src, TGT_LEN));
                Ok(())
            })?;
            out.push(with(json!({"bench": "greedy", "ms_median": round(ms, 2), "ms_min": round(mn, 2), "sentences_per_s": round(BATCH as f64 / (ms / 1e3), 1)})));
        }
        if want("beam5") {
            let (ms, mn) = timed((opts.steps / 2).max(5), || {
                std::hint::black_box(beam(&w, &batch.src, TGT_LEN, 5));
                Ok(())
            })?;
            out.push(with(json!({"bench": "beam5", "ms_median": round(ms, 2), "ms_min": round(mn, 2), "sentences_per_s": round(BATCH as f64 / (ms / 1e3), 1)})));
        }
    }
    if want("train") {
        let mut adam = BenchAdam::new(&p, opts.imp)?;
        let mut last = 0f32;
        let mut phases: [Vec<f64>; 3] = Default::default();
        let (ms, mn) = timed(opts.steps, || {
            let t0 = Instant::now();
            let l = loss(&p, &batch, opts.imp)?;
            let t1 = Instant::now();
            let grads = l.backward()?;
            let t2 = Instant::now();
            adam.update(&p, &grads)?;
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
        let gflops = 3.0 * forward_flops() / (ms / 1e3) / 1e9;
        let mut v = with(json!({
            "bench": "train", "ms_median": round(ms, 2), "ms_min": round(mn, 2),
            "target_tokens_per_s": round((BATCH * TGT_LEN) as f64 / (ms / 1e3), 1),
            "gflop_per_step": round(3.0 * forward_flops() / 1e9, 2),
            "gflop_per_s": round(gflops, 1),
            "loss_last": round(last as f64, 6),
            "forward_ms": fwd, "backward_ms": bwd, "adam_ms": opt,
        }));
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
        if let (Some(peak), Some(o)) = (gemm_peak, v.as_object_mut()) {
            o.insert("fraction_of_gemm_peak".into(), json!(round(gflops / peak, 3)));
        }
        out.push(v);
    }
    if let Some(mb) = peak_rss_mb() {
        out.push(json!({"impl": imp_name, "threads": threads, "bench": "memory", "peak_rss_mb": round(mb, 1)}));
    }
    Ok(out)
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
