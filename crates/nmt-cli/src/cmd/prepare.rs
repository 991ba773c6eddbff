//! `nmt prepare -c CONFIG -o DIR`: learn the subword models and encode the training corpora
//! into a prepared directory (nmt_data::shards) that `nmt train --data DIR` maps.
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args;
use nmt::config::Config;
use nmt::data::shards::prepare;

#[derive(Debug, Args)]
pub struct PrepareArgs {
    /// TOML configuration: its [data] section says what to prepare (model.copy too).
    #[arg(short, long)]
    pub config: PathBuf,
    /// Override a config key, e.g. `--set data.subword_sample=500000` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// The directory to write (created). Written into a temporary directory beside it and
    /// swapped in when complete: an earlier preparation in it is replaced only by a complete
    /// one, and files no manifest lists are never touched.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Threads for encoding (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
}

pub fn run(args: PrepareArgs) -> Result<()> {
    if let Some(n) = args.threads.filter(|&n| n > 0) {
        std::env::set_var("RAYON_NUM_THREADS", super::common::capped_threads(n).to_string());
    }
    let cfg = Config::from_file(&args.config, &args.overrides)?;
    let opts = cfg.data.prepare_options(cfg.model.copy())?;
    let began = Instant::now();
    let m = prepare(&opts, &args.output, None, &mut |msg| tracing::info!("{msg}"))?;
    let tokens: u64 = m.shards.iter().map(|s| s.tokens.bytes).sum::<u64>() / m.token_type.width() as u64;
    eprintln!(
        "prepared {} pairs ({} tokens as {:?}, {} shards) in {:.1} s into {}",
        m.pairs,
        tokens,
        m.token_type,
        m.shards.len(),
        began.elapsed().as_secs_f64(),
        args.output.display()
    );
    for (c, spec) in m.corpora.iter().zip(&m.spec.corpora) {
        eprintln!(
            "  {}: {} pairs, weight {}; skipped {} empty, {} over max_words, {} over max_len",
            spec.files.first().map_or(String::new(), |p| p.display().to_string()),
            c.pairs,
            c.weight,
            c.skipped_empty,
            c.skipped_long,
            c.skipped_subwords
        );
    }
    eprintln!("train on it with: nmt train -c {} --data {}", args.config.display(), args.output.display());
    Ok(())
}
