//! `nmt plot …`: attention pictures, training curves and grConv trees (logic lives in
//! `nmt::eval::plot`).
use std::path::PathBuf;

use clap::{Args, Subcommand};
use nmt::eval::plot::{plot_attention, plot_curves, plot_grconv, read_attention, read_training_log, GrConvTree};

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
    /// grConv's learned tree over a sentence (Properties, Figure 2): which children each node
    /// merged or copied.
    Grconv(GrconvArgs),
}

#[derive(Debug, Args)]
pub struct GrconvArgs {
    /// A model trained with `model.encoder = "grconv"`.
    #[arg(short, long)]
    pub model: PathBuf,
    /// The source sentence.
    #[arg(long)]
    pub sentence: String,
    /// Output picture (.png or .svg).
    #[arg(long, short = 'o')]
    pub output: PathBuf,
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
        PlotCommand::Grconv(a) => {
            let t = nmt::translate::Translator::load(&a.model, &nmt::candle_core::Device::Cpu)?;
            let mut ids = t.meta.src.encode(&a.sentence);
            ids.push(nmt::data::EOS);
            t.model().cfg.order_source(&mut ids);
            let tree = GrConvTree { tokens: t.meta.src.pieces(&ids), gates: t.model().grconv_gates(&ids)? };
            plot_grconv(&tree, &a.output)?;
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
