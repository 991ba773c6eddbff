//! `nmt score -m MODEL`: `log p(target | source)` per pair, one line each, in input order.
//! Pairs come as `source<TAB>target` lines (stdin or `--input`), or from `--src`/`--tgt`.
use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use nmt::score::score_pairs;
use nmt::translate::Translator;

use super::common::{read_input_lines, ComputeArgs};

#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// Model file (`model.safetensors` from `nmt train`).
    #[arg(short, long)]
    pub model: PathBuf,
    /// `source<TAB>target` lines (default: stdin).
    #[arg(short, long, conflicts_with_all = ["src", "tgt"])]
    pub input: Option<PathBuf>,
    /// Source sentences, one a line (with --tgt, instead of tab-separated input).
    #[arg(long, requires = "tgt")]
    pub src: Option<PathBuf>,
    /// Target sentences, line for line with --src.
    #[arg(long, requires = "src")]
    pub tgt: Option<PathBuf>,
    /// Output file (default: stdout).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Divide each score by its number of target tokens (`</s>` included).
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
    let translator = Translator::load(&a.model, &device)?;
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
    let scores = score_pairs(&translator.model, &translator.meta, &pairs, a.batch_size.max(1))?;
    let mut text = String::new();
    for s in &scores {
        if a.per_token {
            text.push_str(&s.tokens.iter().map(|x| format!("{x:.6}")).collect::<Vec<_>>().join(" "));
        } else if a.normalize {
            text.push_str(&format!("{:.6}", s.log_prob / s.tokens.len().max(1) as f64));
        } else {
            text.push_str(&format!("{:.6}", s.log_prob));
        }
        text.push('\n');
    }
    match &a.output {
        // Temp file and rename: a failed run leaves no partial output.
        Some(p) => {
            let tmp = p.with_extension("tmp");
            std::fs::write(&tmp, &text).with_context(|| format!("cannot write {}", tmp.display()))?;
            std::fs::rename(&tmp, p).with_context(|| format!("cannot rename {} to {}", tmp.display(), p.display()))?;
        }
        None => {
            let mut w = std::io::stdout().lock();
            w.write_all(text.as_bytes())?;
            w.flush()?;
        }
    }
    Ok(())
}
