//! `nmt average`: the element-wise mean of several model files of one run (logic in
//! `nmt::train::average`).
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

#[derive(Debug, Args)]
pub struct AverageArgs {
    /// Model files or checkpoints to average (same configuration and vocabularies), e.g.
    /// `MODEL_DIR/snapshots/step-*.safetensors`.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Where to write the averaged model (written atomically).
    #[arg(short, long)]
    pub output: PathBuf,
}

pub fn run(a: AverageArgs) -> anyhow::Result<()> {
    let inputs: Vec<Option<&std::path::Path>> = a.inputs.iter().map(|m| Some(m.as_path())).collect();
    super::io::check_distinct(&inputs, &[Some(&a.output)])?;
    nmt::train::average::average_to(&a.inputs, &a.output)
        .with_context(|| format!("averaging {} model files into {}", a.inputs.len(), a.output.display()))?;
    eprintln!("wrote the average of {} models to {}", a.inputs.len(), a.output.display());
    Ok(())
}
