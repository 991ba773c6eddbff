//! Ensembles: several scorers decode together, each step's distribution the average of the
//! members' (`p(y | ·) = (1/M) Σ_m p_m(y | ·)`; Marian's and Nematus's `--ensemble` average
//! the log-probabilities instead, see below for why this one). An ensemble is itself a
//! [`Scorer`], so the beam loop runs one model and many alike; with one member every call is
//! the member's own (its fast step included).
//!
//! Each member steps its own states with its own maths; only the output differs: the best
//! tokens of an average need not be among any member's best, so each member's whole
//! distribution ([`Scorer::step_full`], over the vocabulary and a copy model's extended ids) is
//! averaged before the top-k.
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
use std::borrow::Cow;

use nmt_data::batch::Batch;

use super::scorer::{best_of_full, Pick, Rows, Scored, ScoredFull, Scorer};
use crate::error::Result;

/// Models that decode together; `members[0]` sets the reading order.
pub struct Ensemble<'a, S> {
    members: Vec<&'a S>,
}

/// An ensemble's encoding of a batch: each member's, and what mapping attention back needs.
pub struct EnsembleEncoded<E> {
    members: Vec<E>,
    /// Each sentence's true length and the padded length `S`.
    lens: Vec<usize>,
    src_len: usize,
    /// The extended target space of the batch: the vocabulary and a copy model's source words.
    width: usize,
}

impl<'a, S: Scorer> Ensemble<'a, S> {
    /// An ensemble of `members` (at least one).
    pub fn new(members: Vec<&'a S>) -> Result<Self> {
        if members.is_empty() {
            return Err(crate::error::Error::Input("an ensemble needs at least one model".into()));
        }
        Ok(Ensemble { members })
    }

    fn flipped(&self, m: &S) -> bool {
        m.reads_reversed() != self.members[0].reads_reversed()
    }
}

impl<S: Scorer> Scorer for Ensemble<'_, S> {
    type Encoded = EnsembleEncoded<S::Encoded>;
    type States = Vec<S::States>;

    fn reads_reversed(&self) -> bool {
        self.members[0].reads_reversed()
    }

    fn has_attention(&self) -> bool {
        self.members.iter().any(|m| m.has_attention())
    }

    fn vocab_size(&self) -> usize {
        self.members[0].vocab_size()
    }

    fn encode(&self, batch: &Batch, shortlist: Option<&[u32]>) -> Result<Self::Encoded> {
        let members = self
            .members
            .iter()
            .map(|m| {
                let b = if self.flipped(m) { Cow::Owned(flipped_batch(batch)) } else { Cow::Borrowed(batch) };
                m.encode(&b, shortlist)
            })
            .collect::<Result<_>>()?;
        let width = batch.src_ext.iter().map(|&w| w as usize + 1).fold(self.vocab_size(), usize::max);
        Ok(EnsembleEncoded { members, lens: batch.src_lengths.clone(), src_len: batch.src_len, width })
    }

    fn start(&self, enc: &Self::Encoded, sent: &[usize]) -> Result<Self::States> {
        self.members.iter().zip(&enc.members).map(|(m, e)| m.start(e, sent)).collect()
    }

    fn step(&self, enc: &Self::Encoded, states: &Self::States, rows: &Rows<'_>, pick: &Pick<'_>) -> Result<Scored<Self::States>> {
        if let ([m], [e], [s]) = (&self.members[..], &enc.members[..], &states[..]) {
            let out = m.step(e, s, rows, pick)?;
            return Ok(Scored { states: vec![out.states], best: out.best, alpha: out.alpha });
        }
        let full = self.step_full(enc, states, rows, enc.width, pick.alpha)?;
        let best = best_of_full(&full.log_probs, enc.width, pick.want, pick.skip);
        Ok(Scored { states: full.states, best, alpha: full.alpha })
    }

    fn step_full(
        &self,
        enc: &Self::Encoded,
        states: &Self::States,
        rows: &Rows<'_>,
        width: usize,
        alpha: bool,
    ) -> Result<ScoredFull<Self::States>> {
        let r_n = rows.y.len();
        let mut parts = Vec::with_capacity(self.members.len());
        let mut new_states = Vec::with_capacity(self.members.len());
        let (mut alpha_sum, mut attending) = (None::<Vec<f32>>, 0usize);
        for ((m, e), s) in self.members.iter().zip(&enc.members).zip(states) {
            let out = m.step_full(e, s, rows, width, alpha)?;
            parts.push(out.log_probs);
            new_states.push(out.states);
            if let (true, Some(mut al)) = (alpha, out.alpha.filter(|_| m.has_attention())) {
                if self.flipped(m) {
                    let s_len = enc.src_len;
                    for (row, &b) in al.chunks_exact_mut(s_len.max(1)).zip(rows.sent) {
                        nmt_data::reverse_source(&mut row[..enc.lens[b].min(s_len)], true);
                    }
                }
                match &mut alpha_sum {
                    Some(sum) => sum.iter_mut().zip(&al).for_each(|(a, b)| *a += b),
                    None => alpha_sum = Some(al),
                }
                attending += 1;
            }
        }
        let alpha = alpha_sum.map(|mut a| {
            a.iter_mut().for_each(|x| *x /= attending as f32);
            a
        });
        Ok(ScoredFull { states: new_states, log_probs: log_mean_exp(&parts, r_n * width), alpha })
    }

    fn gather(&self, states: &Self::States, idx: &[usize]) -> Result<Self::States> {
        self.members.iter().zip(states).map(|(m, s)| m.gather(s, idx)).collect()
    }
}

/// `log (1/M) Σ_m exp(lp_m)` entry by entry over the members' `len` log-probabilities.
fn log_mean_exp(parts: &[Vec<f32>], len: usize) -> Vec<f32> {
    if let [one] = parts {
        return one.clone();
    }
    let ln_m = (parts.len() as f32).ln();
    (0..len)
        .map(|j| {
            let mx = parts.iter().map(|p| p[j]).fold(f32::NEG_INFINITY, f32::max);
            if mx == f32::NEG_INFINITY {
                mx
            } else {
                mx + parts.iter().map(|p| (p[j] - mx).exp()).sum::<f32>().ln() - ln_m
            }
        })
        .collect()
}

/// The batch with each row's words reversed (its `</s>` stays last), extended ids too.
fn flipped_batch(batch: &Batch) -> Batch {
    let mut b = batch.clone();
    for ids in [&mut b.src, &mut b.src_ext] {
        if ids.is_empty() {
            continue;
        }
        for (row, &len) in ids.chunks_exact_mut(batch.src_len.max(1)).zip(&batch.src_lengths) {
            nmt_data::reverse_source(&mut row[..len.min(batch.src_len)], true);
        }
    }
    b
}
