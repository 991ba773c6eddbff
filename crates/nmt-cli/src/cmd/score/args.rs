//! The flags of `nmt score` (`mod.rs` scores pairs, `phrase_table.rs` a Moses phrase table).
use std::path::PathBuf;

use clap::Args;

use crate::cmd::common::ComputeArgs;

#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// Model file (`model.safetensors` from `nmt train`); repeat for an ensemble (the models
    /// must share their vocabularies).
    #[arg(short, long, required = true)]
    pub model: Vec<PathBuf>,
    /// `source<TAB>target` lines (default: stdin).
    #[arg(short, long, conflicts_with_all = ["src", "tgt"])]
    pub input: Option<PathBuf>,
    /// Source sentences, one a line (with --tgt, instead of tab-separated input).
    #[arg(long, requires = "tgt")]
    pub src: Option<PathBuf>,
    /// Target sentences, line for line with --src.
    #[arg(long, requires = "src")]
    pub tgt: Option<PathBuf>,
    /// A Moses phrase table (`src ||| tgt ||| features …`, gzip or plain): write it to
    /// --output with the model's p(tgt | src) appended to each line's features, every other
    /// byte unchanged. Streams in bounded memory.
    #[arg(long, value_name = "IN", conflicts_with_all = ["input", "src", "tgt", "per_token"])]
    pub phrase_table: Option<PathBuf>,
    /// With --phrase-table: append log p instead of p.
    #[arg(long, requires = "phrase_table")]
    pub log: bool,
    /// Output file (default: stdout; `.gz`: compressed). Written atomically: a failed run
    /// leaves no partial file.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Divide each log-probability by its number of target tokens (`</s>` included).
    #[arg(long)]
    pub normalize: bool,
    /// Print each target token's log-probability (space-separated, `</s>` last) instead.
    #[arg(long, conflicts_with = "normalize")]
    pub per_token: bool,
    /// Pairs per batch (sorted by length inside; the output keeps the input order).
    #[arg(long, default_value_t = 64)]
    pub batch_size: usize,
    #[command(flatten)]
    pub compute: ComputeArgs,
}
