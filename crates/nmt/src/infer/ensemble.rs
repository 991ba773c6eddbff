//! Ensembles in the host search: several models decode together, each step's distribution the
//! average of the members' (`p(y | ·) = (1/M) Σ_m p_m(y | ·)`, Marian's and Nematus's
//! `--ensemble` average the log-probabilities instead; see below for why this one).
//!
//! A beam row holds every member's state side by side, `(R, Σ_m w_m)`; each member steps its
//! own part with the single model's [`features`], so an ensemble runs exactly the maths of its
//! members. Only the output layer differs: the best tokens of an average need not be among any
//! member's best, so each member's whole distribution is computed ([`Projection::log_probs`],
//! and the copy mixture over the extended space, [`HostCopy::full`]) and averaged before the
//! top-k. With one member, [`step`] is the single model's fast step.
//!
//! Why the probability average (a mixture) and not the log-linear one: it is what `nmt score`
//! reports for an ensemble (issue "Scoring"), it is a proper distribution without a
//! renormalisation, and a member that gives a word no mass (a copy model's source word for a
//! member without copy) does not veto it.
//!
//! Members may differ in architecture (RNNenc with RNNsearch, GRU with LSTM, copy or not, source
//! reversed or not) but share both vocabularies ([`crate::translate::Translator::load_ensemble`]
//! checks it). The batch arrives in the first member's reading order; a member that reads the
//! other way gets its rows reversed, and its attention is mapped back to the first member's
//! order before the members' weights are averaged.
//!
//! [`features`]: super::step::features
//! [`Projection::log_probs`]: crate::kernels::scores::Projection::log_probs
//! [`HostCopy::full`]: super::copy::HostCopy::full
use super::encode::HostEncoded;
use super::step::{features, step as single_step, Rows, StepOut};
use super::weights::{HostCore, HostModel};
use crate::kernels::scores::RowBest;

/// One model of a search with its encoding of the batch.
pub struct Member<'a> {
    pub model: &'a HostModel,
    pub enc: HostEncoded,
    /// Whether this member reads the source in the opposite order to the first member.
    pub flipped: bool,
}

/// The width of a beam row: every member's state side by side.
pub fn state_width(members: &[Member<'_>]) -> usize {
    members.iter().map(|m| m.model.state_width()).sum()
}

/// Sentence `b`'s start state `(Σ_m w_m)`.
pub fn init_state(members: &[Member<'_>], b: usize) -> Vec<f32> {
    members
        .iter()
        .flat_map(|m| {
            let w = m.model.state_width();
            m.enc.init[b * w..(b + 1) * w].iter().copied()
        })
        .collect()
}

/// Whether any member attends (and so can report alignments).
pub fn attends(members: &[Member<'_>]) -> bool {
    members.iter().any(|m| matches!(m.model.core, HostCore::Search { .. }))
}

/// One step of the ensemble for `rows` (states `(R, Σ_m w_m)`); the best tokens come back as
/// log-probabilities (normaliser 0), which the beam reads as it reads a single model's.
pub fn step(members: &[Member<'_>], rows: &Rows<'_>, want: &[usize], skip: &[u32], want_alpha: bool, threads: usize) -> StepOut {
    if let [m] = members {
        return single_step(m.model, &m.enc, rows, want, skip, want_alpha, threads);
    }
    let r_n = rows.y.len();
    let total = state_width(members);
    // The extended space of the batch: the vocabulary, and a copy model's source words.
    let vocab = members[0].model.out.proj.vocab();
    let width = members.iter().flat_map(|m| m.enc.src_ext.iter()).map(|&w| w as usize + 1).fold(vocab, usize::max);
    let mut parts: Vec<Vec<f32>> = Vec::with_capacity(members.len());
    let mut state = vec![0f32; r_n * total];
    let (mut alpha_sum, mut attending) = (None::<Vec<f32>>, 0usize);
    let mut off = 0;
    for m in members {
        let w = m.model.state_width();
        let s: Vec<f32> = rows.s.chunks_exact(total).flat_map(|row| row[off..off + w].iter().copied()).collect();
        let f = features(m.model, &m.enc, &Rows { s: &s, y: rows.y, sent: rows.sent }, want_alpha, threads);
        let lp = m.model.out.proj.log_probs(&f.t, r_n);
        parts.push(match (&m.model.copy, &f.alpha) {
            (Some(copy), Some(al)) => {
                let x = super::copy::MixIn { t: &f.t, s_out: &f.s_out, ctx: &f.ctx, ey: &f.ey, alpha: al, rows: rows.sent, want, skip };
                copy.full(&m.enc, &lp, width, &x)
            }
            _ => lp
                .chunks_exact(vocab)
                .flat_map(|row| row.iter().copied().chain(std::iter::repeat_n(f32::NEG_INFINITY, width - vocab)))
                .collect(),
        });
        for (dst, src) in state.chunks_exact_mut(total).zip(f.state.chunks_exact(w)) {
            dst[off..off + w].copy_from_slice(src);
        }
        if let (true, Some(mut al)) = (want_alpha, f.alpha.filter(|_| matches!(m.model.core, HostCore::Search { .. }))) {
            let s_len = m.enc.src_len;
            if m.flipped {
                for (row, &b) in al.chunks_exact_mut(s_len.max(1)).zip(rows.sent) {
                    nmt_data::reverse_source(&mut row[..m.enc.lens[b].min(s_len)], true);
                }
            }
            match &mut alpha_sum {
                Some(sum) => sum.iter_mut().zip(&al).for_each(|(a, b)| *a += b),
                None => alpha_sum = Some(al),
            }
            attending += 1;
        }
        off += w;
    }
    let alpha = alpha_sum.map(|mut a| {
        a.iter_mut().for_each(|x| *x /= attending as f32);
        a
    });
    let best = average_best(&parts, r_n, width, want, skip);
    StepOut { state, best, alpha }
}

/// `log (1/M) Σ_m exp(lp_m)` per entry of the members' `(R, width)` log-probabilities, and each
/// row's `want[r]` best tokens outside `skip`, as log-probabilities.
fn average_best(parts: &[Vec<f32>], r_n: usize, width: usize, want: &[usize], skip: &[u32]) -> RowBest {
    let ln_m = (parts.len() as f32).ln();
    let mut top = Vec::with_capacity(r_n);
    let mut avg = vec![0f32; width];
    for r in 0..r_n {
        for (j, a) in avg.iter_mut().enumerate() {
            let mx = parts.iter().map(|p| p[r * width + j]).fold(f32::NEG_INFINITY, f32::max);
            *a = if mx == f32::NEG_INFINITY {
                mx
            } else {
                mx + parts.iter().map(|p| (p[r * width + j] - mx).exp()).sum::<f32>().ln() - ln_m
            };
        }
        let mut cands: Vec<(f32, u32)> = avg
            .iter()
            .enumerate()
            .filter(|&(j, &a)| a > f32::NEG_INFINITY && !skip.contains(&(j as u32)))
            .map(|(j, &a)| (a, j as u32))
            .collect();
        let k = want[r].min(cands.len());
        if k > 0 && k < cands.len() {
            cands.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        }
        cands.truncate(k);
        cands.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        top.push(cands);
    }
    RowBest { lse: vec![0.0; r_n], top }
}
