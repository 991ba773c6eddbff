//! What several subcommands share: threads, device, reading input lines.
use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context, Result};
use clap::Args;
use nmt::candle_core::Device;

/// Compute options shared by every command that runs a model.
#[derive(Debug, Args, Clone)]
pub struct ComputeArgs {
    /// CPU threads for matrix products (default: all cores; 1 is faster for tiny models).
    #[arg(long, global = true)]
    pub threads: Option<usize>,
    /// Run on the first CUDA GPU (needs a build with `--features cuda`).
    #[arg(long, global = true)]
    pub gpu: bool,
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
            // candle reads RAYON_NUM_THREADS for its matmul thread count; set it before any work.
            std::env::set_var("RAYON_NUM_THREADS", n.to_string());
        }
        // candle runs its CPU ops on a pool of its own whose idle workers spin 25 000 times
        // before they park; the fused kernels and the host search run on rayon's pool, so
        // after every candle op those spinning workers hold the cores the kernels need.
        // A short spin gives them back (docs/PERF.md has the measurement). A value the user
        // set is kept.
        if std::env::var_os(SPIN_VAR).is_none() {
            std::env::set_var(SPIN_VAR, SPIN_LIMIT);
        }
        if self.gpu {
            return Device::new_cuda(0).context("cannot use the GPU (was nmt built with --features cuda?)");
        }
        Ok(Device::Cpu)
    }
}

/// Reads all lines of a file, or of stdin when `path` is `None` or `-`. Invalid UTF-8 is an
/// error naming the line.
pub fn read_input_lines(path: Option<&Path>) -> Result<Vec<String>> {
    let (name, bytes) = match path {
        Some(p) if p != Path::new("-") => {
            (p.display().to_string(), std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?)
        }
        _ => {
            let mut buf = Vec::new();
            std::io::stdin().lock().read_to_end(&mut buf).context("cannot read standard input")?;
            ("<stdin>".to_string(), buf)
        }
    };
    let mut lines = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match std::str::from_utf8(line) {
            Ok(s) => lines.push(s.to_string()),
            Err(_) => bail!("{name}: line {}: invalid UTF-8", i + 1),
        }
    }
    if bytes.ends_with(b"\n") {
        lines.pop();
    }
    Ok(lines)
}
