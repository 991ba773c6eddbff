//! `nmt score -m MODEL [-m MODEL …]`: `log p(target | source)` per pair, one line each, in
//! input order. Pairs come as `source<TAB>target` lines (stdin or `--input`), from
//! `--src`/`--tgt`, or from a Moses phrase table (`--phrase-table`, `cmd/phrase_table.rs`).
//! Several models score as an ensemble: each token's probability is the average of theirs
//! (`nmt::score`).
use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use nmt::score::{score_pairs, PairScore};

use super::common::{load_models, read_input_lines, ComputeArgs};
use super::io::Output;

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

/// A pair's log-probability, divided by its tokens with `normalize`.
pub fn log_prob(s: &PairScore, normalize: bool) -> f64 {
    if normalize {
        s.log_prob / s.tokens.len().max(1) as f64
    } else {
        s.log_prob
    }
}

/// The pairs of tab-separated lines; a line without exactly one tab is named.
fn tab_pairs(lines: &[String], what: &str) -> Result<Vec<(String, String)>> {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| match l.split_once('\t') {
            Some((s, t)) if !t.contains('\t') => Ok((s.to_owned(), t.to_owned())),
            _ => bail!("{what}, line {}: expected `source<TAB>target`", i + 1),
        })
        .collect()
}

pub fn run(a: ScoreArgs) -> Result<()> {
    let device = a.compute.setup()?;
    let translator = load_models(&a.model, &device)?;
    if let Some(table) = &a.phrase_table {
        return super::phrase_table::run(&translator, table, &a);
    }
    let pairs = match (&a.src, &a.tgt) {
        (Some(s), Some(t)) => {
            let (src, tgt) = (read_input_lines(Some(s))?, read_input_lines(Some(t))?);
            if src.len() != tgt.len() {
                bail!("{} has {} lines but {} has {}", s.display(), src.len(), t.display(), tgt.len());
            }
            src.into_iter().zip(tgt).collect()
        }
        _ => {
            let what = a.input.as_ref().map_or("stdin".to_string(), |p| p.display().to_string());
            tab_pairs(&read_input_lines(a.input.as_deref())?, &what)?
        }
    };
    let scores = score_pairs(&translator.models(), &translator.meta, &pairs, a.batch_size.max(1))?;
    let mut out = Output::create(a.output.as_deref())?;
    for s in &scores {
        if a.per_token {
            writeln!(out, "{}", s.tokens.iter().map(|x| format!("{x:.6}")).collect::<Vec<_>>().join(" "))?;
        } else {
            writeln!(out, "{:.6}", log_prob(s, a.normalize))?;
        }
    }
    out.commit()
}
