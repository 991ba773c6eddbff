//! Beam search (and greedy search, beam 1) on the host kernels, with the bookkeeping of
//! `crate::hypothesis::beams`, which the candle search shares.
//!
//! Unlike the candle search, only live hypotheses are computed: each step gathers the rows
//! still alive (all sentences of the batch side by side), so finished hypotheses and finished
//! sentences cost nothing.
use nmt_data::{BOS, PAD, UNK};

use super::ensemble::{self, Member};
use super::step::Rows;
use crate::hypothesis::beams::{Beams, Extension};
use crate::hypothesis::{Hypothesis, SearchOptions};
use crate::kernels::profile;

/// Searches the encoded batch with one model or an ensemble (`members`, each with its encoding
/// of the batch); `limits[b]` is sentence `b`'s output length limit. Returns up to `n_best`
/// hypotheses per sentence, best first.
pub fn beam(members: &[Member<'_>], limits: &[usize], opts: &SearchOptions, threads: usize) -> Vec<Vec<Hypothesis>> {
    let k = opts.cfg.beam_size.max(1);
    let batch = limits.len();
    // The decoder state's width: `n`, or the LSTM's `[s; cell]`, every layer's and every
    // member's side by side.
    let n = ensemble::state_width(members);
    let want_alpha = opts.alignments && ensemble::attends(members);
    let src_len = members.first().map_or(0, |m| m.enc.src_len);
    let skip: Vec<u32> = if opts.cfg.no_unk { vec![PAD, BOS, UNK] } else { vec![PAD, BOS] };
    let mut beams = Beams::new(limits, k, want_alpha, opts.cfg.normalize);
    // The live rows, sentence by sentence: state, previous word, sentence.
    let mut sent: Vec<usize> = (0..batch).filter(|&b| !beams.live(b).is_empty()).collect();
    let mut s: Vec<f32> = sent.iter().flat_map(|&b| ensemble::init_state(members, b)).collect();
    let mut y = vec![BOS; sent.len()];
    for t in 0.. {
        if sent.is_empty() {
            break;
        }
        // Rows of sentence b are contiguous: `groups[b]`; each needs its sentence's width.
        let mut groups = vec![0..0; batch];
        let mut r0 = 0;
        for (b, g) in groups.iter_mut().enumerate() {
            *g = r0..r0 + beams.live(b).len();
            r0 += beams.live(b).len();
        }
        let want: Vec<usize> = sent.iter().map(|&b| beams.width(b)).collect();
        crate::hypothesis::count_row_steps(sent.len());
        let t_step = profile::start();
        let out = ensemble::step(members, &Rows { s: &s, y: &y, sent: &sent }, &want, &skip, want_alpha, threads);
        profile::stop(profile::SEARCH_STEP, t_step);
        let t_select = profile::start();
        let base: Vec<f32> = (0..batch).flat_map(|b| beams.live(b).iter().map(|l| l.log_prob as f32)).collect();
        let widths: Vec<usize> = (0..batch).map(|b| beams.width(b)).collect();
        let picks = out.best.top_k_groups(&base, &groups, &widths);
        let (mut s_next, mut y_next, mut sent_next) = (Vec::new(), Vec::new(), Vec::new());
        for b in 0..batch {
            if beams.live(b).is_empty() {
                continue;
            }
            let start = groups[b].start;
            let exts = picks[b]
                .iter()
                .map(|c| Extension {
                    parent: c.row - start,
                    word: c.token,
                    log_prob: beams.live(b)[c.row - start].log_prob + c.log_prob as f64,
                    // A copy model's step computes the weights even when they are not reported.
                    alpha: out.alpha.as_ref().filter(|_| want_alpha).map(|a| a[c.row * src_len..(c.row + 1) * src_len].to_vec()),
                })
                .collect();
            for (parent, word) in beams.advance(b, t, exts) {
                let row = start + parent;
                s_next.extend_from_slice(&out.state[row * n..(row + 1) * n]);
                y_next.push(word);
                sent_next.push(b);
            }
        }
        s = s_next;
        y = y_next;
        sent = sent_next;
        profile::stop(profile::SEARCH_SELECT, t_select);
    }
    beams.finish(opts.cfg.n_best)
}
