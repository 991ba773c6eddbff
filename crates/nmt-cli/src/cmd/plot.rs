//! `nmt plot …`: attention pictures and training curves (logic lives in `nmt::eval::plot`).
use std::path::PathBuf;

use clap::{Args, Subcommand};
use nmt::eval::plot::{plot_attention, plot_curves, read_attention, read_training_log};

#[derive(Debug, Args)]
pub struct PlotArgs {
    #[command(subcommand)]
    pub command: PlotCommand,
}

#[derive(Debug, Subcommand)]
pub enum PlotCommand {
    /// Alignment matrix from `nmt translate --alignments` output.
    Attention(AttentionArgs),
    /// Training loss and validation BLEU / perplexity against steps.
    Curves(CurvesArgs),
}

#[derive(Debug, Args)]
pub struct AttentionArgs {
    /// JSON lines: {"src": [...], "tgt": [...], "weights": [[...]]}.
    pub input: PathBuf,
    /// Which entry (0-based).
    #[arg(long, short = 'n', default_value_t = 0)]
    pub index: usize,
    /// Output picture (.png or .svg).
    #[arg(long, short = 'o')]
    pub output: PathBuf,
}

#[derive(Debug, Args)]
pub struct CurvesArgs {
    /// Training log (JSON lines with "step", and "loss" or "dev_bleu" / "dev_ppl").
    pub log: PathBuf,
    /// Output picture (.png or .svg).
    #[arg(long, short = 'o')]
    pub output: PathBuf,
}

pub fn run(args: PlotArgs) -> anyhow::Result<()> {
    match args.command {
        PlotCommand::Attention(a) => {
            let att = read_attention(&a.input, a.index)?;
            plot_attention(&att, &a.output)?;
            eprintln!("wrote {}", a.output.display());
        }
        PlotCommand::Curves(a) => {
            let log = read_training_log(&a.log)?;
            plot_curves(&log, &a.output)?;
            eprintln!("wrote {}", a.output.display());
        }
    }
    Ok(())
}
