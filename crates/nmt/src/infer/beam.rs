//! Beam search (and greedy search, beam 1) on the host kernels, with the semantics of
//! search/beam.rs: a sentence's beam shrinks by one each time a hypothesis ends with `</s>`; it
//! is done when its beam is empty or its length limit is reached (live hypotheses are then kept
//! as unfinished); hypotheses are ranked by the length-normalised score.
//!
//! Unlike the candle search, only live hypotheses are computed: each step gathers the rows
//! still alive (all sentences of the batch side by side), so finished hypotheses and finished
//! sentences cost nothing.
use nmt_data::{BOS, EOS, PAD, UNK};

use super::encode::HostEncoded;
use super::step::{step, Rows};
use super::weights::HostModel;
use crate::kernels::profile;
use crate::search::{normalized, Hypothesis, SearchOptions};

/// One live hypothesis.
#[derive(Clone)]
struct Live {
    tokens: Vec<u32>,
    log_prob: f64,
    alignment: Option<Vec<Vec<f32>>>,
}

fn to_hyp(l: Live, done: bool, alpha: f64) -> Hypothesis {
    let len = l.tokens.len() + usize::from(done);
    Hypothesis { score: normalized(l.log_prob, len, alpha), tokens: l.tokens, log_prob: l.log_prob, finished: done, alignment: l.alignment }
}

/// Searches the encoded batch; `limits[b]` is sentence `b`'s output length limit. Returns up
/// to `n_best` hypotheses per sentence, best first.
pub fn beam(model: &HostModel, enc: &HostEncoded, limits: &[usize], opts: &SearchOptions, threads: usize) -> Vec<Vec<Hypothesis>> {
    let k = opts.cfg.beam_size.max(1);
    let batch = limits.len();
    let n = model.cfg.hidden_dim;
    let alpha_norm = opts.cfg.normalize;
    let want_alpha = opts.alignments && matches!(model.core, super::weights::HostCore::Search { .. });
    let skip: Vec<u32> = if opts.cfg.no_unk { vec![PAD, BOS, UNK] } else { vec![PAD, BOS] };
    let mut live: Vec<Vec<Live>> =
        (0..batch).map(|_| vec![Live { tokens: Vec::new(), log_prob: 0.0, alignment: want_alpha.then(Vec::new) }]).collect();
    let mut width = vec![k; batch];
    let mut finished: Vec<Vec<Hypothesis>> = vec![Vec::new(); batch];
    // The live rows, sentence by sentence: state, previous word, sentence. A sentence whose
    // limit is 0 gets no tokens.
    let mut sent: Vec<usize> = (0..batch).filter(|&b| limits[b] > 0).collect();
    for b in (0..batch).filter(|&b| limits[b] == 0) {
        finished[b].extend(live[b].drain(..).map(|l| to_hyp(l, false, alpha_norm)));
    }
    let mut s: Vec<f32> = sent.iter().flat_map(|&b| enc.init[b * n..(b + 1) * n].iter().copied()).collect();
    let mut y = vec![BOS; sent.len()];
    for t in 0.. {
        if sent.is_empty() {
            break;
        }
        // Rows of sentence b are contiguous: `groups[b]`; each needs its sentence's width.
        let mut groups = vec![0..0; batch];
        let mut r0 = 0;
        for b in 0..batch {
            groups[b] = r0..r0 + live[b].len();
            r0 += live[b].len();
        }
        let want: Vec<usize> = sent.iter().map(|&b| width[b]).collect();
        crate::search::count_row_steps(sent.len());
        let t_step = profile::start();
        let out = step(model, enc, &Rows { s: &s, y: &y, sent: &sent }, &want, &skip, want_alpha, threads);
        profile::stop(profile::SEARCH_STEP, t_step);
        let t_select = profile::start();
        let base: Vec<f32> = live.iter().flatten().map(|l| l.log_prob as f32).collect();
        let widths: Vec<usize> = (0..batch).map(|b| if live[b].is_empty() { 0 } else { width[b] }).collect();
        let picks = out.best.top_k_groups(&base, &groups, &widths);
        let (mut s_next, mut y_next, mut sent_next) = (Vec::new(), Vec::new(), Vec::new());
        for b in 0..batch {
            if live[b].is_empty() {
                continue;
            }
            let mut next = Vec::with_capacity(width[b]);
            for c in &picks[b] {
                let (row, word) = (c.row, c.token);
                let parent = &live[b][row - groups[b].start];
                let mut alignment = parent.alignment.clone();
                if let (Some(al), Some(a)) = (alignment.as_mut(), out.alpha.as_ref()) {
                    al.push(a[row * enc.src_len..(row + 1) * enc.src_len].to_vec());
                }
                let log_prob = parent.log_prob + c.log_prob as f64;
                let mut tokens = parent.tokens.clone();
                if word == EOS {
                    finished[b].push(to_hyp(Live { tokens, log_prob, alignment }, true, alpha_norm));
                    width[b] -= 1;
                } else {
                    tokens.push(word);
                    next.push(Live { tokens, log_prob, alignment });
                    s_next.extend_from_slice(&out.state[row * n..(row + 1) * n]);
                    y_next.push(word);
                    sent_next.push(b);
                }
            }
            if t + 1 >= limits[b] {
                let cut = next.len();
                finished[b].extend(next.drain(..).map(|l| to_hyp(l, false, alpha_norm)));
                // Their rows leave the batch with them.
                let keep = sent_next.len() - cut;
                s_next.truncate(keep * n);
                y_next.truncate(keep);
                sent_next.truncate(keep);
            }
            live[b] = next;
        }
        s = s_next;
        y = y_next;
        sent = sent_next;
        profile::stop(profile::SEARCH_SELECT, t_select);
    }
    let keep = opts.cfg.n_best.clamp(1, k);
    finished
        .into_iter()
        .map(|mut f| {
            f.sort_by(|a, b| b.score.total_cmp(&a.score));
            f.truncate(keep);
            f
        })
        .collect()
}
