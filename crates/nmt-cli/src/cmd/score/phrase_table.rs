//! `nmt score --phrase-table IN -o OUT`: a Moses phrase table with the model's score of each
//! phrase pair appended to its features (Cho et al. 2014's use of the RNN Encoder-Decoder).
//!
//! The table streams through in chunks of [`CHUNK`] lines: each chunk is parsed (a malformed
//! line stops the run with its number, and no output file is left), scored in length-sorted
//! batches, and written in its input order. Memory is bounded by the chunk, whatever the
//! table's size.
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use nmt::data::moses::phrase_table::PhraseLine;
use nmt::score::score_pairs;
use nmt::translate::Translator;

use super::args::ScoreArgs;
use crate::cmd::io::{Lines, Output};

/// Lines scored together: enough for length-sorted batches of similar phrases, a few MB.
const CHUNK: usize = 16_384;

pub fn run(translator: &Translator, table: &Path, a: &ScoreArgs) -> Result<()> {
    let mut input = Lines::open(Some(table))?;
    let mut out = Output::create(a.output.as_deref())?;
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} {human_pos} phrase pairs, {per_sec}, {elapsed}")?);
    let t0 = Instant::now();
    let models = translator.models();
    let mut total = 0usize;
    // Each line with its ending, which passes through as read.
    let mut lines: Vec<(String, &str)> = Vec::with_capacity(CHUNK);
    let mut first_line = 1;
    loop {
        lines.clear();
        while lines.len() < CHUNK {
            match input.next_with_ending()? {
                Some((n, l, end)) => {
                    if lines.is_empty() {
                        first_line = n;
                    }
                    lines.push((l, end));
                }
                None => break,
            }
        }
        if lines.is_empty() {
            break;
        }
        let parsed: Vec<PhraseLine<'_>> = lines
            .iter()
            .enumerate()
            .map(|(i, (l, _))| PhraseLine::parse(l, first_line + i).map_err(|e| e.into_error(input.name())))
            .collect::<Result<_, _>>()?;
        let pairs: Vec<(String, String)> = parsed.iter().map(|p| (p.source().to_string(), p.target().to_string())).collect();
        let scores = score_pairs(&models, &translator.meta, &pairs, a.batch_size.max(1))
            .with_context(|| format!("{}, lines {first_line}–{}", input.name(), first_line + pairs.len() - 1))?;
        for ((p, s), (_, end)) in parsed.iter().zip(&scores).zip(&lines) {
            let lp = s.log_prob_normalized(a.normalize);
            let v = if a.log { lp } else { lp.exp() };
            write!(out, "{}{end}", p.with_feature(&format!("{v:.6e}")))?;
        }
        total += lines.len();
        bar.set_position(total as u64);
    }
    bar.finish_and_clear();
    out.commit()?;
    let secs = t0.elapsed().as_secs_f64();
    eprintln!("scored {total} phrase pairs in {secs:.1} s: {:.0} phrase pairs/s", total as f64 / secs.max(1e-9));
    Ok(())
}
