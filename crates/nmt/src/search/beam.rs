//! Beam search for a batch of sentences, `beam` rows per sentence (`rows = batch · beam`).
//!
//! As in Nematus/GroundHog, the beam of a sentence shrinks by one each time a hypothesis ends
//! with `</s>`; the sentence is done when its beam is empty or its length limit is reached (the
//! live hypotheses are then kept as unfinished). Finished hypotheses are ranked by the
//! length-normalised score. With beam 1 this is exactly greedy search.
use candle_core::Tensor;
use nmt_data::{BOS, EOS};

use super::greedy::allowed;
use super::{normalized, to_rows, Hypothesis, SearchOptions};
use crate::error::Result;
use crate::model::decoder::Encoded;
use crate::model::Seq2Seq;

/// One live hypothesis of a sentence's beam.
#[derive(Clone)]
struct Live {
    tokens: Vec<u32>,
    log_prob: f64,
    alignment: Option<Vec<Vec<f32>>>,
}

/// A candidate extension: (sum log-prob, source row, word).
type Cand = (f64, usize, u32);

pub fn beam(model: &Seq2Seq, enc: &Encoded, limits: &[usize], opts: &SearchOptions) -> Result<Vec<Vec<Hypothesis>>> {
    let k = opts.cfg.beam_size.max(1);
    let batch = limits.len();
    let rows = batch * k;
    let expand: Vec<u32> = (0..rows).map(|r| (r / k) as u32).collect();
    let enc = enc.select(&Tensor::from_vec(expand, rows, model.device())?)?;
    let mut state = enc.init.clone();
    // live[b][j] is row b*k + j; a sentence starts with one live hypothesis.
    let mut live: Vec<Vec<Live>> = (0..batch)
        .map(|_| vec![Live { tokens: Vec::new(), log_prob: 0.0, alignment: (opts.alignments && model.has_attention()).then(Vec::new) }])
        .collect();
    let mut width = vec![k; batch];
    let mut finished: Vec<Vec<Hypothesis>> = vec![Vec::new(); batch];
    let mut y = vec![BOS; rows];
    let max_steps = limits.iter().copied().max().unwrap_or(0);
    let to_hyp = |l: Live, done: bool, alpha: f64| {
        let len = l.tokens.len() + usize::from(done);
        Hypothesis {
            score: normalized(l.log_prob, len, alpha),
            tokens: l.tokens,
            log_prob: l.log_prob,
            finished: done,
            alignment: l.alignment,
        }
    };
    for step in 0..max_steps {
        if live.iter().all(|l| l.is_empty()) {
            break;
        }
        let y_t = Tensor::from_vec(y.clone(), rows, model.device())?;
        super::count_row_steps(rows);
        let out = model.decode_step(&enc, &state, &y_t)?;
        let lp = to_rows(&out.log_probs)?;
        let alpha = match (&out.alpha, opts.alignments) {
            (Some(a), true) => Some(to_rows(a)?),
            _ => None,
        };
        let mut origin: Vec<u32> = (0..rows as u32).collect();
        for b in 0..batch {
            if live[b].is_empty() {
                continue;
            }
            let cands = top_candidates(&live[b], &lp[b * k..b * k + live[b].len()], width[b], opts.cfg.no_unk);
            let mut next = Vec::with_capacity(width[b]);
            for (score, j, word) in cands {
                let parent = &live[b][j];
                let mut alignment = parent.alignment.clone();
                if let (Some(al), Some(a)) = (alignment.as_mut(), alpha.as_ref()) {
                    al.push(a[b * k + j].clone());
                }
                let mut tokens = parent.tokens.clone();
                if word == EOS {
                    finished[b].push(to_hyp(Live { tokens, log_prob: score, alignment }, true, opts.cfg.normalize));
                    width[b] -= 1;
                } else {
                    tokens.push(word);
                    origin[b * k + next.len()] = (b * k + j) as u32;
                    y[b * k + next.len()] = word;
                    next.push(Live { tokens, log_prob: score, alignment });
                }
            }
            if step + 1 >= limits[b] {
                for l in next.drain(..) {
                    finished[b].push(to_hyp(l, false, opts.cfg.normalize));
                }
            }
            live[b] = next;
        }
        state = out.state.index_select(&Tensor::from_vec(origin, rows, model.device())?, 0)?;
    }
    for (b, l) in live.into_iter().enumerate() {
        finished[b].extend(l.into_iter().map(|l| to_hyp(l, false, opts.cfg.normalize)));
    }
    let keep = opts.cfg.n_best.clamp(1, k);
    Ok(finished
        .into_iter()
        .map(|mut f| {
            f.sort_by(|a, b| b.score.total_cmp(&a.score));
            f.truncate(keep);
            f
        })
        .collect())
}

/// The `n` best extensions `(log p, parent, word)` of a sentence's live hypotheses, best first.
fn top_candidates(live: &[Live], lp: &[Vec<f32>], n: usize, no_unk: bool) -> Vec<Cand> {
    let mut best: Vec<Cand> = Vec::with_capacity(n + 1);
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
