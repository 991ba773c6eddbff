//! `nmt train --config FILE`: train or resume a model.
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use nmt::config::{Config, Impl};
use nmt::train::{train, Progress, StepInfo, TrainOptions, TrainSummary};

use super::common::ComputeArgs;

#[derive(Debug, Args)]
pub struct TrainArgs {
    /// TOML configuration (see configs/ and docs/CONFIG.md).
    #[arg(short, long)]
    pub config: PathBuf,
    /// Where the model, checkpoint and logs go; re-running with the same folder resumes.
    #[arg(short, long, default_value = "model")]
    pub model_dir: PathBuf,
    /// Override a config key, e.g. `--set train.max_minutes=30` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// No progress bar (log lines only).
    #[arg(long)]
    pub quiet: bool,
    /// Train on a prepared corpus (`nmt prepare -o DIR`) instead of the config's [data] text:
    /// starts at once, whatever the corpus's size. The config's dev set is still read.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// The loss's implementation: `fused` CPU kernels or `composed` candle ops (sets train.impl; `ops` is its older name).
    #[arg(long = "impl", value_name = "fused|composed")]
    pub imp: Option<Impl>,
    #[command(flatten)]
    pub compute: ComputeArgs,
}

/// An indicatif bar fed by the trainer.
pub struct Bar {
    bar: ProgressBar,
}

impl Bar {
    pub fn new(quiet: bool) -> Self {
        let bar = if quiet { ProgressBar::hidden() } else { ProgressBar::new(1000) };
        let style = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% ETA {eta} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(250));
        Bar { bar }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Progress for Bar {
    fn on_step(&mut self, i: &StepInfo) {
        if let Some(f) = i.fraction {
            self.bar.set_position((f * 1000.0) as u64);
        }
        self.bar.set_message(format!("update {} epoch {} loss {:.3} {:.0} tok/s", i.step, i.epoch + 1, i.loss, i.tok_per_s));
        if self.bar.is_hidden() {
            tracing::info!(step = i.step, loss = i.loss, tok_per_s = i.tok_per_s as u64, "train");
        }
    }

    fn on_message(&mut self, msg: &str) {
        if self.bar.is_hidden() {
            tracing::info!("{msg}");
        } else {
            self.bar.println(msg);
        }
    }
}

/// The flag that makes the trainer save a checkpoint and return; with several ranks, all of
/// them agree on it at the next update (`Control`), and rank 0 saves.
/// - Ctrl-C (SIGINT). A second one quits at once.
/// - SIGTERM, what schedulers (SLURM, Kubernetes) and `kill` send before they kill. A second
///   one quits at once.
/// - SIGUSR1, for MPI runs: Open MPI's `mpirun` ends the job itself on SIGINT and SIGTERM,
///   too soon for a checkpoint, but forwards SIGUSR1 to every rank, so
///   `kill -USR1 <mpirun's pid>` stops a distributed run as Ctrl-C stops one process.
///
/// SIGHUP keeps its disposition, so that `nohup nmt train …` outlives its terminal.
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    ctrlc::set_handler(move || {
        if s.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\nnmt: interrupted, saving a checkpoint (Ctrl-C again to quit at once)");
    })
    .context("cannot install the Ctrl-C handler")?;
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGTERM, SIGUSR1};
        use signal_hook::flag;
        // Registered before the flag's own handler, so that it sees the flag as the previous
        // signal left it: the second SIGTERM exits with 143 (128 + 15), as an unhandled one.
        flag::register_conditional_shutdown(SIGTERM, 143, stop.clone()).context("cannot install the SIGTERM handler")?;
        flag::register(SIGTERM, stop.clone()).context("cannot install the SIGTERM handler")?;
        flag::register(SIGUSR1, stop.clone()).context("cannot install the SIGUSR1 handler")?;
    }
    Ok(stop)
}

/// The progress of ranks other than 0: rank 0 alone reports.
struct Silent;

impl Progress for Silent {
    fn on_message(&mut self, _msg: &str) {}
}

pub fn run_training(cfg: &Config, model_dir: PathBuf, data: Option<PathBuf>, quiet: bool, compute: &ComputeArgs) -> Result<TrainSummary> {
    let device = compute.setup()?;
    let collective = crate::collective::collective()?;
    let (rank, ranks) = (collective.rank(), collective.size());
    let opts = TrainOptions { model_dir, device, stop: stop_flag()?, collective, data };
    let summary = if rank == 0 {
        let mut bar = Bar::new(quiet);
        let summary = train(cfg, &opts, &mut bar);
        bar.finish();
        summary
    } else {
        train(cfg, &opts, &mut Silent)
    };
    let summary = match summary {
        Ok(s) => s,
        Err(e) if ranks > 1 => {
            // The other ranks wait in a collective that this rank will never join: end them.
            eprintln!("nmt: error on rank {rank} of {ranks}: {e}");
            opts.collective.abort(1);
            return Err(e.into());
        }
        Err(e) => return Err(e.into()),
    };
    if rank > 0 {
        return Ok(summary);
    }
    eprintln!(
        "stopped ({:?}) after {} updates, {:.1} min, {:.0} target tok/s; best dev BLEU {} at update {}",
        summary.reason,
        summary.steps,
        summary.elapsed_s / 60.0,
        summary.tok_per_s,
        summary.best_bleu.map_or("-".to_string(), |b| format!("{b:.2}")),
        summary.best_step
    );
    eprintln!("best model: {}", summary.best_model.display());
    if nmt::profile::enabled() {
        // NMT_PROFILE=1: where the fused kernels' time went (docs/PERF-TRAIN.md).
        for (name, ms) in nmt::profile::take().into_iter().filter(|(_, ms)| *ms > 0.0) {
            eprintln!("profile {name}: {ms:.1} ms");
        }
    }
    Ok(summary)
}

pub fn run(args: TrainArgs) -> Result<()> {
    let mut cfg = Config::from_file(&args.config, &args.overrides)?;
    if let Some(imp) = args.imp {
        cfg.train.imp = imp;
    }
    run_training(&cfg, args.model_dir, args.data, args.quiet, &args.compute)?;
    Ok(())
}
