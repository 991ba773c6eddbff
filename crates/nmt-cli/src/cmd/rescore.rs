//! `nmt rescore --nbest IN --src SRC -m MODEL`: Moses n-best lists with the model's
//! `log p(hypothesis | source)` as one more feature (the seeds' rescoring of SMT n-best lists,
//! Cho et al. 2014). With `--weight W` each total moves by `W × score` and each sentence's
//! list is re-ranked; `--best` prints the resulting 1-best per sentence instead of the lists.
use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use nmt::data::moses::nbest::{sort_by_total, NbestLine};
use nmt::score::score_pairs;

use super::common::{load_models, read_input_lines, ComputeArgs};
use super::io::{Lines, Output};

#[derive(Debug, Args)]
pub struct RescoreArgs {
    /// The n-best list (`id ||| hypothesis ||| features ||| total`; gzip or plain; `-`: stdin).
    #[arg(long, value_name = "IN")]
    pub nbest: PathBuf,
    /// The source sentences the list translates: line `id + 1` is sentence `id`.
    #[arg(long, value_name = "FILE")]
    pub src: PathBuf,
    /// Model file; repeat for an ensemble (its average probability is the feature).
    #[arg(short, long, required = true)]
    pub model: Vec<PathBuf>,
    /// Add `WEIGHT × feature` to each total and re-rank each sentence's list by it.
    #[arg(long)]
    pub weight: Option<f64>,
    /// The feature's name in the list.
    #[arg(long, default_value = "nmt")]
    pub feature_name: String,
    /// The feature is log p divided by the hypothesis's tokens (`</s>` included).
    #[arg(long)]
    pub normalize: bool,
    /// Print the best hypothesis of each sentence (after re-ranking), one line per source
    /// sentence, instead of the lists.
    #[arg(long)]
    pub best: bool,
    /// Output file (default: stdout; `.gz`: compressed). Written atomically.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Pairs per batch.
    #[arg(long, default_value_t = 64)]
    pub batch_size: usize,
    #[command(flatten)]
    pub compute: ComputeArgs,
}

pub fn run(a: RescoreArgs) -> Result<()> {
    let mut inputs: Vec<Option<&std::path::Path>> = a.model.iter().map(|m| Some(m.as_path())).collect();
    inputs.extend([Some(a.nbest.as_path()), Some(a.src.as_path())]);
    super::io::check_distinct(&inputs, &[a.output.as_deref()])?;
    if a.feature_name.is_empty() || a.feature_name.contains(char::is_whitespace) || a.feature_name.contains('=') {
        bail!("--feature-name must be one word without `=`");
    }
    let sources = read_input_lines(Some(&a.src))?;
    let mut input = Lines::open(Some(&a.nbest))?;
    let mut lines = Vec::new();
    while let Some((n, l)) = input.next_line()? {
        let line = NbestLine::parse(&l, n).map_err(|e| e.into_error(input.name()))?;
        if line.id >= sources.len() {
            bail!("{}, line {n}: sentence {} but {} has {} lines", input.name(), line.id, a.src.display(), sources.len());
        }
        lines.push(line);
    }
    let device = a.compute.setup()?;
    let translator = load_models(&a.model, &device)?;
    let pairs: Vec<(String, String)> = lines.iter().map(|l| (sources[l.id].clone(), l.hypothesis().to_string())).collect();
    let scores = score_pairs(&translator.models(), &translator.meta, &pairs, a.batch_size.max(1))?;
    for (line, s) in lines.iter_mut().zip(&scores) {
        line.add_feature(&a.feature_name, s.log_prob_normalized(a.normalize), a.weight);
    }
    if a.weight.is_some() {
        sort_by_total(&mut lines);
    }
    let mut out = Output::create(a.output.as_deref())?;
    if a.best {
        let mut best: Vec<Option<&NbestLine>> = vec![None; sources.len()];
        for l in &lines {
            // The first line of a sentence's list is its best (the list's order, or the new one).
            best[l.id].get_or_insert(l);
        }
        for b in best {
            writeln!(out, "{}", b.map_or("", |l| l.hypothesis()))?;
        }
    } else {
        for l in &lines {
            writeln!(out, "{}", l.as_str())?;
        }
    }
    out.commit()
}
