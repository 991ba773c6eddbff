//! `nmt score -m MODEL [-m MODEL …]`: `log p(target | source)` per pair, one line each, in
//! input order. Pairs come as `source<TAB>target` lines (stdin or `--input`), from
//! `--src`/`--tgt`, or from a Moses phrase table (`--phrase-table`, `phrase_table.rs`).
//! Several models score as an ensemble: each token's probability is the average of theirs
//! (`nmt::score`).
use std::io::Write;

use anyhow::{bail, Result};
use nmt::score::score_pairs;

pub use self::args::ScoreArgs;
use super::common::{load_models, read_input_lines};
use super::io::Output;

mod args;
mod phrase_table;

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
    let mut inputs: Vec<Option<&std::path::Path>> = a.model.iter().map(|m| Some(m.as_path())).collect();
    inputs.extend([a.input.as_deref(), a.src.as_deref(), a.tgt.as_deref(), a.phrase_table.as_deref()]);
    super::io::check_distinct(&inputs, &[a.output.as_deref()])?;
    let device = a.compute.setup()?;
    let translator = load_models(&a.model, &device)?;
    if let Some(table) = &a.phrase_table {
        return phrase_table::run(&translator, table, &a);
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
            writeln!(out, "{:.6}", s.log_prob_normalized(a.normalize))?;
        }
    }
    out.commit()
}
