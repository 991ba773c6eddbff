//! Beam search with the candle ops for a batch of sentences, `k` rows per sentence
//! (`rows = batch · k`; row `b·k + j` is sentence `b`'s live hypothesis `j`). The bookkeeping
//! (narrowing beams, length limits, ranking) is `crate::hypothesis::beams`, shared with the host
//! search. With beam 1 this is exactly greedy search.
use candle_core::Tensor;
use nmt_data::BOS;

use super::greedy::allowed;
use super::{to_rows, Hypothesis, SearchOptions};
use crate::error::Result;
use crate::hypothesis::beams::{Beams, Extension, Live};
use crate::model::decoder::Encoded;
use crate::model::Seq2Seq;

pub fn beam(model: &Seq2Seq, enc: &Encoded, limits: &[usize], opts: &SearchOptions) -> Result<Vec<Vec<Hypothesis>>> {
    let k = opts.cfg.beam_size.max(1);
    let batch = limits.len();
    let rows = batch * k;
    let expand: Vec<u32> = (0..rows).map(|r| (r / k) as u32).collect();
    let enc = enc.select(&Tensor::from_vec(expand, rows, model.device())?)?;
    let mut state = enc.init.clone();
    let mut beams = Beams::new(limits, k, opts.alignments && model.has_attention(), opts.cfg.normalize);
    let mut y = vec![BOS; rows];
    let max_steps = limits.iter().copied().max().unwrap_or(0);
    for step in 0..max_steps {
        if beams.all_done() {
            break;
        }
        let y_t = Tensor::from_vec(y.clone(), rows, model.device())?;
        crate::hypothesis::count_row_steps(rows);
        let out = model.decode_step(&enc, &state, &y_t)?;
        let lp = to_rows(&out.log_probs)?;
        let alpha = match (&out.alpha, opts.alignments) {
            (Some(a), true) => Some(to_rows(a)?),
            _ => None,
        };
        let mut origin: Vec<u32> = (0..rows as u32).collect();
        for b in 0..batch {
            let live = beams.live(b);
            if live.is_empty() {
                continue;
            }
            let exts = top_candidates(live, &lp[b * k..b * k + live.len()], beams.width(b), opts.cfg.no_unk)
                .into_iter()
                .map(|(log_prob, parent, word)| Extension {
                    parent,
                    word,
                    log_prob,
                    alpha: alpha.as_ref().map(|a| a[b * k + parent].clone()),
                })
                .collect();
            for (i, (parent, word)) in beams.advance(b, step, exts).into_iter().enumerate() {
                origin[b * k + i] = (b * k + parent) as u32;
                y[b * k + i] = word;
            }
        }
        state = out.state.index_select(&Tensor::from_vec(origin, rows, model.device())?, 0)?;
    }
    Ok(beams.finish(opts.cfg.n_best))
}

/// The `n` best extensions `(log p, parent, word)` of a sentence's live hypotheses, best first.
fn top_candidates(live: &[Live], lp: &[Vec<f32>], n: usize, no_unk: bool) -> Vec<(f64, usize, u32)> {
    let mut best: Vec<(f64, usize, u32)> = Vec::with_capacity(n + 1);
    for (j, (l, row)) in live.iter().zip(lp).enumerate() {
        for (w, &p) in row.iter().enumerate() {
            if !allowed(w as u32, no_unk) {
                continue;
            }
            let s = l.log_prob + p as f64;
            if best.len() == n && s <= best[n - 1].0 {
                continue;
            }
            let pos = best.partition_point(|c| c.0 >= s);
            best.insert(pos, (s, j, w as u32));
            best.truncate(n);
        }
    }
    best
}
