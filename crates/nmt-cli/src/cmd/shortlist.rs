//! `nmt shortlist -m MODEL --src S --tgt T`: learns a lexical shortlist (IBM Model 1 over the
//! pairs, `nmt_data::shortlist`) and writes it into the model file, for `translate --shortlist`.
//! `nmt train` does the same at its end; this is for models trained before, or other settings.
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args;
use nmt::data::ShortlistSpec;

#[derive(Debug, Args)]
pub struct ShortlistArgs {
    /// The model file to add the shortlist to (rewritten atomically; an old shortlist is replaced).
    #[arg(short, long)]
    pub model: PathBuf,
    /// The training pairs' source and target sides (plain or gzipped text, aligned by line).
    #[arg(long)]
    pub src: PathBuf,
    #[arg(long)]
    pub tgt: PathBuf,
    /// Translations kept per source token.
    #[arg(short, long, default_value_t = ShortlistSpec::default().k)]
    pub k: usize,
    /// The most frequent target tokens, always candidates.
    #[arg(long, default_value_t = ShortlistSpec::default().frequent)]
    pub frequent: usize,
    /// EM iterations of IBM Model 1.
    #[arg(long, default_value_t = ShortlistSpec::default().iterations)]
    pub iterations: usize,
    /// Read at most this many pairs, evenly spread over the files.
    #[arg(long, default_value_t = nmt::shortlist::MAX_PAIRS)]
    pub max_pairs: usize,
}

pub fn run(args: ShortlistArgs) -> Result<()> {
    let began = Instant::now();
    let bytes = std::fs::read(&args.model).map_err(|e| nmt::Error::io(&args.model, e))?;
    let (_, raw) = nmt::model_file::parse_safetensors(&bytes, &args.model, &nmt::candle_core::Device::Cpu)?;
    let meta = nmt::model_file::read_meta(&raw, &args.model)?;
    let pairs = nmt::shortlist::sample_text(&args.src, &args.tgt, &meta, args.max_pairs)?;
    let spec = ShortlistSpec { k: args.k, frequent: args.frequent, iterations: args.iterations };
    let shortlist = nmt::shortlist::learn(&pairs, &meta, &spec)?;
    nmt::shortlist::attach(&args.model, &shortlist)?;
    eprintln!(
        "shortlist (k = {}, {} frequent) learned from {} pairs in {:.1} s, written into {}",
        spec.k,
        spec.frequent,
        pairs.len(),
        began.elapsed().as_secs_f64(),
        args.model.display()
    );
    Ok(())
}
