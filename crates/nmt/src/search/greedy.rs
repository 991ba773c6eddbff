//! Greedy search: at each step the most probable word, for all sentences of a batch at once.
use candle_core::Tensor;
use nmt_data::{BOS, EOS, PAD, UNK};

use super::{normalized, to_rows, Hypothesis, SearchOptions};
use crate::error::Result;
use crate::model::decoder::Encoded;
use crate::model::Seq2Seq;

pub fn greedy(model: &Seq2Seq, enc: &Encoded, limits: &[usize], opts: &SearchOptions) -> Result<Vec<Hypothesis>> {
    let rows = limits.len();
    let mut hyps: Vec<Hypothesis> = (0..rows)
        .map(|_| Hypothesis {
            tokens: Vec::new(),
            log_prob: 0.0,
            score: 0.0,
            finished: false,
            alignment: (opts.alignments && model.has_attention()).then(Vec::new),
        })
        .collect();
    let mut done = vec![false; rows];
    let mut y = vec![BOS; rows];
    let mut state = enc.init.clone();
    let max_steps = limits.iter().copied().max().unwrap_or(0);
    for step in 0..max_steps {
        let y_t = Tensor::from_vec(y.clone(), rows, model.device())?;
        crate::hypothesis::count_row_steps(rows);
        let out = model.decode_step(enc, &state, &y_t)?;
        let lp = to_rows(&out.log_probs)?;
        let alpha = match (&out.alpha, opts.alignments) {
            (Some(a), true) => Some(to_rows(a)?),
            _ => None,
        };
        for r in 0..rows {
            if done[r] {
                continue;
            }
            let (best, best_lp) = argmax(&lp[r], opts.cfg.no_unk);
            let h = &mut hyps[r];
            h.log_prob += best_lp as f64;
            if let (Some(al), Some(a)) = (h.alignment.as_mut(), alpha.as_ref()) {
                al.push(a[r].clone());
            }
            if best == EOS {
                h.finished = true;
                done[r] = true;
            } else {
                h.tokens.push(best);
                done[r] = step + 1 >= limits[r];
            }
            y[r] = best;
        }
        if done.iter().all(|&d| d) {
            break;
        }
        state = out.state;
    }
    for h in &mut hyps {
        let len = h.tokens.len() + usize::from(h.finished);
        h.score = normalized(h.log_prob, len, opts.cfg.normalize);
    }
    Ok(hyps)
}

/// Whether search may emit `id`: never `<pad>` or `<s>` (they are not targets, and a `<pad>` in
/// an output would be masked out of its teacher-forced score), `<unk>` only if allowed.
pub(crate) fn allowed(id: u32, no_unk: bool) -> bool {
    id != PAD && id != BOS && !(no_unk && id == UNK)
}

/// The best allowed id and its log-probability.
pub(crate) fn argmax(row: &[f32], no_unk: bool) -> (u32, f32) {
    let mut best = (EOS, f32::NEG_INFINITY);
    for (i, &v) in row.iter().enumerate() {
        if v > best.1 && allowed(i as u32, no_unk) {
            best = (i as u32, v);
        }
    }
    best
}
