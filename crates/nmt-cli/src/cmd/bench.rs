//! `nmt bench`: a preset's training step, greedy and beam-5 search (bench-rnnsearch, the
//! PyTorch reference's model, by default), and the GEMM rate.
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use nmt::config::{Impl, Precision, Proposal};
use nmt::run_bench_each as run_each;
use nmt::BenchOptions;

use super::common::ComputeArgs;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Directory with the PyTorch reference's init.bin and batch.bin (from
    /// bench/pytorch/gen_data.py), so that loss0 can be compared; seeded weights otherwise.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Print one JSON line per measurement, with the reference's keys.
    #[arg(long)]
    json: bool,
    /// Timed repetitions after 3 warm-up runs.
    #[arg(long, default_value_t = 20)]
    steps: usize,
    /// Implementation to measure.
    /// `fused` (default) or `composed` (`ops` before), candle ops step by step: the baseline the kernels
    /// are measured against.
    #[arg(long = "impl", value_name = "fused|composed", default_value = "fused")]
    imp: Impl,
    /// The model to time: bench-rnnsearch (the PyTorch reference's model, the default) or any
    /// other preset (rnnsearch-small, rnnenc-small, lstm-seq2seq-small, grconv-small, …), seeded,
    /// on the reference's batch shape.
    #[arg(long, default_value = "bench-rnnsearch")]
    preset: String,
    /// Override a key of the preset's model, e.g. `--set model.cell=gru` (repeatable): the
    /// preset's twin at equal sizes. Not with bench-rnnsearch, whose sizes are the reference's.
    #[arg(long = "set", value_name = "model.KEY=VALUE")]
    overrides: Vec<String>,
    /// Measure only these (comma-separated): train, greedy, beam5, gemm.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Search with int8 products (`nmt translate --int8`). A lexical shortlist needs a trained
    /// model's translation table: `scripts/bench-vs-marian.sh` measures it.
    #[arg(long)]
    int8: bool,
    /// The training step's large products in `f32` or `bf16` (`train.precision`; bf16 runs where
    /// it is faster than f32, on AMX or on AMD's AVX512_BF16, and falls back to f32 with a
    /// message elsewhere).
    #[arg(long, value_name = "f32|bf16", default_value = "f32")]
    precision: Precision,
    /// Sentences per batch: a multiple of 32, the reference's batch repeated (32 and 128 are
    /// the GPU comparison's two sizes).
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Time the training step with the softmax over the batch's candidate words
    /// (`train.candidates`) and K "frequent" ids added (the bench's first K word ids).
    #[arg(long, value_name = "K")]
    candidates: Option<usize>,
    /// With `--candidates`: N ids drawn uniformly added too (`train.candidates.sampled`).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "candidates")]
    candidates_sampled: usize,
    /// With `--candidates`: the N draws by unigram frequency, with replacement
    /// (`train.candidates.proposal = "unigram"`; Zipf's law for the bench's counts).
    #[arg(long, requires = "candidates")]
    candidates_unigram: bool,
    /// With `--candidates` and draws: the optimiser's moments scaled by each draw's chance
    /// (`train.candidates.scale_moments`), so that its extra work is timed.
    #[arg(long, requires = "candidates")]
    candidates_scale_moments: bool,
    #[command(flatten)]
    compute: ComputeArgs,
}

pub fn run(a: BenchArgs) -> Result<()> {
    let device = a.compute.setup()?;
    for o in &a.only {
        if !["train", "greedy", "beam5", "gemm"].contains(&o.as_str()) {
            anyhow::bail!("--only: unknown measurement {o:?} (train, greedy, beam5, gemm)");
        }
    }
    let opts = BenchOptions {
        data: a.data,
        steps: a.steps.max(1),
        imp: a.imp,
        only: a.only,
        preset: a.preset,
        overrides: a.overrides,
        int8: a.int8,
        precision: a.precision,
        device,
        batch: a.batch,
        candidates: a.candidates.map(|frequent| nmt::config::CandidatesConfig {
            frequent,
            sampled: a.candidates_sampled,
            proposal: if a.candidates_unigram { Proposal::Unigram } else { Proposal::Uniform },
            scale_moments: a.candidates_scale_moments,
        }),
    };
    if a.precision == Precision::Bf16 && opts.device.is_cuda() && opts.imp == Impl::Fused {
        // The GPU form: its input projections on cuBLAS in bf16, whatever this CPU has.
        eprintln!("nmt bench: --precision bf16: {}", nmt::GPU_BF16_PRODUCTS);
    } else if a.precision == Precision::Bf16 {
        // Which kernels run the products, or why the step runs in f32 (issue 70); the train
        // line's `bf16_products` says the same.
        let path = nmt::bf16_path();
        let f32_note = if nmt::bf16_available() { "" } else { ", so the training step runs in f32" };
        eprintln!("nmt bench: --precision bf16: {path}{f32_note}");
    }
    // Each figure printed and flushed as soon as it is measured: a run killed later keeps it.
    let mut out = std::io::stdout();
    run_each(&opts, &mut |v| {
        let line = if a.json {
            v.to_string()
        } else {
            let fields: Vec<String> = v.as_object().map(|o| o.iter().map(|(k, x)| format!("{k}={x}")).collect()).unwrap_or_default();
            fields.join("  ")
        };
        writeln!(out, "{line}").and_then(|()| out.flush()).map_err(|e| nmt::Error::io("standard output", e))
    })?;
    Ok(())
}
