//! The beam search, the only one: greedy search is beam 1. It runs any [`Scorer`] (one model
//! on the host or in candle, or an ensemble of either) with the bookkeeping of
//! `beams.rs` (narrowing beams, length limits, ranking).
//!
//! Only live hypotheses are computed: each step gathers the rows still alive (all sentences of
//! the batch side by side, a sentence's rows contiguous), so finished hypotheses and finished
//! sentences cost nothing.
use nmt_data::batch::Batch;
use nmt_data::BOS;

use super::beams::{Beams, Extension};
use super::hypothesis::{max_output_len, Hypothesis, SearchOptions};
use super::scorer::{skipped_tokens, Pick, Rows, Scorer};
use crate::error::Result;
use crate::kernels::profile;

/// Searches one batch (its sources in the scorer's reading order): up to `n_best` hypotheses
/// per sentence, best first, in the batch's row order.
/// `shortlist` is the batch's lexical shortlist ([`Scorer::encode`]).
pub fn search<S: Scorer>(scorer: &S, batch: &Batch, shortlist: Option<&[u32]>, opts: &SearchOptions) -> Result<Vec<Vec<Hypothesis>>> {
    let enc = profile::timed(profile::SEARCH_ENCODE, || scorer.encode(batch, shortlist))?;
    let limits: Vec<usize> = batch.src_lengths.iter().map(|&l| max_output_len(l, &opts.cfg)).collect();
    let k = opts.cfg.beam_size.max(1);
    let n_sent = limits.len();
    let want_alpha = opts.alignments && scorer.has_attention();
    let skip = skipped_tokens(opts.cfg.no_unk);
    let mut beams = Beams::new(&limits, k, want_alpha, opts.cfg.normalize);
    // The live rows, sentence by sentence: state, previous word, sentence.
    let mut sent: Vec<usize> = (0..n_sent).filter(|&b| !beams.live(b).is_empty()).collect();
    let mut states = scorer.start(&enc, &sent)?;
    let mut y = vec![BOS; sent.len()];
    for t in 0.. {
        if sent.is_empty() {
            break;
        }
        // Rows of sentence b are contiguous: `groups[b]`; each needs its sentence's width.
        let mut groups = vec![0..0; n_sent];
        let mut r0 = 0;
        for (b, g) in groups.iter_mut().enumerate() {
            *g = r0..r0 + beams.live(b).len();
            r0 += beams.live(b).len();
        }
        let want: Vec<usize> = sent.iter().map(|&b| beams.width(b)).collect();
        super::hypothesis::count_row_steps(sent.len());
        let t_step = profile::start();
        let out = scorer.step(&enc, &states, &Rows { y: &y, sent: &sent }, &Pick { want: &want, skip: &skip, alpha: want_alpha })?;
        profile::stop(profile::SEARCH_STEP, t_step);
        let t_select = profile::start();
        let base: Vec<f32> = (0..n_sent).flat_map(|b| beams.live(b).iter().map(|l| l.log_prob as f32)).collect();
        let widths: Vec<usize> = (0..n_sent).map(|b| beams.width(b)).collect();
        let picks = out.best.top_k_groups(&base, &groups, &widths);
        let s_len = out.alpha.as_ref().map_or(0, |a| a.len() / sent.len());
        let (mut parents, mut y_next, mut sent_next) = (Vec::new(), Vec::new(), Vec::new());
        for b in 0..n_sent {
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
                    alpha: out.alpha.as_ref().filter(|_| want_alpha).map(|a| a[c.row * s_len..(c.row + 1) * s_len].to_vec()),
                })
                .collect();
            for (parent, word) in beams.advance(b, t, exts) {
                parents.push(start + parent);
                y_next.push(word);
                sent_next.push(b);
            }
        }
        // Every sentence done: no states to gather (a zero-row gather is not every backend's).
        if !parents.is_empty() {
            states = scorer.gather(&out.states, &parents)?;
        }
        y = y_next;
        sent = sent_next;
        profile::stop(profile::SEARCH_SELECT, t_select);
    }
    Ok(beams.finish(opts.cfg.n_best))
}
