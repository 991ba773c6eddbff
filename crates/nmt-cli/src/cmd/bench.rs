//! `nmt bench`: bench-rnnsearch's training step, greedy and beam-5 search, and the GEMM rate.
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use nmt::bench::model::Impl;
use nmt::bench::run::{run as run_bench, BenchOptions};

use super::common::ComputeArgs;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ImplArg {
    /// The fused kernels (default).
    Fused,
    /// Composed candle ops, step by step: the baseline the kernels are measured against.
    Ops,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Directory with the PyTorch reference's init.bin and batch.bin (from
    /// ../shared/bench/gen_data.py), so that loss0 can be compared; seeded weights otherwise.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Print one JSON line per measurement, with the reference's keys.
    #[arg(long)]
    json: bool,
    /// Timed repetitions after 3 warm-up runs.
    #[arg(long, default_value_t = 20)]
    steps: usize,
    /// Implementation to measure.
    #[arg(long = "impl", value_enum, default_value_t = ImplArg::Fused)]
    imp: ImplArg,
    /// Measure only these (comma-separated): train, greedy, beam5, gemm.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    #[command(flatten)]
    compute: ComputeArgs,
}

pub fn run(a: BenchArgs) -> Result<()> {
    if a.compute.gpu {
        anyhow::bail!("nmt bench measures the CPU kernels; --gpu is not supported here");
    }
    a.compute.setup()?;
    for o in &a.only {
        if !["train", "greedy", "beam5", "gemm"].contains(&o.as_str()) {
            anyhow::bail!("--only: unknown measurement {o:?} (train, greedy, beam5, gemm)");
        }
    }
    let imp = match a.imp {
        ImplArg::Fused => Impl::Fused,
        ImplArg::Ops => Impl::Ops,
    };
    let opts = BenchOptions { data: a.data, steps: a.steps.max(1), imp, only: a.only };
    for v in run_bench(&opts)? {
        if a.json {
            println!("{v}");
        } else {
            let fields: Vec<String> = v.as_object().map(|o| o.iter().map(|(k, x)| format!("{k}={x}")).collect()).unwrap_or_default();
            println!("{}", fields.join("  "));
        }
    }
    Ok(())
}
