//! What several subcommands share: threads, device, reading input lines, loading models.
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use nmt::candle_core::Device;
use nmt::translate::Translator;

use super::io::Lines;

/// Compute options shared by every command that runs a model.
#[derive(Debug, Args, Clone)]
pub struct ComputeArgs {
    /// CPU threads for matrix products (default: all cores; 1 is faster for tiny models). At
    /// most the machine's cores: more is capped, with a warning (NMT_OVERSUBSCRIBE=1 lifts the
    /// cap, for tests).
    #[arg(long, global = true)]
    pub threads: Option<usize>,
    /// Run on the first CUDA GPU (needs a build with `--features cuda`).
    #[arg(long, global = true)]
    pub gpu: bool,
}

/// Set to `1`, lets `--threads` exceed the machine's cores (up to [`OVERSUBSCRIBED_MAX`]):
/// for tests that run the parallel paths with 16 or 64 threads on a 2-core machine, where
/// threads that wait inside a product steal each other's jobs as they would on 16 cores.
const OVERSUBSCRIBE_VAR: &str = "NMT_OVERSUBSCRIBE";
/// The most threads [`OVERSUBSCRIBE_VAR`] allows: enough for the tests, far from the 100 000
/// that hung a machine.
const OVERSUBSCRIBED_MAX: usize = 256;

/// `n` threads, at most the machine's cores: more only contend (issue 44, row 2: 100 000
/// threads hung for a minute at load 500), so they are capped with a warning, unless
/// `NMT_OVERSUBSCRIBE=1` asks for them.
pub fn capped_threads(n: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    if std::env::var(OVERSUBSCRIBE_VAR).is_ok_and(|v| v == "1") {
        if n > OVERSUBSCRIBED_MAX {
            tracing::warn!("--threads {n} is more than {OVERSUBSCRIBE_VAR}'s limit: using {OVERSUBSCRIBED_MAX}");
            return OVERSUBSCRIBED_MAX;
        }
        return n;
    }
    if n > cores {
        tracing::warn!("--threads {n} is more than this machine's {cores} cores: using {cores}");
        return cores;
    }
    n
}

/// candle's barrier-pool spin limit (read once, when its pool starts) and the value `nmt` sets.
const SPIN_VAR: &str = "CANDLE_BARRIER_POOL_SPIN_LIMIT";
const SPIN_LIMIT: &str = "100";

impl ComputeArgs {
    /// Applies the thread count and returns the device.
    pub fn setup(&self) -> Result<Device> {
        if let Some(n) = self.threads {
            if n == 0 {
                bail!("--threads must be at least 1");
            }
            let n = capped_threads(n);
            // candle reads RAYON_NUM_THREADS for its matmul thread count; set it before any work.
            std::env::set_var("RAYON_NUM_THREADS", n.to_string());
        }
        // candle runs its CPU ops on a pool of its own whose idle workers spin 25 000 times
        // before they park; the fused kernels and the host search run on rayon's pool, so
        // after every candle op those spinning workers hold the cores the kernels need.
        // A short spin gives them back (docs/PERF.md, "int8 and the lexical shortlist", has the measurement). A value the user
        // set is kept.
        if std::env::var_os(SPIN_VAR).is_none() {
            std::env::set_var(SPIN_VAR, SPIN_LIMIT);
        }
        if self.gpu {
            return nmt::kernels::gpu::context::open(0).context("cannot use the GPU (was nmt built with --features cuda?)");
        }
        Ok(Device::Cpu)
    }
}

/// Reads all lines of a file, or of stdin when `path` is `None` or `-` (gzip detected), with
/// [`Lines`]: invalid UTF-8 is an error naming the line.
pub fn read_input_lines(path: Option<&Path>) -> Result<Vec<String>> {
    let mut input = Lines::open(path)?;
    let mut lines = Vec::new();
    while let Some((_, line)) = input.next_line()? {
        lines.push(line);
    }
    Ok(lines)
}

/// Loads one model, or an ensemble of several (`-m A -m B`).
pub fn load_models(paths: &[PathBuf], device: &Device) -> Result<Translator> {
    let refs: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
    Ok(Translator::load_ensemble(&refs, device)?)
}
