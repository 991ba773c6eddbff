//! `nmt quantize -m MODEL -o OUT`: the model with every matrix stored in int8 (about a quarter
//! of the size; `nmt::quantize`), whose search defaults multiply in int8: `nmt translate -m OUT`
//! translates as `nmt translate -m MODEL --int8`.
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use nmt::candle_core::{DType, Device};

#[derive(Debug, Args)]
pub struct QuantizeArgs {
    /// The model file (`f32`).
    #[arg(short, long)]
    pub model: PathBuf,
    /// The int8 model file to write (atomically).
    #[arg(short, long)]
    pub output: PathBuf,
}

pub fn run(args: QuantizeArgs) -> Result<()> {
    super::io::check_distinct(&[Some(&args.model)], &[Some(&args.output)])?;
    let loaded = nmt::model_file::load(&args.model, DType::F32, &Device::Cpu)?;
    let mut meta = loaded.meta;
    meta.search.int8 = true;
    let tensors = nmt::quantize::quantize_tensors(&nmt::model_file::model_tensors(&loaded.model))?;
    let size = nmt::model_file::save_tensors(&args.output, tensors, &meta)?;
    let before = std::fs::metadata(&args.model).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "wrote {} ({:.1} MB, {:.0} % of {:.1} MB); it translates with int8 products by default",
        args.output.display(),
        size as f64 / 1e6,
        100.0 * size as f64 / before.max(1) as f64,
        before as f64 / 1e6
    );
    Ok(())
}
